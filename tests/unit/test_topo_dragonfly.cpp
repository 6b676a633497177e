// Dragonfly: minimal local-global-local routes, hop bounds, circulant global wiring.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

using namespace commstack::topologies;

namespace {

ClusterSpec small_dragonfly(int global_links) {
  return topo_test::preset_with("gh200-slingshot", {{"fabric", {{"routers_per_group", 4},
                                                                {"nodes_per_router", 2},
                                                                {"global_links_per_router", global_links}}}});
}

int router_hops(const Topology& t, const Path& p) {
  int n = 0;
  for (const auto& h : p) {
    const auto& l = t.link(h.link);
    n += t.vertex(l.a).kind == VertexKind::router && t.vertex(l.b).kind == VertexKind::router;
  }
  return n;
}

}  // namespace

TEST_CASE("topo: dragonfly minimal routes take at most local-global-local") {
  const auto t = build_topology(small_dragonfly(1), 40);  // 5 groups of 4 routers x 2 nodes, 4 global ports/group
  CHECK(summarize(t).fabric_switches == 20);
  for (int a = 0; a < t.gpu_count(); a += 3) {
    for (int b = 0; b < t.gpu_count(); ++b) {
      const auto p = t.route(a, b);
      CHECK(topo_test::path_problem(t, a, b, p) == "");
      const int na = a / 4;
      const int nb = b / 4;
      const int hops = router_hops(t, p);
      if (na / 2 == nb / 2) CHECK(hops == 0);            // same router
      else if (na / 8 == nb / 8) CHECK(hops == 1);       // same group: one local link
      else CHECK((hops >= 1 && hops <= 3));               // local? global local?
    }
  }
  // Diameter: GPU-NIC-router, local, global, local, router-NIC-GPU = 7.
  CHECK(gpu_diameter(t) == 7);
  CHECK(gpu_diameter(t) == gpu_diameter_exhaustive(t));
}

TEST_CASE("topo: dragonfly parallel global links are chosen by destination and never exceed the port budget") {
  const auto t = build_topology(small_dragonfly(2), 24);  // 3 groups, 8 global ports per group, 4 per pair
  int global_links = 0;
  for (const auto& l : t.links()) {
    const auto& va = t.vertex(l.a);
    const auto& vb = t.vertex(l.b);
    if (va.kind == VertexKind::router && vb.kind == VertexKind::router && va.local / 4 != vb.local / 4) ++global_links;
  }
  CHECK(global_links == 3 * 4);
  // Each router carries exactly its 2 global ports.
  std::vector<int> per_router(12, 0);
  for (const auto& l : t.links()) {
    const auto& va = t.vertex(l.a);
    const auto& vb = t.vertex(l.b);
    if (va.kind == VertexKind::router && vb.kind == VertexKind::router && va.local / 4 != vb.local / 4) {
      ++per_router[static_cast<std::size_t>(va.local)];
      ++per_router[static_cast<std::size_t>(vb.local)];
    }
  }
  for (int r = 0; r < 12; ++r) CHECK(per_router[static_cast<std::size_t>(r)] == 2);
  CHECK(t.route(0, 23 * 4) == t.route(0, 23 * 4));
  CHECK(gpu_diameter(t) == gpu_diameter_exhaustive(t));
}

TEST_CASE("topo: dragonfly with too few global links is an input error") {
  CHECK_THROWS_WITH_AS(build_topology(small_dragonfly(0), 24),
                       doctest::Contains("/fabric/global_links_per_router: 24 nodes need 3 groups"),
                       commstack::InputError);
}
