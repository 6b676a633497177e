// Ring all-reduce (reduce-scatter then all-gather: 2(n-1) steps), all-gather and reduce-scatter
// (n-1 steps), as NCCL runs them: every channel is a ring over all ranks; at every step each rank
// sends one block of S/(n*channels) bytes to its successor, cut into pipeline chunks.
#include <algorithm>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

namespace {

// Rings above kPipelineBudget (edge, step) pairs take steps x P, P the cycle time of the drifting
// estimate: within 0.3% of the step level from 1 GiB, up to +4.4% where NIC and shared NVLink hop
// times are close (64 KiB blocks, 64 nodes x 8 GPUs at 256 MiB); a pipeline's transient lasts
// about n steps, so a shorter run cannot be extrapolated.

// A hop's transfer time when its channels are out of phase: each of the share - 1 other flows on
// its link is there a fraction t / P of the time, so t = t0 / (1 - (share - 1) t0 / P), at most
// share x t0. Only for rings too long to run the pipeline.
double drifting_hop_time(const PipeHop& h, double P) {
  const double others = h.share - 1;
  const double all = h.t0 * h.share;
  if (others * h.t0 >= P) return all;
  return std::min(all, h.t0 / (1 - others * h.t0 / P));
}

// The extra latency of each channel's edge-level ring flows: the end of the steps' pipeline (or
// steps x P, P the ring's cycle time, for rings too long to run it) minus the bytes' time with
// every flow on the bottleneck link active (see add_ring). Link loads count every channel's ring
// edges, per direction.
std::vector<double> edge_cycle_latencies(const topologies::Topology& topo, const CollectiveSpec& spec,
                                         double block, int K, double ovh, int steps) {
  const int n = static_cast<int>(spec.ranks.size());
  std::vector<std::vector<topologies::Path>> paths(static_cast<std::size_t>(spec.channels));
  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    auto& mine = paths[static_cast<std::size_t>(c)];
    mine.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
      mine.push_back(
          topo.route(ring[static_cast<std::size_t>(i)], ring[static_cast<std::size_t>((i + 1) % n)]));
  }
  const PipeHops ph = pipeline_hops(topo, paths, block, K, ovh);
  const auto& max_t = ph.max_t;
  std::vector<double> P(paths.size(), 0.0);
  const PipeHop& first = ph.hops.front().front();
  bool uniform = true;  // every hop of every channel the same: all flows of a step start together
  for (std::size_t c = 0; c < paths.size(); ++c) {
    // Steady state, for rings too long to run (below). The flows sharing a link are active together
    // when every hop of the ring is the same: the channels then step in lock-step. When hops differ
    // (NVLink and NIC), the channels cross a GPU at different positions of their rings and drift
    // apart (drifting_hop_time). P is the fixed point of P = max(max_t, mean(t + a)).
    const auto& hc = ph.hops[c];
    const bool lockstep = std::all_of(hc.begin(), hc.end(), [&](const PipeHop& h) {
      return h.t0 == hc.front().t0 && h.share == hc.front().share && h.a == hc.front().a;
    });
    uniform = uniform && lockstep && hc.front().t0 == first.t0 && hc.front().share == first.share &&
              hc.front().a == first.a;
    auto mean_ta = [&](double p) {
      double sum = 0;
      for (const auto& h : hc) sum += (lockstep ? h.t0 * h.share : drifting_hop_time(h, p)) + h.a;
      return sum / n;
    };
    // mean_ta falls as P grows, so P - max(max_t, mean_ta(P)) rises: bisect for its root between
    // the drifting bound (no sharing) and the lock-step value.
    double drifting = 0;
    for (const auto& h : hc) drifting += h.t0 + h.a;
    double lo = std::max(max_t[c], drifting / n), hi = std::max(max_t[c], mean_ta(0));
    for (int it = 0; it < 100 && hi - lo > 1e-15 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      (mid - std::max(max_t[c], mean_ta(mid)) < 0 ? lo : hi) = mid;
    }
    P[c] = hi;
  }
  std::vector<double> out(paths.size());
  // Where the pipeline is small enough, run it: from every edge sending its first block at time 0
  // it has a transient that steps x P misses (the bottleneck edge's last arrival in a
  // bandwidth-bound ring, where the critical path collects the most latency in a latency-bound
  // one, channels sharing a link in lock-step for their first steps), and the drifting channels
  // settle into phases that share a link less than random phases would. A uniform ring (one node,
  // an NVL72 domain, one GPU per node) runs in lock-step: every step takes share x t0 + a, and
  // steps x P is its pipeline's end exactly.
  if (!uniform && static_cast<double>(n) * steps * static_cast<double>(paths.size()) <= kPipelineBudget) {
    const auto ends = pipeline_hop_ends(ph, PipeShape::ring, steps);
    for (std::size_t c = 0; c < paths.size(); ++c) {
      const double end = *std::max_element(ends[c].begin(), ends[c].end());
      out[c] = std::max(0.0, end - static_cast<double>(steps) * max_t[c]);
    }
  } else {
    for (std::size_t c = 0; c < paths.size(); ++c) out[c] = static_cast<double>(steps) * (P[c] - max_t[c]);
  }
  return out;
}

}  // namespace

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
  const std::vector<double> edge_latency = level == Fidelity::edge
                                               ? edge_cycle_latencies(topo, spec, block, K, ovh, steps)
                                               : std::vector<double>{};

  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    auto src = [&](int i) { return ring[static_cast<std::size_t>(i)]; };
    auto dst = [&](int i) { return ring[static_cast<std::size_t>((i + 1) % n)]; };
    const int base = graph.size();

    if (level == Fidelity::edge) {
      // One flow per edge carrying every step's bytes, plus an extra latency that makes the slowest
      // edge end where the step level's pipeline does. There, step s of edge i starts once edge i
      // has sent step s-1 and step s-1 of edge i-1 has arrived (its bytes and the hop's latency),
      // so the ring advances one step per P = max(max_e T_e, mean_e(T_e + A_e)) (the cycle time of
      // that max-plus recurrence): T_e the step's transfer time over edge e, A_e its K chunk
      // latencies (route + overhead each). A ring of equal edges pays T + A per step; a ring whose
      // NIC edges are the bottleneck hides its NVLink hops' latency behind them. T_e is estimated
      // from the link loads of every channel's ring (each link's bandwidth shared by the edges that
      // cross it in that direction, all the time for channels in lock-step, part of the time for
      // channels that drift; edge_cycle_latencies); SimGrid then moves the bytes with the real
      // sharing.
      const double a_extra = edge_latency[static_cast<std::size_t>(c)];
      for (int i = 0; i < n; ++i) {
        Flow f;
        f.src = src(i);
        f.dst = dst(i);
        f.bytes = block * steps;
        f.add_route_latency = false;
        f.extra_latency_s = a_extra;
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
