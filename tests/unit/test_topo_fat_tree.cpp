// Rail-optimized and plain fat trees: hop counts, rail alignment, d-mod-k ECMP, switch counts
// against the SuperPOD RA table, and bisection against closed forms.
#include <map>
#include <set>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

using namespace commstack::topologies;
using nlohmann::json;

namespace {

int fabric_switches(const Topology& t, int tier) {
  int n = 0;
  for (const auto& v : t.vertices()) n += v.kind == VertexKind::fabric_switch && v.tier == tier;
  return n;
}

// A small rail-optimized cluster: 4 GPUs + 4 NICs per node, units of 2 nodes, radix 8.
ClusterSpec small_rail(const json& fabric_patch = json::object()) {
  json patch = {{"node", {{"gpus", 4}}},
                {"fabric", {{"nodes_per_unit", 2}, {"switch_radix", 8}, {"tiers", "auto"}}}};
  patch["fabric"].merge_patch(fabric_patch);
  return topo_test::preset_with("dgx-h100", patch);
}

}  // namespace

TEST_CASE("topo: rail fat tree paths: same node, rail-aligned same unit, cross rail, cross unit") {
  const auto t = build_topology(load_cluster("dgx-h100"), 64);  // 2 SU, 2 tiers
  using V = std::vector<std::string>;
  CHECK(topo_test::path_names(t, 0, t.route(0, 3)) == V{"n0.gpu0", "n0.nvswitch", "n0.gpu3"});
  // GPU 2 of node 0 to GPU 2 of node 5 (same SU): GPU-NIC-leaf-NIC-GPU.
  CHECK(topo_test::path_names(t, 2, t.route(2, 5 * 8 + 2)) ==
        V{"n0.gpu2", "n0.nic2", "leaf.su0.r2", "n5.nic2", "n5.gpu2"});
  // Same rail, other SU: two switch hops more (up to a spine and back down).
  const auto cross_su = t.route(2, 40 * 8 + 2);
  CHECK(cross_su.size() == 6);
  const auto names = topo_test::path_names(t, 2, cross_su);
  CHECK(names[2] == "leaf.su0.r2");
  CHECK(names[3].rfind("spine", 0) == 0);
  CHECK(names[4] == "leaf.su1.r2");
  // Cross rail: the rail-k leaf only serves NICs k, so the bytes cross NVLink to the GPU of the
  // destination's rail and leave by its NIC (NCCL's PXN), instead of climbing to a spine.
  CHECK(topo_test::path_names(t, 0, t.route(0, 5 * 8 + 1)) ==
        V{"n0.gpu0", "n0.nvswitch", "n0.gpu1", "n0.nic1", "leaf.su0.r1", "n5.nic1", "n5.gpu1"});
  // Link kinds along a rail-aligned path.
  const auto p = t.route(2, 5 * 8 + 2);
  std::vector<LinkKind> kinds;
  for (const auto& h : p) kinds.push_back(t.link(h.link).kind);
  CHECK(kinds == std::vector<LinkKind>{LinkKind::pcie, LinkKind::network, LinkKind::network, LinkKind::pcie});
  CHECK(t.path_bandwidth(p) == approx(50e9));
  CHECK(t.path_latency(p) == approx(2 * 500e-9 + 2 * 600e-9));
}

TEST_CASE("topo: dgx-h100 switch counts follow the SuperPOD RA table") {
  // [S26]: 2 SU 16/8; 4 SU 32/16; 8 SU 64/32 (2 tiers); 16 SU 128/128/64; 64 SU 512/512/256.
  const std::map<int, std::array<int, 3>> table = {
      {64, {16, 8, 0}}, {128, {32, 16, 0}}, {256, {64, 32, 0}}, {512, {128, 128, 64}}, {2048, {512, 512, 256}}};
  for (const auto& row : table) {
    const int nodes = row.first;  // not a structured binding: CAPTURE's lambda (clang < 16)
    const auto& counts = row.second;
    CAPTURE(nodes);
    const auto t = build_topology(load_cluster("dgx-h100"), nodes);
    CHECK(fabric_switches(t, 1) == counts[0]);
    CHECK(fabric_switches(t, 2) == counts[1]);
    CHECK(fabric_switches(t, 3) == counts[2]);
  }
}

