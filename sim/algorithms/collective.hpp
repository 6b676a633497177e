#pragma once
// NCCL-style ring-family, tree, NVLS, NVLSTree and PAT collectives and direct all-to-all / send-recv,
// decomposed into the point-to-point flows of a FlowGraph. What each op moves, and the three fidelity levels,
// are described in docs/simulator.md.
#include <string>
#include <vector>

#include "sim/engine/flow_graph.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim {

enum class CollectiveOp { allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv };
std::string to_string(CollectiveOp op);
CollectiveOp collective_op_from_string(const std::string& name);  // throws InputError listing valid names

// chunk: every chunk of every step is a flow. step: one flow per ring edge per step (all chunks of
// the step folded, their latencies summed). edge: one flow per ring edge for the whole collective,
// latency added analytically. automatic: the finest level whose flow count fits the budget.
enum class Fidelity { automatic, chunk, step, edge };
std::string to_string(Fidelity f);
Fidelity fidelity_from_string(const std::string& name);  // throws InputError

// How a collective moves its data: NCCL's ring (reduce-scatter then all-gather around each
// channel's ring); NCCL's Tree for all-reduce (a reduction up and a broadcast down, pipelined by
// chunks, over the double binary tree across nodes and a chain inside each node); NCCL's NVLS for
// all-reduce, reduce-scatter and all-gather inside one NVLink domain (the NVSwitch reduces and
// multicasts: nvls.cpp), and NVLSTree across domains (NVLS inside each, the double binary tree between
// them: nvls_tree.cpp); NCCL's PAT for all-gather and reduce-scatter at one GPU per node (binomial
// trees, one aggregated transfer per rank and step: pat.cpp); NCCL's CollNetDirect and CollNetChain
// for all-reduce across nodes (the InfiniBand switches reduce, SHARP: collnet.cpp). Every other op
// has one pattern.
enum class Algorithm { ring, tree, nvls, nvlstree, pat, collnet_direct, collnet_chain };
std::string to_string(Algorithm a);  // NCCL_ALGO's names in lower case: "collnetdirect"
// "ring" / "tree" / "nvls" / "nvlstree" / "pat" / "collnetdirect" / "collnetchain", any case
// (NCCL_ALGO's names); throws InputError naming `flag`.
Algorithm algorithm_from_string(const std::string& name, const std::string& flag);

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::allreduce;
  // tree: all-reduce only; nvls: one NVLink domain; nvlstree: all-reduce over several domains; pat:
  // all-gather / reduce-scatter, a GPU per node; collnet: all-reduce over several nodes of a fat tree
  Algorithm algorithm = Algorithm::ring;
  std::vector<int> ranks;  // the communicator: GPU ranks (Topology numbering), in rank order
  // Bytes as nccl-tests' size column: the per-rank buffer for allreduce, broadcast, reduce,
  // sendrecv and alltoall (all peers together); the gathered total (count * type size * n) for
  // allgather and reducescatter.
  double bytes = 0;
  int root = 0;       // broadcast/reduce: index into `ranks`
  int channels = 1;   // parallel rings; channel c rotates the order inside every node by c
  // Pipeline chunk per channel per step (nvls: per rank's shard of a channel; collnetdirect: per
  // head's share of a channel); 0 = no pipelining (one chunk carries the whole step).
  double chunk_bytes = 0;
  Fidelity fidelity = Fidelity::automatic;
  // Software overhead per step per chunk (kernel/proxy handshake), added to the route latency.
  // 0 until calibrated (next issue).
  double step_overhead_s = 0;
  // alltoall: how many peers each rank sends to at once; 0 = all n-1.
  int max_concurrent_peers = 0;
  int group = 0;  // FlowGraph group of the flows
};

struct CollectivePlan {
  Fidelity fidelity = Fidelity::chunk;  // the level used (never automatic)
  long long flows = 0;
  int chunks = 1;  // pipeline chunks per channel step
};

// Largest flow count the automatic fidelity accepts for the finer levels.
inline constexpr long long kAutoFlowBudget = 250'000;

// Flow count of each level for `spec`, and the level automatic picks.
CollectivePlan plan_collective(const topologies::Topology& topo, const CollectiveSpec& spec);

// Appends the collective's flows to `graph`. Validates the spec (throws InputError).
CollectivePlan add_collective(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec);

// The ring order of channel `channel` over `ranks`: GPUs grouped by node in order of first
// appearance, each node's GPUs rotated by `channel`, so consecutive channels enter and leave every
// node through different GPUs (and thus NICs / rails). Inside a multi-node NVLink domain (GB200
// NVL72) the domain's nodes are rotated too, by channel / GPUs per node, so that channels leave the
// domain through the NICs of different nodes, as NCCL's ring graph spreads them over the domain's
// NICs, instead of all through the last node's.
std::vector<int> channel_ring(const topologies::Topology& topo, const std::vector<int>& ranks, int channel);

// The pipeline chunk NCCL uses for a CollNet all-reduce of spec.bytes per rank (src/enqueue.cc,
// calcCollChunking, Simple with the default 4 MiB buffer): a 512 KiB slot for CollNetDirect (256 KiB
// for CollNetChain) halved while the call has too few chunks per channel and head for its pipeline
// depth (Direct 2, Chain the ranks of a node), down to 32 KiB. Throws what add_collective would.
double collnet_nccl_chunk(const topologies::Topology& topo, const CollectiveSpec& spec);

// The network ports of GPU rank `gpu` that CollNet could use: its own cable to a fabric switch and
// each of its NICs' cables to one (leaves, spines, cores: the switches that reduce, InfiniBand
// SHARP). Torus and dragonfly routers do not reduce, so a GPU whose NICs reach only routers has
// none (collnet.cpp).
int collnet_ports(const topologies::Topology& topo, int gpu);

// nccl-tests bus bandwidth factor: busbw = algbw * factor.
double bus_bandwidth_factor(CollectiveOp op, int nranks);

}  // namespace commstack::sim
