// Broadcast and reduce as NCCL runs them: a pipelined chain along each channel's ring, starting
// at the root (broadcast) or ending at it (reduce). Each channel carries S/channels bytes, cut
// into chunks; chunk k crosses edge i after it arrived over edge i-1 and after chunk k-1 was sent
// over edge i (latencies of consecutive chunks overlap). The step and edge levels are one flow per
// edge, timed by the same pipeline run outside SimGrid (pipeline.hpp).
#include <algorithm>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

namespace {

// Step and edge levels: one flow per chain edge carrying all K chunks, starting at 0 like every
// other edge flow, so that SimGrid moves its bytes with the link sharing of all of them (share x
// t0 per chunk on its busiest link); a latency after the bytes makes it end where the chunk
// level's pipeline ends that edge.
void add_coarse_chains(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                       const std::vector<std::vector<int>>& chains, double chunk, int K) {
  const int edges = static_cast<int>(chains.front().size()) - 1;
  std::vector<std::vector<topologies::Path>> paths;
  for (const auto& chain : chains) {
    auto& mine = paths.emplace_back();
    for (int i = 0; i < edges; ++i)
      mine.push_back(topo.route(chain[static_cast<std::size_t>(i)], chain[static_cast<std::size_t>(i) + 1]));
  }
  PipeHops ph = pipeline_hops(topo, paths, chunk, spec.step_overhead_s);
  std::vector<std::vector<int>> next(static_cast<std::size_t>(edges));  // hop i feeds hop i+1
  for (int i = 0; i + 1 < edges; ++i) next[static_cast<std::size_t>(i)] = {i + 1};
  ph.feeds.assign(chains.size(), next);
  const bool run = static_cast<double>(edges) * K * static_cast<double>(chains.size()) <= kPipelineBudget;
  // The chunk level's pipeline: chunk k crosses edge i once it arrived over edge i-1 and chunk k-1
  // was sent over edge i, sharing each edge's busiest link with the chains' flows on it.
  const auto ends = run ? pipeline_hop_ends(ph, PipeShape::dag, K) : std::vector<std::vector<double>>{};
  for (std::size_t c = 0; c < chains.size(); ++c) {
    // Beyond the budget, a flow shop of uncontended edges: identical chunks through edges with
    // per-chunk times p_j and latencies a_j finish edge i at sum_{j<=i} (a_j + p_j) + (K-1)
    // max_{j<=i} p_j.
    double fill = 0, p_max = 0;
    for (int i = 0; i < edges; ++i) {
      const PipeHop& h = ph.hops[c][static_cast<std::size_t>(i)];
      const double shared = K * h.t0 * h.share;  // the flow's bytes with every flow on its link active
      p_max = std::max(p_max, h.t0);
      fill += h.a + h.t0;
      const double end = run ? ends[c][static_cast<std::size_t>(i)] : fill + (K - 1) * p_max;
      add_pipelined_flow(graph, spec, chains[c][static_cast<std::size_t>(i)],
                         chains[c][static_cast<std::size_t>(i) + 1], chunk * K, end, shared);
    }
  }
}

}  // namespace

void add_chain(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
               int chunks) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int K = chunks;
  const int edges = n - 1;
  const double chunk = spec.bytes / spec.channels / K;
  const double ovh = spec.step_overhead_s;
  const int root_gpu = spec.ranks[static_cast<std::size_t>(spec.root)];

  std::vector<std::vector<int>> coarse;  // the chains of the step and edge levels
  for (int c = 0; c < spec.channels; ++c) {
    std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    // Rotate so the root comes first; the chain is root -> ... (broadcast) or the ranks after the
    // root -> ... -> root (reduce, data flows in the same ring direction and ends at the root).
    std::size_t r0 = 0;
    while (ring[r0] != root_gpu) ++r0;
    std::vector<int> chain;
    chain.reserve(static_cast<std::size_t>(n) + 1);
    for (int i = 0; i < n; ++i) chain.push_back(ring[(r0 + static_cast<std::size_t>(i)) % ring.size()]);
    if (spec.op == CollectiveOp::reduce) {
      chain.erase(chain.begin());
      chain.push_back(root_gpu);
    }
    const int base = graph.size();

    if (level != Fidelity::chunk) {
      coarse.push_back(std::move(chain));
      continue;
    }

    auto id = [&](int i, int k) { return base + i * K + k; };
    for (int i = 0; i < edges; ++i) {
      for (int k = 0; k < K; ++k) {
        Flow f;
        f.src = chain[static_cast<std::size_t>(i)];
        f.dst = chain[static_cast<std::size_t>(i) + 1];
        f.bytes = chunk;
        f.extra_latency_s = ovh;
        f.group = spec.group;
        graph.add_flow(f);
      }
    }
    for (int i = 0; i < edges; ++i) {
      for (int k = 0; k < K; ++k) {
        if (k > 0) graph.add_dependency(id(i, k - 1), id(i, k), Dep::sent);
        if (i > 0) graph.add_dependency(id(i - 1, k), id(i, k));
      }
    }
  }
  if (!coarse.empty()) add_coarse_chains(graph, topo, spec, coarse, chunk, K);
}

}  // namespace commstack::sim::detail
