// build_topology(): applies --nodes / --gpus-per-node, dispatches to the family builder and
// validates the result (connected, so every GPU reaches every GPU).
#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/units.hpp"
#include "topologies/analysis.hpp"
#include "topologies/builders/builders.hpp"
#include "topologies/cluster.hpp"

namespace commstack::topologies {
namespace {

std::vector<NicSpec> adapt_nics(const ClusterSpec& spec, int gpus) {
  if (spec.node.nic_per_gpu && gpus != spec.node.gpus) {
    std::vector<NicSpec> out;
    const NicSpec proto = spec.node.nics.empty() ? NicSpec{} : spec.node.nics.front();
    for (int g = 0; g < gpus; ++g) out.push_back(NicSpec{g, proto.bandwidth_Bps, proto.latency_s});
    return out;
  }
  for (std::size_t k = 0; k < spec.node.nics.size(); ++k) {
    if (spec.node.nics[k].gpu < 0 || spec.node.nics[k].gpu >= gpus) {
      throw InputError(fmt::format("--gpus-per-node {}: {}: /node/nics/gpus/{} attaches a NIC to GPU {}, which a "
                                   "{}-GPU node does not have; expected a GPU count above {}",
                                   gpus, spec.origin, k, spec.node.nics[k].gpu, gpus, spec.node.nics[k].gpu));
    }
  }
  return spec.node.nics;
}

}  // namespace

void check_gpus_per_node(const ClusterSpec& spec, int gpus, std::string_view flag) {
  if (gpus >= 1 && gpus <= spec.node.gpus) return;
  const std::string origin = spec.origin.empty() ? spec.name : spec.origin;
  const int n = spec.node.gpus;
  // load_cluster names a preset's origin "preset NAME"; any other is the user's own file.
  const bool preset = origin.starts_with("preset ");
  throw InputError(fmt::format(
      "{} {}: {}'s nodes hold {} GPU{}; expected {}{} (fewer runs the job on some of each node's GPUs; {})",
      flag, gpus, origin, n, n == 1 ? "" : "s", n == 1 ? "" : "1..", n,
      preset ? "a larger node needs a cluster file with its node.gpus, docs/cluster-format.md"
             : "a larger node needs a larger node.gpus in the file"));
}

Topology build_topology(const ClusterSpec& spec, std::optional<int> nodes_override, std::optional<int> gpus_override) {
  const int nodes = nodes_override.value_or(spec.nodes);
  const int gpus = gpus_override.value_or(spec.node.gpus);
  if (nodes < 1) throw InputError(fmt::format("--nodes: expected a node count >= 1, got {}", nodes));
  if (gpus < 1 || gpus > 1024) throw InputError(fmt::format("--gpus-per-node: expected 1..1024, got {}", gpus));
  if (gpus_override) check_gpus_per_node(spec, gpus);
  if (static_cast<long long>(nodes) * gpus > kMaxGpus) {
    throw InputError(fmt::format("--nodes {} x {} GPUs per node: expected at most {} GPUs in total", nodes, gpus, kMaxGpus));
  }
  const std::string origin = spec.origin.empty() ? spec.name : spec.origin;
  if (spec.node.nvlink_domain_nodes < 1) {
    throw InputError(fmt::format("{}: /node/nvlink_domain_nodes: expected >= 1, got {}", origin,
                                 spec.node.nvlink_domain_nodes));
  }
  builders::BuildInputs in{spec, nodes, gpus, adapt_nics(spec, gpus), origin};
  Topology topo;
  topo.name = fmt::format("{} x {} nodes", spec.name, nodes);
  topo.nodes = nodes;
  topo.gpus_per_node = gpus;
  topo.nvlink_domain_nodes = spec.node.nvswitch ? spec.node.nvlink_domain_nodes : 1;
  switch (spec.fabric.kind) {
    case FabricKind::none:
      if (nodes > spec.node.nvlink_domain_nodes) {
        throw InputError(fmt::format("{}: /fabric/kind: \"none\" (no scale-out network) holds one NVLink domain of {} "
                                     "node(s), but {} nodes were asked for; expected a fabric or fewer nodes",
                                     origin, spec.node.nvlink_domain_nodes, nodes));
      }
      builders::build_single(topo, in);
      break;
    case FabricKind::rail_fat_tree: builders::build_rail_fat_tree(topo, in); break;
    case FabricKind::fat_tree: builders::build_fat_tree(topo, in); break;
    case FabricKind::torus: {
      long long product = 1;
      for (int k : spec.fabric.dims) {
        if (k < 1) throw InputError(fmt::format("{}: /fabric/dims: expected ring sizes >= 1, got {}", origin, k));
        product = std::min<long long>(product * k, kMaxGpus + 1);
      }
      if (spec.fabric.dims.empty()) throw InputError(fmt::format("{}: /fabric/dims: expected 1 to 6 ring sizes", origin));
      // The file's shape when the count matches; otherwise the most balanced shape with as many dimensions.
      const auto dims = product == nodes ? spec.fabric.dims
                                         : builders::balanced_dims(nodes, static_cast<int>(spec.fabric.dims.size()));
      builders::build_torus(topo, in, dims);
      break;
    }
    case FabricKind::dragonfly: builders::build_dragonfly(topo, in); break;
  }
  check_connected(topo, origin);
  return topo;
}

}  // namespace commstack::topologies
