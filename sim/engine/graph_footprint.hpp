#pragma once
// What a FlowGraph occupies and a canonical form of what it does, so that identical independent
// collectives are simulated once. Under max-min sharing the only shared resources are the links
// (one per direction; endpoints compute nothing), so graphs whose routes cross disjoint link
// directions run independently; and two graphs with the same signature (the same flows and
// dependencies, and hop by hop links of the same bandwidth and latency, shared among their flows
// in the same pattern) take the same time. The 128 TP groups of a pipeline stage on 128 nodes are
// such graphs: one of them gives the time of all (sim/train/comm_costs.cpp).
#include <cstdint>
#include <vector>

#include "sim/engine/flow_graph.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim {

struct GraphFootprint {
  std::vector<std::int64_t> signature;  // canonical form: equal signatures, equal run times
  std::vector<int> link_directions;     // sorted, unique: 2 * link id + (1 when crossed b -> a)
};

GraphFootprint footprint(const topologies::Topology& topo, const FlowGraph& graph);

// True when no link direction is crossed by two of the footprints.
bool disjoint(const std::vector<GraphFootprint>& footprints, int link_count);

}  // namespace commstack::sim
