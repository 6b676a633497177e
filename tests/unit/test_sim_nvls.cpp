// NVLS on the SimGrid fabric (sim/algorithms/nvls.cpp): the NVSwitch as a flow endpoint that
// reduces (multimem load-reduce) and multicasts (multimem store). Closed forms for one chunk, the
// port bound S + S/n with pipelining, the coarse levels against the chunk level, NVLS against the
// ring on the same node, and the errors for what NCCL does not run as NVLS.
#include <stdexcept>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include "approx.hpp"

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/report/trace.hpp"
#include "test_sim_helpers.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::sim;

namespace {

// n GPUs on one NVSwitch: GPU i -- switch, `port_Bps` per direction, `hop_latency_s` one way.
topologies::Topology nvswitch_star(int n, double port_Bps, double hop_latency_s) {
  using namespace commstack::topologies;
  Topology t;
  t.name = fmt::format("nvswitch{}", n);
  t.nodes = 1;
  t.gpus_per_node = n;
  const int sw = t.add_vertex(Vertex{VertexKind::nvswitch, "nvswitch", 0, 0, 0});
  for (int i = 0; i < n; ++i) {
    const int g = t.add_vertex(Vertex{VertexKind::gpu, fmt::format("g{}", i), 0, i, 0});
    t.add_link(g, sw, port_Bps, hop_latency_s, LinkKind::nvlink);
  }
  return t;
}

CollectiveSpec nvls(CollectiveOp op, int n, double bytes, int channels, double chunk, Fidelity f) {
  return testing::collective_spec(op, Algorithm::nvls, testing::iota_ranks(n), bytes, channels, chunk, f);
}

double run(Simulator& sim, const CollectiveSpec& spec) { return testing::run_alone(sim, spec); }

}  // namespace

TEST_CASE("topology endpoints: every NVSwitch after the GPUs, reached over the GPU's own NVLink port") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  REQUIRE(topo.gpu_count() == 16);
  CHECK(topo.nvswitch_count() == 2);
  CHECK(topo.endpoint_count() == 18 + topo.fabric_switch_count());  // fabric switches last
  CHECK(topo.nvswitch_endpoint(0) == 16);
  CHECK(topo.nvswitch_endpoint(7) == 16);
  CHECK(topo.nvswitch_endpoint(8) == 17);
  CHECK(topo.endpoint_vertex(17).kind == topologies::VertexKind::nvswitch);
  CHECK(topo.endpoint_vertex(3).name == topo.vertex(topo.gpu_vertex(3)).name);
  // GPU 3 -> its switch and back: the one link of its port, both directions; GPU to GPU is route().
  const auto up = topo.endpoint_route(3, 16);
  const auto down = topo.endpoint_route(16, 3);
  REQUIRE(up.size() == 1);
  REQUIRE(down.size() == 1);
  CHECK(up[0].link == down[0].link);
  CHECK(up[0].forward != down[0].forward);
  CHECK(topo.path_bandwidth(up) == approx(450e9));
  CHECK(topo.endpoint_route(3, 5) == topo.route(3, 5));
  // Another node's switch is not one hop away: a caller's bug, not a user's input.
  CHECK_THROWS_AS(topo.endpoint_route(3, 17), std::logic_error);
  CHECK_THROWS_AS(topo.endpoint_route(16, 17), std::logic_error);
}

TEST_CASE("sim nvls: one chunk, closed forms of all-reduce, reduce-scatter and all-gather") {
  // A GPU's port carries n reads of S/n (its copy of every shard) and n multicast writes of S/n;
  // the owner's result and store are S/n each. With one chunk the four stages follow each other:
  // all-reduce 2 S/B + 2 S/(n B) + 4 alpha; reduce-scatter (reads, result) and all-gather (store,
  // multicast) S/B + S/(n B) + 2 alpha, with S the gathered size for the last two.
  constexpr double B = 100e9, alpha = 1e-6;
  constexpr int n = 8;
  const auto topo = nvswitch_star(n, B, alpha);
  Simulator sim(topo);
  for (const double S : {8192.0, 1048576.0, 268435456.0}) {
    CAPTURE(S);
    CHECK(run(sim, nvls(CollectiveOp::allreduce, n, S, 1, 0, Fidelity::chunk)) ==
          approx(2 * S / B + 2 * S / (n * B) + 4 * alpha).epsilon(1e-9));
    for (const CollectiveOp op : {CollectiveOp::reducescatter, CollectiveOp::allgather}) {
      CAPTURE(to_string(op));
      CHECK(run(sim, nvls(op, n, S, 1, 0, Fidelity::chunk)) ==
            approx(S / B + S / (n * B) + 2 * alpha).epsilon(1e-9));
    }
  }
}

