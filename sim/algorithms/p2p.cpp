// Direct all-to-all (every rank sends S/n to every other rank, n(n-1) flows, optionally at most
// P peers at a time per rank) and nccl-tests' sendrecv (rank i sends S to rank i+1, ring shift),
// with NCCL's PXN relays across the network (pxn.hpp).
#include <algorithm>
#include <array>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pxn.hpp"

namespace commstack::sim::detail {
namespace {

// The flows that carry `f` where PXN relays it (relay_legs).
int pxn_legs(const PxnRelays& pxn, const Flow& f, std::array<Flow, 2>& legs) {
  return relay_legs(f, pxn.relay(f.src, f.dst), legs);
}

}  // namespace

void add_alltoall(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const double per_peer = spec.bytes / n;
  const int window = spec.max_concurrent_peers == 0 ? n - 1 : spec.max_concurrent_peers;
  const PxnRelays pxn(topo, spec.ranks);
  // Flow (r, j): rank r sends to rank r + j (mod n), j = 1..n-1; peers in that order so that at
  // any moment every rank receives from as many senders as it sends to. A pair relayed by PXN is
  // two flows (pxn_legs). With a peer window, the first flow id of each pair in order (and one past
  // the last), for the dependencies: a pair's flows are start[k] .. start[k+1]-1.
  const bool windowed = window < n - 1;
  std::vector<int> start;
  if (windowed) start.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1) + 1);
  std::array<Flow, 2> legs;
  for (int r = 0; r < n; ++r) {
    for (int j = 1; j < n; ++j) {
      Flow f;
      f.src = spec.ranks[static_cast<std::size_t>(r)];
      f.dst = spec.ranks[static_cast<std::size_t>((r + j) % n)];
      f.bytes = per_peer;
      f.extra_latency_s = spec.step_overhead_s;
      f.group = spec.group;
      if (windowed) start.push_back(graph.size());
      const int count = pxn_legs(pxn, f, legs);
      for (int l = 0; l < count; ++l) graph.add_flow(legs[static_cast<std::size_t>(l)]);
    }
  }
  if (!windowed) return;
  start.push_back(graph.size());
  for (int r = 0; r < n; ++r) {
    for (int j = window + 1; j < n; ++j) {
      const auto before = static_cast<std::size_t>(r) * static_cast<std::size_t>(n - 1) +
                          static_cast<std::size_t>(j - window - 1);
      const auto after =
          static_cast<std::size_t>(r) * static_cast<std::size_t>(n - 1) + static_cast<std::size_t>(j - 1);
      for (int a = start[before]; a < start[before + 1]; ++a)
        for (int b = start[after]; b < start[after + 1]; ++b) graph.add_dependency(a, b);
    }
  }
}

// Pairs of `spec` that PXN relays (each is one more flow).
long long pxn_relayed_pairs(const topologies::Topology& topo, const CollectiveSpec& spec, bool all_pairs) {
  const int n = static_cast<int>(spec.ranks.size());
  const PxnRelays pxn(topo, spec.ranks);
  long long relayed = 0;
  for (int r = 0; r < n; ++r)
    for (int j = 1; j < (all_pairs ? n : std::min(n, 2)); ++j)
      relayed += pxn.relay(spec.ranks[static_cast<std::size_t>(r)],
                           spec.ranks[static_cast<std::size_t>((r + j) % n)]) >= 0;
  return relayed;
}

void add_sendrecv(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                  Fidelity level, int chunks) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int K = chunks;
  const double chunk = spec.bytes / spec.channels / K;
  const PxnRelays pxn(topo, spec.ranks);
  for (int c = 0; c < spec.channels; ++c) {
    for (int r = 0; r < n; ++r) {
      Flow f;
      f.src = spec.ranks[static_cast<std::size_t>(r)];
      f.dst = spec.ranks[static_cast<std::size_t>((r + 1) % n)];
      f.group = spec.group;
      f.extra_latency_s = spec.step_overhead_s;
      std::array<Flow, 2> legs;
      const int count = pxn_legs(pxn, f, legs);
      for (int l = 0; l < count; ++l) {
        Flow leg = legs[static_cast<std::size_t>(l)];
        if (level != Fidelity::chunk) {
          // Chunks follow each other on the connection and their latencies overlap: one flow.
          leg.bytes = chunk * K;
          graph.add_flow(leg);
          continue;
        }
        leg.bytes = chunk;
        int prev = -1;
        for (int k = 0; k < K; ++k) {
          const int id = graph.add_flow(leg);
          if (prev >= 0) graph.add_dependency(prev, id, Dep::sent);
          prev = id;
        }
      }
    }
  }
}

}  // namespace commstack::sim::detail
