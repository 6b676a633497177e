// Cluster JSON parsing: every preset parses; each kind of bad input gives one InputError naming
// origin, JSON path and expectation.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "common/error.hpp"
#include "test_topo_helpers.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::topologies;
using nlohmann::json;

namespace {

json minimal() {
  return json::parse(R"({
    "name": "mini", "nodes": 2,
    "node": {"gpus": 2, "nvswitch": true, "gpu_link_bandwidth": "100GB/s", "gpu_link_latency": "1us",
             "pcie_bandwidth": "32GB/s", "pcie_latency": "500ns",
             "nics": {"gpus": "all", "bandwidth": "100Gbps", "latency": 1e-6}},
    "fabric": {"kind": "fat_tree", "link_bandwidth": 12.5e9, "link_latency": "300ns", "tiers": 2,
               "switch_radix": 8, "nodes_per_unit": 2}
  })");
}

std::string error_of(const json& doc) {
  try {
    parse_cluster(doc, "cluster.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("topo: minimal cluster parses with units and numbers") {
  const auto c = parse_cluster(minimal(), "cluster.json");
  CHECK(c.nodes == 2);
  CHECK(c.node.gpus == 2);
  CHECK(c.node.gpu_link_bandwidth_Bps == approx(100e9));
  CHECK(c.node.gpu_link_latency_s == approx(1e-6));
  REQUIRE(c.node.nics.size() == 2);
  CHECK(c.node.nics[1].gpu == 1);
  CHECK(c.node.nics[0].bandwidth_Bps == approx(12.5e9));
  CHECK(c.fabric.kind == FabricKind::fat_tree);
  CHECK(c.fabric.link_bandwidth_Bps == approx(12.5e9));
  CHECK(c.fabric.oversubscription == std::vector<double>{1.0, 1.0});
}

TEST_CASE("topo: every preset parses, cites sources and builds a validated topology") {
  const auto names = preset_names();
  CHECK(names == std::vector<std::string>{"angara-torus", "dgx-a100", "dgx-h100", "gb200-nvl72",
                                          "gb300-nvl72", "gh200-slingshot", "hgx-a800", "hgx-b200",
                                          "hgx-b300", "hgx-h200", "hgx-h800"});
  for (const auto& name : names) {
    CAPTURE(name);
    const auto spec = load_cluster(name);
    CHECK(spec.name == name);
    CHECK_FALSE(spec.description.empty());
    REQUIRE_FALSE(spec.sources.empty());
    for (const auto& s : spec.sources) CHECK(s.find("[S") == 0);
    const auto t = build_topology(spec);
    CHECK(t.gpu_count() == spec.nodes * spec.node.gpus);
    CHECK(gpu_diameter(t) == gpu_diameter_exhaustive(t));
    // Every pair of GPUs has a valid route.
    for (int a = 0; a < t.gpu_count(); a += 3) {
      for (int b = 0; b < t.gpu_count(); b += 5) CHECK(topo_test::path_problem(t, a, b, t.route(a, b)) == "");
    }
  }
}

TEST_CASE("topo: preset facts match the hardware sheet") {
  const auto h100 = load_cluster("dgx-h100");
  CHECK(h100.node.gpu_link_bandwidth_Bps == approx(450e9));
  CHECK(h100.node.nics.size() == 8);
  CHECK(h100.node.nics[3].bandwidth_Bps == approx(50e9));
  CHECK(h100.fabric.nodes_per_unit == 32);
  const auto a100 = load_cluster("dgx-a100");
  CHECK(a100.node.gpu_link_bandwidth_Bps == approx(300e9));
  CHECK(a100.node.nics[0].bandwidth_Bps == approx(25e9));
  CHECK(a100.fabric.nodes_per_unit == 20);
  CHECK(load_cluster("hgx-b200").node.gpu_link_bandwidth_Bps == approx(900e9));
  const auto gb = load_cluster("gb200-nvl72");
  CHECK(gb.node.gpus == 4);
  CHECK(gb.node.nvlink_domain_nodes == 18);
  const auto ang = load_cluster("angara-torus");
  CHECK(ang.fabric.dims.size() == 4);
  CHECK(ang.fabric.link_bandwidth_Bps == approx(75e9 / 8));
  // 850 ns MPI latency between torus neighbours = NIC + router hop + NIC.
  CHECK(2 * ang.node.nics[0].latency_s + ang.fabric.link_latency_s == approx(850e-9));
  CHECK(load_cluster("gh200-slingshot").fabric.kind == FabricKind::dragonfly);
}

TEST_CASE("topo: bad fields give one clear error naming origin, path and expectation") {
  auto with = [](const char* pointer, json value) {
    json d = minimal();
    d[json::json_pointer(pointer)] = std::move(value);
    return error_of(d);
  };
  CHECK(with("/fabric/tiers", 5) == "cluster.json: /fabric/tiers: expected 2, 3 or \"auto\", got 5");
  CHECK(with("/nodes", 0).find("cluster.json: /nodes: expected an integer in [1,") == 0);
  CHECK(with("/nodes", -3).find("/nodes") != std::string::npos);
  CHECK(with("/nodes", "two").find("/nodes: expected an integer") != std::string::npos);
  CHECK(with("/node/gpu_link_bandwidth", "-5GB/s").find("/node/gpu_link_bandwidth") != std::string::npos);
  CHECK(with("/node/gpu_link_bandwidth", -5)
            .find("/node/gpu_link_bandwidth: expected a bandwidth of 1e3 .. 1e15 bytes/s") !=
        std::string::npos);
  // Values no link has (a unit missing, a typo): they made times infinite or SimGrid fail.
  CHECK(with("/node/gpu_link_bandwidth", 1e-300)
            .find("/node/gpu_link_bandwidth: expected a bandwidth of 1e3 .. 1e15") != std::string::npos);
  CHECK(with("/node/gpu_link_latency", "1e307s").find("/node/gpu_link_latency: '1e307s' is more than 1 s") !=
        std::string::npos);
  CHECK(with("/node/gpu_link_latency", 5).find("/node/gpu_link_latency: expected a latency of 0 .. 1 s") !=
        std::string::npos);
  CHECK(with("/node/pcie_bandwidth", "9000TB/s")
            .find("/node/pcie_bandwidth: '9000TB/s' is outside 8 kb/s .. 8 Pb/s") != std::string::npos);
  CHECK(with("/node/pcie_latency", "3 parsecs").find("/node/pcie_latency") != std::string::npos);
  CHECK(with("/node/nvswitch", "yes") == "cluster.json: /node/nvswitch: expected true or false, got string \"yes\"");
  CHECK(with("/node/nics/gpus", json::array({0, 7})) ==
        "cluster.json: /node/nics/gpus/1: NIC attached to GPU 7, but /node/gpus = 2 (expected 0..1)");
  CHECK(with("/fabric/kind", "hypercube").find("/fabric/kind: expected one of") != std::string::npos);
  CHECK(with("/fabric/oversubscription", json::array({0.5}))
            .find("/fabric/oversubscription/0: expected a down:up ratio from 1") != std::string::npos);
  CHECK(with("/fabric/oversubscription", json::array({1e300}))
            .find("/fabric/oversubscription/0: expected a down:up ratio from 1 (non-blocking) to 1024") !=
        std::string::npos);
  CHECK(with("/nodse", 4) == "cluster.json: /nodse: unknown field (check the spelling; see docs/cluster-format.md)");
  CHECK(with("/fabric/dims", json::array({2, 2})) ==
        "cluster.json: /fabric/dims: unknown field (check the spelling; see docs/cluster-format.md)");
  json missing = minimal();
  missing["node"].erase("gpus");
  CHECK(error_of(missing) == "cluster.json: /node/gpus: missing required field");
  CHECK(error_of(json::array()) == "cluster.json: /: expected a JSON object, got array []");
}

TEST_CASE("topo: torus dims must match the node count") {
  json d = minimal();
  d["fabric"] = {{"kind", "torus"}, {"link_bandwidth", "75Gbps"}, {"link_latency", "200ns"}, {"dims", {2, 3}}};
  CHECK(error_of(d) == "cluster.json: /fabric/dims: the product of the ring sizes (6) must equal /nodes (2)");
  d["fabric"]["dims"] = {2, 0};
  CHECK(error_of(d).find("/fabric/dims/1: expected an integer in [1,") != std::string::npos);
}

TEST_CASE("topo: load_cluster reports unknown presets, unreadable files and malformed JSON") {
  CHECK_THROWS_WITH_AS(load_cluster("dgx-h1000"), doctest::Contains("known presets: angara-torus, dgx-a100"), InputError);
  CHECK_THROWS_WITH_AS(load_cluster("/nonexistent/c.json"),
                       "/nonexistent/c.json: cannot read the cluster file: no such file", InputError);
  const std::string path = "test_topo_malformed.json";
  {
    std::ofstream out(path);
    out << "{\"name\": \"x\", \"nodes\": 2,";
  }
  CHECK_THROWS_WITH_AS(load_cluster(path), doctest::Contains("test_topo_malformed.json: malformed JSON"), InputError);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(preset_json("nope"), doctest::Contains("unknown preset 'nope'"), InputError);
}

TEST_CASE("topo: build-time errors: zero nodes, disconnected nodes, fabric none with many nodes") {
  const auto spec = parse_cluster(minimal(), "cluster.json");
  CHECK_THROWS_WITH_AS(build_topology(spec, 0), "--nodes: expected a node count >= 1, got 0", InputError);
  CHECK_THROWS_WITH_AS(build_topology(spec, 2, 0), "--gpus-per-node: expected 1..1024, got 0", InputError);
  json no_nics = minimal();
  no_nics["node"].erase("nics");
  CHECK_THROWS_WITH_AS(build_topology(parse_cluster(no_nics, "cluster.json")),
                       doctest::Contains("cluster.json: the topology is disconnected"), InputError);
  json none = minimal();
  none["fabric"] = {{"kind", "none"}};
  CHECK_THROWS_WITH_AS(build_topology(parse_cluster(none, "cluster.json")),
                       doctest::Contains("cluster.json: /fabric/kind: \"none\""), InputError);
  CHECK(build_topology(parse_cluster(none, "cluster.json"), 1).gpu_count() == 2);
  json listed = minimal();
  listed["node"]["nics"]["gpus"] = {0, 1};
  CHECK_THROWS_WITH_AS(build_topology(parse_cluster(listed, "cluster.json"), 2, 1),
                       doctest::Contains("--gpus-per-node 1: cluster.json: /node/nics/gpus/1"), InputError);
  json tight = minimal();
  tight["fabric"]["switch_radix"] = 4;  // 2 nodes x 2 NICs down + 4 up > 4 ports
  CHECK_THROWS_WITH_AS(build_topology(parse_cluster(tight, "cluster.json")),
                       doctest::Contains("/fabric/nodes_per_unit: a leaf needs 4 ports to nodes + 4 uplinks"), InputError);
}

TEST_CASE("topo: --gpus-per-node keeps one NIC per GPU for \"all\"") {
  const auto t = build_topology(load_cluster("dgx-h100"), 2, 4);
  CHECK(t.gpu_count() == 8);
  CHECK(summarize(t).nics == 8);
}

TEST_CASE("presets: the preset for a GPU named in nccl-tests rank lines") {
  using commstack::topologies::preset_for_gpu;
  CHECK(preset_for_gpu("NVIDIA H100 80GB HBM3").value_or("") == "dgx-h100");
  CHECK(preset_for_gpu("NVIDIA A100-SXM4-40GB").value_or("") == "dgx-a100");
  CHECK(preset_for_gpu("NVIDIA A100-SXM4-80GB").value_or("") == "dgx-a100");
  CHECK(preset_for_gpu("NVIDIA H200").value_or("") == "hgx-h200");
  CHECK(preset_for_gpu("NVIDIA B200").value_or("") == "hgx-b200");
  CHECK(preset_for_gpu("NVIDIA GB200").value_or("") == "gb200-nvl72");
  CHECK(preset_for_gpu("NVIDIA B300 SXM6 AC").value_or("") == "hgx-b300");
  CHECK(preset_for_gpu("NVIDIA GB300").value_or("") == "gb300-nvl72");
  CHECK(preset_for_gpu("NVIDIA GH200 120GB").value_or("") == "gh200-slingshot");
  CHECK(preset_for_gpu("NVIDIA H800").value_or("") == "hgx-h800");
  CHECK(preset_for_gpu("NVIDIA A800-SXM4-80GB").value_or("") == "hgx-a800");
  // Boards the presets do not describe: no guess.
  for (const char* name : {"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100 80GB PCIe", "NVIDIA H800 PCIe",
                           "NVIDIA A800 80GB PCIe", "NVIDIA H20", "NVIDIA H200 NVL", "NVIDIA Graphics Device",
                           "Tesla V100-SXM2-32GB", ""}) {
    CAPTURE(name);
    CHECK_FALSE(preset_for_gpu(name).has_value());
  }
  // Every answer is a preset that exists and is built around that GPU.
  const auto names = commstack::topologies::preset_names();
  for (const char* gpu :
       {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA H200", "NVIDIA B200", "NVIDIA GB200",
        "NVIDIA B300 SXM6 AC", "NVIDIA GB300", "NVIDIA H800", "NVIDIA A800-SXM4-80GB"}) {
    const auto p = preset_for_gpu(gpu);
    REQUIRE(p.has_value());
    CHECK(std::find(names.begin(), names.end(), *p) != names.end());
    CHECK(commstack::topologies::load_cluster(*p).node.gpu_model.find(std::string(gpu).substr(7, 4)) !=
          std::string::npos);
  }
}

TEST_CASE("topo: --gpus-per-node above the node's GPUs is refused, for presets and files alike") {
  CHECK_THROWS_WITH_AS(
      build_topology(load_cluster("dgx-h100"), 2, 9),
      doctest::Contains("--gpus-per-node 9: preset dgx-h100's nodes hold 8 GPUs; expected 1..8"), InputError);
  CHECK_THROWS_WITH_AS(
      build_topology(parse_cluster(minimal(), "cluster.json"), 2, 3),
      doctest::Contains("--gpus-per-node 3: cluster.json's nodes hold 2 GPUs; expected 1..2"), InputError);
  CHECK_THROWS_WITH_AS(check_gpus_per_node(load_cluster("angara-torus"), 2, "--x"),
                       doctest::Contains("--x 2: preset angara-torus's nodes hold 1 GPU; expected 1 ("),
                       InputError);
  CHECK(build_topology(load_cluster("dgx-h100"), 2, 8).gpu_count() == 16);
  CHECK(build_topology(load_cluster("dgx-h100"), 2, 1).gpu_count() == 2);
}
