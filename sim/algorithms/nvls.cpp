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
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

namespace {

bool reduces(CollectiveOp op) {
  return op == CollectiveOp::allreduce || op == CollectiveOp::reducescatter;
}
bool multicasts(CollectiveOp op) {
  return op == CollectiveOp::allreduce || op == CollectiveOp::allgather;
}

// One channel's hops (sender, receiver endpoints) and which hops each one feeds (PipeShape::dag).
struct ChannelDag {
  std::vector<std::pair<int, int>> hops;
  std::vector<std::vector<int>> feeds;
};

ChannelDag nvls_dag(CollectiveOp op, const std::vector<int>& ranks, int nvswitch) {
  ChannelDag d;
  auto add = [&d](int src, int dst) {
    d.hops.emplace_back(src, dst);
    d.feeds.emplace_back();
    return static_cast<int>(d.hops.size()) - 1;
  };
  for (const int owner : ranks) {
    int result = -1;
    if (reduces(op)) {
      std::vector<int> reads;
      reads.reserve(ranks.size());
      for (const int r : ranks) reads.push_back(add(r, nvswitch));
      result = add(nvswitch, owner);
      for (const int i : reads) d.feeds[static_cast<std::size_t>(i)].push_back(result);
    }
    if (multicasts(op)) {
      const int store = add(owner, nvswitch);
      if (result >= 0) d.feeds[static_cast<std::size_t>(result)].push_back(store);
      for (const int r : ranks) {
        const int write = add(nvswitch, r);  // before indexing feeds: add() grows it
        d.feeds[static_cast<std::size_t>(store)].push_back(write);
      }
    }
  }
  return d;
}

// Step (one flow per hop, all K chunks) and edge (one flow per endpoint pair: a GPU's port to the
// switch and back) levels, each flow ending where the chunk level's pipeline ends its hops.
void add_coarse_nvls(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                     const ChannelDag& dag, Fidelity level, double chunk, int K) {
  std::vector<topologies::Path> channel_paths;
  for (const auto& [src, dst] : dag.hops) channel_paths.push_back(topo.endpoint_route(src, dst));
  const std::vector<std::vector<topologies::Path>> paths(static_cast<std::size_t>(spec.channels),
                                                         channel_paths);
  PipeHops ph = pipeline_hops(topo, paths, chunk, 1, spec.step_overhead_s);
  ph.feeds.assign(paths.size(), dag.feeds);
  const std::size_t hops = dag.hops.size();
  const bool run = static_cast<double>(hops) * K * static_cast<double>(paths.size()) <= kPipelineBudget;
  const auto ends = run ? pipeline_hop_ends(ph, PipeShape::dag, K) : std::vector<std::vector<double>>{};
  struct Merged {
    double bytes = 0, after_bytes_s = 0;
  };
  std::map<std::pair<int, int>, Merged> merged;  // edge level, ordered for deterministic flow ids
  for (std::size_t c = 0; c < paths.size(); ++c) {
    const std::vector<double> end = run ? ends[c] : dag_hop_ends_estimate(ph, c, K);
    for (std::size_t i = 0; i < hops; ++i) {
      const PipeHop& h = ph.hops[c][i];
      const double shared = K * h.t0 * h.share;  // the hop's bytes with every flow on its link active
      const auto [src, dst] = dag.hops[i];
      if (level == Fidelity::step) {
        add_pipelined_flow(graph, spec, src, dst, chunk * K, end[i], shared);
        continue;
      }
      // Every hop on a port direction is merged, so the merged flow is alone on it and SimGrid
      // moves its bytes in `shared`; it arrives when the latest of its hops would.
      Merged& m = merged[{src, dst}];
      m.bytes += chunk * K;
      m.after_bytes_s = std::max(m.after_bytes_s, end[i] - shared);
    }
  }
  for (const auto& [pair, m] : merged)
    add_pipelined_flow(graph, spec, pair.first, pair.second, m.bytes, m.after_bytes_s, 0.0);
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
  const ChannelDag dag = nvls_dag(spec.op, spec.ranks, topo.nvswitch_endpoint(spec.ranks.front()));
  if (level != Fidelity::chunk) {
    add_coarse_nvls(graph, topo, spec, dag, level, chunk, K);
    return;
  }
  for (int c = 0; c < spec.channels; ++c) add_dag_chunks(graph, spec, dag.hops, dag.feeds, chunk, K);
}

}  // namespace commstack::sim::detail
