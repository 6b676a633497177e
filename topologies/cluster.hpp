#pragma once
// Cluster descriptions: the JSON schema users write (docs/cluster-format.md), the built-in
// presets, and the builder that turns a description into a Topology.
//
// OWNER: topologies work. The function signatures below are relied on by sim/ and cli/; fields
// may be added.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "topologies/topology.hpp"

namespace commstack::topologies {

struct NicSpec {
  int gpu = 0;                  // local GPU the NIC is attached to (PCIe switch shared with it)
  double bandwidth_Bps = 0;     // per direction
  double latency_s = 0;         // NIC + cable one way
};

struct NodeSpec {
  int gpus = 8;
  std::string gpu_model;        // "H100-SXM5", ...
  bool nvswitch = true;         // false: GPUs talk over PCIe only
  double gpu_link_bandwidth_Bps = 0;  // per GPU, per direction, into the NVSwitch plane (or PCIe)
  double gpu_link_latency_s = 0;
  double pcie_bandwidth_Bps = 0;      // GPU <-> NIC
  double pcie_latency_s = 0;
  std::vector<NicSpec> nics;
  int nvlink_domain_nodes = 1;  // >1: consecutive nodes share one NVLink fabric (GB200 NVL72: 18)
  // true when the file said "gpus": "all" (one NIC per GPU): --gpus-per-node then keeps one NIC per GPU.
  bool nic_per_gpu = false;
};

enum class FabricKind { none, rail_fat_tree, fat_tree, torus, dragonfly };

struct FabricSpec {
  FabricKind kind = FabricKind::none;
  double link_bandwidth_Bps = 0;      // switch-to-switch links, per direction
  double link_latency_s = 0;          // per switch hop (switch + cable)
  // fat trees (rail-optimized or plain)
  int tiers = 2;                      // 2 or 3; 0 = auto (2 while leaves <= switch_radix, else 3)
  int switch_radix = 64;
  int nodes_per_unit = 32;            // scalable unit (rail-optimized: one leaf per rail per unit)
  std::vector<double> oversubscription;  // per tier boundary, down:up (1 = non-blocking), leaf first; always 2 entries after parsing
  // torus
  std::vector<int> dims;
  // dragonfly
  int groups = 0;                     // not read from JSON: the builder derives it from the node count
  int routers_per_group = 0;
  int nodes_per_router = 0;
  int global_links_per_router = 0;
};

struct ClusterSpec {
  std::string origin;                 // file or "preset <name>", set by parse_cluster, for error messages
  std::string name;
  std::string description;
  std::vector<std::string> sources;   // where the numbers come from
  std::vector<std::string> assumptions;  // values with no published number, and why they were chosen
  int nodes = 1;
  NodeSpec node;
  FabricSpec fabric;
};

// The names of the built-in presets, in a stable order.
std::vector<std::string> preset_names();

// Parses a cluster description. `origin` names the file (or preset) for error messages: every
// error says origin, the JSON path of the field, and what was expected. Unknown fields are errors.
ClusterSpec parse_cluster(const nlohmann::json& doc, const std::string& origin);

// A preset name ("dgx-h100") or a path to a JSON file. Throws InputError for an unknown preset
// (listing the known ones), an unreadable file, or malformed JSON.
ClusterSpec load_cluster(const std::string& preset_or_path);
// The JSON document behind load_cluster(), unparsed (to derive a cluster from it).
nlohmann::json load_cluster_document(const std::string& preset_or_path);

// Builds the topology for `spec`, optionally overriding the node count and GPUs per node (at most
// the node's: check_gpus_per_node). Validates it (connected, every GPU reaches every GPU) and
// installs the family's router.
Topology build_topology(const ClusterSpec& spec, std::optional<int> nodes = std::nullopt,
                        std::optional<int> gpus_per_node = std::nullopt);

// GPUs per node a job can use on the cluster's nodes: 1..spec.node.gpus. Fewer runs a job on some
// of each node's GPUs (nccl-tests on 4 of 8, one GPU per node); more is a node the cluster does not
// have (a preset's node is fixed hardware; a cluster file says its own in node.gpus). Throws
// InputError "FLAG G: ORIGIN's nodes hold N GPUs; expected 1..N ..." otherwise.
void check_gpus_per_node(const ClusterSpec& spec, int gpus, std::string_view flag = "--gpus-per-node");

// One line per preset: name and description, in preset_names() order (for `commstack topo --list-presets`).
std::vector<std::pair<std::string, std::string>> preset_descriptions();

// The preset built around the GPU an nccl-tests rank line names ("NVIDIA H100 80GB HBM3" ->
// "dgx-h100"), or nullopt when no preset has that GPU in that form (PCIe and NVL boards, H800,
// A800, ...). Matching is on the product name only: the preset's NICs and fabric are an
// assumption the caller must state.
std::optional<std::string> preset_for_gpu(const std::string& gpu_name);

// The embedded JSON text of a preset (throws InputError for an unknown name).
std::string preset_json(const std::string& name);

std::string to_string(FabricKind kind);

}  // namespace commstack::topologies
