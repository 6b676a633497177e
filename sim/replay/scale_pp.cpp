#include "sim/replay/scale_pp.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.hpp"
#include "workloads/graph/schedule.hpp"

namespace commstack::sim::replay {
namespace {

using workloads::Collective;
using workloads::ImportedTrace;
using workloads::Op;
using workloads::OpGraph;
using workloads::OpKind;
using workloads::Phase;

bool is_comm(const Op& op) { return op.kind != OpKind::compute || op.collective != Collective::none; }

// A pipeline step: (0 forward / 1 backward incl. recompute, micro-batch).
using StepKey = std::pair<int, int>;
StepKey step_of(const Op& op) { return {op.phase == Phase::forward ? 0 : 1, op.micro_batch}; }

[[noreturn]] void refuse(const std::string& why) { throw InputError(fmt::format("--scale-pp: {}", why)); }

// The traced pipelines: chain c holds the ranks of stages 0..P-1 at one TP/DP position.
struct PipelineLayout {
  std::vector<std::vector<int>> chains;
  std::map<int, int> stage_of, idx_of;  // traced rank -> stage, chain
  int P = 0;                            // traced stages
  int L = 0;                            // chains (ranks per stage)
  int rank_at(int stage, int idx) const {
    return chains[static_cast<std::size_t>(idx)][static_cast<std::size_t>(stage)];
  }
};

// Stages from the forward pipeline sends: a rank's forward sends go to the next stage.
PipelineLayout pipeline_layout(const OpGraph& g) {
  const int W = g.world;
  std::map<int, int> next, prev;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::send || op.phase != Phase::forward) continue;
    if (auto [it, added] = next.try_emplace(op.rank, op.peer); !added && it->second != op.peer) {
      refuse(fmt::format("rank {} sends forward activations to ranks {} and {}; expected one next pipeline stage (interleaved "
                         "schedules are not supported)",
                         op.rank, it->second, op.peer));
    }
    prev[op.peer] = op.rank;
  }
  if (next.empty()) refuse("the trace has no forward pipeline send/recv: it has one pipeline stage, no stage boundary to copy");
  PipelineLayout lay;
  for (int r : g.ranks) {
    if (prev.count(r) != 0) continue;
    std::vector<int> chain{r};
    for (auto it = next.find(r); it != next.end() && chain.size() <= g.ranks.size(); it = next.find(it->second)) {
      chain.push_back(it->second);
    }
    lay.chains.push_back(chain);
  }
  if (lay.chains.empty()) {
    refuse("the traced forward sends form a ring (an interleaved schedule, virtual stages > 1); only non-interleaved 1F1B "
           "pipelines can be made deeper");
  }
  lay.P = static_cast<int>(lay.chains.front().size());
  for (std::size_t c = 0; c < lay.chains.size(); ++c) {
    if (static_cast<int>(lay.chains[c].size()) != lay.P || lay.P < 2)
      refuse("the traced forward sends do not form pipelines of equal depth");
    for (int s = 0; s < lay.P; ++s) {
      const int r = lay.chains[c][static_cast<std::size_t>(s)];
      if (!lay.stage_of.try_emplace(r, s).second)
        refuse(fmt::format("rank {} is in two traced pipelines", r));
      lay.idx_of[r] = static_cast<int>(c);
    }
  }
  if (static_cast<int>(lay.stage_of.size()) != W)
    refuse("some traced ranks are in no pipeline (no forward send or receive)");
  lay.L = static_cast<int>(lay.chains.size());
  return lay;
}

// Per traced rank: its ops in order, split into per-step blocks and per-iteration ops; and which
// ops are stage-boundary ops.
struct TracedSteps {
  std::map<int, std::vector<int>> ops_of;
  std::map<int, std::map<StepKey, std::vector<int>>> blocks;
  int M = 0;                   // micro-batches
  std::vector<char> boundary;  // per op
};

