// The tree all-reduce (sim/algorithms/tree.cpp): NCCL's double binary tree across nodes and a chain
// inside each node, reduced up and broadcast down chunk by chunk. Closed form where the tree is a
// chain, the double binary tree's network bound, the coarse levels against the chunk level, and
// the structure NCCL builds (which GPUs carry a node's network traffic).
#include <cstdint>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/select/nccl_trees.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "test_sim_helpers.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::sim;

namespace {

CollectiveSpec tree_allreduce(const std::vector<int>& ranks, double bytes, int channels, double chunk,
                              Fidelity f) {
  return testing::collective_spec(CollectiveOp::allreduce, Algorithm::tree, ranks, bytes, channels, chunk, f);
}

double run(Simulator& sim, const CollectiveSpec& spec) { return testing::run_alone(sim, spec); }

// The stack model's Tree against the flows on `nodes` DGX H100 nodes: 1 GiB on 16 channels of
// 512 KiB chunks, the stack model with ideal layers (every efficiency 1, no latency, no per-channel
// cap) so that only the bandwidth bound and the pipeline fill are left. The flows pipeline every
// chunk through every hop; the stack model's fill is one loop (16 x 512 KiB, 1/128 of the call) per
// network hop but the slowest (docs/stack-model.md, "Tree pipeline fill"). Both agree within 1.5%,
// where the bound alone is more than 2.5% short of the flows.
void check_stack_tree_fill(int nodes) {
  const auto spec = topologies::load_cluster("dgx-h100");
  const double S = 1073741824.0;
  sim::stack::Profile ideal = sim::stack::prior_profile(90);
  for (int i = 0; i < sim::stack::kNumParams; ++i) {
    const std::string unit = sim::stack::param_info(i).unit;
    ideal.params[static_cast<std::size_t>(i)].value = unit == "fraction" ? 1.0
                                                      : unit == "GB/s"   ? 2000.0
                                                                         : 0.0;
  }
  sim::stack::Knobs knobs;
  knobs.env.algo = "tree";
  knobs.env.proto = "simple";
  knobs.env.max_ctas = 16;
  const auto p = sim::stack::Predictor(spec, nodes, 8, knobs)
                     .predict(CollectiveOp::allreduce, static_cast<std::uint64_t>(S), ideal);
  REQUIRE(p.algorithm == "Tree");
  REQUIRE(p.channels == 16);
  REQUIRE(p.chunk_bytes == 524288);
  const auto topo = topologies::build_topology(spec, nodes);
  Simulator sim(topo);
  const double flows =
      run(sim, tree_allreduce(testing::iota_ranks(topo.gpu_count()), S, 16, 524288.0, Fidelity::automatic));
  CAPTURE(flows);
  CAPTURE(p.time_s);
  CHECK(p.time_s == approx(flows).epsilon(0.015));
  CHECK(p.time_s - p.breakdown.protocol_s < flows * 0.975);
}

}  // namespace

TEST_CASE("sim tree: two single-GPU nodes run both trees, S / 2 each way: 2 alpha + S / B for one chunk") {
  // NCCL runs a channel on both trees (connect.cc): node 0 is the root of the first, node 1 of the
  // second. Each reduces half the bytes up and broadcasts them back, so each direction of the
  // link carries one tree's reduction and the other's broadcast, S in all. With one chunk per tree
  // the two reductions cross at once, then the two broadcasts: 2 alpha + S / B. With K chunks the
  // link is never idle once the first chunk is up, and the broadcast of the last chunk follows it
  // alone: between S / B + alpha and S / B + 2 alpha + one chunk's time.
  constexpr double B = 50e9, h = 1e-6, alpha = 2 * h;
  const auto topo = testing::star(2, B, h);
  Simulator sim(topo);
  for (const double S : {8.0, 1048576.0, 1073741824.0})
    for (const int K : {1, 4, 32}) {
      const double per_tree_chunk = S / 2 / (K == 1 ? 1 : K / 2);  // chunk_bytes S / K, half of S per tree
      const double chunk = run(sim, tree_allreduce({0, 1}, S, 1, S / K, Fidelity::chunk));
      CAPTURE(S);
      CAPTURE(K);
      if (K == 1) {
        CHECK(chunk == approx(2 * alpha + S / B).epsilon(1e-6));
      } else {
        CHECK(chunk >= (S / B + alpha) * (1 - 1e-9));
        CHECK(chunk <= S / B + 2 * alpha + per_tree_chunk / B);
      }
      for (const Fidelity f : {Fidelity::step, Fidelity::edge}) {
        CAPTURE(to_string(f));
        CHECK(run(sim, tree_allreduce({0, 1}, S, 1, S / K, f)) == approx(chunk).epsilon(0.01));
      }
    }
}

TEST_CASE("sim tree: 4 DGX H100 nodes reach the double binary tree's network bound") {
  // On 4 nodes some node is inner in one tree and has a parent in the other: it sends S/2 up and
  // S/2 down to each child, 2 S in all (select::nccl_dtree_max_egress). Its 8 NICs of 400 Gb/s
  // carry it at best in 2 S / 400 GB/s; with 8 channels spread over the NICs the simulated 1 GiB
  // all-reduce comes within 2% of that (the rest is the pipeline's fill and drain).
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  Simulator sim(topo);
  REQUIRE(select::nccl_dtree_max_egress(4) == approx(2.0));
  const double S = 1073741824.0;
  const double bound = select::nccl_dtree_max_egress(4) * S / (8 * 50e9);
  const std::vector<int> ranks = testing::iota_ranks(topo.gpu_count());
  const double t = run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::automatic));
  CHECK(t >= bound);
  CHECK(t <= bound * 1.02);
}

