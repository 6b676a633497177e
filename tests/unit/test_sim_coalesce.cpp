// Identical independent flows share one SimGrid comm (Simulator, coalesce_identical_flows) only
// where that is exact: every flow must finish at the time it would on a comm of its own.
#include <initializer_list>
#include <numeric>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;

namespace {

std::vector<double> end_by_id(const sim::RunResult& r) {
  std::vector<double> end(r.flows.size());
  for (const auto& f : r.flows) end[static_cast<std::size_t>(f.id)] = f.end_s;
  return end;
}

int mismatches(const sim::RunResult& a, const sim::RunResult& b) {
  const auto ea = end_by_id(a), eb = end_by_id(b);
  int bad = 0;
  for (std::size_t i = 0; i < ea.size(); ++i)
    if (ea[i] != approx(eb[i]).epsilon(1e-12)) ++bad;
  return bad;
}

sim::CollectiveSpec ring(std::vector<int> ranks, int channels, sim::Fidelity fidelity, int group) {
  sim::CollectiveSpec coll;
  coll.op = sim::CollectiveOp::allreduce;
  coll.ranks = std::move(ranks);
  coll.bytes = 256.0 * 1024 * 1024;
  coll.channels = channels;
  coll.chunk_bytes = 4.0 * 1024 * 1024;
  coll.fidelity = fidelity;
  coll.group = group;
  return coll;
}

struct Both {
  sim::RunResult separate, coalesced;
};

// The same graph with one comm per flow, then with identical flows coalesced.
Both run_both(sim::Simulator& simulator, const sim::FlowGraph& graph) {
  simulator.set_coalescing(false);
  auto separate = simulator.run(graph, true);
  simulator.set_coalescing(true);
  return {std::move(separate), simulator.run(graph, true)};
}

// Flows 0 -> 1 (one NVLink hop), all ready at the start.
sim::FlowGraph flows_gpu0_to_gpu1(std::initializer_list<double> bytes) {
  sim::FlowGraph graph;
  for (const double b : bytes) {
    sim::Flow f;
    f.src = 0;
    f.dst = 1;
    f.bytes = b;
    graph.add_flow(f);
  }
  return graph;
}

}  // namespace

