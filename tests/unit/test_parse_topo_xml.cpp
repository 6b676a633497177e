// NCCL topology XML parser: the Azure/AWS topology files and NCCL dump excerpts.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>
#include <vector>

#include "calibration/fit/nccl_topo_xml.hpp"
#include "common/error.hpp"

using namespace commstack::fit;

namespace {
std::string logs_dir() { return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-logs/"; }
}  // namespace

TEST_CASE("parse: topo XML AWS p4d (PCI-class GPUs and NICs, 2 GPUs + 1 NIC per switch)") {
  NodeTopology t = parse_nccl_topo_xml_file(logs_dir() + "aws-p4d-a100-topo.xml");
  CHECK(t.cpus.size() == 2);
  CHECK(t.cpus[0].vendor == "GenuineIntel");
  CHECK(t.gpu_count() == 8);
  REQUIRE(t.nics.size() == 4);
  for (const auto& n : t.nics) CHECK(n.gpus_same_switch.size() == 2);
  CHECK(t.nics[3].gpus_same_switch[0] == 6);
  CHECK(t.pcis[0].bw_GBps == approx(12.0));  // 8 GT/s x16 = 16*60/80
}

TEST_CASE("parse: topo XML AWS p5 (H100, 4 EFA NICs per GPU switch)") {
  NodeTopology t = parse_nccl_topo_xml_file(logs_dir() + "aws-p5-h100-topo.xml");
  CHECK(t.gpu_count() == 8);
  CHECK(t.gpus[0].sm == 90);
  CHECK(t.cpus[0].vendor == "AuthenticAMD");
  REQUIRE(t.nics.size() == 32);
  CHECK(t.nics[0].speed_Mbps == approx(100000));
  CHECK(t.nics[0].bw_GBps() == approx(12.5));
  CHECK(t.nics[0].gdr);
  for (const auto& n : t.nics) CHECK(n.gpus_same_switch.size() == 1);
  CHECK(t.nics[5].gpus_same_switch[0] == 1);
}

TEST_CASE("parse: topo XML Azure NCv4 (NVLink count and per-GPU bandwidth), NDv4/NDv5, NDv2") {
  NodeTopology a = parse_nccl_topo_xml_file(logs_dir() + "azure-ncv4-a100pcie-topo.xml");
  CHECK(a.gpu_count() == 4);
  CHECK(a.gpus[0].nvlink_count() == 12);
  CHECK(a.gpus[0].nvlink_bw_GBps() == approx(240.0));  // 12 x 20.0 (SM80)
  CHECK(a.nics.size() == 1);
  CHECK(a.nics[0].name == "eth0");
  CHECK(a.nvswitch_targets() == 0);
  NodeTopology b = parse_nccl_topo_xml_file(logs_dir() + "azure-ndv5-h100-topo.xml");
  CHECK(b.gpu_count() == 8);
  CHECK(b.nics.size() == 8);
  for (const auto& n : b.nics) CHECK(n.gpus_same_switch.size() == 1);
  CHECK(b.pcis[0].bw_GBps == approx(48.0));  // Gen5 x16
  NodeTopology c = parse_nccl_topo_xml_file(logs_dir() + "azure-ndv4-a100-topo.xml");
  CHECK(c.gpu_count() == 8);
  CHECK(c.nics.size() == 8);
  for (const auto& n : c.nics) CHECK(n.gpus_same_switch.size() == 2);
  NodeTopology d = parse_nccl_topo_xml_file(logs_dir() + "azure-ndv2-v100-topo.xml");
  CHECK(d.gpu_count() == 8);
  CHECK(d.nics.size() == 1);
  CHECK(d.nics[0].gpus_same_switch.empty());  // the NIC hangs off the CPU, not a switch
}

TEST_CASE("parse: topo XML dump of an H200 GPU: NVLink via NVSwitch, 18 links x 20.6 GB/s") {
  const char* xml =
      "# SOURCE: test fixture written from the nccl-tests#256 dump (section c)\n"
      "<system version=\"1\">\n"
      "  <cpu numaid=\"-1\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"207\">\n"
      "    <pci busid=\"0000:05:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2335\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
      "      <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
      "        <nvlink target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\"/>\n"
      "      </gpu>\n"
      "    </pci>\n"
      "    <pci busid=\"0000:0d:00.0\" class=\"0x020000\" vendor=\"0x15b3\" device=\"0x1021\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">\n"
      "      <nic>\n"
      "        <net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" latency=\"0.000000\" guid=\"0xa8\" maxconn=\"131072\" gdr=\"1\"/>\n"
      "      </nic>\n"
      "    </pci>\n"
      "  </cpu>\n"
      "</system>\n";
  NodeTopology t = parse_nccl_topo_xml(xml, "h200.xml");
  REQUIRE(t.gpu_count() == 1);
  CHECK(t.gpus[0].nvlink_bw_GBps() == approx(370.8));
  CHECK(t.nvswitch_targets() == 1);
  REQUIRE(t.nics.size() == 1);
  CHECK(t.nics[0].name == "mlx5_0");
  CHECK(t.nics[0].bw_GBps() == approx(50.0));
  CHECK(nccl_nvlink_bw_per_link(100) == approx(40.1));
  CHECK(nccl_nvlink_bw_per_link(80) == approx(20.0));
}

TEST_CASE("parse: topo XML excerpts and garbage are InputErrors naming the line") {
  // The DGX A100 dump excerpt is fragments, not a document.
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml_file(logs_dir() + "nccl-1505-dgx-a100-topo-dump-excerpts.xml"),
                       doctest::Contains("excerpts.xml:"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("", "e.xml"), doctest::Contains("empty"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("# header\n<system version=\"1\">\n  <cpu numaid=\"0\">\n", "t.xml"),
                       doctest::Contains("t.xml:"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("<graphs version=\"1\"/>", "g.xml"), doctest::Contains("<system>"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("<system><cpu numaid=\"x\"/></system>", "n.xml"), doctest::Contains("n.xml:1: <cpu>: attribute numaid"),
                       commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("<system><cpu numaid=\"0\"/></system>", "z.xml"), doctest::Contains("no GPU"),
                       commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_topo_xml("\n\n<system>\n<cpu>\n<pci busid=\"1\" class=\"0x030200\"><gpu sm=\"ninety\"/></pci></cpu></system>", "s.xml"),
                  commstack::InputError);
}

TEST_CASE("parse: topo XML NICs on nested PCIe switches pair with the GPU of the nearest common switch") {
  // Two-level switch trees (as DGX A100-style nodes have): GPU 0 two levels below switch 0x10, GPU 1
  // one level below switch 0x20 whose sibling is NIC b; NIC a sits on the top switch 0x10, so it
  // shares a switch with GPU 0 only through that top level. NIC c hangs off the CPU.
  const auto pci = [](const std::string& bus, const std::string& cls, const std::string& vendor,
                      const std::string& body) {
    return "<pci busid=\"0000:" + bus + ":00.0\" class=\"" + cls + "\" vendor=\"" + vendor +
           "\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">" + body + "</pci>\n";
  };
  const std::string gpu0 = "<gpu dev=\"0\" sm=\"80\" rank=\"0\" gdr=\"1\"/>";
  const std::string gpu1 = "<gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\"/>";
  const auto net = [](const std::string& name) {
    return "<nic><net name=\"" + name + "\" dev=\"0\" speed=\"200000\" port=\"1\" gdr=\"1\"/></nic>";
  };
  const std::string xml =
      "<system version=\"1\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n" +
      pci("10", "0x060400", "0x1000",
          pci("11", "0x060400", "0x1000",
              pci("12", "0x060400", "0x1000", pci("13", "0x030200", "0x10de", gpu0))) +
              pci("20", "0x060400", "0x1000",
                  pci("21", "0x060400", "0x1000", pci("22", "0x030200", "0x10de", gpu1)) +
                      pci("23", "0x020000", "0x15b3", net("b"))) +
              pci("30", "0x020000", "0x15b3", net("a"))) +
      pci("40", "0x020000", "0x15b3", net("c")) + "</cpu>\n</system>\n";
  const NodeTopology t = parse_nccl_topo_xml(xml, "nested.xml");
  REQUIRE(t.nics.size() == 3);
  CHECK(t.nics[0].name == "b");
  CHECK(t.nics[0].gpus_same_switch == std::vector<int>{1, 0});  // switch 0x20 (GPU 1) before 0x10 (GPU 0)
  CHECK(t.nics[1].name == "a");
  CHECK(t.nics[1].gpus_same_switch == std::vector<int>{0, 1});  // both only through the top switch
  CHECK(t.nics[2].gpus_same_switch.empty());
}

TEST_CASE("parse: topo XML that is not an NVIDIA node, cut short, or a bus-ID skeleton says so") {
  const std::string head =
      "<system version=\"2\">\n<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">\n";
  // RCCL's dump: an AMD part (vendor 0x1002, a gcn attribute), even with an sm NCCL would read.
  CHECK_THROWS_WITH_AS(
      parse_nccl_topo_xml(
          head +
              "<pci busid=\"0000:05:00.0\" class=\"0x038000\" vendor=\"0x1002\" link_width=\"16\">\n"
              "<gpu dev=\"0\" sm=\"94\" gcn=\"gfx942\" rank=\"0\" gdr=\"1\"/>\n</pci>\n</cpu>\n</system>\n",
          "amd.xml"),
      doctest::Contains("amd.xml:4: <gpu>: a GPU that is not NVIDIA's (PCI vendor 0x1002, gcn=\"gfx942\")"),
      commstack::InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_topo_xml(
          head + "<pci busid=\"0000:05:00.0\" class=\"0x030200\" vendor=\"0x1002\" link_width=\"16\"/>\n"
                 "</cpu>\n</system>\n",
          "amd-class.xml"),
      doctest::Contains("amd-class.xml:3: <pci>: a GPU that is not NVIDIA's (PCI vendor 0x1002)"),
      commstack::InputError);
  // A dump pasted from a log and cut mid-element.
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml(head + "<pci busid=\"0000:05:00.0\" class=\"0x0302", "cut.xml"),
                       doctest::Contains("at the end of the file (cut short?)"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml("NCCL INFO Bootstrap : Using eth0\n", "log.txt"),
                       doctest::Contains("is this an NCCL topology XML"), commstack::InputError);
  // An NCCL_TOPO_FILE skeleton: bus IDs, no classes.
  CHECK_THROWS_WITH_AS(
      parse_nccl_topo_xml(head + "<pci busid=\"0000:05:00.0\"/>\n<pci busid=\"0000:06:00.0\"/>\n"
                                 "</cpu>\n</system>\n",
                          "skeleton.xml"),
      doctest::Contains("its <pci> elements carry no 'class' attribute"), commstack::InputError);
}

// QA: 20,000 nested <pci> overflowed the stack (the reader recurses once per level). A PCIe tree is
// a few switch levels deep; more than 64 is refused, naming the line of the first one too deep.
TEST_CASE("parse: topo XML <pci> nested more than 64 levels deep is refused, 64 are read") {
  const auto nested = [](int depth) {
    std::string xml = "<system version=\"1\">\n<cpu numaid=\"0\">\n";
    for (int i = 0; i < depth; ++i) xml += "<pci busid=\"0000:" + std::to_string(i) + ":00.0\">\n";
    xml += "<gpu dev=\"0\" sm=\"90\"/>\n";
    for (int i = 0; i < depth; ++i) xml += "</pci>\n";
    return xml + "</cpu>\n</system>\n";
  };
  const NodeTopology t = parse_nccl_topo_xml(nested(64), "ok.xml");
  CHECK(t.pcis.size() == 64);
  CHECK(t.gpus.size() == 1);
  CHECK_THROWS_WITH_AS(
      parse_nccl_topo_xml(nested(65), "deep.xml"),
      "deep.xml:67: <pci>: more than 64 levels of nested <pci>; expected a PCIe tree of a few "
      "switch levels",
      commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_topo_xml(nested(20000), "deep.xml"),
                       doctest::Contains("deep.xml:67: <pci>: more than 64 levels of nested <pci>"),
                       commstack::InputError);
}
