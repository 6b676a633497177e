// A cluster whose node model comes from an NCCL topology XML: NICs on the GPU they share a PCIe
// switch with, at the XML's speed; NVLink from the dump's links, else the base cluster's; the
// generation checked against the base.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/fit/nccl_topo_xml.hpp"
#include "calibration/fit/node_from_topo_xml.hpp"
#include "common/error.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::fit;

namespace {
std::string logs_dir() {
  return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-logs/";
}
nlohmann::json plain(const nlohmann::ordered_json& doc) {
  return nlohmann::json(doc);
}
}  // namespace

TEST_CASE("node from topo XML: AWS p5 has 4 EFA NICs of 100 Gb/s per GPU") {
  const NodeTopology xml = parse_nccl_topo_xml_file(logs_dir() + "aws-p5-h100-topo.xml");
  CHECK(preset_for_topo_sm(xml) == "dgx-h100");
  const auto doc = cluster_from_nccl_topo(xml, topologies::load_cluster_document("dgx-h100"), "dgx-h100");
  const auto& nics = doc.at("node").at("nics");
  REQUIRE(nics.at("gpus").size() == 32);
  for (int k = 0; k < 32; ++k) CHECK(nics.at("gpus").at(static_cast<std::size_t>(k)).get<int>() == k / 4);
  CHECK(nics.at("bandwidth") == "100Gbps");
  CHECK(doc.at("fabric").at("link_bandwidth") == "100Gbps");  // fabric links at the NIC speed
  // No <nvlink> in an NCCL_TOPO_FILE: NVLink from the base, and said so.
  CHECK(doc.at("node").at("gpu_link_bandwidth") == "450GB/s");
  bool said = false;
  for (const auto& a : doc.at("assumptions"))
    said |= a.get<std::string>().find("NVLink: the XML lists none") == 0;
  CHECK(said);
  const auto spec = topologies::parse_cluster(plain(doc), "p5");
  const auto t = topologies::build_topology(spec, 2, 8);
  const auto s = topologies::summarize(t);
  CHECK(s.nics == 64);
  CHECK(s.injection_Bps_per_gpu == approx(32 * 12.5e9 / 8));  // 3200 Gb/s per node
}

TEST_CASE("node from topo XML: a dump's NVLink links into NVSwitches give the line rate") {
  // One GPU of the nccl-tests#256 H200 dump: 18 links to the NVSwitches, one 400 Gb/s NIC.
  const char* xml =
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"207\">\n"
      "    <pci busid=\"0000:05:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "      <pci busid=\"0000:06:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n"
      "        <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
      "          <nvlink target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\"/>\n"
      "        </gpu>\n"
      "      </pci>\n"
      "      <pci busid=\"0000:07:00.0\" class=\"0x020000\" link_speed=\"32.0 GT/s PCIe\" "
      "link_width=\"16\">\n"
      "        <nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" gdr=\"1\"/></nic>\n"
      "      </pci>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n";
  const NodeTopology t = parse_nccl_topo_xml(xml, "h200.xml");
  const auto doc = cluster_from_nccl_topo(t, topologies::load_cluster_document("hgx-h200"), "hgx-h200");
  const auto& node = doc.at("node");
  CHECK(node.at("gpus") == 1);
  CHECK(node.at("nvswitch") == true);
  CHECK(node.at("gpu_link_bandwidth") == "450GB/s");  // 18 x 25 GB/s per direction
  CHECK(node.at("pcie_bandwidth") == "64GB/s");       // Gen5 x16
  CHECK(node.at("nics").at("gpus") == nlohmann::ordered_json::array({0}));
  CHECK(node.at("nics").at("bandwidth") == "400Gbps");
  CHECK_NOTHROW(topologies::parse_cluster(plain(doc), "h200.xml"));
}

TEST_CASE("node from topo XML: refusals name the file and what is expected") {
  const NodeTopology p5 = parse_nccl_topo_xml_file(logs_dir() + "aws-p5-h100-topo.xml");
  CHECK_THROWS_WITH_AS(cluster_from_nccl_topo(p5, topologies::load_cluster_document("dgx-a100"), "dgx-a100"),
                       doctest::Contains("its GPUs are compute capability 9.0, but dgx-a100 is built around"),
                       InputError);
  // PCI-only inputs (Azure NDv4) do not give the generation: no preset to assume it from.
  CHECK(preset_for_topo_sm(parse_nccl_topo_xml_file(logs_dir() + "azure-ndv4-a100-topo.xml")).empty());
  NodeTopology none;
  none.origin = "empty.xml";
  CHECK_THROWS_WITH_AS(
      cluster_from_nccl_topo(none, topologies::load_cluster_document("dgx-h100"), "dgx-h100"),
      doctest::Contains("empty.xml: the topology lists no GPU"), InputError);
}
