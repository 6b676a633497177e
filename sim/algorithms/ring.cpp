// Ring all-reduce (reduce-scatter then all-gather: 2(n-1) steps), all-gather and reduce-scatter
// (n-1 steps), as NCCL runs them: every channel is a ring over all ranks; at every step each rank
// sends one block of S/(n*channels) bytes to its successor, cut into pipeline chunks.
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

void add_ring(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks) {
  const int n = static_cast<int>(spec.ranks.size());
  if (n < 2) return;
  const int steps = spec.op == CollectiveOp::allreduce ? 2 * (n - 1) : n - 1;
  const int K = chunks;
  // Bytes of one chunk of one step on one channel.
  const double block = spec.bytes / (static_cast<double>(n) * spec.channels);
  const double chunk = block / K;
  const double ovh = spec.step_overhead_s;
  RouteInfo routes(topo);

  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    auto src = [&](int i) { return ring[static_cast<std::size_t>(i)]; };
    auto dst = [&](int i) { return ring[static_cast<std::size_t>((i + 1) % n)]; };
    const int base = graph.size();

    if (level == Fidelity::edge) {
      // One flow per edge carrying every step's bytes; its latency is steps * chunks * (alpha +
      // overhead): in a ring every step waits for the previous step's data from upstream, so the
      // step latencies add up (lock-step ring; the slowest edge decides, as in the finer levels).
      for (int i = 0; i < n; ++i) {
        Flow f;
        f.src = src(i);
        f.dst = dst(i);
        f.bytes = block * steps;
        f.add_route_latency = false;
        f.extra_latency_s = static_cast<double>(steps) * K * (routes.latency(f.src, f.dst) + ovh);
        f.group = spec.group;
        graph.add_flow(f);
      }
      continue;
    }

    if (level == Fidelity::step) {
      // Flow (i, s) = edge i, step s: all K chunks of the step; the K chunk loops each pay the
      // step latency, so the flow carries K latencies (the Simulator adds one route latency).
      auto id = [&](int i, int s) { return base + i * steps + s; };
      for (int i = 0; i < n; ++i) {
        for (int s = 0; s < steps; ++s) {
          Flow f;
          f.src = src(i);
          f.dst = dst(i);
          f.bytes = block;
          f.extra_latency_s = K * ovh + (K - 1) * routes.latency(f.src, f.dst);
          f.group = spec.group;
          graph.add_flow(f);
        }
      }
      for (int i = 0; i < n; ++i) {
        const int prev = (i + n - 1) % n;
        for (int s = 1; s < steps; ++s) {
          graph.add_dependency(id(i, s - 1), id(i, s), Dep::sent);  // one step at a time per edge
          graph.add_dependency(id(prev, s - 1), id(i, s));  // the block arrived from the predecessor
        }
      }
      continue;
    }

    // Chunk level. Flow (i, k, s) = edge i, chunk loop k, step s. NCCL loops over chunks outside
    // and steps inside, so an edge sends (k, 0..steps-1) then (k+1, 0..).
    auto id = [&](int i, int k, int s) { return base + (i * K + k) * steps + s; };
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < K; ++k) {
        for (int s = 0; s < steps; ++s) {
          Flow f;
          f.src = src(i);
          f.dst = dst(i);
          f.bytes = chunk;
          f.extra_latency_s = ovh;
          f.group = spec.group;
          graph.add_flow(f);
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      const int prev = (i + n - 1) % n;
      for (int k = 0; k < K; ++k) {
        for (int s = 0; s < steps; ++s) {
          if (s > 0) {
            graph.add_dependency(id(i, k, s - 1), id(i, k, s), Dep::sent);
            graph.add_dependency(id(prev, k, s - 1), id(i, k, s));
          } else if (k > 0) {
            graph.add_dependency(id(i, k - 1, steps - 1), id(i, k, 0), Dep::sent);
          }
        }
      }
    }
  }
}

}  // namespace commstack::sim::detail
