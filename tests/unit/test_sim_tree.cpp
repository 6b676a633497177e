// The tree all-reduce (sim/algorithms/tree.cpp): NCCL's double binary tree across nodes and a chain
// inside each node, reduced up and broadcast down chunk by chunk. Closed form where the tree is a
// chain, the double binary tree's network bound, the coarse levels against the chunk level, and
// the structure NCCL builds (which GPUs carry a node's network traffic).
#include <set>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/select/nccl_trees.hpp"
#include "test_sim_helpers.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::sim;

namespace {

CollectiveSpec tree_allreduce(const std::vector<int>& ranks, double bytes, int channels, double chunk,
                              Fidelity f) {
  CollectiveSpec spec;
  spec.op = CollectiveOp::allreduce;
  spec.algorithm = Algorithm::tree;
  spec.ranks = ranks;
  spec.bytes = bytes;
  spec.channels = channels;
  spec.chunk_bytes = chunk;
  spec.fidelity = f;
  return spec;
}

double run(Simulator& sim, const CollectiveSpec& spec) {
  FlowGraph g;
  add_collective(g, sim.topology(), spec);
  return sim.run(g).duration_s;
}

}  // namespace

TEST_CASE("sim tree: two single-GPU nodes are a two-hop chain, 2 alpha + (1 + K) S / (K B)") {
  // Node 1 reduces into the root (node 0), which sends the result back: chunk k goes up, then down
  // the other direction of the same ports, while chunk k+1 goes up.
  constexpr double B = 50e9, h = 1e-6, alpha = 2 * h;
  const auto topo = testing::star(2, B, h);
  Simulator sim(topo);
  for (const double S : {8.0, 1048576.0, 1073741824.0})
    for (const int K : {1, 4, 32})
      for (const Fidelity f : {Fidelity::chunk, Fidelity::step, Fidelity::edge}) {
        const double expect = 2 * alpha + (1.0 + K) * S / K / B;
        CAPTURE(S);
        CAPTURE(K);
        CAPTURE(to_string(f));
        CHECK(run(sim, tree_allreduce({0, 1}, S, 1, S / K, f)) == doctest::Approx(expect).epsilon(1e-6));
      }
}

TEST_CASE("sim tree: 4 DGX H100 nodes reach the double binary tree's network bound") {
  // On 4 nodes some node is inner in one tree and has a parent in the other: it sends S/2 up and
  // S/2 down to each child, 2 S in all (select::nccl_dtree_max_egress). Its 8 NICs of 400 Gb/s
  // carry it at best in 2 S / 400 GB/s; with 8 channels spread over the NICs the simulated 1 GiB
  // all-reduce comes within 2% of that (the rest is the pipeline's fill and drain).
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  Simulator sim(topo);
  REQUIRE(select::nccl_dtree_max_egress(4) == doctest::Approx(2.0));
  const double S = 1073741824.0;
  const double bound = select::nccl_dtree_max_egress(4) * S / (8 * 50e9);
  const std::vector<int> ranks = testing::iota_ranks(topo.gpu_count());
  const double t = run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::automatic));
  CHECK(t >= bound);
  CHECK(t <= bound * 1.02);
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
            doctest::Approx(chunk).epsilon(0.01));
      CHECK(run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::edge)) ==
            doctest::Approx(chunk).epsilon(0.01));
    }
  }
}

TEST_CASE("sim tree: one channel is NCCL's tree: 2 (N-1) network hops, a node's network ends on two GPUs") {
  // 4 nodes x 8 GPUs, one channel (the first tree): the reduction and the broadcast each cross the
  // network once per node but the root, and NCCL's balanced pattern puts a node's parent (and its
  // second child) on its first GPU and its first child on its second.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  const std::vector<int> ranks = testing::iota_ranks(topo.gpu_count());
  FlowGraph g;
  const CollectivePlan plan =
      add_collective(g, topo, tree_allreduce(ranks, 4.0 * 1024 * 1024, 1, 512.0 * 1024, Fidelity::chunk));
  CHECK(plan.chunks == 8);
  CHECK(plan.flows == 2LL * 31 * 8);
  auto node_of = [&](int gpu) { return topo.vertex(topo.gpu_vertex(gpu)).node; };
  int network = 0;
  std::vector<std::set<int>> ends(4);
  for (const Flow& f : g.flows()) {
    if (node_of(f.src) == node_of(f.dst)) continue;
    ++network;
    ends[static_cast<std::size_t>(node_of(f.src))].insert(f.src);
    ends[static_cast<std::size_t>(node_of(f.dst))].insert(f.dst);
  }
  CHECK(network == 2 * 3 * 8);
  for (const auto& e : ends) {
    CHECK(e.size() >= 1);
    CHECK(e.size() <= 2);
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
  CHECK_THROWS_WITH_AS(algorithm_from_string("nvls", "--algo"), doctest::Contains("ring or tree"),
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
    CHECK(run(sim, tree_allreduce(ranks, S, 8, 512.0 * 1024, Fidelity::edge)) ==
          doctest::Approx(chunk).epsilon(0.01));
  }
}