TracedSteps traced_steps(const OpGraph& g) {
  TracedSteps ts;
  for (const Op& op : g.ops) ts.ops_of[op.rank].push_back(op.id);
  for (const Op& op : g.ops) {
    if (op.micro_batch < 0) continue;
    ts.blocks[op.rank][step_of(op)].push_back(op.id);
    ts.M = std::max(ts.M, op.micro_batch + 1);
  }
  // Stage-boundary ops: sends, receives, and the gathers of received slices (Megatron's
  // scatter/gather of boundary tensors: a collective outside any layer right after a receive).
  ts.boundary.assign(g.ops.size(), 0);
  for (const Op& op : g.ops) {
    bool b = op.kind == OpKind::send || op.kind == OpKind::recv;
    if (!b && op.kind == OpKind::collective && op.layer < 0 && op.micro_batch >= 0) {
      for (int d : op.deps) b = b || g.ops[static_cast<std::size_t>(d)].kind == OpKind::recv;
    }
    ts.boundary[static_cast<std::size_t>(op.id)] = b ? 1 : 0;
  }
  return ts;
}

// The deeper graph under construction: its communicators (copied per new stage, or once for
// those spanning stages) and the counts the rule's summary reports.
class ScaledGraph {
 public:
  ScaledGraph(const OpGraph& g, const PipelineLayout& lay, const TracedSteps& steps, int K, OpGraph& ng)
      : g_(g), lay_(lay), steps_(steps), K_(K), newP_(lay.P * K), ng_(ng) {}

  // Every op of new rank (stage n, position idx): the per-iteration ops, the 1F1B steps with
  // their boundary messages, then the per-iteration ops after the steps.
  void copy_rank(int n, int idx);

  long long boundary_msgs = 0, dropped_edge = 0;

 private:
  friend class RankCopy;
  int new_rank(int n, int idx) const { return n * lay_.L + idx; }
  int home(int s) const { return s == lay_.P - 1 ? s * K_ + K_ - 1 : s * K_; }
  std::int64_t tag_of(int dir, int mb, int sender) const {
    return ((static_cast<std::int64_t>(mb) * 2 + dir) * newP_ + sender) * lay_.L + 1;
  }
  bool cross_stage(int c) const {
    const auto& members = g_.communicators[static_cast<std::size_t>(c)].ranks;
    for (int m : members) {
      if (lay_.stage_of.at(m) != lay_.stage_of.at(members.front())) return true;
    }
    return false;
  }
  int new_comm(int c, int n) {
    const bool cross = cross_stage(c);
    const int key_stage = cross ? -1 : n;
    if (auto it = comm_map_.find({c, key_stage}); it != comm_map_.end()) return it->second;
    const auto& tc = g_.communicators[static_cast<std::size_t>(c)];
    std::vector<int> members;
    for (int m : tc.ranks)
      members.push_back(new_rank(cross ? home(lay_.stage_of.at(m)) : n, lay_.idx_of.at(m)));
    std::sort(members.begin(), members.end());
    const std::string label = cross ? tc.label + " (scale-pp)" : fmt::format("{} (stage {})", tc.label, n);
    const int id = ng_.imported_communicator(label, members);
    comm_map_[{c, key_stage}] = id;
    return id;
  }

  const OpGraph& g_;
  const PipelineLayout& lay_;
  const TracedSteps& steps_;
  const int K_, newP_;
  OpGraph& ng_;
  std::map<std::pair<int, int>, int> comm_map_;  // (traced communicator, new stage) -> new communicator
};

// One new rank's copy of its traced rank's ops, with the bookkeeping that links them.
class RankCopy {
 public:
  RankCopy(ScaledGraph& sg, int n, int idx)
      : sg_(sg),
        g_(sg.g_),
        n_(n),
        idx_(idx),
        s_(n / sg.K_),
        j_(n % sg.K_),
        nr_(sg.new_rank(n, idx)),
        tr_(sg.lay_.rank_at(s_, idx)) {}

  void run();

 private:
  using Step = workloads::ScheduleStep;
  int emit(const Op& src, std::vector<int> deps, int comm_stage);
  void resolve(int d, const std::vector<char>* within, std::vector<int>& acc) const;
  bool keep(const Op& op) const;
  void emit_own(const Op& op, const std::vector<char>* within, const std::vector<int>& entry);
  const std::vector<int>& block_of(int rank, const StepKey& key) const;
  int incoming_boundary(const Step& step);
  void outgoing_boundary(const Step& step);

