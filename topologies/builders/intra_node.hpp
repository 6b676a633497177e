#pragma once
// Devices inside the nodes, shared by every family: GPUs, the NVSwitch plane (one vertex per node,
// or per multi-node NVLink domain; a pcie_switch vertex for PCIe-only nodes), NICs hung off their
// GPU's PCIe switch. Also the path pieces every router starts and ends with.
#include <vector>

#include "topologies/cluster.hpp"
#include "topologies/topology.hpp"

namespace commstack::topologies::builders {

struct IntraNode {
  int nodes = 0;
  int gpus = 0;           // per node
  int nics = 0;           // per node
  int domain_nodes = 1;   // nodes sharing one NVLink plane
  std::vector<int> gpu_vertex;      // [node * gpus + g]
  std::vector<int> nic_vertex;      // [node * nics + k]
  std::vector<int> gpu_plane_link;  // [node * gpus + g], link GPU (a) -- plane (b)
  std::vector<int> nic_link;        // [node * nics + k], link GPU (a) -- NIC (b)
  std::vector<int> nic_gpu;         // [k] local GPU the NIC hangs off
  std::vector<int> gpu_nic;         // [g] local NIC GPU g uses for scale-out (nearest-NIC rule), -1 if none

  int domain_of(int node) const { return node / domain_nodes; }
  int node_of_gpu(int rank) const { return rank / gpus; }

  // Appends GPU rank -> its NIC (GPU->NIC, or GPU->plane->GPU'->NIC for a GPU without own NIC).
  // `nic`: send through that local NIC instead (NCCL's PXN: over NVLink to the GPU the NIC hangs
  // off, which puts the bytes on that NIC's rail).
  void append_gpu_to_nic(int rank, Path& path, int nic = -1) const;
  // Appends the NIC of GPU rank -> GPU rank (mirror of the above).
  void append_nic_to_gpu(int rank, Path& path) const;
  // Same NVLink domain (or same node): GPU -> plane -> GPU. Returns false when not applicable.
  bool route_inside(int src, int dst, Path& path) const;
  // Vertex id of the NIC GPU rank uses.
  int nic_vertex_of_gpu(int rank) const;
  int nic_index_of_gpu(int rank) const;  // local NIC index (the rail)
};

// Adds the node-internal devices for `nodes` nodes with `gpus` GPUs each. `nics` is the NIC list
// (already adapted to `gpus`).
IntraNode build_intra_node(Topology& topo, const NodeSpec& node, const std::vector<NicSpec>& nics, int nodes, int gpus);

// Nearest-NIC rule (docs/topologies.md): GPU g uses the lowest-index NIC attached to it; with
// none, the NIC whose GPU is nearest by local index (ties: lower GPU index, then lower NIC index).
std::vector<int> nearest_nics(const std::vector<NicSpec>& nics, int gpus);

// Throws InputError when a node's GPUs have no NIC although the cluster needs a scale-out fabric.
}  // namespace commstack::topologies::builders
