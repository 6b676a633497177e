// The Simulator starts large batches of independent flows from SimGrid actors (mailbox comms)
// instead of host-to-host comms, to avoid SimGrid 3.32's per-completion list scan. Both paths
// must give the same times: this runs one collective both ways in the same process.
#include <doctest/doctest.h>

#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;

TEST_CASE("sim: actor-started flows time exactly like host-to-host flows") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const auto topo = topologies::build_topology(spec, 4);
  sim::Simulator simulator(topo);

  sim::CollectiveSpec coll;
  coll.op = sim::CollectiveOp::allreduce;
  for (int r = 0; r < topo.gpu_count(); ++r) coll.ranks.push_back(r);
  coll.bytes = 64.0 * 1024 * 1024;
  coll.channels = 8;
  coll.fidelity = sim::Fidelity::edge;
  sim::FlowGraph graph;
  sim::add_collective(graph, topo, coll);
  REQUIRE(graph.size() == 32 * 8);

  simulator.set_actor_threshold(1'000'000'000);  // host-to-host comms only
  const auto direct = simulator.run(graph, true);
  simulator.set_actor_threshold(1);  // every ready flow through actors
  const auto actors = simulator.run(graph, true);

  CHECK(actors.duration_s == doctest::Approx(direct.duration_s).epsilon(1e-12));
  REQUIRE(actors.flows.size() == direct.flows.size());
  // Records are in completion order; compare per flow id.
  std::vector<double> sent_direct(direct.flows.size()), sent_actors(actors.flows.size());
  for (const auto& f : direct.flows) sent_direct[static_cast<std::size_t>(f.id)] = f.sent_s;
  for (const auto& f : actors.flows) sent_actors[static_cast<std::size_t>(f.id)] = f.sent_s;
  for (std::size_t i = 0; i < sent_direct.size(); ++i) {
    CHECK(sent_actors[i] == doctest::Approx(sent_direct[i]).epsilon(1e-12));
  }
}
