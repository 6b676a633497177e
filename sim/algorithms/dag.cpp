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

// Each coarse flow's time moving its bytes when every coarse flow of the collective starts at 0:
// on each link, processor sharing among the flows that cross it (a flow of b bytes is done once
// every flow on the link has moved min(its bytes, b)), the flow's slowest link. With equal flows
// this is the hop's share x its bytes' time, what the pipeline run assumes; where a merged port
// pair (several hops' bytes as one SimGrid flow) shares a link with single hops, SimGrid gives each
// flow an equal rate, so the single hops finish before the pair, and their latency must start
// there (CollNet's intra-node scatters and gathers beside a head's NIC flows: the edge level was
// 2.9-3.8% fast at 1 MiB with each flow's time taken as its whole link's).
struct CoarseFlow {
  int src = 0, dst = 0;
  double bytes = 0, end = 0;
  const topologies::Path* path = nullptr;
};

std::vector<double> coarse_flow_times(const topologies::Topology& topo,
                                      const std::vector<CoarseFlow>& flows) {
  std::map<std::pair<int, bool>, std::vector<double>> on_link;  // (link, forward) -> flow bytes
  for (const auto& f : flows)
    for (const auto& h : *f.path) on_link[{h.link, h.forward}].push_back(f.bytes);
  // Sorted sizes with prefix sums: sum_k min(b_k, b) = (sizes below b) + b x (the others).
  std::map<std::pair<int, bool>, std::vector<double>> prefix;
  for (auto& [key, sizes] : on_link) {
    std::sort(sizes.begin(), sizes.end());
    auto& p = prefix[key];
    p.assign(sizes.size() + 1, 0.0);
    for (std::size_t k = 0; k < sizes.size(); ++k) p[k + 1] = p[k] + sizes[k];
  }
  std::vector<double> out;
  out.reserve(flows.size());
  for (const auto& f : flows) {
    double t = 0;
    for (const auto& h : *f.path) {
      const double bw = topo.link(h.link).bandwidth_Bps;
      if (bw <= 0) continue;
      const auto& sizes = on_link.at({h.link, h.forward});
      const auto below =
          static_cast<std::size_t>(std::upper_bound(sizes.begin(), sizes.end(), f.bytes) - sizes.begin());
      const double moved =
          prefix.at({h.link, h.forward})[below] + f.bytes * static_cast<double>(sizes.size() - below);
      t = std::max(t, moved / bw);
    }
    out.push_back(t);
  }
  return out;
}

// Step (one flow per hop, all K chunks) and edge (one flow per switch port direction, one per hop
// elsewhere) levels, each flow ending where the chunk level's pipeline ends its hops.
void add_coarse_dag(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                    const ChannelDag& dag, Fidelity level, double chunk, int K) {
  std::vector<topologies::Path> channel_paths;
  for (const auto& [src, dst] : dag.hops) channel_paths.push_back(topo.endpoint_route(src, dst));
  const std::vector<std::vector<topologies::Path>> paths(static_cast<std::size_t>(spec.channels),
                                                         channel_paths);
  PipeHops ph = pipeline_hops(topo, paths, chunk, spec.step_overhead_s);
  ph.feeds.assign(paths.size(), dag.feeds);
  const std::size_t hops = dag.hops.size();
  const bool run = static_cast<double>(hops) * K * static_cast<double>(paths.size()) <= kPipelineBudget;
  const auto ends = run ? pipeline_hop_ends(ph, PipeShape::dag, K) : std::vector<std::vector<double>>{};
  std::vector<CoarseFlow> flows;
  // Edge level: hops to or from a switch (a GPU's NVSwitch port; for CollNet a head's NIC and the
  // cables between switches) go as one flow per pair and direction, which arrives when the latest of
  // its hops would. (Hops between GPUs stay apart: merged, the pairs of a 16-node NVLSTree end 8%
  // late, their links' other flows no longer in step with them.) Ordered for deterministic flow ids.
  std::map<std::pair<int, int>, CoarseFlow> merged;
  for (std::size_t c = 0; c < paths.size(); ++c) {
    const std::vector<double> end = run ? ends[c] : dag_hop_ends_estimate(ph, c, K);
    for (std::size_t i = 0; i < hops; ++i) {
      const auto [src, dst] = dag.hops[i];
      if (level == Fidelity::step || !dag_port_hop(topo, src, dst)) {
        flows.push_back({src, dst, chunk * K, end[i], &paths[c][i]});
        continue;
      }
      CoarseFlow& m = merged[{src, dst}];
      m = {src, dst, m.bytes + chunk * K, std::max(m.end, end[i]), &paths[c][i]};
    }
  }
  for (const auto& [pair, m] : merged) flows.push_back(m);
  const std::vector<double> moving = coarse_flow_times(topo, flows);
  for (std::size_t f = 0; f < flows.size(); ++f)
    add_pipelined_flow(graph, spec, flows[f].src, flows[f].dst, flows[f].bytes, flows[f].end, moving[f]);
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