TEST_CASE("topo: 3-tier rail fat tree: cross-pod paths climb to a core, diameter 8") {
  const auto t = build_topology(load_cluster("dgx-h100"), 512);  // pods of 4 SU = 128 nodes
  const auto same_pod = t.route(0, 100 * 8);                      // SU 0 -> SU 3, pod 0
  CHECK(same_pod.size() == 6);
  const auto cross_pod = t.route(0, 300 * 8);
  CHECK(cross_pod.size() == 8);
  CHECK(topo_test::path_names(t, 0, cross_pod)[4].rfind("core", 0) == 0);
  CHECK(topo_test::path_problem(t, 0, 300 * 8, cross_pod) == "");
  CHECK(gpu_diameter(t) == 8);
}

TEST_CASE("topo: d-mod-k is deterministic and spreads destinations over all spines") {
  const auto t1 = build_topology(load_cluster("dgx-h100"), 64);
  const auto t2 = build_topology(load_cluster("dgx-h100"), 64);
  // Rail 0, from every node of SU 0 to the node 32 ahead (SU 1): a shift permutation.
  std::map<int, int> uplink_use;  // leaf->spine link id -> flows
  std::set<int> spines;
  for (int n = 0; n < 32; ++n) {
    const int src = n * 8;
    const int dst = (n + 32) * 8;
    const auto p = t1.route(src, dst);
    CHECK(p == t2.route(src, dst));
    CHECK(p == t1.route(src, dst));
    REQUIRE(p.size() == 6);
    ++uplink_use[p[2].link];
    spines.insert(t1.link(p[2].link).b);
  }
  CHECK(spines.size() == 8);  // all 8 spines used
  // Each leaf-spine link aggregates 4 cables (32 uplinks / 8 spines): 4 flows each, never more.
  CHECK(uplink_use.size() == 8);
  for (const auto& [link, flows] : uplink_use) {
    CHECK(flows == 4);
    CHECK(t1.link(link).bandwidth_Bps == approx(4 * 50e9));
  }
}

TEST_CASE("topo: non-blocking fat tree bisection = N/2 x NIC bandwidth, 4:1 oversubscription = 1/4") {
  // 4 nodes x 4 GPUs, units of 2 nodes: the GPU halves are the two units, so the cut is the leaf uplinks.
  const auto nb = build_topology(small_rail(), 4);
  CHECK(bisection_bandwidth(nb) == approx(8 * 50e9));
  const auto over = build_topology(small_rail({{"oversubscription", {4}}}), 4);
  CHECK(bisection_bandwidth(over) == approx(8 * 50e9 / 4));
  // Same for the plain fat tree (all NICs of a node on one ToR).
  const auto plain = build_topology(
      topo_test::preset_with("dgx-h100", {{"node", {{"gpus", 4}}},
                                          {"fabric", {{"kind", "fat_tree"}, {"nodes_per_unit", 2}, {"switch_radix", 16},
                                                      {"oversubscription", {4}}}}}),
      4);
  CHECK(bisection_bandwidth(plain) == approx(8 * 50e9 / 4));
  // dgx-h100 at 512 nodes (3 tiers) is non-blocking end to end.
  CHECK(bisection_bandwidth(build_topology(load_cluster("dgx-h100"), 512)) == approx(256 * 8 * 50e9));
}

