// CollNet on the SimGrid fabric (sim/algorithms/collnet.cpp): the InfiniBand switches as flow
// endpoints that reduce and multicast (SHARP). Closed forms on one switch, the aggregation tree of a
// two-level fabric, the coarse levels against the chunk level, NVLink and NIC bounds on DGX H100
// nodes, NCCL's chunk rule, and the errors for what NCCL does not run as CollNet.
#include <stdexcept>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include "approx.hpp"

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "test_sim_helpers.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::sim;

namespace {

int vertex_named(const topologies::Topology& topo, const std::string& name) {
  for (int v = 0; v < topo.vertex_count(); ++v)
    if (topo.vertex(v).name == name) return v;
  FAIL("no vertex named " << name);
  return -1;
}

CollectiveSpec collnet(Algorithm a, std::vector<int> ranks, double bytes, int channels, double chunk,
                       Fidelity f) {
  return testing::collective_spec(CollectiveOp::allreduce, a, std::move(ranks), bytes, channels, chunk, f);
}

// n nodes of one GPU on one switch: each GPU sends S up its port, the switch sums and sends S back
// down every port. One chunk: 2 S/B + 2 alpha. K chunks: the downs follow the ups one chunk behind,
// on the other direction of the ports: (K + 1) S/(K B) + 2 alpha.
void check_one_switch_closed_forms(int n) {
  constexpr double B = 50e9, alpha = 2e-6;
  const auto topo = testing::star(n, B, alpha);
  Simulator sim(topo);
  for (const Algorithm a : {Algorithm::collnet_direct, Algorithm::collnet_chain}) {
    for (const double S : {65536.0, 16777216.0}) {
      CAPTURE(S);
      const auto one = collnet(a, testing::iota_ranks(n), S, 1, 0, Fidelity::chunk);
      CHECK(testing::run_alone(sim, one) == approx(2 * S / B + 2 * alpha).epsilon(1e-9));
      const int K = 8;
      const auto piped = collnet(a, testing::iota_ranks(n), S, 1, S / K, Fidelity::chunk);
      CHECK(testing::run_alone(sim, piped) == approx((K + 1) * S / (K * B) + 2 * alpha).epsilon(1e-9));
    }
  }
}

// Step and edge levels against the chunk level on `topo`, Direct and Chain, two sizes; automatic
// takes the edge level.
void check_coarse_levels(const topologies::Topology& topo, int ranks) {
  Simulator sim(topo);
  for (const Algorithm a : {Algorithm::collnet_direct, Algorithm::collnet_chain}) {
    for (const double S : {1048576.0, 33554432.0}) {
      CAPTURE(to_string(a));
      CAPTURE(S);
      const int ch = a == Algorithm::collnet_chain ? 4 : 2;
      const auto spec = [&](Fidelity f) { return collnet(a, testing::iota_ranks(ranks), S, ch, 65536, f); };
      const double fine = testing::run_alone(sim, spec(Fidelity::chunk));
      CHECK(testing::run_alone(sim, spec(Fidelity::step)) == approx(fine).epsilon(0.01));
      // The edge level's merged NIC pairs share GPU ports with single intra-node hops: each flow's
      // latency starts where SimGrid's equal rates end its bytes (coarse_flow_times, dag.cpp);
      // with the whole link's time instead, 2.9% (3 x 2) and 3.8% (4 x 4) fast at 1 MiB.
      CHECK(testing::run_alone(sim, spec(Fidelity::edge)) == approx(fine).epsilon(0.01));
      CHECK(plan_collective(topo, spec(Fidelity::automatic)).fidelity == Fidelity::edge);
    }
  }
}

}  // namespace

