#include "calibration/fit/node_from_topo_xml.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <map>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "sim/stack/profile.hpp"

namespace commstack::fit {
namespace {

// NVLink line rate per link and direction (GB/s): NVLink2/3/4 25, NVLink5 50. NCCL's own per-link
// figures (topo.h: 20, 20.6, 40.1) are ~80% of these, which sim/stack applies itself.
double nvlink_line_per_link_GBps(int sm) {
  return sm >= 100 ? 50.0 : 25.0;
}

// "16.0 GT/s PCIe" x16 -> 32 GB/s per direction (raw lane rate, as the presets write PCIe).
double pcie_GBps(const TopoPci& pci) {
  double gts = 0;
  const std::string& s = pci.link_speed;
  const auto end = s.find(' ');
  const std::string number = s.substr(0, end);
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), gts);
  if (ec != std::errc() || ptr != number.data() + number.size() || gts <= 0 || pci.link_width <= 0) return 0;
  return gts * pci.link_width / 8.0;
}

int common_sm(const NodeTopology& topo) {
  int sm = 0;
  for (const auto& g : topo.gpus) {
    if (g.sm == 0) continue;
    if (sm != 0 && g.sm != sm)
      throw InputError(fmt::format(
          "{}: GPUs of compute capability {:.1f} and {:.1f} in one node: a node model needs one GPU "
          "generation",
          topo.origin, sm / 10.0, g.sm / 10.0));
    sm = g.sm;
  }
  return sm;
}

using Assumptions = std::vector<std::string>;

// NVLink: the XML's links when it lists them (a dump), else the base's (NCCL detects NVLink at run
// time, so NCCL_TOPO_FILE inputs often leave it out).
void nvlink_from_topo(const NodeTopology& topo, const nlohmann::json& bnode, int gen,
                      const std::string& base_name, nlohmann::ordered_json& node, Assumptions& assumptions) {
  int links = -1;
  for (const auto& g : topo.gpus) links = links < 0 ? g.nvlink_count() : std::min(links, g.nvlink_count());
  if (links > 0 && topo.nvswitch_targets() > 0) {
    node["nvswitch"] = true;
    node["gpu_link_bandwidth"] = fmt::format("{:g}GB/s", links * nvlink_line_per_link_GBps(gen));
    assumptions.push_back(
        fmt::format("NVLink: {} links per GPU into NVSwitches at {:g} GB/s per link and direction "
                    "(line rate; NCCL prints ~80% of it)",
                    links, nvlink_line_per_link_GBps(gen)));
  } else if (links > 0) {
    // Direct GPU-to-GPU NVLink (bridged pairs): the node model has an NVSwitch plane or PCIe only.
    node["nvswitch"] = false;
    node["gpu_link_bandwidth"] = bnode.at("pcie_bandwidth");
    assumptions.push_back(
        fmt::format("NVLink: {} direct links per GPU to other GPUs, no NVSwitch: the node model "
                    "has no point-to-point NVLink, so GPUs meet over PCIe (pessimistic for bridged "
                    "pairs)",
                    links));
  } else {
    node["nvswitch"] = bnode.at("nvswitch");
    node["gpu_link_bandwidth"] = bnode.at("gpu_link_bandwidth");
    assumptions.push_back(fmt::format(
        "NVLink: the XML lists none (NCCL_TOPO_FILE inputs leave it to NVML), so as in {}", base_name));
  }
}

// PCIe: the first GPU's link as the XML prints it.
void pcie_from_topo(const NodeTopology& topo, const nlohmann::json& bnode, const std::string& base_name,
                    nlohmann::ordered_json& node, Assumptions& assumptions) {
  const TopoGpu& g0 = topo.gpus.front();
  const double pcie = g0.pci >= 0 ? pcie_GBps(topo.pcis.at(static_cast<std::size_t>(g0.pci))) : 0;
  if (pcie > 0) {
    node["pcie_bandwidth"] = fmt::format("{:g}GB/s", pcie);
  } else {
    node["pcie_bandwidth"] = bnode.at("pcie_bandwidth");
    assumptions.push_back(fmt::format("PCIe: the XML gives no link speed for GPU 0, so as in {}", base_name));
  }
}

