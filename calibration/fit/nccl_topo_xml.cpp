#include "calibration/fit/nccl_topo_xml.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::fit {

using namespace detail;

namespace {

struct Ctx {
  std::string_view origin;
  std::string_view text;  // the XML as parsed (after the '#' header), for offset -> line
  int line_offset = 0;    // '#' lines removed before the XML
  NodeTopology* topo = nullptr;
  int pci_depth = 0;  // <pci> elements open around the one being read
};

// <pci> elements nest one level per PCIe switch or bridge (a DGX has 3 or 4); walk_pci recurses
// once per level, so a file nesting thousands of them would overflow the stack.
constexpr int kMaxPciDepth = 64;

int line_of(const Ctx& c, std::ptrdiff_t offset) {
  if (offset < 0) offset = 0;
  auto end = std::min<std::size_t>(static_cast<std::size_t>(offset), c.text.size());
  return c.line_offset + 1 + static_cast<int>(std::count(c.text.begin(), c.text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

[[noreturn]] void bad(const Ctx& c, const pugi::xml_node& n, std::string_view msg) {
  fail(c.origin, line_of(c, n.offset_debug()), fmt::format("<{}>: {}", n.name(), msg));
}

int int_attr(const Ctx& c, const pugi::xml_node& n, const char* name, int dflt, bool required = false) {
  auto a = n.attribute(name);
  if (!a) {
    if (required) bad(c, n, fmt::format("attribute '{}' missing", name));
    return dflt;
  }
  std::int64_t v = 0;
  if (!to_int64(trim(a.value()), v) || v < -1000000000 || v > 1000000000)
    bad(c, n, fmt::format("attribute {}=\"{}\": expected an integer", name, printable(a.value())));
  return static_cast<int>(v);
}

double num_attr(const Ctx& c, const pugi::xml_node& n, const char* name) {
  auto a = n.attribute(name);
  if (!a) return 0;
  double v = 0;
  if (!to_double(trim(a.value()), v) || v < 0)
    bad(c, n, fmt::format("attribute {}=\"{}\": expected a number >= 0", name, printable(a.value())));
  return v;
}

// PCI link bandwidth as NCCL computes it: width x lane rate, lane rate from the GT/s speed
// (2.5 -> 15/80... NCCL table: 2.5 GT/s 15, 5 GT/s 30, 8 GT/s 60, 16 GT/s 120, 32 GT/s 240, 64 GT/s 480; GB/s = width*code/80).
double pci_bw(std::string_view speed, int width) {
  auto toks = split_ws(speed);
  double gts = 0;
  if (toks.empty() || !to_double(toks[0], gts) || width <= 0) return 0;
  double code = gts >= 64 ? 480 : gts >= 32 ? 240 : gts >= 16 ? 120 : gts >= 8 ? 60 : gts >= 5 ? 30 : gts >= 2.5 ? 15 : 0;
  return width * code / 80.0;
}

bool class_is(std::string_view cls, std::string_view prefix) { return starts_with_ci(cls, prefix); }

void walk_pci(Ctx& c, const pugi::xml_node& n, int parent, int cpu);

// commstack models NVIDIA GPUs under NCCL: an RCCL dump (AMD, or a vendor's gfx part) would
// otherwise be read as the NVIDIA generation its sm attribute happens to match.
void refuse_other_vendor(Ctx& c, const pugi::xml_node& at, int pci) {
  const std::string vendor = pci >= 0 ? lower(c.topo->pcis[static_cast<std::size_t>(pci)].vendor) : "";
  const std::string gcn = at ? at.attribute("gcn").value() : "";
  if (!gcn.empty() || (!vendor.empty() && vendor != "0x10de"))
    bad(c, at,
        fmt::format("a GPU that is not NVIDIA's ({}{}): an RCCL topology dump? commstack models NVIDIA GPUs "
                    "under NCCL",
                    vendor.empty() ? "" : "PCI vendor " + vendor,
                    gcn.empty() ? "" : (vendor.empty() ? "" : ", ") + std::string("gcn=\"") + gcn + "\""));
}

void add_gpu(Ctx& c, const pugi::xml_node& g, int pci, int cpu, std::string busid) {
  if (g) refuse_other_vendor(c, g, pci);
  TopoGpu gpu;
  gpu.busid = std::move(busid);
  gpu.pci = pci;
  gpu.cpu = cpu;
  if (g) {
    gpu.dev = int_attr(c, g, "dev", -1);
    gpu.rank = int_attr(c, g, "rank", -1);
    gpu.sm = int_attr(c, g, "sm", 0);
    gpu.gdr = int_attr(c, g, "gdr", 0) != 0;
    if (gpu.sm < 0 || gpu.sm > 1000) bad(c, g, "attribute sm: expected a compute capability x10 such as 90");
    for (auto child : g.children()) {
      std::string_view name = child.name();
      if (name == "nvlink") {
        TopoNvLink l;
        l.target = child.attribute("target").value();
        l.count = int_attr(c, child, "count", 0, true);
        if (l.count <= 0 || l.count > 1024) bad(c, child, "attribute count: expected 1..1024 links");
        l.target_class = child.attribute("tclass").value();
        gpu.nvlinks.push_back(l);
      } else if (name == "c2c") {
        gpu.c2c_count += int_attr(c, child, "count", 0, true);
        gpu.c2c_bw_GBps = num_attr(c, child, "bw");
      } else if (child.type() == pugi::node_element) {
        bad(c, child, "unexpected element inside <gpu> (expected <nvlink> or <c2c>)");
      }
    }
  }
  c.topo->gpus.push_back(std::move(gpu));
}

void add_nic(Ctx& c, const pugi::xml_node& nic, int pci, int cpu, const std::string& busid) {
  bool any = false;
  for (auto net : nic.children()) {
    if (net.type() != pugi::node_element) continue;
    if (std::string_view(net.name()) != "net") bad(c, net, "unexpected element inside <nic> (expected <net>)");
    TopoNic n;
    n.name = net.attribute("name").value();
    n.dev = int_attr(c, net, "dev", -1);
    n.speed_Mbps = num_attr(c, net, "speed");
    n.port = int_attr(c, net, "port", 0);
    n.gdr = int_attr(c, net, "gdr", 0) != 0;
    n.gdr_known = !net.attribute("gdr").empty();
    n.pci = pci;
    n.cpu = cpu;
    if (n.name.empty()) n.name = busid;
    c.topo->nics.push_back(std::move(n));
    any = true;
  }
  if (!any) {  // <nic/> without <net>: a NIC of unknown speed
    TopoNic n;
    n.name = busid;
    n.pci = pci;
    n.cpu = cpu;
    c.topo->nics.push_back(std::move(n));
  }
}

void walk_children(Ctx& c, const pugi::xml_node& parent_node, int parent_pci, int cpu) {
  for (auto child : parent_node.children()) {
    if (child.type() != pugi::node_element) continue;
    std::string_view name = child.name();
    if (name == "pci") walk_pci(c, child, parent_pci, cpu);
    else if (name == "nic") add_nic(c, child, parent_pci, cpu, parent_pci >= 0 ? c.topo->pcis[static_cast<std::size_t>(parent_pci)].busid : "");
    else if (name == "gpu") add_gpu(c, child, parent_pci, cpu, parent_pci >= 0 ? c.topo->pcis[static_cast<std::size_t>(parent_pci)].busid : "");
    else if (name == "nvs" || name == "cpu") bad(c, child, "unexpected element here");
    // other elements (e.g. vendor extensions) are ignored
  }
}

void walk_pci(Ctx& c, const pugi::xml_node& n, int parent, int cpu) {
  if (c.topo->pcis.size() > 100000) bad(c, n, "more than 100000 PCI devices");
  if (c.pci_depth >= kMaxPciDepth)
    bad(c, n,
        fmt::format("more than {} levels of nested <pci>; expected a PCIe tree of a few switch levels",
                    kMaxPciDepth));
  ++c.pci_depth;  // restored below; an error unwinds the whole parse, so no guard is needed
  TopoPci p;
  p.busid = n.attribute("busid").value();
  if (p.busid.empty()) bad(c, n, "attribute 'busid' missing");
  p.pci_class = n.attribute("class").value();
  p.vendor = n.attribute("vendor").value();
  p.device = n.attribute("device").value();
  p.link_speed = n.attribute("link_speed").value();
  p.link_width = int_attr(c, n, "link_width", 0);
  if (p.link_width < 0 || p.link_width > 64) bad(c, n, "attribute link_width: expected 0..64");
  p.parent = parent;
  p.cpu = cpu;
  p.bw_GBps = pci_bw(p.link_speed, p.link_width);
  c.topo->pcis.push_back(p);
  int self = static_cast<int>(c.topo->pcis.size()) - 1;
  std::size_t gpus_before = c.topo->gpus.size(), nics_before = c.topo->nics.size();
  walk_children(c, n, self, cpu);
  --c.pci_depth;
  // Files written for NCCL_TOPO_FILE often list GPUs and NICs only by PCI class.
  if (c.topo->gpus.size() == gpus_before && class_is(p.pci_class, "0x0302")) {
    refuse_other_vendor(c, n, self);
    add_gpu(c, pugi::xml_node(), self, cpu, p.busid);
  }
  if (c.topo->nics.size() == nics_before && class_is(p.pci_class, "0x02")) {
    TopoNic nic;
    nic.name = p.busid;
    nic.pci = self;
    nic.cpu = cpu;
    c.topo->nics.push_back(std::move(nic));
  }
}

// The PCI bridges (class 0x0604) above a device, nearest first: its PCIe switch levels below the CPU.
std::vector<int> bridges_above(const NodeTopology& t, int pci) {
  std::vector<int> out;
  for (int p = pci >= 0 ? t.pcis[static_cast<std::size_t>(pci)].parent : -1; p >= 0;
       p = t.pcis[static_cast<std::size_t>(p)].parent)
    if (class_is(t.pcis[static_cast<std::size_t>(p)].pci_class, "0x0604")) out.push_back(p);
  return out;
}

}  // namespace

double nccl_nvlink_bw_per_link(int sm) {
  if (sm >= 100) return 40.1;
  if (sm >= 90) return 20.6;
  if (sm == 86) return 12.0;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;  // NCCL's default for unknown SMs is the SM80 value
}

int TopoGpu::nvlink_count() const {
  int n = 0;
  for (const auto& l : nvlinks) n += l.count;
  return n;
}

double TopoGpu::nvlink_bw_GBps() const { return nvlink_count() * nccl_nvlink_bw_per_link(sm); }

int NodeTopology::nvswitch_targets() const {
  std::set<std::string> t;
  for (const auto& g : gpus)
    for (const auto& l : g.nvlinks)
      if (starts_with_ci(l.target_class, "0x0680")) t.insert(l.target);
  return static_cast<int>(t.size());
}

NodeTopology parse_nccl_topo_xml(std::string_view text, const std::string& origin) {
  NodeTopology topo;
  topo.origin = origin;
  // Skip leading '#' provenance lines (and blank lines between them).
  int skipped = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    std::string_view t = trim(line);
    if (!t.empty() && t.front() != '#') break;
    ++skipped;
    pos = end == std::string_view::npos ? text.size() : end + 1;
  }
  std::string_view xml = text.substr(pos);
  if (trim(xml).empty()) throw InputError(fmt::format("{}: empty input, expected NCCL topology XML (<system version=\"1\">)", origin));

  Ctx c{origin, xml, skipped, &topo};
  pugi::xml_document doc;
  auto r = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    // An error on the last line is most often a file cut short (a dump pasted from a log).
    const auto last = xml.find_last_not_of(" \t\r\n");
    const auto last_line = last == std::string_view::npos ? 0 : xml.rfind('\n', last);
    const bool at_end = last == std::string_view::npos || last_line == std::string_view::npos ||
                        static_cast<std::size_t>(r.offset) > last_line;
    fail(origin, line_of(c, r.offset),
         fmt::format("XML error: {}{}", r.description(),
                     r.status == pugi::status_no_document_element
                         ? " (is this an NCCL topology XML, as NCCL_TOPO_DUMP_FILE writes it?)"
                         : (at_end ? " at the end of the file (cut short?)" : "")));
  }
  auto sys = doc.child("system");
  if (!sys) {
    auto first = doc.first_child();
    while (first && first.type() != pugi::node_element) first = first.next_sibling();
    int line = first ? line_of(c, first.offset_debug()) : skipped + 1;
    fail(origin, line, fmt::format("expected the root element <system>, got <{}>", first ? first.name() : ""));
  }
  for (auto child : sys.children()) {
    if (child.type() != pugi::node_element) continue;
    if (std::string_view(child.name()) != "cpu") bad(c, child, "expected <cpu> elements under <system>");
    TopoCpu cpu;
    cpu.numa_id = int_attr(c, child, "numaid", -1);
    cpu.arch = child.attribute("arch").value();
    cpu.vendor = child.attribute("vendor").value();
    cpu.family_id = int_attr(c, child, "familyid", -1);
    cpu.model_id = int_attr(c, child, "modelid", -1);
    topo.cpus.push_back(cpu);
    walk_children(c, child, -1, static_cast<int>(topo.cpus.size()) - 1);
  }
  if (topo.cpus.empty()) fail(origin, line_of(c, sys.offset_debug()), "<system> has no <cpu> element");
  if (topo.gpus.empty()) {
    const bool classes = std::any_of(topo.pcis.begin(), topo.pcis.end(),
                                     [](const TopoPci& p) { return !p.pci_class.empty(); });
    fail(origin, line_of(c, sys.offset_debug()),
         !topo.pcis.empty() && !classes
             ? "no GPU found: its <pci> elements carry no 'class' attribute (an NCCL_TOPO_FILE skeleton of "
               "bus IDs, "
               "which NCCL completes from the machine itself); give the file NCCL_TOPO_DUMP_FILE writes"
             : "no GPU found (no <gpu> and no PCI class 0x0302)");
  }

  // A NIC and a GPU behind a common PCIe switch (NCCL's PIX or PXB paths, no CPU in between): any
  // bridge above both. Switches nest (DGX A100-style two-level trees put a GPU one level below its
  // NIC), so the nearest bridges of the two need not be the same one; the GPUs are listed nearest
  // first (the common bridge closest to the NIC), which is the GPU NCCL pairs the NIC with.
  for (auto& nic : topo.nics) {
    const auto nic_bridges = bridges_above(topo, nic.pci);
    std::vector<std::pair<std::size_t, int>> near;  // (depth of the common bridge above the NIC, GPU)
    for (std::size_t g = 0; g < topo.gpus.size(); ++g) {
      const auto gpu_bridges = bridges_above(topo, topo.gpus[g].pci);
      for (std::size_t d = 0; d < nic_bridges.size(); ++d)
        if (std::find(gpu_bridges.begin(), gpu_bridges.end(), nic_bridges[d]) != gpu_bridges.end()) {
          near.emplace_back(d, static_cast<int>(g));
          break;
        }
    }
    std::sort(near.begin(), near.end());
    for (const auto& [depth, g] : near) nic.gpus_same_switch.push_back(g);
  }
  return topo;
}

NodeTopology parse_nccl_topo_xml_file(const std::string& path) {
  return parse_nccl_topo_xml(read_input_file(path, "NCCL topology XML"), path);
}

}  // namespace commstack::fit
