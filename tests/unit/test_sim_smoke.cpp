// Quick engine checks: one flow, empty graph, chained flows, determinism of the recorder.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/engine/simulator.hpp"
#include "test_sim_helpers.hpp"

using namespace commstack::sim;

TEST_CASE("sim: one flow takes latency + bytes / bandwidth") {
  auto topo = testing::star(2, 50e9, 1e-6);
  Simulator sim(topo);
  FlowGraph g;
  g.add_flow(Flow{0, 1, 1e9, 0, true, 0});
  const RunResult r = sim.run(g, true);
  CHECK(r.duration_s == approx(2e-6 + 1e9 / 50e9).epsilon(1e-12));
  REQUIRE(r.flows.size() == 1);
  CHECK(r.flows[0].start_s == 0);
  CHECK(r.flows[0].sent_s == approx(1e9 / 50e9).epsilon(1e-12));
  // A second run on the same platform is measured from its own start.
  const RunResult r2 = sim.run(g);
  CHECK(r2.duration_s == approx(r.duration_s).epsilon(1e-12));
}

TEST_CASE("sim: two flows into one port share it fairly and chains add up") {
  auto topo = testing::star(3, 10e9, 0.5e-6);
  Simulator sim(topo);
  FlowGraph g;
  g.add_flow(Flow{0, 2, 1e9, 0, true, 0});
  g.add_flow(Flow{1, 2, 1e9, 0, true, 0});
  CHECK(sim.run(g).duration_s == approx(1e-6 + 2e9 / 10e9).epsilon(1e-12));

  FlowGraph chain;
  const int a = chain.add_flow(Flow{0, 1, 1e6, 0, true, 0});
  const int b = chain.add_flow(Flow{1, 2, 1e6, 3e-6, true, 1});
  chain.add_dependency(a, b);
  const RunResult r = sim.run(chain);
  CHECK(r.duration_s == approx(2 * (1e-6 + 1e6 / 10e9) + 3e-6).epsilon(1e-12));
  CHECK(r.group_duration_s.at(0) == approx(1e-6 + 1e6 / 10e9).epsilon(1e-12));
  CHECK(sim.run(FlowGraph{}).duration_s == 0);

  // A "sent" dependency waits for the transfer only: the second message overlaps the first's latency.
  FlowGraph pipe;
  const int p0 = pipe.add_flow(Flow{0, 1, 1e6, 0, true, 0});
  const int p1 = pipe.add_flow(Flow{0, 1, 1e6, 0, true, 0});
  pipe.add_dependency(p0, p1, Dep::sent);
  CHECK(sim.run(pipe).duration_s == approx(1e-6 + 2e6 / 10e9).epsilon(1e-12));
}