// NICs: each on the GPU it shares a PCIe switch with; speed from the XML.
nlohmann::ordered_json nics_from_topo(const NodeTopology& topo, const nlohmann::json& bnode,
                                      const std::string& base_name, Assumptions& assumptions) {
  std::vector<int> nic_gpu;
  std::map<double, int> speeds;  // Mb/s -> NICs
  int on_cpu = 0, no_gdr = 0;
  for (std::size_t k = 0; k < topo.nics.size(); ++k) {
    const TopoNic& n = topo.nics[k];
    if (n.gpus_same_switch.empty()) {
      nic_gpu.push_back(static_cast<int>(k % topo.gpus.size()));
      ++on_cpu;
    } else {
      nic_gpu.push_back(n.gpus_same_switch.front());
    }
    if (n.speed_Mbps > 0) ++speeds[n.speed_Mbps];
    if (n.gdr_known && !n.gdr) ++no_gdr;
  }
  nlohmann::ordered_json nics;
  nics["gpus"] = nic_gpu;
  const auto& bnics = bnode.contains("nics") ? bnode.at("nics") : nlohmann::json::object();
  if (speeds.empty()) {
    if (!bnics.contains("bandwidth"))
      throw InputError(fmt::format("{}: no NIC speed in the XML and none in {}", topo.origin, base_name));
    nics["bandwidth"] = bnics.at("bandwidth");
    assumptions.push_back(fmt::format("NIC speed: the XML gives none, so as in {}", base_name));
  } else {
    // One speed per node model: the slowest NIC paces a ring's channels.
    nics["bandwidth"] = fmt::format("{:g}Gbps", speeds.begin()->first / 1000.0);
    if (speeds.size() > 1)
      assumptions.push_back(fmt::format("NIC speed: the XML lists {} speeds; the slowest, {:g} Gb/s, for all",
                                        speeds.size(), speeds.begin()->first / 1000.0));
  }
  nics["latency"] = bnics.contains("latency") ? bnics.at("latency") : nlohmann::json("600ns");
  if (on_cpu > 0)
    assumptions.push_back(
        fmt::format("{} NIC(s) under the CPU, not a GPU's PCIe switch: NIC k is put on GPU k mod "
                    "{} (its traffic crosses the CPU in the real node)",
                    on_cpu, topo.gpus.size()));
  if (no_gdr > 0)
    assumptions.push_back(
        fmt::format("{} NIC(s) without GPUDirect RDMA (gdr=0): NCCL stages their traffic through "
                    "host memory, which the model does not price",
                    no_gdr));
  return nics;
}

// The cluster around the node: name, description, sources, assumptions, and the base's fabric at
// the NIC speed.
nlohmann::ordered_json wrap_cluster(const NodeTopology& topo, const nlohmann::json& base,
                                    const std::string& base_name, const nlohmann::ordered_json& node,
                                    Assumptions assumptions) {
  nlohmann::ordered_json out;
  const std::string stem = topo.origin.substr(topo.origin.find_last_of("/\\") + 1);
  out["name"] = fmt::format("{}+{}", base.value("name", base_name), stem);
  out["description"] =
      fmt::format("node model from the NCCL topology {}, fabric and latencies from {}", stem, base_name);
  std::vector<std::string> sources{fmt::format("NCCL topology XML {}", topo.origin)};
  if (base.contains("sources"))
    for (const auto& s : base.at("sources")) sources.push_back(s.get<std::string>());
  out["sources"] = sources;
  // The base's own assumptions are about its node too; only those on latencies and the fabric carry
  // over, and `topo --cluster <base>` lists them.
  assumptions.push_back(
      fmt::format("latencies and the scale-out fabric as in {} (its assumptions on them apply)", base_name));
  out["assumptions"] = assumptions;
  out["nodes"] = topo.nics.empty() ? 1 : base.value("nodes", 1);
  out["node"] = node;
  if (topo.nics.empty()) {
    out["fabric"] = {{"kind", "none"}};
  } else if (base.contains("fabric")) {
    nlohmann::ordered_json fabric = base.at("fabric");
    // Fabric links at the NIC speed, as every preset has them.
    if (fabric.value("kind", "none") != "none") fabric["link_bandwidth"] = node.at("nics").at("bandwidth");
    out["fabric"] = fabric;
  }
  return out;
}

}  // namespace

std::string preset_for_topo_sm(const NodeTopology& topo) {
  return preset_for_sm(common_sm(topo));
}

std::string preset_for_sm(int sm) {
  switch (sm) {
    case 80: return "dgx-a100";
    case 90: return "dgx-h100";
    case 100: return "hgx-b200";
    default: return "";
  }
}

nlohmann::ordered_json cluster_from_nccl_topo(const NodeTopology& topo, const nlohmann::json& base,
                                              const std::string& base_name) {
  if (topo.gpus.empty()) throw InputError(fmt::format("{}: the topology lists no GPU", topo.origin));
  const nlohmann::json& bnode = base.at("node");
  const std::string gpu_model = bnode.value("gpu_model", "");
  const int base_sm = sim::stack::sm_of_gpu_model(gpu_model);
  const int sm = common_sm(topo);
  if (sm != 0 && base_sm != 0 && sm != base_sm)
    throw InputError(fmt::format(
        "{}: its GPUs are compute capability {:.1f}, but {} is built around '{}' ({:.1f}); pick a "
        "base cluster of the same generation",
        topo.origin, sm / 10.0, base_name, gpu_model, base_sm / 10.0));
  const int gen = sm != 0 ? sm : base_sm;
  std::vector<std::string> assumptions;

  nlohmann::ordered_json node;
  node["gpus"] = topo.gpu_count();
  node["gpu_model"] = gpu_model;
  if (sm == 0)
    assumptions.push_back(
        fmt::format("the XML gives no compute capability (PCI entries only): GPU model '{}' as in {}",
                    gpu_model, base_name));

  nvlink_from_topo(topo, bnode, gen, base_name, node, assumptions);
  node["gpu_link_latency"] = bnode.at("gpu_link_latency");
  pcie_from_topo(topo, bnode, base_name, node, assumptions);
  node["pcie_latency"] = bnode.at("pcie_latency");
  if (!topo.nics.empty())
    node["nics"] = nics_from_topo(topo, bnode, base_name, assumptions);
  else
    assumptions.push_back("no NIC in the XML: one node, no scale-out fabric");
  if (bnode.contains("nvlink_domain_nodes")) node["nvlink_domain_nodes"] = bnode.at("nvlink_domain_nodes");
  return wrap_cluster(topo, base, base_name, node, std::move(assumptions));
}

}  // namespace commstack::fit
