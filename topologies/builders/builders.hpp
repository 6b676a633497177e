#pragma once
// Family builders (one file each). Each adds the node-internal devices (intra_node.hpp), its
// fabric, installs its algorithmic router, and lists the representative nodes for the diameter.
#include <string>
#include <vector>

#include "topologies/cluster.hpp"
#include "topologies/topology.hpp"

namespace commstack::topologies::builders {

struct BuildInputs {
  const ClusterSpec& spec;
  int nodes = 1;
  int gpus = 1;                // per node
  std::vector<NicSpec> nics;   // adapted to `gpus`
  std::string origin;          // for error messages ("preset dgx-h100", "cluster.json")
};

void build_single(Topology& topo, const BuildInputs& in);        // FabricKind::none (one NVLink domain)
void build_rail_fat_tree(Topology& topo, const BuildInputs& in);
void build_fat_tree(Topology& topo, const BuildInputs& in);
void build_torus(Topology& topo, const BuildInputs& in, const std::vector<int>& dims);
void build_dragonfly(Topology& topo, const BuildInputs& in);

// Refuses shapes whose link count would not fit in memory (InputError naming `what`).
void check_link_budget(long long links, const BuildInputs& in, const char* what);

// Most balanced factorisation of `nodes` into `count` ring sizes (largest first), used when
// --nodes changes a torus: minimises the largest ring, then the next, ... (deterministic).
std::vector<int> balanced_dims(int nodes, int count);

}  // namespace commstack::topologies::builders
