#include "sim/plan/lower_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "workloads/graph/generator.hpp"
#include "workloads/parallel/layout.hpp"

namespace commstack::sim::plan {
namespace {

using workloads::Op;
using workloads::OpKind;
using workloads::Phase;

// What one representative rank (one pipeline stage) contributes, measured on the reduced graph.
// "Weight" of a compute op: its compute time plus the longest blocking collective between the
// previous compute op and it (a chain the op cannot start before).
struct StageChains {
  double fill = 0;           // forward of micro-batch 0, chunk 0 (its first compute op to its last)
  double drain = 0;          // backward of the last micro-batch, chunk 0, without the wait before its first op
  double per_mb = std::numeric_limits<double>::infinity();  // weight of one micro-batch (the smallest seen)
  double per_iteration = 0;  // ops outside micro-batches (optimizer)
  double after_drain = 0;    // weight after the last chunk-0 backward (the optimizer)
  double post = 0;           // longest non-blocking op waiting for the last compute op
  bool fill_ok = false;      // the first compute op is micro-batch 0's forward of chunk 0
  bool has_drain = false;    // the last micro-batch's chunk-0 backward was found
  bool after_clean = true;   // only per-iteration ops follow it
};

}  // namespace

double gpu_egress_bandwidth(const topologies::Topology& topo) {
  double best = 0;
  for (int r = 0; r < topo.gpu_count(); ++r) {
    double sum = 0;
    for (int l : topo.incident_links(topo.gpu_vertex(r))) sum += topo.link(l).bandwidth_Bps;
    best = std::max(best, sum);
  }
  return best;
}

double comm_lower_bound_s(const workloads::OpGraph& g, const Op& op, double egress_Bps) {
  if (egress_Bps <= 0) return 0;
  const double s = static_cast<double>(op.bytes);
  switch (op.kind) {
    case OpKind::compute: return 0;
    case OpKind::send:
    case OpKind::recv: return s / egress_Bps;
    case OpKind::collective: break;
  }
  const double n = static_cast<double>(g.communicators[static_cast<std::size_t>(op.communicator)].ranks.size());
  if (n <= 1) return 0;
  const double share = (n - 1) / n * s;
  return (op.collective == workloads::Collective::all_reduce ? 2 * share : share) / egress_Bps;
}

namespace {

// The reduced graph's compute ops, stage by stage: each stage's chains (StageChains), its
// micro-batches' weights, and the fastest pipeline message.
class StageScan {
 public:
  StageScan(const workloads::OpGraph& g, const workloads::RankLayout& layout, std::size_t pp,
            double egress_Bps)
      : chains(pp),
        per_mb(pp),
        last_compute(pp, -1),
        drain_end(pp, -1),
        g_(g),
        layout_(layout),
        egress_Bps_(egress_Bps),
        weight_(g.ops.size(), 0) {}

  // Each compute op's weight, summed into its stage's chains; the fastest pipeline message.
  void weigh_compute(const workloads::ComputeProfile& compute, const workloads::ParallelConfig& par,
                     std::int64_t reduced);
  // The ops after the last chunk-0 backward, and the non-blocking ops waiting for the last compute op.
  void scan_tails();

  std::vector<StageChains> chains;
  std::vector<std::vector<double>> per_mb;   // by stage and micro-batch; < 0: no op seen
  std::vector<int> last_compute, drain_end;  // op ids; -1: none
  double p2p_lb = std::numeric_limits<double>::infinity();

 private:
  // The graph holds one representative rank per pipeline stage (tp = cp = dp = 0), so every per-rank
  // quantity is indexed by the rank's stage; ops come rank by rank, so the stage of the last rank
  // seen saves a coord() per op.
  std::size_t stage_of(int rank) {
    if (rank != stage_rank_) stage_rank_ = rank, stage_ = static_cast<std::size_t>(layout_.coord(rank).pp);
    return stage_;
  }