TEST_CASE("topology endpoints: fabric switches after the NVSwitches, reached through the GPU's NIC") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  REQUIRE(topo.gpu_count() == 16);
  REQUIRE(topo.nvswitch_count() == 2);
  // One scalable unit: a leaf per rail, and the spines above them.
  REQUIRE(topo.fabric_switch_count() >= 9);
  CHECK(topo.endpoint_count() == 18 + topo.fabric_switch_count());
  const int leaf3 = vertex_named(topo, "leaf.su0.r3");
  const int spine0 = vertex_named(topo, "spine0");
  const int e_leaf3 = topo.fabric_switch_endpoint(leaf3);
  const int e_spine0 = topo.fabric_switch_endpoint(spine0);
  CHECK(e_leaf3 >= 18);
  CHECK(topo.endpoint_vertex(e_leaf3).name == "leaf.su0.r3");
  CHECK(topo.fabric_switch_endpoint(topo.gpu_vertex(3)) == -1);
  // GPU 11 (node 1, GPU 3) -> its NIC over PCIe -> the rail-3 leaf; the reverse flips each hop.
  const auto up = topo.endpoint_route(11, e_leaf3);
  REQUIRE(up.size() == 2);
  CHECK(topo.link(up[0].link).kind == topologies::LinkKind::pcie);
  CHECK(topo.link(up[1].link).kind == topologies::LinkKind::network);
  CHECK(topo.path_bandwidth(up) == approx(50e9));  // 400 Gb/s ConnectX-7
  const auto down = topo.endpoint_route(e_leaf3, 11);
  REQUIRE(down.size() == 2);
  CHECK(down[0].link == up[1].link);
  CHECK(down[0].forward != up[1].forward);
  CHECK(down[1].link == up[0].link);
  // Leaf to spine: their cable.
  const auto ls = topo.endpoint_route(e_leaf3, e_spine0);
  REQUIRE(ls.size() == 1);
  CHECK(topo.vertex(topo.link(ls[0].link).a).name == "leaf.su0.r3");
  // GPU 3's NIC is not on rail 4's leaf, and leaves are not cabled to each other: callers' bugs.
  CHECK_THROWS_AS(topo.endpoint_route(3, topo.fabric_switch_endpoint(vertex_named(topo, "leaf.su0.r4"))),
                  std::logic_error);
  CHECK_THROWS_AS(
      topo.endpoint_route(e_leaf3, topo.fabric_switch_endpoint(vertex_named(topo, "leaf.su0.r4"))),
      std::logic_error);
}

TEST_CASE("sim collnet: one switch, 5 nodes, closed forms of Direct and Chain") {
  check_one_switch_closed_forms(5);
}

TEST_CASE("sim collnet: one switch, 16 nodes, closed forms of Direct and Chain") {
  check_one_switch_closed_forms(16);
}

TEST_CASE("sim collnet: a two-level fabric's aggregation tree, bound by the uplinks") {
  // 3 leaves of 2 GPUs, each leaf a node and each GPU a head (cabled to its leaf): rail k's tree takes
  // heads k up to their leaves, leaves 1 and 2 up to the spine, the spine down to leaf 0 (the root,
  // node 0's switch), and the sum back the same way. Each rail's head owns S/2, so leaves 1 and 2
  // send S up their uplink and receive S down, and leaf 0 receives both rails' sums from the spine
  // and sends the totals back: S / B_up each way, the bound, reached but for the pipeline's fill
  // (about 8 hops from a scatter to a gather, one chunk each on the uplink: 2 x chunk / B_up).
  constexpr double port = 100e9, uplink = 25e9, alpha = 1e-6;
  const auto topo = testing::two_level(3, 2, port, uplink, alpha);
  Simulator sim(topo);
  const double S = 64.0 * 1024 * 1024, chunk = 256.0 * 1024;
  const double t = testing::run_alone(
      sim, collnet(Algorithm::collnet_direct, testing::iota_ranks(6), S, 1, chunk, Fidelity::chunk));
  const double bound = S / uplink;
  CHECK(t >= bound);
  CHECK(t <= bound + 8 * (2 * chunk / uplink) + 16 * alpha);
  // The ring through the same uplinks carries 2 (n - 1) / n S per direction across each leaf
  // boundary: CollNet's advantage, 2 (n - 1) / n = 1.67 here, within the pipelines' fill.
  const double ring =
      testing::run_alone(sim, testing::collective_spec(CollectiveOp::allreduce, Algorithm::ring,
                                                       testing::iota_ranks(6), S, 1, chunk, Fidelity::chunk));
  CHECK(ring / t == approx(2.0 * 5 / 6).epsilon(0.04));
}

