// Torus: dimension-order routing hop counts against the closed form, wrap-around, k = 2 rings,
// balanced shapes for --nodes, bisection of a k-ary 2-cube.
#include <cstdlib>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/builders/builders.hpp"
#include "topologies/cluster.hpp"

using namespace commstack::topologies;
using nlohmann::json;

namespace {

int router_hops(const Topology& t, const Path& p) {
  int n = 0;
  for (const auto& h : p) {
    const auto& l = t.link(h.link);
    n += t.vertex(l.a).kind == VertexKind::router && t.vertex(l.b).kind == VertexKind::router;
  }
  return n;
}

ClusterSpec torus(std::vector<int> dims) {
  int nodes = 1;
  for (int k : dims) nodes *= k;
  return topo_test::preset_with("angara-torus", {{"nodes", nodes}, {"fabric", {{"dims", dims}}}});
}

}  // namespace

TEST_CASE("topo: torus dimension-order hops = sum of min(|d|, k - |d|)") {
  const std::vector<int> dims{4, 3, 2, 5};
  const auto t = build_topology(torus(dims));
  CHECK(t.gpu_count() == 120);
  for (int a = 0; a < 120; ++a) {
    for (int b = 0; b < 120; ++b) {
      int expected = 0;
      for (int i = 0, stride = 1; i < 4; stride *= dims[static_cast<std::size_t>(i)], ++i) {
        const int k = dims[static_cast<std::size_t>(i)];
        const int d = std::abs((a / stride) % k - (b / stride) % k);
        expected += std::min(d, k - d);
      }
      const auto p = t.route(a, b);
      CHECK(router_hops(t, p) == expected);
      CHECK(topo_test::path_problem(t, a, b, p) == "");
      if (a != b) CHECK(p.size() == static_cast<std::size_t>(expected + 4));  // GPU-NIC-router ... router-NIC-GPU
    }
  }
}

TEST_CASE("topo: torus routes wrap around and go dimension 0 first") {
  const auto t = build_topology(torus({5, 5}));
  using V = std::vector<std::string>;
  // (0,0) -> (4,1): one step back round dimension 0, then one up dimension 1.
  CHECK(topo_test::path_names(t, 0, t.route(0, 4 + 5)) ==
        V{"n0.gpu0", "n0.nic0", "router(0,0)", "router(4,0)", "router(4,1)", "n9.nic0", "n9.gpu0"});
}

TEST_CASE("topo: torus link counts, diameter and bisection of a 4x4 torus") {
  const auto spec = topo_test::preset_with("angara-torus", {{"nodes", 16},
                                                            {"node", {{"nics", {{"bandwidth", "10TB/s"}}},
                                                                      {"pcie_bandwidth", "10TB/s"}}},
                                                            {"fabric", {{"dims", {4, 4}}}}});
  const auto t = build_topology(spec);
  const auto s = summarize(t);
  CHECK(s.links_network == 16 + 32);  // 16 NIC cables + 2 links per router
  CHECK(s.diameter_hops == 4 + 4);    // 2 + 2 router hops + GPU-NIC-router at both ends
  // Halves = rows y in {0,1} and {2,3}: the cut crosses 2 x 4 wrap-around and straight links.
  CHECK(s.bisection_Bps == approx(8 * 75e9 / 8));
  // A ring of 2 has one cable, not two.
  CHECK(summarize(build_topology(torus({2, 3}))).links_network == 6 + 3 + 6);
}

TEST_CASE("topo: --nodes on a torus derives the most balanced shape with as many dimensions") {
  CHECK(builders::balanced_dims(81, 4) == std::vector<int>{3, 3, 3, 3});
  CHECK(builders::balanced_dims(16, 4) == std::vector<int>{2, 2, 2, 2});
  CHECK(builders::balanced_dims(12, 4) == std::vector<int>{3, 2, 2, 1});
  CHECK(builders::balanced_dims(7, 3) == std::vector<int>{7, 1, 1});
  CHECK(builders::balanced_dims(1, 2) == std::vector<int>{1, 1});
  CHECK(builders::balanced_dims(4096, 4) == std::vector<int>{8, 8, 8, 8});
  const auto t = build_topology(load_cluster("angara-torus"), 256);
  CHECK(t.gpu_count() == 256);
  CHECK(gpu_diameter(t) == 4 + 8);  // 4x4x4x4: 2 hops per dimension
}
