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

// Rings up to this many (edge, step) pairs over all channels get the step recurrence run in the
// edge level: 16x the step level's auto budget (kAutoFlowBudget flows, one per pair), tens of ms.
// Larger rings (thousands of GPUs, 2(n-1) steps) take steps x P, whose transient is below 0.1%.
constexpr double kExactRecurrenceBudget = 4e6;

// One hop of a ring: its step's transfer time alone on its busiest link (t0), that link (per
// direction) and the flows of this collective sharing it (share), and its K chunk latencies (a).
struct RingHop {
  double t0 = 0, share = 1, a = 0;
  int link = -1;  // index into the collective's shared links; -1: no link shared with another edge
};

// A hop's transfer time when `together` flows on its link (itself included) start with it and the
// share - together others are out of phase: those are on the link a fraction t / P of the time,
// so t = together x t0 / (1 - others x t0 / P), at most share x t0.
double hop_time(const RingHop& h, double together, double P) {
  const double others = h.share - together;
  const double all = h.t0 * h.share;
  if (others * h.t0 >= P) return all;
  return std::min(all, together * h.t0 / (1 - others * h.t0 / P));
}

// The step recurrence of every channel's ring at once, as the step level's dependencies run it:
// sent_ci(s) = start_ci(s) + t_ci(s), start_ci(s) = max(sent_ci(s-1), sent_c,i-1(s-1) + a_c,i-1),
// every edge starting its first block at 0; channel c ends at max_i sent_ci(steps-1) + a_ci. The
// flows of one step that start at the same instant on the same link share it (channels start in
// lock-step and peel off one per step as a NIC hop delays them); the rest of the link's flows are
// out of phase (hop_time).
std::vector<double> ring_end_times(const std::vector<std::vector<RingHop>>& hops,
                                   const std::vector<double>& P, int steps) {
  const std::size_t C = hops.size();
  const std::size_t n = hops.front().size();
  std::vector<std::vector<double>> sent(C, std::vector<double>(n, 0.0)),
      start(C, std::vector<double>(n, 0.0));
  struct Key {
    int link;
    double start;
    std::size_t c, i;
  };
  std::vector<Key> keys;
  for (int s = 0; s < steps; ++s) {
    keys.clear();
    for (std::size_t c = 0; c < C; ++c) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t prev = (i + n - 1) % n;
        start[c][i] = s == 0 ? 0.0 : std::max(sent[c][i], sent[c][prev] + hops[c][prev].a);
        if (hops[c][i].link >= 0) keys.push_back({hops[c][i].link, start[c][i], c, i});
      }
    }
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < n; ++i)
        if (hops[c][i].link < 0) sent[c][i] = start[c][i] + hops[c][i].t0;
    std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
      return x.link != y.link ? x.link < y.link : x.start < y.start;
    });
    for (std::size_t b = 0; b < keys.size();) {
      std::size_t e = b + 1;
      while (e < keys.size() && keys[e].link == keys[b].link && keys[e].start - keys[b].start <= 1e-12) ++e;
      for (std::size_t k = b; k < e; ++k) {
        const auto& h = hops[keys[k].c][keys[k].i];
        sent[keys[k].c][keys[k].i] = keys[k].start + hop_time(h, static_cast<double>(e - b), P[keys[k].c]);
      }
      b = e;
    }
  }
  std::vector<double> end(C, 0.0);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t i = 0; i < n; ++i) end[c] = std::max(end[c], sent[c][i] + hops[c][i].a);
  return end;
}

// The extra latency of each channel's edge-level ring flows: the end of the step recurrence (or
// steps x P, P the ring's cycle time, for rings too long to run it) minus the bytes' time with
// every flow on the bottleneck link active (see add_ring). Link loads count every channel's ring
// edges, per direction.
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
  std::map<std::pair<int, bool>, int> shared_index;  // busiest links shared by several edges
  std::vector<std::vector<RingHop>> hops(paths.size());
  std::vector<double> max_t(paths.size(), 0.0), P(paths.size(), 0.0);
  for (std::size_t c = 0; c < paths.size(); ++c) {
    // max_t: the slowest hop with every flow on its link active, the bandwidth bound.
    for (const auto& path : paths[c]) {
      RingHop hop;
      double t = 0;
      std::pair<int, bool> busiest{-1, false};
      for (const auto& h : path) {
        const double bw = topo.link(h.link).bandwidth_Bps;
        if (bw <= 0) continue;
        const int flows = load[{h.link, h.forward}];
        if (block * flows / bw > t) {
          t = block * flows / bw;
          hop.t0 = block / bw;
          hop.share = flows;
          busiest = {h.link, h.forward};
        }
      }
      if (hop.share > 1)
        hop.link = shared_index.try_emplace(busiest, static_cast<int>(shared_index.size())).first->second;
      hop.a = K * (topo.path_latency(path) + ovh);
      max_t[c] = std::max(max_t[c], t);
      hops[c].push_back(hop);
    }
    // Steady state. The flows sharing a link are active together when every hop of the ring is the
    // same: the channels then step in lock-step. When hops differ (NVLink and NIC), the channels
    // cross a GPU at different positions of their rings and drift apart (hop_time with one flow
    // together). P is the fixed point of P = max(max_t, mean(t + a)).
    const auto& hc = hops[c];
    const bool lockstep = std::all_of(hc.begin(), hc.end(), [&](const RingHop& h) {
      return h.t0 == hc.front().t0 && h.share == hc.front().share && h.a == hc.front().a;
    });
    auto mean_ta = [&](double p) {
      double sum = 0;
      for (const auto& h : hc) sum += (lockstep ? h.t0 * h.share : hop_time(h, 1, p)) + h.a;
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
  // Where the recurrence is small enough, run it: from every edge sending its first block at time
  // 0 the pipeline has a transient that steps x P misses (the bottleneck edge's last arrival in a
  // bandwidth-bound ring, where the critical path collects the most latency in a latency-bound
  // one, channels sharing a link in lock-step for their first steps).
  if (static_cast<double>(n) * steps * static_cast<double>(paths.size()) <= kExactRecurrenceBudget) {
    const std::vector<double> end = ring_end_times(hops, P, steps);
    for (std::size_t c = 0; c < paths.size(); ++c)
      out[c] = std::max(0.0, end[c] - static_cast<double>(steps) * max_t[c]);
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
