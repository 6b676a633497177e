// Direct all-to-all (every rank sends S/n to every other rank, n(n-1) flows, optionally at most
// P peers at a time per rank) and nccl-tests' sendrecv (rank i sends S to rank i+1, ring shift).
#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

void add_alltoall(FlowGraph& graph, const topologies::Topology& /*topo*/, const CollectiveSpec& spec) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const double per_peer = spec.bytes / n;
  const int window = spec.max_concurrent_peers == 0 ? n - 1 : spec.max_concurrent_peers;
  const int base = graph.size();
  // Flow (r, j): rank r sends to rank r + j (mod n), j = 1..n-1; peers in that order so that at
  // any moment every rank receives from as many senders as it sends to.
  auto id = [&](int r, int j) { return base + r * (n - 1) + (j - 1); };
  for (int r = 0; r < n; ++r) {
    for (int j = 1; j < n; ++j) {
      Flow f;
      f.src = spec.ranks[static_cast<std::size_t>(r)];
      f.dst = spec.ranks[static_cast<std::size_t>((r + j) % n)];
      f.bytes = per_peer;
      f.extra_latency_s = spec.step_overhead_s;
      f.group = spec.group;
      graph.add_flow(f);
    }
  }
  for (int r = 0; r < n; ++r) {
    for (int j = window + 1; j < n; ++j) graph.add_dependency(id(r, j - window), id(r, j));
  }
}

void add_sendrecv(FlowGraph& graph, const topologies::Topology& /*topo*/, const CollectiveSpec& spec,
                  Fidelity level, int chunks) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int K = chunks;
  const double chunk = spec.bytes / spec.channels / K;
  for (int c = 0; c < spec.channels; ++c) {
    for (int r = 0; r < n; ++r) {
      Flow f;
      f.src = spec.ranks[static_cast<std::size_t>(r)];
      f.dst = spec.ranks[static_cast<std::size_t>((r + 1) % n)];
      f.group = spec.group;
      if (level != Fidelity::chunk) {
        // Chunks follow each other on the connection and their latencies overlap: one flow.
        f.bytes = chunk * K;
        f.extra_latency_s = spec.step_overhead_s;
        graph.add_flow(f);
        continue;
      }
      f.bytes = chunk;
      f.extra_latency_s = spec.step_overhead_s;
      int prev = -1;
      for (int k = 0; k < K; ++k) {
        const int id = graph.add_flow(f);
        if (prev >= 0) graph.add_dependency(prev, id, Dep::sent);
        prev = id;
      }
    }
  }
}

}  // namespace commstack::sim::detail