TEST_CASE("sim collnet: coarse levels within 1% of the chunk level, two-level 3x2, slow uplinks") {
  check_coarse_levels(testing::two_level(3, 2, 100e9, 25e9, 1e-6), 6);
}

TEST_CASE("sim collnet: coarse levels within 1% of the chunk level, two-level 4x4") {
  check_coarse_levels(testing::two_level(4, 4, 50e9, 100e9, 1e-6), 16);
}

TEST_CASE("sim collnet: coarse levels within 1% of the chunk level, 2 DGX H100 nodes") {
  check_coarse_levels(topologies::build_topology(topologies::load_cluster("dgx-h100"), 2), 16);
}

TEST_CASE("sim collnet: DGX H100 nodes, NVLink bound of Direct and Chain, the NIC bound off it") {
  // 8 heads a node (a NIC per GPU). Direct: every GPU sends 7/8 S to the other heads and gets 7/8 S
  // from them; Chain (8 channels, each on its own rail): the chains' up and down hops add up to the
  // same 1.75 S per GPU and direction. Both are NVLink-bound at 1.75 S / 450 GB/s, far above the NICs'
  // S/8 / 50 GB/s. The ring on the same nodes is NIC-bound: 2 (n-1)/n S / (8 x 50 GB/s) a node.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  Simulator sim(topo);
  const double S = 1024.0 * 1024 * 1024;
  const double nvlink_bound = 1.75 * S / 450e9;
  for (const Algorithm a : {Algorithm::collnet_direct, Algorithm::collnet_chain}) {
    CAPTURE(to_string(a));
    auto spec = collnet(a, testing::iota_ranks(32), S, 8, 128 * 1024, Fidelity::automatic);
    const double t = testing::run_alone(sim, spec);
    CHECK(t >= nvlink_bound);
    CHECK(t <= nvlink_bound * 1.01);
  }
}

// The stack model's fabric-bandwidth layer for CollNetDirect against the flows: the same NVLink
// bound of the busiest GPU, (h + g - 2) / h S each way with h heads of g GPUs (a head scatters to the
// h - 1 others and gathers its S/h out to g - 1), and the fabric simulation pipelined onto it.
void check_stack_collnet_bound(const topologies::ClusterSpec& spec, double per_gpu) {
  const double S = 1024.0 * 1024 * 1024;
  const double bound = per_gpu * S / 450e9;
  sim::stack::Knobs knobs;
  knobs.collnet = true;
  knobs.env.algo = "collnetdirect";
  knobs.env.proto = "simple";
  const auto p = sim::stack::Predictor(spec, 4, 8, knobs)
                     .predict(CollectiveOp::allreduce, S, sim::stack::prior_profile(90));
  CHECK(p.algorithm == "CollNetDirect");
  CHECK(p.breakdown.fabric_bandwidth_s == approx(bound).epsilon(1e-12));
  const auto topo = topologies::build_topology(spec, 4);
  Simulator sim(topo);
  const double t = testing::run_alone(sim, collnet(Algorithm::collnet_direct, testing::iota_ranks(32), S, 8,
                                                   128 * 1024, Fidelity::automatic));
  CHECK(t >= bound);
  CHECK(t <= bound * 1.01);
}

TEST_CASE("stack collnet: a head per GPU, the fabric-bandwidth layer is the flows' NVLink bound 1.75 S") {
  check_stack_collnet_bound(topologies::load_cluster("dgx-h100"), 1.75);
}

TEST_CASE("stack collnet: NICs on every other GPU, 4 heads of 8 GPUs, the bound is 2.5 S") {
  auto spec = topologies::load_cluster("dgx-h100");
  std::vector<topologies::NicSpec> even;
  for (const auto& nic : spec.node.nics)
    if (nic.gpu % 2 == 0) even.push_back(nic);
  REQUIRE(even.size() == 4);
  spec.node.nics = even;
  spec.node.nic_per_gpu = false;
  check_stack_collnet_bound(spec, 2.5);
}