TEST_CASE("sim: coalesced identical flows finish exactly when separate comms do") {
  // DGX H100 nodes on a plain fat tree (one ToR per 4 nodes), where every GPU leaves through its
  // own NIC. On rails a ring's node crossing is relayed over NVLink to the GPU of the next node's
  // rail (PXN, clos.cpp): its NVLink links then carry folds of two sizes and nothing coalesces.
  auto spec = topologies::load_cluster("dgx-h100");
  spec.fabric.kind = topologies::FabricKind::fat_tree;
  spec.fabric.nodes_per_unit = 4;
  const auto topo = topologies::build_topology(spec, 4);  // 32 GPUs
  sim::Simulator simulator(topo);
  std::vector<int> all(static_cast<std::size_t>(topo.gpu_count()));
  std::iota(all.begin(), all.end(), 0);

  {  // one 8-channel ring at edge fidelity: each NVLink edge is 7 channels' flows
    sim::FlowGraph graph;
    sim::add_collective(graph, topo, ring(all, 8, sim::Fidelity::edge, 0));
    REQUIRE(graph.size() == 8 * 32);
    const auto [separate, coalesced] = run_both(simulator, graph);
    CHECK(separate.comm_count == 256);
    // 4 nodes x 8 intra-node edges, each carrying 7 channels, + 32 node-crossing flows, one each.
    CHECK(coalesced.comm_count == 4 * 8 + 32);
    CHECK(coalesced.duration_s == approx(separate.duration_s).epsilon(1e-12));
    REQUIRE(coalesced.flows.size() == separate.flows.size());
    CHECK(mismatches(coalesced, separate) == 0);
  }

  {  // two sibling rings contending (TP2-like DP groups), both paths of starting flows
    sim::FlowGraph graph;
    for (int group = 0; group < 2; ++group) {
      std::vector<int> ranks;
      for (int r = group; r < topo.gpu_count(); r += 2) ranks.push_back(r);
      sim::add_collective(graph, topo, ring(ranks, 4, sim::Fidelity::edge, group));
    }
    for (const long long threshold : {1LL, 1'000'000'000LL}) {
      CAPTURE(threshold);
      simulator.set_actor_threshold(threshold);
      const auto [separate, coalesced] = run_both(simulator, graph);
      CHECK(coalesced.comm_count < separate.comm_count);
      CHECK(coalesced.duration_s == approx(separate.duration_s).epsilon(1e-12));
      CHECK(mismatches(coalesced, separate) == 0);
      for (std::size_t g = 0; g < 2; ++g)
        CHECK(coalesced.group_duration_s[g] == approx(separate.group_duration_s[g]).epsilon(1e-12));
    }
  }

  {  // flows with dependencies are never coalesced
    sim::FlowGraph graph;
    sim::add_collective(graph, topo, ring(all, 8, sim::Fidelity::step, 0));
    const auto r = simulator.run(graph, false);
    CHECK(r.comm_count == r.flow_count);
  }

  {  // a link crossed by a pair of identical flows and a different flow: no coalescing
    // Two copies of 0 -> 1 and one 0 -> 1 of another size share GPU 0's NVLink: one comm for the
    // pair would get 1/2 of the link where the copies get 2/3 between them.
    const auto graph = flows_gpu0_to_gpu1({64e6, 64e6, 16e6});
    const auto [separate, coalesced] = run_both(simulator, graph);
    CHECK(coalesced.comm_count == 3);
    CHECK(mismatches(coalesced, separate) == 0);
  }

  {  // folds of 4 and 2 on one link: cut into folds of 2 (the gcd), each comm two copies, exact
    const auto graph = flows_gpu0_to_gpu1({64e6, 64e6, 64e6, 64e6, 16e6, 16e6});
    const auto [separate, coalesced] = run_both(simulator, graph);
    CHECK(coalesced.comm_count == 3);
    CHECK(mismatches(coalesced, separate) == 0);
    CHECK(coalesced.duration_s == approx(separate.duration_s).epsilon(1e-12));
  }

  {  // identical flows alone on their links: one comm, same times
    const auto graph = flows_gpu0_to_gpu1({64e6, 64e6, 64e6});
    const auto [separate, coalesced] = run_both(simulator, graph);
    CHECK(coalesced.comm_count == 1);
    // Three flows of 64 MB share the link: each takes 3 x 64 MB / bandwidth.
    CHECK(mismatches(coalesced, separate) == 0);
    CHECK(coalesced.duration_s == approx(separate.duration_s).epsilon(1e-12));
  }
}

TEST_CASE(
    "sim: on rails, a ring's relayed crossings go as two legs that fold with the flows inside the node") {
  // A TP2-like data-parallel ring (every other GPU of 4 DGX H100 nodes on rails, 8 channels) at
  // edge fidelity. Each node's 4 members are rotated over the channels: an NVLink edge inside a
  // node is taken by 6 channels, and each of the 4 crossings per channel is relayed over NVLink to
  // the GPU of the next node's rail (PXN, clos.cpp). The edge level sends a relayed crossing as
  // its NVLink leg and its network leg side by side (ring.cpp): the NVLink leg is the flow of the
  // 2 channels that do not take that edge inside the node, so every NVLink edge carries 8
  // identical flows, and each network leg 2 (the channels of one rotation): 128 + 32 flows fold
  // into 4 x (4 + 4) comms, with the same end times.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  sim::Simulator simulator(topo);
  std::vector<int> ranks;
  for (int r = 0; r < topo.gpu_count(); r += 2) ranks.push_back(r);
  sim::FlowGraph graph;
  const sim::CollectivePlan plan = sim::add_collective(graph, topo, ring(ranks, 8, sim::Fidelity::edge, 0));
  REQUIRE(graph.size() == 8 * 16 + 8 * 4);
  CHECK(plan.flows == graph.size());
  const auto [separate, coalesced] = run_both(simulator, graph);
  CHECK(separate.comm_count == 160);
  CHECK(coalesced.comm_count == 32);
  CHECK(coalesced.duration_s == approx(separate.duration_s).epsilon(1e-12));
  CHECK(mismatches(coalesced, separate) == 0);
  // The step level keeps one flow per edge and step: the relayed route as a whole.
  sim::FlowGraph steps;
  const sim::CollectivePlan step_plan =
      sim::add_collective(steps, topo, ring(ranks, 8, sim::Fidelity::step, 0));
  CHECK(step_plan.flows == 8LL * 16 * 2 * 15);
  CHECK(steps.size() == step_plan.flows);
}
