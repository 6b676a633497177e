#include "topologies/analysis.hpp"

#include <algorithm>
#include <limits>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/visitors.hpp>
#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::topologies {
namespace {

int max_gpu_distance_from(const Topology& topo, int gpu_rank, std::vector<int>& dist) {
  const auto& g = topo.graph();
  std::fill(dist.begin(), dist.end(), -1);
  const auto src = static_cast<std::size_t>(topo.gpu_vertex(gpu_rank));
  dist[src] = 0;
  boost::breadth_first_search(
      g, src,
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(
          boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)), boost::on_tree_edge()))));
  int worst = 0;
  for (int r = 0; r < topo.gpu_count(); ++r) worst = std::max(worst, dist[static_cast<std::size_t>(topo.gpu_vertex(r))]);
  return worst;
}

}  // namespace

void check_connected(const Topology& topo, const std::string& origin) {
  if (topo.vertex_count() == 0 || topo.gpu_count() == 0) {
    throw InputError(fmt::format("{}: the topology has no GPUs", origin));
  }
  std::vector<int> component(static_cast<std::size_t>(topo.vertex_count()));
  boost::connected_components(topo.graph(), component.data());
  const int home = component[static_cast<std::size_t>(topo.gpu_vertex(0))];
  for (int v = 0; v < topo.vertex_count(); ++v) {
    if (component[static_cast<std::size_t>(v)] != home) {
      throw InputError(fmt::format("{}: the topology is disconnected: {} cannot reach {} (does every node have a NIC "
                                   "in /node/nics and a fabric in /fabric?)",
                                   origin, topo.vertex(v).name, topo.vertex(topo.gpu_vertex(0)).name));
    }
  }
}

int gpu_diameter(const Topology& topo) {
  if (topo.representative_nodes.empty() || topo.gpus_per_node <= 0) return gpu_diameter_exhaustive(topo);
  std::vector<int> dist(static_cast<std::size_t>(topo.vertex_count()));
  int worst = 0;
  for (int node : topo.representative_nodes) {
    for (int g = 0; g < topo.gpus_per_node; ++g) {
      worst = std::max(worst, max_gpu_distance_from(topo, node * topo.gpus_per_node + g, dist));
    }
  }
  return worst;
}

int gpu_diameter_exhaustive(const Topology& topo) {
  std::vector<int> dist(static_cast<std::size_t>(topo.vertex_count()));
  int worst = 0;
  for (int r = 0; r < topo.gpu_count(); ++r) worst = std::max(worst, max_gpu_distance_from(topo, r, dist));
  return worst;
}

TopologySummary summarize(const Topology& topo) {
  TopologySummary s;
  s.name = topo.name;
  s.gpus = topo.gpu_count();
  s.nodes = topo.nodes;
  s.gpus_per_node = topo.gpus_per_node;
  for (const Vertex& v : topo.vertices()) {
    switch (v.kind) {
      case VertexKind::nvswitch:
      case VertexKind::pcie_switch: ++s.nvswitches; break;
      case VertexKind::nic: ++s.nics; break;
      case VertexKind::fabric_switch:
      case VertexKind::router: ++s.fabric_switches; break;
      case VertexKind::gpu: break;
    }
  }
  for (const Link& l : topo.links()) {
    switch (l.kind) {
      case LinkKind::nvlink: ++s.links_nvlink; break;
      case LinkKind::pcie: ++s.links_pcie; break;
      case LinkKind::network: ++s.links_network; break;
    }
  }
  double node0_nic_bw = 0;
  for (int v = 0; v < topo.vertex_count(); ++v) {
    const Vertex& vx = topo.vertex(v);
    if (vx.kind != VertexKind::nic || vx.node != 0) continue;
    for (int l : topo.incident_links(v)) {
      if (topo.link(l).kind == LinkKind::network) node0_nic_bw += topo.link(l).bandwidth_Bps;
    }
  }
  s.injection_Bps_per_gpu = topo.gpus_per_node > 0 ? node0_nic_bw / topo.gpus_per_node : 0;
  s.diameter_hops = gpu_diameter(topo);
  s.bisection_Bps = bisection_bandwidth(topo);
  return s;
}

std::string several_nics_note(const Topology& topo) {
  if (topo.max_nics_per_gpu < 2) return "";
  return fmt::format(
      "GPUs of {} own up to {} NICs each; the fabric simulation sends a GPU's network traffic through one of "
      "them, where NCCL spreads its channels over all: bandwidth across nodes is understated up to {}x "
      "(the calibrated stack model, collective's default, counts every NIC)",
      topo.name, topo.max_nics_per_gpu, topo.max_nics_per_gpu);
}

}  // namespace commstack::topologies
