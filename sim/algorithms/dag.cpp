// The collectives that are a dag of equal chunks per channel (trees, NVLS, NVLSTree, CollNet): the chunk
// level's flows, and the coarse levels timed by the chunk level's pipeline run outside SimGrid.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

void add_dag_chunks(FlowGraph& graph, const CollectiveSpec& spec,
                    const std::vector<std::pair<int, int>>& hops, const std::vector<std::vector<int>>& feeds,
                    double chunk, int K) {
  const int base = graph.size();
  auto id = [&](std::size_t hop, int k) { return base + static_cast<int>(hop) * K + k; };
  for (const auto& [src, dst] : hops)
    for (int k = 0; k < K; ++k) {
      Flow f;
      f.src = src;
      f.dst = dst;
      f.bytes = chunk;
      f.extra_latency_s = spec.step_overhead_s;
      f.group = spec.group;
      graph.add_flow(f);
    }
  for (std::size_t i = 0; i < hops.size(); ++i)
    for (int k = 0; k < K; ++k) {
      if (k > 0) graph.add_dependency(id(i, k - 1), id(i, k), Dep::sent);
      for (const int j : feeds[i]) graph.add_dependency(id(i, k), id(static_cast<std::size_t>(j), k));
    }
}

namespace {

// Step (one flow per hop, all K chunks) and edge (one flow per switch port direction, one per hop
// elsewhere) levels, each flow ending where the chunk level's pipeline ends its hops.
void add_coarse_dag(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
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
      if (level == Fidelity::step || !dag_port_hop(topo, src, dst)) {
        add_pipelined_flow(graph, spec, src, dst, chunk * K, end[i], shared);
        continue;
      }
      // Hops to or from a switch (a GPU's NVSwitch port; for CollNet a head's NIC and the cables
      // between switches) go as one flow per pair and direction, alone on its links, which SimGrid
      // moves in `shared`; it arrives when the latest of its hops would. (Hops between GPUs
      // stay apart: merged, the pairs of a 16-node NVLSTree end 8% late, their links' other flows
      // no longer in step with them.)
      Merged& m = merged[{src, dst}];
      m.bytes += chunk * K;
      m.after_bytes_s = std::max(m.after_bytes_s, end[i] - shared);
    }
  }
  for (const auto& [pair, m] : merged)
    add_pipelined_flow(graph, spec, pair.first, pair.second, m.bytes, m.after_bytes_s, 0.0);
}

}  // namespace

int add_switch_reduce(ChannelDag& d, const std::vector<int>& ranks, int sw, int owner) {
  std::vector<int> reads;
  reads.reserve(ranks.size());
  for (const int r : ranks) reads.push_back(d.add(r, sw));
  const int result = d.add(sw, owner);
  for (const int i : reads) d.feeds[static_cast<std::size_t>(i)].push_back(result);
  return result;
}

int add_switch_multicast(ChannelDag& d, const std::vector<int>& ranks, int sw, int owner) {
  const int store = d.add(owner, sw);
  for (const int r : ranks) {
    const int write = d.add(sw, r);  // before indexing feeds: add() grows it
    d.feeds[static_cast<std::size_t>(store)].push_back(write);
  }
  return store;
}

bool dag_port_hop(const topologies::Topology& topo, int src, int dst) {
  return src >= topo.gpu_count() || dst >= topo.gpu_count();
}

void add_dag(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
             const ChannelDag& dag, Fidelity level, double chunk, int K) {
  if (level != Fidelity::chunk) {
    add_coarse_dag(graph, topo, spec, dag, level, chunk, K);
    return;
  }
  for (int c = 0; c < spec.channels; ++c) add_dag_chunks(graph, spec, dag.hops, dag.feeds, chunk, K);
}

}  // namespace commstack::sim::detail
