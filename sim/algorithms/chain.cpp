// Broadcast and reduce as NCCL runs them: a pipelined chain along each channel's ring, starting
// at the root (broadcast) or ending at it (reduce). Each channel carries S/channels bytes, cut
// into chunks; chunk k crosses edge i after it arrived over edge i-1 and after chunk k-1 was sent
// over edge i (latencies of consecutive chunks overlap).
#include <algorithm>
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

void add_chain(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
               int chunks) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int K = chunks;
  const int edges = n - 1;
  const double chunk = spec.bytes / spec.channels / K;
  const double ovh = spec.step_overhead_s;
  const int root_gpu = spec.ranks[static_cast<std::size_t>(spec.root)];
  RouteInfo routes(topo);

  for (int c = 0; c < spec.channels; ++c) {
    std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    // Rotate so the root comes first; the chain is root -> ... (broadcast) or the ranks after the
    // root -> ... -> root (reduce, data flows in the same ring direction and ends at the root).
    std::size_t r0 = 0;
    while (ring[r0] != root_gpu) ++r0;
    std::vector<int> chain;
    for (int i = 0; i < n; ++i) chain.push_back(ring[(r0 + static_cast<std::size_t>(i)) % ring.size()]);
    if (spec.op == CollectiveOp::reduce) {
      chain.erase(chain.begin());
      chain.push_back(root_gpu);
    }
    const int base = graph.size();

    if (level != Fidelity::chunk) {
      // One flow per edge with all K chunks; the pipeline is accounted for analytically. Identical
      // chunks through edges with per-chunk times p_j = chunk / B_j and latencies a_j (a flow
      // shop) finish edge i at sum_{j<=i} (a_j + p_j) + (K-1) max_{j<=i} p_j (uncontended B_j). The
      // flow for edge i is delayed so that, moving its K chunks at B_i, it ends exactly there.
      double fill = 0;    // sum_{j<i} (a_j + p_j): first chunk reaches edge i
      double p_max = 0;   // max_{j<=i} p_j
      for (int i = 0; i < edges; ++i) {
        Flow f;
        f.src = chain[static_cast<std::size_t>(i)];
        f.dst = chain[static_cast<std::size_t>(i) + 1];
        f.bytes = chunk * K;
        f.add_route_latency = false;
        const double a = routes.latency(f.src, f.dst) + ovh;
        const double p = chunk / routes.bandwidth(f.src, f.dst);
        p_max = std::max(p_max, p);
        f.delay_s = fill + (K - 1) * (p_max - p);
        f.extra_latency_s = a;
        f.group = spec.group;
        graph.add_flow(f);
        fill += a + p;
      }
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
}

}  // namespace commstack::sim::detail
