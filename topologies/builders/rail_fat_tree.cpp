// Rail-optimized fat tree (NVIDIA DGX SuperPOD style): NIC k of every node in a scalable unit
// plugs into that unit's rail-k leaf, so same-rail traffic inside a unit turns at the leaf.
#include "topologies/builders/clos.hpp"

namespace commstack::topologies::builders {

void build_rail_fat_tree(Topology& topo, const BuildInputs& in) { build_clos(topo, in, true); }

}  // namespace commstack::topologies::builders
