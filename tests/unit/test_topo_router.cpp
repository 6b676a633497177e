// Topology core: hand-built graphs with the default ShortestPathRouter, path latency/bandwidth.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/topology.hpp"

using namespace commstack::topologies;

TEST_CASE("topo: ShortestPathRouter finds the fewest-hop path, deterministic, empty for src == dst") {
  // g0 - s0 - g1, and a longer detour g0 - s1 - s2 - g1; a third GPU only behind s2.
  Topology t;
  const int g0 = t.add_vertex({VertexKind::gpu, "g0", 0, 0, 0});
  const int g1 = t.add_vertex({VertexKind::gpu, "g1", 1, 0, 0});
  const int g2 = t.add_vertex({VertexKind::gpu, "g2", 2, 0, 0});
  const int s0 = t.add_vertex({VertexKind::fabric_switch, "s0", -1, 0, 1});
  const int s1 = t.add_vertex({VertexKind::fabric_switch, "s1", -1, 1, 1});
  const int s2 = t.add_vertex({VertexKind::fabric_switch, "s2", -1, 2, 1});
  t.add_link(g0, s1, 10, 1e-6, LinkKind::network);  // 0
  t.add_link(s1, s2, 10, 1e-6, LinkKind::network);  // 1
  t.add_link(s2, g1, 10, 1e-6, LinkKind::network);  // 2
  t.add_link(g0, s0, 5, 2e-6, LinkKind::network);   // 3
  t.add_link(g1, s0, 7, 2e-6, LinkKind::network);   // 4: stored as g1 -> s0, crossed backwards
  t.add_link(s2, g2, 10, 1e-6, LinkKind::network);  // 5
  const auto p = t.route(0, 1);
  CHECK(p == Path{{3, true}, {4, false}});
  CHECK(t.path_latency(p) == approx(4e-6));
  CHECK(t.path_bandwidth(p) == approx(5));
  CHECK(t.route(1, 0) == Path{{4, true}, {3, false}});
  CHECK(t.route(0, 0).empty());
  CHECK(ShortestPathRouter{}.route(t, 1, 1).empty());
  CHECK(topo_test::path_problem(t, 0, 2, t.route(0, 2)) == "");
  CHECK(t.route(0, 2).size() == 3);
  CHECK(t.route(0, 2) == t.route(0, 2));
  CHECK(gpu_diameter(t) == 3);
  // Bisection: GPU 0 against GPUs 1 and 2; cut at g0's two links = 10 + 5.
  CHECK(bisection_bandwidth(t) == approx(15));
}

TEST_CASE("topo: ShortestPathRouter and validation report a disconnected topology") {
  Topology t;
  t.name = "islands";
  const int g0 = t.add_vertex({VertexKind::gpu, "g0", 0, 0, 0});
  const int g1 = t.add_vertex({VertexKind::gpu, "g1", 1, 0, 0});
  const int s = t.add_vertex({VertexKind::fabric_switch, "s", -1, 0, 1});
  t.add_link(g0, s, 1, 0, LinkKind::network);
  (void)g1;
  CHECK_THROWS_WITH_AS(t.route(0, 1), doctest::Contains("no path from GPU 0 to GPU 1"), commstack::InputError);
  CHECK_THROWS_WITH_AS(check_connected(t, "hand.json"), "hand.json: the topology is disconnected: g1 cannot reach g0 "
                                                        "(does every node have a NIC in /node/nics and a fabric in /fabric?)",
                       commstack::InputError);
  CHECK_THROWS_AS(t.add_link(g0, s, -1, 0, LinkKind::network), commstack::InputError);
}

TEST_CASE("topo: 2048-node dgx-h100 (16k GPUs) builds, routes and validates") {
  const auto t = build_topology(load_cluster("dgx-h100"), 2048);
  CHECK(t.gpu_count() == 16384);
  for (int a = 0; a < 16384; a += 997) {
    for (int b = 5; b < 16384; b += 1231) CHECK(topo_test::path_problem(t, a, b, t.route(a, b)) == "");
  }
  CHECK(gpu_diameter(t) == 8);
}
