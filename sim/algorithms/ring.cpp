// Ring all-reduce (reduce-scatter then all-gather: 2(n-1) steps), all-gather and reduce-scatter
// (n-1 steps), as NCCL runs them: every channel is a ring over all ranks; at every step each rank
// sends one block of S/(n*channels) bytes to its successor, cut into pipeline chunks.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

namespace {

// Rings up to this many (edge, step) pairs over all channels get the exact max-plus recurrence in
// the edge level: 16x the step level's auto budget (kAutoFlowBudget flows, one per pair), a few ms.
// Larger rings (thousands of GPUs, 2(n-1) steps) take steps x P, whose transient is below 0.1%.
constexpr double kExactRecurrenceBudget = 4e6;

// The end of the step-level pipeline of one ring: sent_i(s) = max(sent_i(s-1), sent_{i-1}(s-1) +
// a_{i-1}) + t_i from sent_i(-1) = 0, ends at max_i sent_i(steps-1) + a_i. Hop i sends to i+1.
template <typename Hop>
double ring_end_time(const std::vector<double>& t, const std::vector<Hop>& hops, int steps) {
  const std::size_t n = t.size();
  std::vector<double> sent(n, 0.0), next(n);
  for (int s = 0; s < steps; ++s) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t prev = (i + n - 1) % n;
      const double arrived = s == 0 ? 0.0 : sent[prev] + hops[prev].a;
      next[i] = std::max(sent[i], arrived) + t[i];
    }
    sent.swap(next);
  }
  double end = 0;
  for (std::size_t i = 0; i < n; ++i) end = std::max(end, sent[i] + hops[i].a);
  return end;
}

// The extra latency of each channel's edge-level ring flows: steps x (P - max_e T_e), with P the
// ring's cycle time (see add_ring). Link loads count every channel's ring edges, per direction.
std::vector<double> edge_cycle_latencies(const topologies::Topology& topo, const CollectiveSpec& spec,
                                         double block, int K, double ovh, int steps) {
  const int n = static_cast<int>(spec.ranks.size());
  std::map<std::pair<int, bool>, int> load;  // (link, forward) -> ring edges of this collective on it
  std::vector<std::vector<topologies::Path>> paths(static_cast<std::size_t>(spec.channels));
  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    auto& mine = paths[static_cast<std::size_t>(c)];
    mine.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      mine.push_back(
          topo.route(ring[static_cast<std::size_t>(i)], ring[static_cast<std::size_t>((i + 1) % n)]));
      for (const auto& h : mine.back()) ++load[{h.link, h.forward}];
    }
  }
  // One hop of a ring: its step's transfer time alone on its busiest link (t0), the flows of this
  // collective sharing that link (share), and its K chunk latencies (a).
  struct RingHop {
    double t0 = 0, share = 1, a = 0;
    bool operator==(const RingHop&) const = default;
  };
  std::vector<double> out;
  out.reserve(paths.size());
  std::vector<RingHop> hops;
  for (const auto& channel_paths : paths) {
    hops.clear();
    double max_t = 0;  // the slowest hop with every flow on its link active: the bandwidth bound
    for (const auto& path : channel_paths) {
      RingHop hop;
      double t = 0;
      for (const auto& h : path) {
        const double bw = topo.link(h.link).bandwidth_Bps;
        if (bw <= 0) continue;
        const int flows = load[{h.link, h.forward}];
        if (block * flows / bw > t) {
          t = block * flows / bw;
          hop.t0 = block / bw;
          hop.share = flows;
        }
      }
      hop.a = K * (topo.path_latency(path) + ovh);
      max_t = std::max(max_t, t);
      hops.push_back(hop);
    }
    // The flows sharing a link are active together when every hop of the ring is the same: the
    // channels then step in lock-step. When hops differ (NVLink and NIC), the channels cross a
    // GPU at different positions of their rings and drift apart: another channel's flow is on the
    // link a fraction t / P of the time, so a hop's transfer is t = t0 / (1 - (share - 1) t0 / P)
    // (at most share x t0). P is the fixed point of P = max(max_t, mean(t + a)).
    const bool lockstep =
        std::all_of(hops.begin(), hops.end(), [&](const RingHop& h) { return h == hops.front(); });
    auto mean_ta = [&](double P) {
      double sum = 0;
      for (const auto& h : hops) {
        double t = h.t0 * h.share;
        if (!lockstep && (h.share - 1) * h.t0 < P) t = std::min(t, h.t0 / (1 - (h.share - 1) * h.t0 / P));
        sum += t + h.a;
      }
      return sum / n;
    };
    // mean_ta falls as P grows, so P - max(max_t, mean_ta(P)) rises: bisect for its root between
    // the drifting bound (no sharing) and the lock-step value.
    double drifting = 0;
    for (const auto& h : hops) drifting += h.t0 + h.a;
    double lo = std::max(max_t, drifting / n), hi = std::max(max_t, mean_ta(0));
    for (int it = 0; it < 100 && hi - lo > 1e-15 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      (mid - std::max(max_t, mean_ta(mid)) < 0 ? lo : hi) = mid;
    }
    const double P = hi;
    // Where the recurrence is small enough, run it: the step level's end, from every edge sending
    // its first block at time 0, differs from steps x P by a transient (the bottleneck edge's last
    // arrival latency in a bandwidth-bound ring, the ring's latency mix in a latency-bound one).
    if (static_cast<double>(n) * steps * static_cast<double>(paths.size()) <= kExactRecurrenceBudget) {
      std::vector<double> t(hops.size());
      for (std::size_t i = 0; i < hops.size(); ++i) {
        const auto& h = hops[i];
        t[i] = h.t0 * h.share;
        if (!lockstep && (h.share - 1) * h.t0 < P)
          t[i] = std::min(t[i], h.t0 / (1 - (h.share - 1) * h.t0 / P));
      }
      out.push_back(ring_end_time(t, hops, steps) - static_cast<double>(steps) * max_t);
    } else {
      out.push_back(static_cast<double>(steps) * (P - max_t));
    }
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
