#pragma once
// Internal to sim/algorithms: the per-family flow generators behind add_collective().
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/algorithms/collective.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

// Route latency between GPU ranks, each route computed once.
class RouteInfo {
public:
  explicit RouteInfo(const topologies::Topology& topo) : topo_(topo) {}
  double latency(int src, int dst);

 private:
  const topologies::Topology& topo_;
  std::map<std::pair<int, int>, double> cache_;
};

// The flows that carry `f`: itself (relay < 0), or the copy to the relay GPU and the relay's send,
// side by side (NCCL pipelines them by chunks). Returns how many of `legs` are set.
int relay_legs(const Flow& f, int relay, std::array<Flow, 2>& legs);
// The GPU rank the route from src to dst passes through (the router's PXN relay on rails,
// clos.cpp), or -1 when it passes through none.
int route_relay(const topologies::Topology& topo, int src, int dst);
// Edges of a ring collective's channels whose route the router relays (one more flow each at the
// edge level).
long long ring_relayed_edges(const topologies::Topology& topo, const CollectiveSpec& spec);

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
// Pairs of an alltoall (all_pairs) or a sendrecv ring that PXN relays through another GPU (pxn.hpp).
long long pxn_relayed_pairs(const topologies::Topology& topo, const CollectiveSpec& spec, bool all_pairs);

// The factor on each ring edge's latency (route + step overhead, a[i]) at the step and edge levels,
// where a step's flow folds its K chunk loops. NCCL loops over chunks outside and steps inside, and
// a loop's first send waits only for its edge, not for upstream data. So the chunk level's longest
// chain of latencies crosses K (steps - 1) + 1 consecutive edges (loop k + 1 starts on the edge where
// loop k's last step was sent), a coarse step's chain steps of them: the ratio of the largest such
// sums around the ring makes the coarse levels' latency-bound end the chunk level's exactly, and
// keeps each edge's latency in proportion (a uniform addition to every edge, slow NIC hops and fast
// NVLink hops alike, changed how the channels sharing NVLink links fall into phase: +25% at 64 MiB
// on 4 DGX H100 nodes with 64 KiB chunks). On a uniform ring (K (steps - 1) + 1) / steps, K (2n - 3)
// + 1 latencies in all for an all-reduce; 1 for K = 1 (NCCL's small calls).
double chunk_loops_latency_scale(const std::vector<double>& a, int K, int steps);

// Each channel's factor on its edges' latencies at the step level. Where the latency is the time
// (a uniform ring) or the chunk loops do not fit `budget`, chunk_loops_latency_scale. Otherwise the
// factor that makes the steps' pipeline end where the chunk loops' pipeline ends (both run outside
// SimGrid, pipeline.hpp): in a bandwidth-bound ring the chunk loops hide all but the last loop's
// latencies behind the bottleneck's bytes, and the K-fold latency of a whole step's flow would be
// in series with them (forced 64 KiB chunks on 2 DGX H100 nodes: +6% to +15%).
std::vector<double> step_latency_scales(const topologies::Topology& topo, const CollectiveSpec& spec,
                                        double block, int K, int steps, double budget = kPipelineBudget);

// Each channel's end of a ring collective's steps' pipeline (every edge sending block s once it
// has sent block s-1 and block s-1 of its predecessor has arrived), as the edge level times it,
// and each channel's bandwidth bound per step (max_t: its slowest hop with every flow on its link
// active). method: "lock-step" (uniform ring, exact), "pipeline" (run, up to `budget` edge-steps
// over the channels), "sub-ring" (a longer ring's steady state from its first nodes) or "cycle"
// (steps x the drifting cycle time, when no node boundary is in reach).
struct RingPipeline {
  std::vector<double> end;
  std::vector<double> max_t;
  std::string method;
};
RingPipeline ring_pipeline(const topologies::Topology& topo, const CollectiveSpec& spec, double block, int K,
                           int steps, double budget = kPipelineBudget);

// A coarse-level flow of a pipeline run outside SimGrid (chains, trees): it starts at 0 with all
// its hop's blocks, SimGrid moves its bytes with the link sharing of every flow (`shared`: their
// time with every flow of the collective on the hop's busiest link active), and a latency after
// them makes it end at `end`, where the pipeline run ends the hop.
void add_pipelined_flow(FlowGraph& graph, const CollectiveSpec& spec, int src, int dst, double bytes,
                        double end, double shared);

// The chunk level of a dag (trees, NVLS): every hop sends K chunks of `chunk` bytes, one at a time
// (chunk k once chunk k - 1 is sent), chunk k of hop j once chunk k of every hop feeding j arrived.
void add_dag_chunks(FlowGraph& graph, const CollectiveSpec& spec,
                    const std::vector<std::pair<int, int>>& hops, const std::vector<std::vector<int>>& feeds,
                    double chunk, int K);
