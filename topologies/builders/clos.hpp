#pragma once
// Shared core of the two fat-tree families: leaves (ToRs), spines and cores with capacities from
// the oversubscription ratios, and the d-mod-k router. The families differ only in which leaf a
// NIC plugs into: rail-optimized = leaf (unit, NIC index); plain = the unit's one ToR.
#include "topologies/builders/builders.hpp"

namespace commstack::topologies::builders {

void build_clos(Topology& topo, const BuildInputs& in, bool rail_optimized);

}  // namespace commstack::topologies::builders
