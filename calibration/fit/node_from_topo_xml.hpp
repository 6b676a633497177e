#pragma once
// A cluster description whose node model comes from an NCCL topology XML (NCCL_TOPO_DUMP_FILE
// output, or an NCCL_TOPO_FILE such as the Azure / AWS ones): GPU count, NVLink links and
// whether they meet in NVSwitches, the GPU's PCIe link, each NIC's speed and the GPU it sits
// next to. What the XML does not say (latencies, the scale-out fabric, NVLink when the file
// has no <nvlink> entries) comes from a base cluster (a preset or file), and every such choice
// is listed in the result's "assumptions". Rules in docs/measurement-formats.md.
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/fit/nccl_topo_xml.hpp"

namespace commstack::fit {

// `base` is a cluster document (topologies::load_cluster_document); `base_name` names it in the
// assumptions. Returns a cluster document for topologies::parse_cluster. Throws InputError when
// the XML has no GPUs, GPUs of several generations, or a generation other than the base's.
nlohmann::ordered_json cluster_from_nccl_topo(const NodeTopology& topo, const nlohmann::json& base,
                                              const std::string& base_name);

// The preset of the GPU generation the XML's GPUs give (sm 80: dgx-a100, 90: dgx-h100, 100:
// hgx-b200); empty when the file does not say (PCI-only NCCL_TOPO_FILE inputs).
std::string preset_for_topo_sm(const NodeTopology& topo);
// The preset of a GPU generation (sm 80: dgx-a100, 90: dgx-h100, 100: hgx-b200); empty for others.
std::string preset_for_sm(int sm);

}  // namespace commstack::fit
