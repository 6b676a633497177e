// Multi-node NVLink domains (GB200 NVL72): GPUs of a domain talk through its one NVSwitch plane;
// other domains are reached over the scale-out NICs.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

using namespace commstack::topologies;

TEST_CASE("topo: gb200-nvl72 same-domain traffic crosses nodes through the domain NVSwitch") {
  const auto t = build_topology(load_cluster("gb200-nvl72"));
  using V = std::vector<std::string>;
  // Node 0 GPU 1 -> node 17 GPU 2: same 18-node domain.
  CHECK(topo_test::path_names(t, 1, t.route(1, 17 * 4 + 2)) == V{"n0.gpu1", "nvl0.nvswitch", "n17.gpu2"});
  CHECK(t.path_bandwidth(t.route(1, 17 * 4 + 2)) == approx(900e9));
  // Node 0 -> node 18 (next domain, next unit): rail-aligned but cross-unit, so through a spine.
  const auto p = t.route(1, 18 * 4 + 1);
  CHECK(p.size() == 6);
  CHECK(t.path_bandwidth(p) == approx(50e9));
  const auto s = summarize(t);
  CHECK(s.nvswitches == 2);
  CHECK(s.links_nvlink == 144);
  // Halves are the two domains: bisection is the 72 NICs of one rack.
  CHECK(s.bisection_Bps == approx(72 * 50e9));
  CHECK(s.diameter_hops == 6);
}

TEST_CASE("topo: an NVLink domain without a scale-out fabric is one GPU island") {
  // merge_patch: null deletes the fat-tree fields, which "none" does not accept.
  auto spec = topo_test::preset_with("gb200-nvl72", {{"nodes", 18},
                                                     {"fabric", {{"kind", "none"}, {"link_bandwidth", nullptr},
                                                                 {"link_latency", nullptr}, {"tiers", nullptr},
                                                                 {"switch_radix", nullptr}, {"nodes_per_unit", nullptr}}}});
  const auto t = build_topology(spec);
  CHECK(t.gpu_count() == 72);
  CHECK(gpu_diameter(t) == 2);
  CHECK(bisection_bandwidth(t) == approx(36 * 900e9));
}