  ScaledGraph& sg_;
  const OpGraph& g_;
  const int n_, idx_, s_, j_, nr_, tr_;
  std::map<int, int> newid_;  // traced op id -> new op id (own ops of tr)
  std::set<int> dropped_;
  std::map<int, int> lane_last_;
  int prev_compute_ = -1, prev_gather_ = -1;
  int open_send_ = -1;  // the last stage-boundary send, which the next step's work waits for
};

int RankCopy::emit(const Op& src, std::vector<int> deps, int comm_stage) {
  Op op = src;
  op.id = static_cast<int>(sg_.ng_.ops.size());
  op.rank = nr_;
  op.instance = -1;
  if (op.communicator >= 0) op.communicator = sg_.new_comm(src.communicator, comm_stage);
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  op.deps = std::move(deps);
  sg_.ng_.ops.push_back(std::move(op));
  return sg_.ng_.ops.back().id;
}

// New ids of a traced dependency: itself if copied, else (dropped) its own dependencies.
void RankCopy::resolve(int d, const std::vector<char>* within, std::vector<int>& acc) const {
  if (within != nullptr && (*within)[static_cast<std::size_t>(d)] == 0) return;
  if (auto it = newid_.find(d); it != newid_.end()) {
    acc.push_back(it->second);
  } else if (dropped_.count(d) != 0) {
    for (int dd : g_.ops[static_cast<std::size_t>(d)].deps) resolve(dd, within, acc);
  }
}

bool RankCopy::keep(const Op& op) const {
  const int P = sg_.lay_.P, K = sg_.K_;
  if (op.communicator >= 0 && sg_.cross_stage(op.communicator)) return n_ == sg_.home(s_);
  if (op.micro_batch >= 0 && op.layer < 0) return s_ == 0 ? j_ == 0 : (s_ == P - 1 ? j_ == K - 1 : true);
  return true;
}

void RankCopy::emit_own(const Op& op, const std::vector<char>* within, const std::vector<int>& entry) {
  if (!keep(op)) {
    dropped_.insert(op.id);
    ++sg_.dropped_edge;
    return;
  }
  std::vector<int> deps;
  for (int d : op.deps) resolve(d, within, deps);
  if (deps.empty()) deps = entry;
  if (auto it = lane_last_.find(op.lane); it != lane_last_.end()) deps.push_back(it->second);
  const int id = emit(op, deps, n_);
  newid_[op.id] = id;
  lane_last_[op.lane] = id;
  if (!is_comm(op)) prev_compute_ = id;
}

const std::vector<int>& RankCopy::block_of(int rank, const StepKey& key) const {
  static const std::vector<int> none;
  const auto r = sg_.steps_.blocks.find(rank);
  if (r == sg_.steps_.blocks.end()) return none;
  const auto it = r->second.find(key);
  return it == r->second.end() ? none : it->second;
}

