// Ring all-reduce (reduce-scatter then all-gather: 2(n-1) steps), all-gather and reduce-scatter
// (n-1 steps), as NCCL runs them: every channel is a ring over all ranks; at every step each rank
// sends one block of S/(n*channels) bytes to its successor, cut into pipeline chunks.
#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"

namespace commstack::sim::detail {

namespace {

// A hop's transfer time when its channels are out of phase: each of the share - 1 other flows on
// its link is there a fraction t / P of the time, so t = t0 / (1 - (share - 1) t0 / P), at most
// share x t0. Only where no pipeline can be run (steps x P).
double drifting_hop_time(const PipeHop& h, double P) {
  const double others = h.share - 1;
  const double all = h.t0 * h.share;
  if (others * h.t0 >= P) return all;
  return std::min(all, h.t0 / (1 - others * h.t0 / P));
}

// Hops of the sub-ring that stands for a ring too long to run: its first whole nodes, up to this
// many hops (16 DGX nodes of 8 GPUs), run for 4x their count of steps, about 0.2 s on 8 channels.
constexpr int kSubRingHops = 128;

// The steady state of a long ring from a sub-ring of its first nodes, closed on itself: the same
// hops in the same order and the same link sharing among the channels, so the same cycle once
// the channels have drifted into their phases. The sub-ring runs 4M steps; the slope of its end
// between 2M and 4M steps is the cycle P_sub, and end(4M) - 4M P_sub its transient. The rest of
// the long ring can be slower per step than its first nodes only through its latencies (a spine
// crossing every scalable unit), which a latency-bound cycle pays on average; a slower bandwidth
// bottleneck is max_t. Returns each channel's end, or nothing if no node boundary is in reach.
std::vector<double> sub_ring_ends(const topologies::Topology& topo, const CollectiveSpec& spec,
                                  const PipeHops& ph, int steps) {
  const int n = static_cast<int>(spec.ranks.size());
  const std::vector<int> ring = channel_ring(topo, spec.ranks, 0);
  // NVLink domains (nodes, or the racks of a multi-node domain, whose nodes channel_ring rotates):
  // their boundaries are at the same positions in every channel.
  const int dn = std::max(1, topo.nvlink_domain_nodes);
  auto domain_of = [&](int i) {
    return topo.vertex(topo.gpu_vertex(ring[static_cast<std::size_t>(i % n)])).node / dn;
  };
  int M = 0;
  for (int i = 0; i < std::min(n, kSubRingHops); ++i)
    if (domain_of(i) != domain_of(i + 1)) M = i + 1;
  if (M < 2) return {};
  PipeHops sub = ph;
  for (auto& hc : sub.hops) hc.resize(static_cast<std::size_t>(M));
  const PipelineMarks run = pipeline_channel_ends(sub, PipeShape::ring, 4 * M, 2 * M);
  std::vector<double> out;
  for (std::size_t c = 0; c < ph.hops.size(); ++c) {
    const double end2 = run.at_count[c];
    const double end1 = run.at_mark[c];
    const double cycle = (end2 - end1) / (2.0 * M);
    double a_all = 0, a_sub = 0, max_t_sub = 0;
    for (int i = 0; i < n; ++i) a_all += ph.hops[c][static_cast<std::size_t>(i)].a;
    for (int i = 0; i < M; ++i) {
      const PipeHop& h = ph.hops[c][static_cast<std::size_t>(i)];
      a_sub += h.a;
      max_t_sub = std::max(max_t_sub, h.t0 * h.share);
    }
    const bool bandwidth_bound = cycle <= max_t_sub * (1 + 1e-9);
    const double extra_latency = bandwidth_bound ? 0 : std::max(0.0, a_all / n - a_sub / M);
    const double P = std::max(ph.max_t[c], cycle + extra_latency);
    out.push_back(end2 - 4.0 * M * cycle + steps * P);
  }
  return out;
}

}  // namespace

double chunk_loops_latency_scale(const std::vector<double>& a, int K, int steps) {
  const auto n = static_cast<long long>(a.size());
  if (n == 0) return 1;  // no edge, no latency
  std::vector<double> prefix(static_cast<std::size_t>(2 * n) + 1, 0.0);
  for (long long j = 0; j < 2 * n; ++j)
    prefix[static_cast<std::size_t>(j + 1)] =
        prefix[static_cast<std::size_t>(j)] + a[static_cast<std::size_t>(j % n)];
  // The largest sum of m consecutive edges' latencies around the ring, m >= 1.
  auto widest = [&](long long m) {
    const long long turns = m / n;  // whole times around the ring
    const double whole = prefix[static_cast<std::size_t>(n)] * static_cast<double>(turns);
    const long long rest = m % n;
    double best = 0;
    for (long long p = 0; p < n; ++p)
      best = std::max(best, prefix[static_cast<std::size_t>(p + rest)] - prefix[static_cast<std::size_t>(p)]);
    return whole + best;
  };
  const double first = widest(steps);
  if (!(first > 0)) return 1;  // no latency to scale
  return widest(static_cast<long long>(K) * (steps - 1) + 1) / first;
}

namespace {

// Each channel's ring: the route of every edge.
std::vector<std::vector<topologies::Path>> ring_paths(const topologies::Topology& topo,
                                                      const CollectiveSpec& spec) {
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
  return paths;
}

// Each channel's chunk_loops_latency_scale for its K chunk loops.
std::vector<double> chunk_loops_scales(const PipeHops& ph, int K, int steps) {
  std::vector<double> scales;
  for (const auto& hc : ph.hops) {
    std::vector<double> a;
    a.reserve(hc.size());
    for (const auto& h : hc) a.push_back(h.a);
    scales.push_back(chunk_loops_latency_scale(a, K, steps));
  }
  return scales;
}

// Every hop's latency of channel c times scales[c].
void scale_latencies(PipeHops& ph, const std::vector<double>& scales) {
  for (std::size_t c = 0; c < ph.hops.size(); ++c)
    for (auto& h : ph.hops[c]) h.a *= scales[c];
}

// Every hop of every channel the same: all flows of a step start together.
bool uniform_hops(const PipeHops& ph) {
  const PipeHop& first = ph.hops.front().front();
  bool uniform = true;
  for (const auto& hc : ph.hops)
    for (const auto& h : hc)
      uniform = uniform && h.t0 == first.t0 && h.share == first.share && h.a == first.a;
  return uniform;
}

// Each channel's end of the ring's K chunk loops run as the chunk level runs them (K x steps
// chunks of block / K on every edge, every step of loop k before loop k + 1, a loop's first step
// waiting only for its edge), outside SimGrid; nothing when K = 1 or beyond `budget` edge-chunks.
std::vector<double> chunk_loop_ends(const topologies::Topology& topo, const CollectiveSpec& spec,
                                    const std::vector<std::vector<topologies::Path>>& paths, double block,
                                    int K, int steps, double budget) {
  const double pairs = static_cast<double>(spec.ranks.size()) * steps * K * static_cast<double>(paths.size());
  if (K <= 1 || pairs > budget) return {};
  PipeHops ph = pipeline_hops(topo, paths, block / K, spec.step_overhead_s);
  ph.loop = steps;
  ph.max_min_budget = kRingLoopsMaxMinBudget;
  std::vector<double> out;
  for (const auto& e : pipeline_hop_ends(ph, PipeShape::ring, K * steps))
    out.push_back(*std::max_element(e.begin(), e.end()));
  return out;
}

// Bisections of the step level's latency scale (step_latency_scales): each runs the steps'
// pipeline once. 2^-40 of the range (one to the chunk_loops_latency_scale): SimGrid's step level
// follows the pipeline run only with the factor that close, the channels sharing NVLink links
// falling into other phases otherwise (4 DGX H100 nodes, 64 MiB in 64 KiB chunks: +1.3% at 2^-24,
// +0.01% at 2^-40; 8 nodes, 64 / 256 MiB: +1.85 / +3.85% -> +0.90 / +0.35%).
constexpr int kScaleBisections = 40;

}  // namespace

std::vector<double> step_latency_scales(const topologies::Topology& topo, const CollectiveSpec& spec,
                                        double block, int K, int steps, double budget) {
  if (K <= 1) return std::vector<double>(static_cast<std::size_t>(spec.channels), 1.0);  // one loop a step
  const auto paths = ring_paths(topo, spec);
  const PipeHops ph = pipeline_hops(topo, paths, block, spec.step_overhead_s);
  std::vector<double> scales = chunk_loops_scales(ph, K, steps);
  if (uniform_hops(ph)) return scales;  // exact (chunk_loops_latency_scale)
  const double step_pairs =
      static_cast<double>(spec.ranks.size()) * steps * static_cast<double>(paths.size());
  // The loops' run (the edge level's) and the bisection's runs of the steps, each within the budget.
  if (step_pairs * K > budget || step_pairs * kScaleBisections > budget) return scales;
  // The data-parallel groups of a training job (one per tensor-parallel rank) repeat the same
  // rings: bisect once.
  static std::map<std::vector<double>, std::vector<double>> cache;
  std::vector<double> key{static_cast<double>(K), static_cast<double>(steps)};
  const std::vector<double> hops_key = pipeline_key(ph);
  key.insert(key.end(), hops_key.begin(), hops_key.end());
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // bounded memory; a miss only costs the bisection
  auto& result = cache[key];
  const std::vector<double> chunk_end = chunk_loop_ends(topo, spec, paths, block, K, steps, budget);
  const double target = *std::max_element(chunk_end.begin(), chunk_end.end());
  // The steps' pipeline end with every edge's latency times `scale`: it rises with the scale.
  auto step_end = [&](double scale) {
    PipeHops scaled = ph;
    scale_latencies(scaled, std::vector<double>(scales.size(), scale));
    const auto ends = pipeline_channel_ends(scaled, PipeShape::ring, steps, steps).at_count;
    return *std::max_element(ends.begin(), ends.end());
  };
  double lo = 1, hi = *std::max_element(scales.begin(), scales.end());
  if (step_end(lo) >= target) {
    hi = 1;
  } else {
    while (step_end(hi) < target && hi < static_cast<double>(K) * steps) hi *= 2;
    for (int it = 0; it < kScaleBisections; ++it) {
      const double mid = 0.5 * (lo + hi);
      (step_end(mid) < target ? lo : hi) = mid;
    }
  }
  result.assign(scales.size(), hi);
  return result;
}

RingPipeline ring_pipeline(const topologies::Topology& topo, const CollectiveSpec& spec, double block, int K,
                           int steps, double budget) {
  const int n = static_cast<int>(spec.ranks.size());
  const auto paths = ring_paths(topo, spec);
  PipeHops ph = pipeline_hops(topo, paths, block, spec.step_overhead_s);
  scale_latencies(ph, chunk_loops_scales(ph, K, steps));
  RingPipeline out;
  out.max_t = ph.max_t;
  const PipeHop& first = ph.hops.front().front();
  // A uniform ring (one node, an NVL72 domain, one GPU per node) runs in lock-step: every step
  // takes share x t0 + a, and that is its pipeline's end exactly. Otherwise run the pipeline: from
  // every edge sending its first block at time 0 it has a transient (the bottleneck edge's last
  // arrival in a bandwidth-bound ring, where the critical path collects the most latency in a
  // latency-bound one, channels sharing a link in lock-step for their first steps), and the
  // drifting channels settle into phases that share a link less than random phases would.
  if (uniform_hops(ph)) {
    out.end.assign(ph.hops.size(), steps * (first.t0 * first.share + first.a));
    out.method = "lock-step";
    return out;
  }
  // Chunk loops that fit the budget run as they are: the step level's single flow per step cannot
  // hide a loop's latency behind the other loops' bytes as the chunks do.
  out.end = chunk_loop_ends(topo, spec, paths, block, K, steps, budget);
  out.method = "chunk loops";
  if (!out.end.empty()) return out;
  if (static_cast<double>(n) * steps * static_cast<double>(ph.hops.size()) <= budget) {
    for (const auto& e : pipeline_hop_ends(ph, PipeShape::ring, steps))
      out.end.push_back(*std::max_element(e.begin(), e.end()));
    out.method = "pipeline";
    return out;
  }
  out.end = sub_ring_ends(topo, spec, ph, steps);
  out.method = "sub-ring";
  if (!out.end.empty()) return out;
  // No node boundary within the sub-ring's reach: steps x P, P the fixed point of P = max(max_t,
  // mean(t + a)) with the drifting hop times.
  out.method = "cycle";
  for (std::size_t c = 0; c < ph.hops.size(); ++c) {
    const auto& hc = ph.hops[c];
    auto mean_ta = [&](double p) {
      double sum = 0;
      for (const auto& h : hc) sum += drifting_hop_time(h, p) + h.a;
      return sum / n;
    };
    // mean_ta falls as P grows, so P - max(max_t, mean_ta(P)) rises: bisect for its root between
    // the drifting bound (no sharing) and the lock-step value.
    double drifting = 0;
    for (const auto& h : hc) drifting += h.t0 + h.a;
    double lo = std::max(out.max_t[c], drifting / n), hi = std::max(out.max_t[c], mean_ta(0));
    for (int it = 0; it < 100 && hi - lo > 1e-15 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      (mid - std::max(out.max_t[c], mean_ta(mid)) < 0 ? lo : hi) = mid;
    }
    out.end.push_back(steps * hi);
  }
  return out;
}

namespace {

// The flow of ring edge i (ring[i] -> ring[i+1]) carrying `bytes`, with `extra_latency_s` after them.
Flow ring_edge_flow(const CollectiveSpec& spec, const std::vector<int>& ring, int i, double bytes,
                    double extra_latency_s) {
  Flow f;
  f.src = ring[static_cast<std::size_t>(i)];
  f.dst = ring[(static_cast<std::size_t>(i) + 1) % ring.size()];
  f.bytes = bytes;
  f.extra_latency_s = extra_latency_s;
  f.group = spec.group;
  return f;
}

// Edge level: one flow per edge carrying every step's bytes, started at 0 with every other edge
// flow so that SimGrid shares the links among all of them, plus a latency after the bytes that
// makes the channel end where its steps' pipeline ends (ring_pipeline above). A node crossing
// the router relays through another GPU (PXN on rails) goes as its two legs side by side, as
// alltoall's relayed pairs do (p2p.cpp): the NVLink leg is then the same flow as the other
// channels' flows on that edge inside the node, and they fold into one SimGrid comm (Simulator),
// where the whole relayed route would share their links without being one of them (4096 GPUs on
// rails: 32 768 comms instead of 8 192).
void ring_edge_flows(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                     const std::vector<int>& ring, double block, int steps, double a_extra) {
  const int n = static_cast<int>(ring.size());
  std::array<Flow, 2> legs;
  for (int i = 0; i < n; ++i) {
    Flow f = ring_edge_flow(spec, ring, i, block * steps, a_extra);
    f.add_route_latency = false;
    const int count = relay_legs(f, route_relay(topo, f.src, f.dst), legs);
    for (int l = 0; l < count; ++l) graph.add_flow(legs[static_cast<std::size_t>(l)]);
  }
}

// Step level: flow (i, s) = edge i, step s: all K chunks of the step, carrying its edge's latency
// scaled for the K chunk loops (step_latency_scales; the Simulator adds one route latency).
void ring_step_flows(FlowGraph& graph, const CollectiveSpec& spec, const std::vector<int>& ring, double block,
                     int steps, double scale, RouteInfo& routes) {
  const int n = static_cast<int>(ring.size());
  const int base = graph.size();
  auto id = [&](int i, int s) { return base + i * steps + s; };
  for (int i = 0; i < n; ++i) {
    for (int s = 0; s < steps; ++s) {
      Flow f = ring_edge_flow(spec, ring, i, block, 0);
      f.extra_latency_s = scale * spec.step_overhead_s + (scale - 1) * routes.latency(f.src, f.dst);
      graph.add_flow(f);
    }
  }
  for (int i = 0; i < n; ++i) {
    const int prev = (i + n - 1) % n;
    for (int s = 1; s < steps; ++s) {
      graph.add_dependency(id(i, s - 1), id(i, s), Dep::sent);  // one step at a time per edge
      graph.add_dependency(id(prev, s - 1), id(i, s));          // the block arrived from the predecessor
    }
  }
}

// Chunk level: flow (i, k, s) = edge i, chunk loop k, step s. NCCL loops over chunks outside and
// steps inside, so an edge sends (k, 0..steps-1) then (k+1, 0..).
void ring_chunk_flows(FlowGraph& graph, const CollectiveSpec& spec, const std::vector<int>& ring,
                      double chunk, int K, int steps) {
  const int n = static_cast<int>(ring.size());
  const int base = graph.size();
  auto id = [&](int i, int k, int s) { return base + (i * K + k) * steps + s; };
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < K; ++k) {
      for (int s = 0; s < steps; ++s) {
        graph.add_flow(ring_edge_flow(spec, ring, i, chunk, spec.step_overhead_s));
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
  RouteInfo routes(topo);
  // The edge flows' latency: the steps' pipeline end minus the bytes' time with every flow on the
  // bottleneck link active, which SimGrid's sharing of the edge flows gives.
  std::vector<double> edge_latency;
  std::vector<double> step_scales;
  if (level == Fidelity::step) step_scales = step_latency_scales(topo, spec, block, K, steps);
  if (level == Fidelity::edge) {
    const RingPipeline pipe = ring_pipeline(topo, spec, block, K, steps);
    for (std::size_t c = 0; c < pipe.end.size(); ++c)
      edge_latency.push_back(std::max(0.0, pipe.end[c] - static_cast<double>(steps) * pipe.max_t[c]));
  }
  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    if (level == Fidelity::edge)
      ring_edge_flows(graph, topo, spec, ring, block, steps, edge_latency[static_cast<std::size_t>(c)]);
    else if (level == Fidelity::step)
      ring_step_flows(graph, spec, ring, block, steps, step_scales[static_cast<std::size_t>(c)], routes);
    else
      ring_chunk_flows(graph, spec, ring, chunk, K, steps);
  }
}

}  // namespace commstack::sim::detail