TEST_CASE("sim nvls: pipelined, a port carries S + S/n each way, the coarse levels agree within 1%") {
  constexpr double B = 100e9, alpha = 1e-6;
  constexpr int n = 8;
  const auto topo = nvswitch_star(n, B, alpha);
  Simulator sim(topo);
  const double S = 1073741824.0;
  const double bound = (S + S / n) / B;
  for (const int channels : {1, 4}) {
    CAPTURE(channels);
    const double chunk = run(sim, nvls(CollectiveOp::allreduce, n, S, channels, 1048576, Fidelity::chunk));
    // A round: one chunk of every hop on a port, (n + 1) chunks a channel. The four stages (read,
    // result, store, multicast) fill and drain the pipeline in at most three rounds past the bound.
    const double round = (n + 1) * channels * 1048576.0 / B;
    CHECK(chunk >= bound);
    CHECK(chunk <= bound + 3 * round);
    for (const Fidelity f : {Fidelity::step, Fidelity::edge}) {
      CAPTURE(to_string(f));
      CHECK(run(sim, nvls(CollectiveOp::allreduce, n, S, channels, 1048576, f)) ==
            approx(chunk).epsilon(0.01));
    }
  }
  // The edge level is one flow per port direction, whatever the channels and chunks; automatic
  // takes it, since it ends where the chunk level does.
  const CollectivePlan edge =
      plan_collective(topo, nvls(CollectiveOp::allreduce, n, S, 4, 1048576, Fidelity::automatic));
  CHECK(edge.fidelity == Fidelity::edge);
  CHECK(edge.flows == 2 * n);
  const CollectivePlan fine =
      plan_collective(topo, nvls(CollectiveOp::allreduce, n, S, 4, 1048576, Fidelity::chunk));
  CHECK(fine.flows == 4LL * n * (2 * n + 2) * 32);  // 32 chunks of 1 MiB per shard per channel
}

TEST_CASE("sim nvls: on a DGX H100 node NVLS moves S + S/n where the ring moves 2 (n - 1) / n S") {
  // The same 1 GiB all-reduce on the preset's 450 GB/s ports: the ring's bound over NVLS's is
  // (2 x 7/8) / (9/8) = 1.556; the two pipelines' fill and drain stay within 3% of it.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 1);
  Simulator sim(topo);
  const double S = 1073741824.0;
  CollectiveSpec ring = nvls(CollectiveOp::allreduce, 8, S, 8, 2097152, Fidelity::automatic);
  ring.algorithm = Algorithm::ring;
  const double t_ring = run(sim, ring);
  const double t_nvls = run(sim, nvls(CollectiveOp::allreduce, 8, S, 8, 131072, Fidelity::automatic));
  CHECK(t_nvls >= 1.125 * S / 450e9);
  CHECK(t_ring / t_nvls == approx(1.75 / 1.125).epsilon(0.03));
}

TEST_CASE("sim nvls: the trace names the NVSwitch as the other end of the reads and writes") {
  const auto topo = nvswitch_star(2, 100e9, 1e-6);
  Simulator sim(topo);
  FlowGraph g;
  add_collective(g, topo, nvls(CollectiveOp::allgather, 2, 4096, 1, 0, Fidelity::chunk));
  const auto r = sim.run(g, true);
  REQUIRE(r.flows.size() == 6);  // per shard: the owner's store, then the switch's two writes
  const std::string trace = format_trace(topo, r.flows);
  CHECK(trace.find("\"name\":\"nvswitch\"") != std::string::npos);
}