TEST_CASE(
    "stack tree: the stack model's pipeline fill is the flows' (4 DGX H100 nodes, 3 hops beyond the "
    "slowest)") {
  check_stack_tree_fill(4);
}

TEST_CASE(
    "stack tree: the stack model's pipeline fill is the flows' (16 DGX H100 nodes, 7 hops beyond the "
    "slowest)") {
  check_stack_tree_fill(16);
}

TEST_CASE("sim tree: the step and edge levels follow the chunk level (DGX H100, 2 and 4 nodes, 8 channels)") {
  // Up and down hops cross the NVSwitch ports and NICs shared with the other channels; the coarse
  // flows end where the chunk level's pipeline, run outside SimGrid with the feeding hops of each
  // (every child for the reduction, the parent for the broadcast), ends each hop.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  Simulator sim(topo);  // one per process: the 2-node communicator is the first two nodes
  for (const int nodes : {2, 4}) {
    const std::vector<int> ranks = testing::iota_ranks(8 * nodes);
    for (const double mib : {1.0, 16.0, 256.0}) {
      const double S = mib * 1024 * 1024;
      const double chunk = run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::chunk));
      CAPTURE(nodes);
      CAPTURE(mib);
      CHECK(run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::step)) ==
            approx(chunk).epsilon(0.01));
      CHECK(run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::edge)) ==
            approx(chunk).epsilon(0.01));
    }
  }
}

TEST_CASE(
    "sim tree: one channel is NCCL's two trees: 2 (N-1) network hops each, a node's network ends on one "
    "GPU") {
  // 4 nodes x 8 GPUs, one channel, half its bytes on each tree: the reduction and the broadcast each
  // cross the network once per node but the root, and all of them start and end on the node's
  // first GPU in the channel's order, whose NIC NCCL's tree search gives to both network ends.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  const std::vector<int> ranks = testing::iota_ranks(topo.gpu_count());
  FlowGraph g;
  const CollectivePlan plan =
      add_collective(g, topo, tree_allreduce(ranks, 4.0 * 1024 * 1024, 1, 512.0 * 1024, Fidelity::chunk));
  CHECK(plan.chunks == 4);  // 2 MiB per tree in 512 KiB chunks
  CHECK(plan.flows == 2LL * 2 * 31 * 4);
  auto node_of = [&](int gpu) { return topo.vertex(topo.gpu_vertex(gpu)).node; };
  int network = 0;
  std::vector<std::set<int>> ends(4);
  for (const Flow& f : g.flows()) {
    if (node_of(f.src) == node_of(f.dst)) continue;
    ++network;
    ends[static_cast<std::size_t>(node_of(f.src))].insert(f.src);
    ends[static_cast<std::size_t>(node_of(f.dst))].insert(f.dst);
  }
  CHECK(network == 2 * 2 * 3 * 4);
  CHECK(g.size() == plan.flows);
  // The coarse levels carry the two trees' identical chain hops inside each node as one flow:
  // 2 x 28 chain hops and 2 x 2 x 3 network hops.
  FlowGraph coarse;
  const CollectivePlan step =
      add_collective(coarse, topo, tree_allreduce(ranks, 4.0 * 1024 * 1024, 1, 512.0 * 1024, Fidelity::step));
  CHECK(step.flows == 2 * 28 + 2 * 2 * 3);
  CHECK(coarse.size() == step.flows);
  for (std::size_t node = 0; node < ends.size(); ++node) {
    CAPTURE(node);
    CHECK(ends[node] == std::set<int>{8 * static_cast<int>(node)});  // channel 0: each node's GPU 0
  }
}

TEST_CASE("sim tree: other collectives than all-reduce are refused") {
  const auto topo = testing::star(4, 50e9, 1e-6);
  for (const auto op : {CollectiveOp::allgather, CollectiveOp::broadcast, CollectiveOp::alltoall}) {
    CollectiveSpec spec = tree_allreduce({0, 1, 2, 3}, 1024, 1, 0, Fidelity::chunk);
    spec.op = op;
    FlowGraph g;
    CHECK_THROWS_WITH_AS(add_collective(g, topo, spec), doctest::Contains("all-reduce only"), InputError);
  }
  CHECK_THROWS_WITH_AS(algorithm_from_string("collnet", "--algo"),
                       doctest::Contains("ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain"),
                       InputError);
  CHECK(algorithm_from_string("Tree", "--algo") == Algorithm::tree);
}

TEST_CASE("sim tree: odd node counts and shared NVSwitch ports (5 HGX B200 nodes, 8 channels)") {
  // The second tree is the first shifted by one node (odd count), and each hop crosses its sender's
  // and its receiver's NVSwitch port, loaded by different channels: the coarse levels share both
  // max-min fairly (link_sharing.cpp); the busiest link alone was -12.7% at 16 MiB.
  const auto topo = topologies::build_topology(topologies::load_cluster("hgx-b200"), 5);
  Simulator sim(topo);
  const std::vector<int> ranks = testing::iota_ranks(topo.gpu_count());
  for (const double mib : {1.0, 16.0, 64.0}) {
    const double S = mib * 1024 * 1024;
    const double chunk = run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::chunk));
    CAPTURE(mib);
    CHECK(run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::edge)) == approx(chunk).epsilon(0.01));
  }
}