// Incoming boundary: a receive (and gather) copied from the traced stage that has one; the id
// the step's first ops wait for (-1: none).
int RankCopy::incoming_boundary(const Step& step) {
  const int P = sg_.lay_.P, newP = sg_.newP_;
  const int dir = step.forward ? 0 : 1;
  const StepKey key{dir, step.micro_batch};
  int entry = -1;
  const bool needs_in = step.forward ? n_ > 0 : n_ < newP - 1;
  if (!needs_in) return entry;
  const int ts = step.forward ? (s_ > 0 ? s_ : 1) : (s_ < P - 1 ? s_ : P - 2);
  const int tt = sg_.lay_.rank_at(ts, idx_);
  std::map<int, int> tmpl;
  int recvs = 0;
  for (int id : block_of(tt, key)) {
    const Op& op = g_.ops[static_cast<std::size_t>(id)];
    if (sg_.steps_.boundary[static_cast<std::size_t>(id)] == 0 || op.kind == OpKind::send) continue;
    std::vector<int> deps;
    for (int d : op.deps) {
      if (auto it = tmpl.find(d); it != tmpl.end()) deps.push_back(it->second);
    }
    if (op.kind == OpKind::recv) {
      Op r = op;
      r.peer = sg_.new_rank(step.forward ? n_ - 1 : n_ + 1, idx_);
      r.tag = sg_.tag_of(dir, step.micro_batch, step.forward ? n_ - 1 : n_ + 1);
      // Posted at its point in the schedule, after the compute before it, as train's 1F1B does.
      std::vector<int> posted;
      if (prev_compute_ >= 0) posted.push_back(prev_compute_);
      tmpl[id] = emit(r, posted, n_);
      ++recvs;
      ++sg_.boundary_msgs;
    } else {
      // A gather waits for the receive, the previous gather and the compute before it (train's order).
      if (prev_compute_ >= 0) deps.push_back(prev_compute_);
      if (prev_gather_ >= 0) deps.push_back(prev_gather_);
      tmpl[id] = emit(op, deps, n_);
      prev_gather_ = tmpl[id];
    }
    entry = tmpl[id];
    if (tt == tr_) newid_[id] = tmpl[id];
  }
  if (recvs != 1) {
    refuse(fmt::format("rank {} has {} pipeline receive(s) in the {} of micro-batch {}; expected one", tt,
                       recvs, step.forward ? "forward" : "backward", step.micro_batch));
  }
  return entry;
}

// Outgoing boundary: a send of the traced message's size after the step's last compute.
void RankCopy::outgoing_boundary(const Step& step) {
  const int P = sg_.lay_.P, newP = sg_.newP_;
  const int dir = step.forward ? 0 : 1;
  const bool needs_out = step.forward ? n_ < newP - 1 : n_ > 0;
  if (!needs_out) return;
  const int ts = step.forward ? (s_ < P - 1 ? s_ : P - 2) : (s_ > 0 ? s_ : 1);
  const Op* send = nullptr;
  for (int id : block_of(sg_.lay_.rank_at(ts, idx_), {dir, step.micro_batch})) {
    if (g_.ops[static_cast<std::size_t>(id)].kind == OpKind::send)
      send = &g_.ops[static_cast<std::size_t>(id)];
  }
  if (send == nullptr) {
    refuse(fmt::format("rank {} has no pipeline send in the {} of micro-batch {}", sg_.lay_.rank_at(ts, idx_),
                       step.forward ? "forward" : "backward", step.micro_batch));
  }
  Op sd = *send;
  sd.peer = sg_.new_rank(step.forward ? n_ + 1 : n_ - 1, idx_);
  sd.tag = sg_.tag_of(dir, step.micro_batch, n_);
  std::vector<int> deps;
  if (prev_compute_ >= 0) deps.push_back(prev_compute_);
  open_send_ = emit(sd, deps, n_);
}

void RankCopy::run() {
  sg_.ng_.ranks.push_back(nr_);
  static const std::vector<int> no_ops;
  const auto own = sg_.steps_.ops_of.find(tr_);
  const std::vector<int>& own_ops = own == sg_.steps_.ops_of.end() ? no_ops : own->second;
  int first_block_op = 1 << 30;
  if (const auto b = sg_.steps_.blocks.find(tr_); b != sg_.steps_.blocks.end())
    for (const auto& [k, v] : b->second) first_block_op = std::min(first_block_op, v.front());
  for (int id : own_ops) {  // per-iteration ops before the first step
    const Op& op = g_.ops[static_cast<std::size_t>(id)];
    if (op.micro_batch < 0 && id < first_block_op) emit_own(op, nullptr, {});
  }
  std::vector<char> in_block(g_.ops.size(), 0);
  for (const auto& step : workloads::pipeline_schedule(sg_.newP_, n_, sg_.steps_.M, 1)) {
    // The step's first work waits for its receive and for the previous step's send (1F1B waits
    // on every request before the next compute).
    std::vector<int> entry;
    if (const int in = incoming_boundary(step); in >= 0) entry.push_back(in);
    if (open_send_ >= 0) entry.push_back(open_send_);
    open_send_ = -1;
    // The step's own work, in traced order.
    const auto& mine = block_of(tr_, {step.forward ? 0 : 1, step.micro_batch});
    for (int id : mine) in_block[static_cast<std::size_t>(id)] = 1;
    for (int id : mine) {
      if (sg_.steps_.boundary[static_cast<std::size_t>(id)] != 0) continue;
      emit_own(g_.ops[static_cast<std::size_t>(id)], &in_block, entry);
    }
    for (int id : mine) in_block[static_cast<std::size_t>(id)] = 0;
    outgoing_boundary(step);
  }
  for (int id : own_ops) {  // per-iteration ops after the steps (gradient reduction, optimizer)
    const Op& op = g_.ops[static_cast<std::size_t>(id)];
    if (op.micro_batch < 0 && id >= first_block_op)
      emit_own(op, nullptr, open_send_ >= 0 ? std::vector<int>{open_send_} : std::vector<int>{});
  }
}

