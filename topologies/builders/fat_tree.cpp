// Plain fat tree: every NIC of a node plugs into the node's top-of-rack switch (one leaf per unit
// of nodes_per_unit nodes), as in Meta's RoCE racks or any non-rail cluster.
#include "topologies/builders/clos.hpp"

namespace commstack::topologies::builders {

void build_fat_tree(Topology& topo, const BuildInputs& in) { build_clos(topo, in, false); }

}  // namespace commstack::topologies::builders