  const workloads::OpGraph& g_;
  const workloads::RankLayout& layout_;
  const double egress_Bps_;
  std::vector<double> weight_;
  int stage_rank_ = -1;
  std::size_t stage_ = 0;
};

void StageScan::weigh_compute(const workloads::ComputeProfile& compute, const workloads::ParallelConfig& par,
                              std::int64_t reduced) {
  for (const Op& op : g_.ops) {
    if (op.kind == OpKind::recv && op.stream == workloads::Stream::pp) {
      p2p_lb = std::min(p2p_lb, comm_lower_bound_s(g_, op, egress_Bps_));
    }
    if (op.kind != OpKind::compute) continue;
    const std::size_t st = stage_of(op.rank);
    StageChains& sc = chains[st];
    const int prev = last_compute[st];
    double pre = 0;
    if (prev >= 0) {
      for (int d : op.deps) {
        const Op& dep = g_.ops[static_cast<std::size_t>(d)];
        if (dep.kind != OpKind::collective) continue;
        if (std::find(dep.deps.begin(), dep.deps.end(), prev) == dep.deps.end()) continue;
        pre = std::max(pre, comm_lower_bound_s(g_, dep, egress_Bps_));
      }
    } else {
      sc.fill_ok = op.micro_batch == 0 && op.chunk == 0 && op.phase == Phase::forward;
    }
    const double w = workloads::compute_time(compute, op, par.precision) + pre;
    weight_[static_cast<std::size_t>(op.id)] = w;
    last_compute[st] = op.id;
    if (op.micro_batch < 0) {
      sc.per_iteration += w;
    } else {
      auto& mbs = per_mb[st];
      const auto mb = static_cast<std::size_t>(op.micro_batch);
      if (mb >= mbs.size()) mbs.resize(mb + 1, -1.0);
      mbs[mb] = mbs[mb] < 0 ? w : mbs[mb] + w;
    }
    if (op.micro_batch == 0 && op.chunk == 0 && op.phase == Phase::forward) sc.fill += w;
    const bool backward = op.phase == Phase::backward || op.phase == Phase::recompute;
    if (op.micro_batch == reduced - 1 && op.chunk == 0 && backward) {
      // The step's first op waits for the gradient message, not (only) for the previous compute op.
      sc.drain += drain_end[st] >= 0 ? w : w - pre;
      drain_end[st] = op.id;
    }
  }
  if (!std::isfinite(p2p_lb)) p2p_lb = 0;
}

void StageScan::scan_tails() {
  for (const Op& op : g_.ops) {
    const std::size_t st = stage_of(op.rank);
    StageChains& sc = chains[st];
    const int end = drain_end[st];
    if (op.kind == OpKind::compute && end >= 0 && op.id > end) {
      sc.after_drain += weight_[static_cast<std::size_t>(op.id)];
      if (op.micro_batch >= 0) sc.after_clean = false;
    }
    if (op.kind != OpKind::compute && last_compute[st] >= 0 &&
        std::find(op.deps.begin(), op.deps.end(), last_compute[st]) != op.deps.end()) {
      sc.post = std::max(sc.post, comm_lower_bound_s(g_, op, egress_Bps_));
    }
  }
}

// The bound: over the stages, the fill chain through the stages before s, stage s busy for every
// micro-batch, and the drain chain back (or the longest op waiting for its last compute op).
IterationBound bound_over_stages(StageScan& scan, std::int64_t m) {
  IterationBound best;
  double fill = 0, drain = 0;  // the chains through the stages before s
  bool fill_chain = true, drain_chain = true;
  for (std::size_t s = 0; s < scan.chains.size(); ++s) {
    StageChains& sc = scan.chains[s];
    for (double w : scan.per_mb[s])
      if (w >= 0) sc.per_mb = std::min(sc.per_mb, w);
    if (!std::isfinite(sc.per_mb)) sc.per_mb = 0;
    sc.has_drain = scan.drain_end[s] >= 0;
    const double busy = static_cast<double>(m) * sc.per_mb + sc.per_iteration;
    const double start = fill_chain && sc.fill_ok ? fill : 0;
    double t = start + busy + sc.post;
    if (s > 0 && drain_chain && sc.has_drain && sc.after_clean) t = std::max(t, start + busy - sc.after_drain + drain);
    if (t > best.seconds) best = {t, static_cast<int>(s), busy, t - busy};
    fill_chain = fill_chain && sc.fill_ok;
    drain_chain = drain_chain && sc.has_drain;
    fill += sc.fill + scan.p2p_lb;
    drain += sc.drain + scan.p2p_lb;
  }
  return best;
}

}  // namespace

IterationBound iteration_lower_bound(const Candidate& c, const workloads::ComputeProfile& compute,
                                     double egress_Bps) {
  const workloads::ParallelConfig& par = c.par;
  const std::int64_t m = par.micro_batches();
  // Micro-batches of the reduced graph: every micro-batch runs the same ops, so 2 (1F1B) or 2 x pp
  // (interleaved; m == pp is Megatron's all-forwards-first special case, kept as is) show them all.
  const std::int64_t reduced =
      par.virtual_stages > 1 ? (m == par.pp ? m : 2LL * par.pp) : std::min<std::int64_t>(m, 2);
  workloads::ParallelConfig rp = par;
  rp.global_batch = reduced * par.micro_batch * par.dp;
  const workloads::RankLayout layout(rp);
  workloads::GraphOptions go;
  go.ranks = layout.representative_ranks();
  const workloads::OpGraph g = workloads::generate_op_graph(c.model, rp, go);
  StageScan scan(g, layout, static_cast<std::size_t>(par.pp), egress_Bps);
  scan.weigh_compute(compute, par, reduced);
  scan.scan_tails();
  return bound_over_stages(scan, m);
}

}  // namespace commstack::sim::plan
