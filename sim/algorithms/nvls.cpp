// NVLS inside one NVLink domain, as NCCL runs it on NVSwitch systems (src/device/all_reduce.h,
// reduce_scatter.h, all_gather.h, the NVLS variants): the switch reduces and multicasts. Each rank
// owns 1/n of every channel's bytes (NCCL's NVLS heads, one per GPU in a domain). For its shard a
// GPU issues multimem load-reduces: the switch reads every GPU's copy (n flows GPU -> switch) and
// returns the sum (switch -> owner). For an all-reduce the owner then stores the sum with a
// multimem store: one flow owner -> switch, which the switch writes to every GPU (n flows switch ->
// GPU). Reduce-scatter is the first half, all-gather the second (the owner stores its own input).
// So a GPU's NVLink port carries S + S/n each way for an all-reduce, where a ring carries
// 2 (n - 1) / n S: NVLS's bandwidth advantage, from the switch doing the arithmetic.
//
// Chunks pipeline like a tree's (NCCL's NVLS chunk, 128 KiB a head by default): the result of chunk
// k leaves the switch once all n reads of chunk k have arrived, and each hop sends one chunk at a
// time. The coarse levels are the tree's: one flow per hop (step) or per GPU port direction (edge),
// ending where the chunk level's pipeline, run outside SimGrid, ends them.
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

namespace {

bool reduces(CollectiveOp op) {
  return op == CollectiveOp::allreduce || op == CollectiveOp::reducescatter;
}
bool multicasts(CollectiveOp op) {
  return op == CollectiveOp::allreduce || op == CollectiveOp::allgather;
}

ChannelDag nvls_dag(CollectiveOp op, const std::vector<int>& ranks, int nvswitch) {
  ChannelDag d;
  for (const int owner : ranks) {
    const int result = reduces(op) ? add_switch_reduce(d, ranks, nvswitch, owner) : -1;
    if (multicasts(op)) {
      const int store = add_switch_multicast(d, ranks, nvswitch, owner);
      if (result >= 0) d.feeds[static_cast<std::size_t>(result)].push_back(store);
    }
  }
  return d;
}

}  // namespace

long long nvls_hops_per_channel(CollectiveOp op, long long n) {
  return n * ((reduces(op) ? n + 1 : 0) + (multicasts(op) ? n + 1 : 0));
}

void add_nvls(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks) {
  const auto n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int K = chunks;
  const double chunk = spec.bytes / n / spec.channels / K;
  add_dag(graph, topo, spec, nvls_dag(spec.op, spec.ranks, topo.nvswitch_endpoint(spec.ranks.front())), level,
          chunk, K);
}

}  // namespace commstack::sim::detail
