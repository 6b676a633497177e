// The Simulator starts large batches of independent flows from SimGrid actors (mailbox comms)
// instead of host-to-host comms, to avoid SimGrid 3.32's per-completion list scan. Both paths
// must give the same times: this runs the same collectives both ways in the same process.
#include <vector>

#include <doctest/doctest.h>

#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;

TEST_CASE("sim: actor-started flows time exactly like host-to-host flows") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const auto topo = topologies::build_topology(spec, 4);
  sim::Simulator simulator(topo);

  // Two sibling rings (like the DP groups of a TP2 job) so that flows contend. Every fidelity
  // level: edge flows have no successors; step and chunk flows release successors from the
  // actor path, which must hand them back to the maestro (a comm started inside an actor would
  // never be reported complete).
  for (const auto fidelity : {sim::Fidelity::edge, sim::Fidelity::step, sim::Fidelity::chunk}) {
    CAPTURE(sim::to_string(fidelity));
    sim::FlowGraph graph;
    for (int group = 0; group < 2; ++group) {
      sim::CollectiveSpec coll;
      coll.op = sim::CollectiveOp::allreduce;
      for (int r = group; r < topo.gpu_count(); r += 2) coll.ranks.push_back(r);
      coll.bytes = 64.0 * 1024 * 1024;
      coll.channels = 4;
      coll.chunk_bytes = 4.0 * 1024 * 1024;
      coll.fidelity = fidelity;
      coll.group = group;
      sim::add_collective(graph, topo, coll);
    }

    simulator.set_actor_threshold(1'000'000'000);  // host-to-host comms only
    const auto direct = simulator.run(graph, true);
    simulator.set_actor_threshold(1);  // every ready flow through actors
    const auto actors = simulator.run(graph, true);

    CHECK(actors.duration_s == doctest::Approx(direct.duration_s).epsilon(1e-12));
    REQUIRE(actors.flows.size() == direct.flows.size());
    REQUIRE(actors.flows.size() == static_cast<std::size_t>(graph.size()));
    // Records are in completion order; compare per flow id.
    std::vector<double> end_direct(direct.flows.size()), end_actors(actors.flows.size());
    for (const auto& f : direct.flows) end_direct[static_cast<std::size_t>(f.id)] = f.end_s;
    for (const auto& f : actors.flows) end_actors[static_cast<std::size_t>(f.id)] = f.end_s;
    int mismatches = 0;
    for (std::size_t i = 0; i < end_direct.size(); ++i) {
      if (end_actors[i] != doctest::Approx(end_direct[i]).epsilon(1e-12)) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}