TEST_CASE("sim nvls: what NCCL does not run as NVLS is refused with the reason") {
  const auto two_nodes = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  CollectiveSpec across = nvls(CollectiveOp::allreduce, 16, 1e6, 1, 0, Fidelity::automatic);
  CHECK_THROWS_WITH_AS(plan_collective(two_nodes, across), doctest::Contains("NVLSTree"), InputError);
  CollectiveSpec a2a = nvls(CollectiveOp::alltoall, 8, 1e6, 1, 0, Fidelity::automatic);
  CHECK_THROWS_WITH_AS(plan_collective(two_nodes, a2a), doctest::Contains("not alltoall"), InputError);
  const auto no_switch = testing::star(4, 100e9, 1e-6);  // GPUs on a network switch
  CHECK_THROWS_WITH_AS(
      plan_collective(no_switch, nvls(CollectiveOp::allreduce, 4, 1e6, 1, 0, Fidelity::automatic)),
      doctest::Contains("needs GPUs on an NVSwitch"), InputError);
  CHECK(algorithm_from_string("NVLS", "--algo") == Algorithm::nvls);
  CHECK(algorithm_from_string("CollNetDirect", "--algo") == Algorithm::collnet_direct);
  CHECK(algorithm_from_string("collnetchain", "--algo") == Algorithm::collnet_chain);
  CHECK_THROWS_WITH_AS(algorithm_from_string("nvls_tree", "--algo"),
                       doctest::Contains("ring, tree, nvls, nvlstree, pat, collnetdirect or collnetchain"),
                       InputError);
}

TEST_CASE("sim nvlstree: two DGX H100 nodes, bound S / (8 x 50 GB/s), the coarse levels agree within 1%") {
  // Each head (one per GPU) owns S/8: its domain's NVLS reduction, one half up and down each tree,
  // the NVLS store. A node's 8 NICs send S in all (half of every shard up one tree, the other half
  // down the other), its 450 GB/s ports S + S/8 each way: both bounds are S / 400 GB/s.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  Simulator sim(topo);
  const double S = 268435456.0;
  auto spec = [&](Fidelity f) {
    return testing::collective_spec(CollectiveOp::allreduce, Algorithm::nvlstree, testing::iota_ranks(16), S,
                                    1, 131072, f);
  };
  const double chunk = testing::run_alone(sim, spec(Fidelity::chunk));
  CHECK(chunk >= S / 400e9);
  CHECK(chunk <= S / 400e9 * 1.05);
  for (const Fidelity f : {Fidelity::step, Fidelity::edge}) {
    CAPTURE(to_string(f));
    CHECK(testing::run_alone(sim, spec(f)) == approx(chunk).epsilon(0.01));
  }
  const CollectivePlan automatic = plan_collective(topo, spec(Fidelity::automatic));
  CHECK(automatic.fidelity == Fidelity::edge);
  // 8 GPUs x 2 nodes x 2 port directions (one flow per switch port and direction), and each head
  // pair's tree hops apart (GPU-to-GPU hops are not merged, sim/algorithms/dag.cpp): 8 pairs x 2
  // trees x up and down.
  CHECK(automatic.flows == 32 + 8 * 2 * 2);
}

TEST_CASE("sim nvlstree: four DGX H100 nodes, the coarse levels within 1% of the chunk level") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  Simulator sim(topo);
  for (const double S : {65536.0, 8388608.0}) {
    CAPTURE(S);
    auto spec = [&](Fidelity f) {
      return testing::collective_spec(CollectiveOp::allreduce, Algorithm::nvlstree, testing::iota_ranks(32),
                                      S, 2, 131072, f);
    };
    const double chunk = testing::run_alone(sim, spec(Fidelity::chunk));
    for (const Fidelity f : {Fidelity::step, Fidelity::edge}) {
      CAPTURE(to_string(f));
      CHECK(testing::run_alone(sim, spec(f)) == approx(chunk).epsilon(0.01));
    }
  }
}

TEST_CASE("sim nvlstree: what NCCL does not run as NVLSTree is refused with the reason") {
  const auto one = topologies::build_topology(topologies::load_cluster("dgx-h100"), 1);
  auto spec = testing::collective_spec(CollectiveOp::allreduce, Algorithm::nvlstree, testing::iota_ranks(8),
                                       1e6, 1, 0, Fidelity::automatic);
  CHECK_THROWS_WITH_AS(plan_collective(one, spec), doctest::Contains("NCCL runs NVLS there"), InputError);
  const auto two = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  spec.ranks = {0, 1, 2, 8};
  CHECK_THROWS_WITH_AS(plan_collective(two, spec), doctest::Contains("same number of ranks"), InputError);
  spec.ranks = testing::iota_ranks(16);
  spec.op = CollectiveOp::allgather;
  CHECK_THROWS_WITH_AS(plan_collective(two, spec), doctest::Contains("allreduce only"), InputError);
  CHECK(algorithm_from_string("NVLSTree", "--algo") == Algorithm::nvlstree);
}
