#pragma once
// A dataflow graph of point-to-point flows: what a collective algorithm emits and what the
// Simulator executes. It is plain data (no SimGrid objects), so building it is cheap; the
// Simulator turns a flow into a SimGrid activity only when all its predecessors have finished
// (SimGrid 3.32 degrades quadratically with activities created up front, see docs/simulator.md).
#include <cstdint>
#include <vector>

namespace commstack::sim {

struct Flow {
  int src = -1;   // GPU rank (Topology numbering) that sends
  int dst = -1;   // GPU rank that receives; src == dst is a local no-op flow
  double bytes = 0;
  // Latency paid before the bytes move, on top of the route latency (Topology::path_latency) the
  // Simulator adds itself. Used for per-step software overhead and for latency that coarse
  // fidelity levels account for analytically (several steps folded into one flow).
  double extra_latency_s = 0;
  // When false the route latency is not added (the algorithm already put it in extra_latency_s).
  bool add_route_latency = true;
  int group = 0;  // which collective this flow belongs to (for per-collective finish times)
};

class FlowGraph {
public:
  int add_flow(const Flow& flow);
  // `after` cannot start before `before` has finished.
  void add_dependency(int before, int after);

  int size() const { return static_cast<int>(flows_.size()); }
  int group_count() const { return groups_; }
  const Flow& flow(int id) const { return flows_[static_cast<std::size_t>(id)]; }
  const std::vector<Flow>& flows() const { return flows_; }

  // Compressed successor lists and predecessor counts, built on demand (called by the Simulator).
  struct Adjacency {
    std::vector<int> offsets;     // size() + 1 entries
    std::vector<int> successors;  // successors of flow i: [offsets[i], offsets[i+1])
    std::vector<std::uint32_t> predecessor_count;
  };
  Adjacency adjacency() const;

private:
  std::vector<Flow> flows_;
  std::vector<std::pair<int, int>> edges_;  // (before, after)
  int groups_ = 0;
};

}  // namespace commstack::sim
