#pragma once
// Internal to sim/algorithms: the per-family flow generators behind add_collective().
#include <map>
#include <utility>

#include "sim/algorithms/collective.hpp"

namespace commstack::sim::detail {

// Route latency and narrowest-link bandwidth between GPU ranks, each route computed once.
class RouteInfo {
public:
  explicit RouteInfo(const topologies::Topology& topo) : topo_(topo) {}
  double latency(int src, int dst) { return get(src, dst).first; }
  double bandwidth(int src, int dst) { return get(src, dst).second; }

private:
  const std::pair<double, double>& get(int src, int dst);
  const topologies::Topology& topo_;
  std::map<std::pair<int, int>, std::pair<double, double>> cache_;
};

// Number of pipeline chunks when `bytes` per channel step are cut into `chunk_bytes` pieces.
int chunk_count(double bytes, double chunk_bytes);

// Flow counts of each level (chunk, step, edge) for a valid spec.
struct LevelCounts {
  long long chunk = 0;
  long long step = 0;
  long long edge = 0;
  int chunks = 1;
};
LevelCounts level_counts(const topologies::Topology& topo, const CollectiveSpec& spec);

// allreduce, allgather, reducescatter.
void add_ring(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks);
// broadcast, reduce: pipelined chain from / to the root along each channel's ring.
void add_chain(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
               int chunks);
// alltoall (every ordered pair) and sendrecv (rank i -> rank i+1).
void add_alltoall(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec);
void add_sendrecv(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
                  int chunks);

}  // namespace commstack::sim::detail