TEST_CASE("sim collnet: NCCL's chunk, halved for calls too small for the pipeline") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 4);
  auto spec = collnet(Algorithm::collnet_direct, testing::iota_ranks(32), 0, 8, 0, Fidelity::automatic);
  // Direct, 8 channels x 8 heads, depth 2: bytes / (64 chunk) must reach 128 above 128 KiB, 16 above 32 KiB.
  spec.bytes = 8.0 * 1024 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 512 * 1024);
  spec.bytes = 1024.0 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 128 * 1024);
  spec.bytes = 32.0 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 32 * 1024);
  // Chain, depth 8 (the ranks of a node): bytes / (8 chunk) against 512, 64 and 8.
  spec.algorithm = Algorithm::collnet_chain;
  spec.bytes = 1024.0 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 256 * 1024);
  spec.bytes = 256.0 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 128 * 1024);
  spec.bytes = 16.0 * 1024 * 1024;
  CHECK(collnet_nccl_chunk(topo, spec) == 64 * 1024);
  spec.bytes = 1024.0;
  CHECK(collnet_nccl_chunk(topo, spec) == 32 * 1024);
}

TEST_CASE("sim collnet: what NCCL does not run as CollNet is refused with the reason") {
  const auto dgx = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  auto spec = collnet(Algorithm::collnet_direct, testing::iota_ranks(16), 1 << 20, 1, 0, Fidelity::automatic);
  spec.op = CollectiveOp::allgather;
  CHECK_THROWS_WITH_AS(plan_collective(dgx, spec), doctest::Contains("runs allreduce only"), InputError);
  spec.op = CollectiveOp::allreduce;
  spec.ranks = testing::iota_ranks(8);
  CHECK_THROWS_WITH_AS(plan_collective(dgx, spec), doctest::Contains("all 8 ranks are on one node"),
                       InputError);
  spec.ranks = {0, 1, 8};
  CHECK_THROWS_WITH_AS(plan_collective(dgx, spec), doctest::Contains("same number of ranks on every node"),
                       InputError);
  // More than NCCL_MAX_DIRECT_ARITY + 1 ranks on a node.
  auto wide_spec = topologies::load_cluster("dgx-h100");
  wide_spec.node.gpus = 16;  // a node larger than the preset's (which holds 8)
  const auto wide = topologies::build_topology(wide_spec, 2, 16);
  spec.ranks = testing::iota_ranks(32);
  CHECK_THROWS_WITH_AS(plan_collective(wide, spec), doctest::Contains("at most 8 ranks per node"),
                       InputError);
  // A torus's and a dragonfly's routers do not reduce: their NICs are cabled to routers, not to
  // fabric switches, and the refusal says so (not that the nodes lack network ports).
  const auto torus = topologies::build_topology(topologies::load_cluster("angara-torus"), 4);
  spec.ranks = testing::iota_ranks(torus.gpu_count());
  CHECK_THROWS_WITH_AS(
      plan_collective(torus, spec),
      doctest::Contains("NIC(s) of node 0 of topology 'angara-torus x 4 nodes' are cabled to torus "
                        "routers, which do not reduce"),
      InputError);
  const auto dragonfly = topologies::build_topology(topologies::load_cluster("gh200-slingshot"), 2);
  spec.ranks = testing::iota_ranks(dragonfly.gpu_count());
  CHECK_THROWS_WITH_AS(
      plan_collective(dragonfly, spec),
      doctest::Contains("the 4 NIC(s) of node 0 of topology 'gh200-slingshot x 2 nodes' are cabled to "
                        "dragonfly routers, which do not reduce"),
      InputError);
  // collnet_ports: a DGX H100 GPU's NIC is cabled to its rail's leaf; a GH200's to a dragonfly router.
  CHECK(sim::collnet_ports(dgx, 0) == 1);
  CHECK(sim::collnet_ports(dragonfly, 0) == 0);
  CHECK(sim::collnet_ports(torus, 0) == 0);
}