TEST_CASE("topo: plain fat tree: all NICs of a node on its ToR, paths and ECMP") {
  const auto t = build_topology(
      topo_test::preset_with("dgx-h100", {{"fabric", {{"kind", "fat_tree"}, {"nodes_per_unit", 2}, {"switch_radix", 32}}}}),
      6);
  CHECK(fabric_switches(t, 1) == 3);
  using V = std::vector<std::string>;
  CHECK(topo_test::path_names(t, 0, t.route(0, 8 + 5)) == V{"n0.gpu0", "n0.nic0", "tor0", "n1.nic5", "n1.gpu5"});
  CHECK(t.route(0, 2 * 8).size() == 6);
  for (int a = 0; a < t.gpu_count(); ++a) {
    for (int b = 0; b < t.gpu_count(); b += 7) CHECK(topo_test::path_problem(t, a, b, t.route(a, b)) == "");
  }
}

TEST_CASE("topo: diameter from representative nodes equals BFS from every GPU on partial units and pods") {
  // 13 nodes: units of 2 (the last one partial); radix 8 forces 3 tiers with partial pods.
  const auto spec = small_rail({{"tiers", 3}});
  for (int nodes : {1, 2, 3, 5, 13}) {
    CAPTURE(nodes);
    const auto t = build_topology(spec, nodes);
    CHECK(gpu_diameter(t) == gpu_diameter_exhaustive(t));
  }
  CHECK(gpu_diameter(build_topology(spec, 13)) == 8);
}

TEST_CASE("topo: a GPU without its own NIC uses the nearest NIC of its node (PXN-like path)") {
  // 8 GPUs, NICs on GPUs 0 and 4 only.
  const auto spec = topo_test::preset_with("dgx-h100", {{"node", {{"nics", {{"gpus", {0, 4}}}}}},
                                                        {"fabric", {{"nodes_per_unit", 2}}}});
  const auto t = build_topology(spec, 2);
  using V = std::vector<std::string>;
  // GPU 3 is nearer to GPU 4 (distance 1) than to GPU 0 (distance 3).
  CHECK(topo_test::path_names(t, 3, t.route(3, 8 + 4)) ==
        V{"n0.gpu3", "n0.nvswitch", "n0.gpu4", "n0.nic1", "leaf.su0.r1", "n1.nic1", "n1.gpu4"});
  // GPU 2 is at distance 2 from both: the lower GPU (0) wins.
  CHECK(topo_test::path_names(t, 2, t.route(2, 8))[3] == "n0.nic0");
  CHECK(topo_test::path_problem(t, 2, 8 + 6, t.route(2, 8 + 6)) == "");
}

TEST_CASE("topo: dgx-a100 Selene size uses 3 tiers on 40-port switches") {
  const auto t = build_topology(load_cluster("dgx-a100"), 280);  // 14 SU x 8 rails = 112 leaves > 40
  CHECK(fabric_switches(t, 1) == 112);
  CHECK(fabric_switches(t, 3) > 0);
  CHECK(bisection_bandwidth(t) == approx(140 * 8 * 25e9));
  CHECK(gpu_diameter(t) == gpu_diameter_exhaustive(t));
}

TEST_CASE("topo: 3-tier spine oversubscription 2:1 halves the cross-pod bisection") {
  // Radix 8, 4 rails: one unit (2 nodes) per pod, so the GPU halves are the two pods.
  const auto nb = build_topology(small_rail({{"tiers", 3}, {"oversubscription", {1, 1}}}), 4);
  CHECK(fabric_switches(nb, 3) > 0);
  CHECK(bisection_bandwidth(nb) == approx(8 * 50e9));
  const auto over = build_topology(small_rail({{"tiers", 3}, {"oversubscription", {1, 2}}}), 4);
  CHECK(bisection_bandwidth(over) == approx(8 * 50e9 / 2));
  CHECK(over.route(0, 2 * 4).size() == 8);  // rail 0 of pod 0 to rail 0 of pod 1 through a core
  CHECK(gpu_diameter(over) == gpu_diameter_exhaustive(over));
}
