#include "topologies/builders/intra_node.hpp"

#include <cstdlib>

#include <fmt/format.h>

namespace commstack::topologies::builders {

std::vector<int> nearest_nics(const std::vector<NicSpec>& nics, int gpus) {
  std::vector<int> out(static_cast<std::size_t>(gpus), -1);
  for (int g = 0; g < gpus; ++g) {
    int best = -1;
    for (int k = 0; k < static_cast<int>(nics.size()); ++k) {
      if (best < 0) {
        best = k;
        continue;
      }
      const int dk = std::abs(nics[static_cast<std::size_t>(k)].gpu - g);
      const int db = std::abs(nics[static_cast<std::size_t>(best)].gpu - g);
      // Strictly nearer wins; at equal distance the NIC on the lower GPU wins; NIC order breaks the rest.
      if (dk < db || (dk == db && nics[static_cast<std::size_t>(k)].gpu < nics[static_cast<std::size_t>(best)].gpu)) best = k;
    }
    out[static_cast<std::size_t>(g)] = best;
  }
  return out;
}

IntraNode build_intra_node(Topology& topo, const NodeSpec& node, const std::vector<NicSpec>& nics, int nodes, int gpus) {
  IntraNode in;
  in.nodes = nodes;
  in.gpus = gpus;
  in.nics = static_cast<int>(nics.size());
  in.domain_nodes = node.nvswitch ? node.nvlink_domain_nodes : 1;
  in.gpu_vertex.reserve(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(gpus));
  in.gpu_plane_link.reserve(in.gpu_vertex.capacity());
  in.nic_vertex.reserve(static_cast<std::size_t>(nodes) * nics.size());
  in.nic_link.reserve(in.nic_vertex.capacity());
  for (const auto& nic : nics) in.nic_gpu.push_back(nic.gpu);
  in.gpu_nic = nearest_nics(nics, gpus);
  for (int g = 0; g < gpus; ++g)
    topo.max_nics_per_gpu = std::max(topo.max_nics_per_gpu,
                                     static_cast<int>(std::count(in.nic_gpu.begin(), in.nic_gpu.end(), g)));

  const LinkKind plane_kind = node.nvswitch ? LinkKind::nvlink : LinkKind::pcie;
  const VertexKind plane_vertex = node.nvswitch ? VertexKind::nvswitch : VertexKind::pcie_switch;
  int plane = -1;
  for (int n = 0; n < nodes; ++n) {
    if (n % in.domain_nodes == 0) {
      const int d = n / in.domain_nodes;
      const std::string name = in.domain_nodes > 1 ? fmt::format("nvl{}.nvswitch", d)
                                                   : fmt::format("n{}.{}", n, node.nvswitch ? "nvswitch" : "pcie");
      plane = topo.add_vertex(Vertex{plane_vertex, name, in.domain_nodes > 1 ? -1 : n, d, 0});
    }
    const std::size_t first_gpu = in.gpu_vertex.size();
    for (int g = 0; g < gpus; ++g) {
      const int v = topo.add_vertex(Vertex{VertexKind::gpu, fmt::format("n{}.gpu{}", n, g), n, g, 0});
      in.gpu_vertex.push_back(v);
      in.gpu_plane_link.push_back(topo.add_link(v, plane, node.gpu_link_bandwidth_Bps, node.gpu_link_latency_s, plane_kind));
    }
    for (int k = 0; k < in.nics; ++k) {
      const auto& spec = nics[static_cast<std::size_t>(k)];
      const int v = topo.add_vertex(Vertex{VertexKind::nic, fmt::format("n{}.nic{}", n, k), n, k, 0});
      in.nic_vertex.push_back(v);
      in.nic_link.push_back(topo.add_link(in.gpu_vertex[first_gpu + static_cast<std::size_t>(spec.gpu)], v,
                                          node.pcie_bandwidth_Bps, node.pcie_latency_s, LinkKind::pcie));
    }
  }
  return in;
}

int IntraNode::nic_index_of_gpu(int rank) const { return gpu_nic[static_cast<std::size_t>(rank % gpus)]; }

int IntraNode::nic_vertex_of_gpu(int rank) const {
  return nic_vertex[static_cast<std::size_t>(node_of_gpu(rank) * nics + nic_index_of_gpu(rank))];
}

void IntraNode::append_gpu_to_nic(int rank, Path& path, int nic) const {
  const int node = node_of_gpu(rank);
  const int k = nic < 0 ? nic_index_of_gpu(rank) : nic;
  const int owner = node * gpus + nic_gpu[static_cast<std::size_t>(k)];
  if (owner != rank) {  // via the plane to the GPU that owns the NIC (NCCL PXN-like)
    path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(rank)], true});
    path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(owner)], false});
  }
  path.push_back(Hop{nic_link[static_cast<std::size_t>(node * nics + k)], true});
}

void IntraNode::append_nic_to_gpu(int rank, Path& path) const {
  const int node = node_of_gpu(rank);
  const int k = nic_index_of_gpu(rank);
  const int owner = node * gpus + nic_gpu[static_cast<std::size_t>(k)];
  path.push_back(Hop{nic_link[static_cast<std::size_t>(node * nics + k)], false});
  if (owner != rank) {
    path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(owner)], true});
    path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(rank)], false});
  }
}

bool IntraNode::route_inside(int src, int dst, Path& path) const {
  if (domain_of(node_of_gpu(src)) != domain_of(node_of_gpu(dst))) return false;
  path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(src)], true});
  path.push_back(Hop{gpu_plane_link[static_cast<std::size_t>(dst)], false});
  return true;
}

}  // namespace commstack::topologies::builders
