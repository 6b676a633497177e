#pragma once
// Chrome / Perfetto trace (JSON "traceEvents") of recorded flows: one process per sending GPU,
// one track per destination, one complete event per flow from ready to end (latency included).
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"

namespace commstack::sim {

std::string format_trace(const topologies::Topology& topo, const std::vector<FlowRecord>& flows);

}  // namespace commstack::sim
