// Ring all-reduce (reduce-scatter then all-gather: 2(n-1) steps), all-gather and reduce-scatter
// (n-1 steps), as NCCL runs them: every channel is a ring over all ranks; at every step each rank
// sends one block of S/(n*channels) bytes to its successor, cut into pipeline chunks.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

namespace {

// Rings up to this many (edge, step) pairs over all channels get their step pipeline run in the
// edge level (ring_end_times, about 0.35 s per million pairs: a 480-GPU DGX H100 all-reduce on 8
// channels). Longer rings take steps x P, P the cycle time of the drifting estimate: within 0.3%
// of the step level from 1 GiB, up to +4.4% where NIC and shared NVLink hop times are close (64 KiB
// blocks, 64 nodes x 8 GPUs at 256 MiB); a pipeline's transient lasts about n steps, so a shorter
// run cannot be extrapolated.
constexpr double kExactRecurrenceBudget = 4e6;

// One hop of a ring: its step's transfer time alone on its busiest link (t0), that link (per
// direction) and the flows of this collective sharing it (share), and its K chunk latencies (a).
struct RingHop {
  double t0 = 0, share = 1, a = 0;
  int link = -1;  // index into the collective's shared links; -1: no link shared with another edge
};

// A hop's transfer time when its channels are out of phase: each of the share - 1 other flows on
// its link is there a fraction t / P of the time, so t = t0 / (1 - (share - 1) t0 / P), at most
// share x t0. Only for rings too long to run the recurrence (ring_end_times).
double drifting_hop_time(const RingHop& h, double P) {
  const double others = h.share - 1;
  const double all = h.t0 * h.share;
  if (others * h.t0 >= P) return all;
  return std::min(all, h.t0 / (1 - others * h.t0 / P));
}

// Flows on one link whose finish tags differ by less than this fraction of a transfer leave together.
constexpr double kSameFinish = 1e-9;

// The step level's pipeline of every channel's ring, run as the step level's dependencies do:
// flow (c, i, s) starts once (c, i, s-1) is sent and (c, i-1, s-1) has arrived (sent + a), every
// edge starting its first block at 0; channel c ends at max_i sent_ci(steps-1) + a_ci. A flow's
// transfer is its hop's busiest link shared equally by the ring flows on it at each instant
// (processor sharing; the links' other flows are the edge flows' contention in SimGrid), so the
// channels that start in lock-step share for their first steps and drift apart as NIC hops delay
// them. Equal-sized flows on a link under processor sharing leave in the order they came: a link
// is a queue of virtual finish tags with its virtual time advancing at 1 / (flows on it).
std::vector<double> ring_end_times(const std::vector<std::vector<RingHop>>& hops, int links, int steps) {
  const int C = static_cast<int>(hops.size());
  const int n = static_cast<int>(hops.front().size());
  auto at = [n](int c, int i) { return static_cast<std::size_t>(c) * static_cast<std::size_t>(n) + i; };
  const std::size_t F = static_cast<std::size_t>(C) * static_cast<std::size_t>(n);
  std::vector<int> step(F, 0);       // the step this edge sends next (or is sending)
  std::vector<char> busy(F, 1);      // starting or sending; every edge starts step 0 at 0
  std::vector<double> sent(F, 0.0);  // when this edge finished sending its last step
  // Arrival times of the predecessor's blocks, in step order, and how many this edge has used.
  std::vector<std::vector<double>> inbox(F);
  std::vector<int> used(F, 0);
  std::vector<double> end(static_cast<std::size_t>(C), 0.0);

  struct Link {
    int active = 0;
    double vtime = 0, updated = 0;
    std::deque<std::pair<double, std::size_t>> queue;  // (virtual finish tag, edge)
    long version = 0;
  };
  std::vector<Link> L(static_cast<std::size_t>(links));
  // Events: (time, kind, id, version). kind 0: link id's head leaves (if version is current);
  // kind 1: edge id's step-transfer done on an unshared hop; kind 2: edge id starts its next step.
  using Event = std::tuple<double, int, std::size_t, long>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  auto hop_of = [&](std::size_t e) -> const RingHop& {
    return hops[e / static_cast<std::size_t>(n)][e % static_cast<std::size_t>(n)];
  };
  auto advance = [](Link& l, double now) {
    if (l.active > 0) l.vtime += (now - l.updated) / l.active;
    l.updated = now;
  };
  auto schedule_head = [&](std::size_t li, double now) {
    Link& l = L[li];
    ++l.version;
    if (l.queue.empty()) return;
    events.emplace(now + (l.queue.front().first - l.vtime) * l.active, 0, li, l.version);
  };
  auto try_start = [&](std::size_t e) {
    if (busy[e] || step[e] >= steps || used[e] == static_cast<int>(inbox[e].size())) return;
    busy[e] = 1;
    events.emplace(std::max(sent[e], inbox[e][static_cast<std::size_t>(used[e]++)]), 2, e, 0);
  };
  auto finish = [&](std::size_t e, double now) {
    const int c = static_cast<int>(e / static_cast<std::size_t>(n));
    const int i = static_cast<int>(e % static_cast<std::size_t>(n));
    const RingHop& h = hops[static_cast<std::size_t>(c)][static_cast<std::size_t>(i)];
    sent[e] = now;
    busy[e] = 0;
    const int s = step[e]++;
    if (s == steps - 1) {
      end[static_cast<std::size_t>(c)] = std::max(end[static_cast<std::size_t>(c)], now + h.a);
      return;
    }
    const std::size_t next = at(c, (i + 1) % n);
    inbox[next].push_back(now + h.a);
    try_start(e);
    try_start(next);
  };
  std::vector<std::size_t> leaving;
  for (std::size_t e = 0; e < F; ++e) events.emplace(0.0, 2, e, 0);
  while (!events.empty()) {
    const auto [now, kind, id, version] = events.top();
    events.pop();
    if (kind == 0) {
      Link& l = L[id];
      if (version != l.version) continue;
      advance(l, now);
      // The head leaves, and with it the flows whose finish is the same up to rounding: flows of
      // channels in lock-step come in within a few ulps, and processor sharing would let the first
      // one leave first and come back earlier at every step, an instability of the arithmetic
      // (SimGrid ends actions within its precision together too).
      const double tag = l.queue.front().first;
      leaving.clear();
      while (!l.queue.empty() &&
             l.queue.front().first - tag <= kSameFinish * hop_of(l.queue.front().second).t0) {
        leaving.push_back(l.queue.front().second);
        l.queue.pop_front();
        --l.active;
      }
      schedule_head(id, now);
      for (const std::size_t e : leaving) finish(e, now);
    } else if (kind == 1) {
      finish(id, now);
    } else {
      const RingHop& h = hops[id / static_cast<std::size_t>(n)][id % static_cast<std::size_t>(n)];
      if (h.link < 0) {
        events.emplace(now + h.t0, 1, id, 0);
        continue;
      }
      const auto li = static_cast<std::size_t>(h.link);
      Link& l = L[li];
      advance(l, now);
      l.queue.emplace_back(l.vtime + h.t0, id);
      ++l.active;
      schedule_head(li, now);
    }
  }
  return end;
}

// ring_end_times of rings seen before. Sibling groups (the data-parallel rings of a training job,
// one per tensor-parallel rank) have the same hops and the same link sharing (links are numbered
// in the order the channels first cross them), so their pipeline is run once.
std::vector<double> cached_ring_end_times(const std::vector<std::vector<RingHop>>& hops, int links,
                                          int steps) {
  static std::map<std::vector<double>, std::vector<double>> cache;
  std::vector<double> key{static_cast<double>(steps), static_cast<double>(links)};
  for (const auto& channel : hops) {
    key.push_back(-1);  // channel separator
    for (const RingHop& h : channel) key.insert(key.end(), {h.t0, h.share, h.a, static_cast<double>(h.link)});
  }
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // bounded memory; a miss only costs the run
  return cache.emplace(std::move(key), ring_end_times(hops, links, steps)).first->second;
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
  bool uniform = true;  // every hop of every channel the same: all flows of a step start together
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
    // Steady state, for rings too long to run (below). The flows sharing a link are active together
    // when every hop of the ring is the same: the channels then step in lock-step. When hops differ
    // (NVLink and NIC), the channels cross a GPU at different positions of their rings and drift
    // apart (drifting_hop_time). P is the fixed point of P = max(max_t, mean(t + a)).
    const auto& hc = hops[c];
    const bool lockstep = std::all_of(hc.begin(), hc.end(), [&](const RingHop& h) {
      return h.t0 == hc.front().t0 && h.share == hc.front().share && h.a == hc.front().a;
    });
    uniform = uniform && lockstep && hc.front().t0 == hops.front().front().t0 &&
              hc.front().share == hops.front().front().share && hc.front().a == hops.front().front().a;
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
  // settle into phases that share a link less than random phases would.
  // A uniform ring (one node, an NVL72 domain, one GPU per node) runs in lock-step: every step takes
  // share x t0 + a, and steps x P is its pipeline's end exactly.
  if (!uniform &&
      static_cast<double>(n) * steps * static_cast<double>(paths.size()) <= kExactRecurrenceBudget) {
    const std::vector<double> end = cached_ring_end_times(hops, static_cast<int>(shared_index.size()), steps);
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