// One channel's hops (sender, receiver endpoints) and which hops each one feeds (PipeShape::dag).
struct ChannelDag {
  std::vector<std::pair<int, int>> hops;
  std::vector<std::vector<int>> feeds;
  int add(int src, int dst) {  // a new hop, feeding nothing yet
    hops.emplace_back(src, dst);
    feeds.emplace_back();
    return static_cast<int>(hops.size()) - 1;
  }
};
// NVLink SHARP hops (nvls.cpp, nvls_tree.cpp) for `owner`'s shard in the domain of `ranks` on switch
// endpoint `sw`: the multimem load-reduce (every rank's copy up to the switch, feeding the sum down to
// the owner; returns that hop) and the multimem store (the owner's data up to the switch, feeding its
// write to every rank; returns the store hop).
int add_switch_reduce(ChannelDag& d, const std::vector<int>& ranks, int sw, int owner);
int add_switch_multicast(ChannelDag& d, const std::vector<int>& ranks, int sw, int owner);
// Every channel runs `dag` with K chunks of `chunk` bytes a hop: add_dag_chunks at the chunk level;
// the step level one flow per hop, the edge level one per switch port direction (dag_port_hop) and
// one per hop between GPUs, each timed by the chunk level's pipeline run outside SimGrid (dag.cpp).
bool dag_port_hop(const topologies::Topology& topo, int src, int dst);
void add_dag(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
             const ChannelDag& dag, Fidelity level, double chunk, int K);

// allreduce, allgather, reducescatter.
void add_ring(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks);
// broadcast, reduce: pipelined chain from / to the root along each channel's ring.
void add_chain(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
               int chunks);
// Trees a tree all-reduce runs per channel: NCCL's two (half the bytes each) when the ranks span
// more than one node, the one chain otherwise.
int trees_per_channel(const topologies::Topology& topo, const std::vector<int>& ranks);
// Nodes the ranks span.
int tree_nodes(const topologies::Topology& topo, const std::vector<int>& ranks);
// allreduce with Algorithm::tree: NCCL's double binary tree across nodes, a chain inside each node.
void add_tree(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks);
// NVLS (Algorithm::nvls) inside one NVLink domain: allreduce, reducescatter, allgather through the
// NVSwitch's reduction and multicast (nvls.cpp). Hops a channel has: per shard, n reads and the
// result (reductions), the owner's store and n multicast writes (all-reduce, all-gather).
long long nvls_hops_per_channel(CollectiveOp op, long long n);
void add_nvls(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks);
// NVLSTree (Algorithm::nvlstree): NVLS inside each NVLink domain, NCCL's double binary tree between
// the domains' heads of the same index (nvls_tree.cpp). nvls_domains: the ranks grouped by their
// NVSwitch, in order of first appearance.
std::vector<std::vector<int>> nvls_domains(const topologies::Topology& topo, const std::vector<int>& ranks);
ChannelDag nvls_tree_dag(const topologies::Topology& topo, const std::vector<int>& ranks);
void add_nvls_tree(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                   Fidelity level, int chunks);
// CollNet (Algorithm::collnet_direct, collnet_chain): all-reduce with the fabric switches reducing
// (InfiniBand SHARP, collnet.cpp). A port is a GPU with a network port and the fabric switch that
// port is cabled to; a rail's tree is the parent of every switch on it and its root.
struct CollNetPort {
  int gpu = -1;  // GPU rank
  int sw = -1;   // fabric switch vertex
};
struct CollNetTree {
  int root = -1;              // switch vertex
  std::map<int, int> parent;  // switch vertex -> its parent switch vertex
};
struct CollNetLayout {
  std::vector<std::vector<int>> nodes;          // the ranks grouped by node, in order of appearance
  std::vector<std::vector<CollNetPort>> ports;  // per node: its heads' ports, rail by rail
  std::vector<CollNetTree> trees;               // per rail
};
// Throws InputError when the ranks or the topology cannot run CollNet.
CollNetLayout collnet_layout(const topologies::Topology& topo, const std::vector<int>& ranks);
// Direct: one channel's dag (every channel runs it); Chain: all `channels` channels' hops.
ChannelDag collnet_dag(const topologies::Topology& topo, const CollNetLayout& layout, Algorithm algorithm,
                       int channels);
// The bytes a hop carries per chunk.
double collnet_chunk(const CollNetLayout& layout, const CollectiveSpec& spec, int chunks);
void add_collnet(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                 Fidelity level, int chunks);
// Flow counts of a dag run `copies` times with `chunks` chunks a hop (dag.cpp's levels).
LevelCounts dag_level_counts(const topologies::Topology& topo, const ChannelDag& dag, long long copies,
                             int chunks);
// PAT (Algorithm::pat) at one GPU per node: all-gather and reduce-scatter over binomial trees of
// the ranks, each step aggregated into one transfer per rank (pat.cpp). Step t of the all-gather
// sends `chunks` ranks' chunks `distance` ranks further on (reduce-scatter: the steps reversed,
// `distance` ranks back).
struct PatStep {
  int distance = 0;
  int chunks = 0;
};
struct PatSchedule {
  std::vector<PatStep> steps;  // the all-gather's order: farthest peer (one chunk) first
};
PatSchedule pat_schedule(int n);
void add_pat(FlowGraph& graph, const CollectiveSpec& spec);
// alltoall (every ordered pair) and sendrecv (rank i -> rank i+1).
void add_alltoall(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec);
void add_sendrecv(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
                  int chunks);

}  // namespace commstack::sim::detail
