#pragma once
// A dataflow graph of point-to-point flows: what a collective algorithm emits and what the
// Simulator executes. It is plain data (no SimGrid objects), so building it is cheap; the
// Simulator turns a flow into a SimGrid activity only when all its predecessors have finished
// (SimGrid 3.32 degrades quadratically with activities created up front, see docs/simulator.md).
#include <cstdint>
#include <vector>

namespace commstack::sim {

// A flow's life: ready (all dependencies met) -> waits delay_s -> its bytes cross the route at
// the flow's max-min fair share ("sent": the sender's link is free again) -> after the latency
// (route latency + extra_latency_s) the data has arrived. Latency does not occupy links, so
// pipelined chunks overlap their latencies, as NCCL's FIFO slots do.
struct Flow {
  // Endpoints in Topology numbering: GPU ranks, then NVSwitches, then fabric switches
  // (Topology::endpoint_route; a flow between a GPU and its NVSwitch is NVLS's load-reduce or
  // multicast store, one to or from a fabric switch CollNet's in-network reduction).
  int src = -1;  // endpoint that sends
  int dst = -1;  // endpoint that receives; src == dst is a local no-op flow
  double bytes = 0;
  // Latency after the transfer, on top of the route latency (Topology::path_latency) that the
  // Simulator adds itself: per-step software overhead, or latency that a coarse fidelity level
  // accounts for analytically (several steps folded into one flow).
  double extra_latency_s = 0;
  // When false the route latency is not added (the algorithm already put it in extra_latency_s).
  bool add_route_latency = true;
  int group = 0;  // which collective this flow belongs to (for per-collective finish times)
  // Wait between ready and the start of the transfer (analytic pipeline fill at coarse fidelity).
  double delay_s = 0;
};

// What a dependency waits for: the predecessor's data to arrive (arrival, the default), or only
// its transfer to finish (sent: the next message on the same connection may go).
enum class Dep : unsigned char { arrival = 0, sent = 1 };

class FlowGraph {
public:
  int add_flow(const Flow& flow);
  // `after` cannot start before `before` has arrived (or only been sent).
  void add_dependency(int before, int after, Dep kind = Dep::arrival);
  // Adds every flow and dependency of `other` (its flow ids shifted past ours, groups kept).
  void append(const FlowGraph& other);

  int size() const { return static_cast<int>(flows_.size()); }
  int group_count() const { return groups_; }
  const Flow& flow(int id) const { return flows_[static_cast<std::size_t>(id)]; }
  const std::vector<Flow>& flows() const { return flows_; }

  // Compressed successor lists and predecessor counts, built on demand (called by the Simulator).
  struct Adjacency {
    std::vector<int> offsets;     // size() + 1 entries
    // successors of flow i: [offsets[i], offsets[i+1]), encoded as 2 * id + (kind == Dep::sent)
    std::vector<int> successors;
    std::vector<std::uint32_t> predecessor_count;
  };
  Adjacency adjacency() const;

private:
  std::vector<Flow> flows_;
  struct Edge {
    int before;
    int after;
    Dep kind;
  };
  std::vector<Edge> edges_;
  int groups_ = 0;
};

}  // namespace commstack::sim