void ScaledGraph::copy_rank(int n, int idx) {
  RankCopy(*this, n, idx).run();
}

}  // namespace

ImportedTrace scale_pipeline(const ImportedTrace& t, int K, std::string& assumed) {
  const OpGraph& g = t.graph;
  if (K < 1) refuse(fmt::format("{} is not a pipeline factor; expected 1 or more", K));
  if (!t.steps_known) {
    refuse(fmt::format(
        "the {} trace does not give each op's micro-batch and phase (forward/backward); a deeper pipeline "
        "re-orders every stage by micro-batch and phase, which only commstack --otf2 archives carry "
        "(attributes micro_batch, phase, layer; docs/replay.md)",
        t.format));
  }
  const int W = g.world;
  if (static_cast<int>(g.ranks.size()) != W) {
    refuse(fmt::format("{} of {} ranks are traced; pipeline scale-out needs every rank (train --no-fold)",
                       g.ranks.size(), W));
  }
  const PipelineLayout lay = pipeline_layout(g);
  const TracedSteps steps = traced_steps(g);
  const int P = lay.P, L = lay.L, M = steps.M, newP = P * K;

  ImportedTrace out;
  out.graph = g;  // keeps the interned names alive
  OpGraph& ng = out.graph;
  ng.ops.clear();
  ng.communicators.clear();
  ng.ranks.clear();
  ng.world = W * K;
  ScaledGraph sg(g, lay, steps, K, ng);
  for (int n = 0; n < newP; ++n)
    for (int idx = 0; idx < L; ++idx) sg.copy_rank(n, idx);
  // Collective instances: the n-th call of a rank on a group (every member runs the same order).
  std::map<std::pair<int, int>, int> count;
  for (Op& op : ng.ops) {
    if (op.kind == OpKind::collective && op.communicator >= 0) op.instance = count[{op.rank, op.communicator}]++;
  }
  try {
    workloads::check_graph(ng);
  } catch (const std::logic_error& e) {
    refuse(fmt::format("the scaled graph is inconsistent ({})", e.what()));
  }
  out.format = t.format;
  out.source = fmt::format("{}, scale-pp {}", t.source, K);
  out.device = t.device;
  out.iteration = t.iteration;
  out.warnings = t.warnings;
  out.steps_known = true;
  const long long boundary_msgs = sg.boundary_msgs, dropped_edge = sg.dropped_edge;
  assumed = fmt::format(
      "scale-pp {}: each of the {} traced pipeline stages becomes {} consecutive stages ({} in all, {} micro-batches, the model "
      "{} times deeper with the same work per stage); every new stage runs its traced stage's per-micro-batch forward and "
      "backward steps in the 1F1B order of its new depth (warm-up new_pp - new_stage - 1 forwards); {} stage-boundary "
      "receives (and sends) of the traced boundary messages' size re-simulated between consecutive stages; groups within a "
      "stage (TP, DP) copied per new stage; {} op(s) outside any layer (embedding, logits, loss) kept only on the first copy "
      "of the first stage and the last copy of the last stage, groups spanning stages on those copies; rank n x {} + i is "
      "position i of new stage n; the traced reference is the scaled graph with the traced durations",
      K, P, K, newP, M, K, boundary_msgs, dropped_edge, L);
  return out;
}

}  // namespace commstack::sim::replay
