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

}  // namespace

ImportedTrace scale_pipeline(const ImportedTrace& t, int K, std::string& assumed) {
  const OpGraph& g = t.graph;
  if (K < 1) refuse(fmt::format("{} is not a pipeline factor; expected 1 or more", K));
  if (!t.steps_known) {
    refuse(fmt::format("the {} trace does not give each op's micro-batch and phase (forward/backward); a deeper pipeline "
                       "re-orders every stage by micro-batch and phase, which only commstack --otf2 archives carry "
                       "(attributes micro_batch, phase, layer; docs/replay.md)",
                       t.format));
  }
  const int W = g.world;
  if (static_cast<int>(g.ranks.size()) != W) {
    refuse(fmt::format("{} of {} ranks are traced; pipeline scale-out needs every rank (train --no-fold)", g.ranks.size(), W));
  }
  // Stages from the forward pipeline sends: a rank's forward sends go to the next stage.
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
  std::vector<std::vector<int>> chains;  // chain c = ranks of stages 0..P-1 with the same TP/DP position
  for (int r : g.ranks) {
    if (prev.count(r) != 0) continue;
    std::vector<int> chain{r};
    for (auto it = next.find(r); it != next.end() && chain.size() <= g.ranks.size(); it = next.find(it->second)) {
      chain.push_back(it->second);
    }
    chains.push_back(chain);
  }
  if (chains.empty()) {
    refuse("the traced forward sends form a ring (an interleaved schedule, virtual stages > 1); only non-interleaved 1F1B "
           "pipelines can be made deeper");
  }
  const int P = chains.empty() ? 0 : static_cast<int>(chains.front().size());
  std::map<int, int> stage_of, idx_of;
  for (std::size_t c = 0; c < chains.size(); ++c) {
    if (static_cast<int>(chains[c].size()) != P || P < 2) refuse("the traced forward sends do not form pipelines of equal depth");
    for (int s = 0; s < P; ++s) {
      const int r = chains[c][static_cast<std::size_t>(s)];
      if (!stage_of.try_emplace(r, s).second) refuse(fmt::format("rank {} is in two traced pipelines", r));
      idx_of[r] = static_cast<int>(c);
    }
  }
  if (static_cast<int>(stage_of.size()) != W) refuse("some traced ranks are in no pipeline (no forward send or receive)");
  const int L = static_cast<int>(chains.size());
  const int newP = P * K;
  const auto rank_at = [&](int stage, int idx) { return chains[static_cast<std::size_t>(idx)][static_cast<std::size_t>(stage)]; };
  const auto new_rank = [&](int n, int idx) { return n * L + idx; };
  const auto home = [&](int s) { return s == P - 1 ? s * K + K - 1 : s * K; };

  // Per traced rank: its ops in order, split into per-step blocks and per-iteration ops.
  std::map<int, std::vector<int>> ops_of;
  for (const Op& op : g.ops) ops_of[op.rank].push_back(op.id);
  std::map<int, std::map<StepKey, std::vector<int>>> blocks;
  int M = 0;
  for (const Op& op : g.ops) {
    if (op.micro_batch < 0) continue;
    blocks[op.rank][step_of(op)].push_back(op.id);
    M = std::max(M, op.micro_batch + 1);
  }
  // Stage-boundary ops: sends, receives, and the gathers of received slices (Megatron's
  // scatter/gather of boundary tensors: a collective outside any layer right after a receive).
  std::vector<char> boundary(g.ops.size(), 0);
  for (const Op& op : g.ops) {
    bool b = op.kind == OpKind::send || op.kind == OpKind::recv;
    if (!b && op.kind == OpKind::collective && op.layer < 0 && op.micro_batch >= 0) {
      for (int d : op.deps) b = b || g.ops[static_cast<std::size_t>(d)].kind == OpKind::recv;
    }
    boundary[static_cast<std::size_t>(op.id)] = b ? 1 : 0;
  }

  ImportedTrace out;
  out.graph = g;  // keeps the interned names alive
  OpGraph& ng = out.graph;
  ng.ops.clear();
  ng.communicators.clear();
  ng.ranks.clear();
  ng.world = W * K;
  std::map<std::pair<int, int>, int> comm_map;  // (traced communicator, new stage) -> new communicator
  const auto cross_stage = [&](int c) {
    const auto& members = g.communicators[static_cast<std::size_t>(c)].ranks;
    for (int m : members) {
      if (stage_of.at(m) != stage_of.at(members.front())) return true;
    }
    return false;
  };
  const auto new_comm = [&](int c, int n) {
    const bool cross = cross_stage(c);
    const int key_stage = cross ? -1 : n;
    if (auto it = comm_map.find({c, key_stage}); it != comm_map.end()) return it->second;
    const auto& tc = g.communicators[static_cast<std::size_t>(c)];
    std::vector<int> members;
    for (int m : tc.ranks) members.push_back(new_rank(cross ? home(stage_of.at(m)) : n, idx_of.at(m)));
    std::sort(members.begin(), members.end());
    const std::string label = cross ? tc.label + " (scale-pp)" : fmt::format("{} (stage {})", tc.label, n);
    const int id = ng.imported_communicator(label, members);
    comm_map[{c, key_stage}] = id;
    return id;
  };
  const auto tag_of = [&](int dir, int mb, int sender) {
    return ((static_cast<std::int64_t>(mb) * 2 + dir) * newP + sender) * L + 1;
  };

  long long boundary_msgs = 0, dropped_edge = 0;
  for (int n = 0; n < newP; ++n) {
    const int s = n / K, j = n % K;
    for (int idx = 0; idx < L; ++idx) {
      const int nr = new_rank(n, idx), tr = rank_at(s, idx);
      ng.ranks.push_back(nr);
      std::map<int, int> newid;  // traced op id -> new op id (own ops of tr)
      std::set<int> dropped;
      std::map<int, int> lane_last;
      int prev_compute = -1, prev_gather = -1;
      const auto emit = [&](const Op& src, std::vector<int> deps, int comm_stage) {
        Op op = src;
        op.id = static_cast<int>(ng.ops.size());
        op.rank = nr;
        op.instance = -1;
        if (op.communicator >= 0) op.communicator = new_comm(src.communicator, comm_stage);
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        op.deps = std::move(deps);
        ng.ops.push_back(std::move(op));
        return ng.ops.back().id;
      };
      // New ids of a traced dependency: itself if copied, else (dropped) its own dependencies.
      std::function<void(int, const std::vector<char>*, std::vector<int>&)> resolve = [&](int d, const std::vector<char>* within,
                                                                                           std::vector<int>& acc) {
        if (within != nullptr && (*within)[static_cast<std::size_t>(d)] == 0) return;
        if (auto it = newid.find(d); it != newid.end()) {
          acc.push_back(it->second);
        } else if (dropped.count(d) != 0) {
          for (int dd : g.ops[static_cast<std::size_t>(d)].deps) resolve(dd, within, acc);
        }
      };
      const auto keep = [&](const Op& op) {
        if (op.communicator >= 0 && cross_stage(op.communicator)) return n == home(s);
        if (op.micro_batch >= 0 && op.layer < 0) return s == 0 ? j == 0 : (s == P - 1 ? j == K - 1 : true);
        return true;
      };
      const auto emit_own = [&](const Op& op, const std::vector<char>* within, int entry) {
        if (!keep(op)) {
          dropped.insert(op.id);
          ++dropped_edge;
          return;
        }
        std::vector<int> deps;
        for (int d : op.deps) resolve(d, within, deps);
        if (deps.empty() && entry >= 0) deps.push_back(entry);
        if (auto it = lane_last.find(op.lane); it != lane_last.end()) deps.push_back(it->second);
        const int id = emit(op, deps, n);
        newid[op.id] = id;
        lane_last[op.lane] = id;
        if (!is_comm(op)) prev_compute = id;
      };
      const auto& own_ops = ops_of[tr];
      const auto& own_blocks = blocks[tr];
      const int first_block_op = own_blocks.empty() ? 1 << 30 : [&] {
        int f = 1 << 30;
        for (const auto& [k, v] : own_blocks) f = std::min(f, v.front());
        return f;
      }();
      for (int id : own_ops) {  // per-iteration ops before the first step
        const Op& op = g.ops[static_cast<std::size_t>(id)];
        if (op.micro_batch < 0 && id < first_block_op) emit_own(op, nullptr, -1);
      }
      std::vector<char> in_block(g.ops.size(), 0);
      for (const auto& step : workloads::pipeline_schedule(newP, n, M, 1)) {
        const int dir = step.forward ? 0 : 1;
        const StepKey key{dir, step.micro_batch};
        const auto block_of = [&](int rank) -> const std::vector<int>& {
          static const std::vector<int> none;
          const auto& b = blocks[rank];
          const auto it = b.find(key);
          return it == b.end() ? none : it->second;
        };
        // Incoming boundary: a receive (and gather) copied from the traced stage that has one.
        int entry = -1;
        const bool needs_in = step.forward ? n > 0 : n < newP - 1;
        if (needs_in) {
          const int ts = step.forward ? (s > 0 ? s : 1) : (s < P - 1 ? s : P - 2);
          const int tt = rank_at(ts, idx);
          std::map<int, int> tmpl;
          int recvs = 0;
          for (int id : block_of(tt)) {
            const Op& op = g.ops[static_cast<std::size_t>(id)];
            if (boundary[static_cast<std::size_t>(id)] == 0 || op.kind == OpKind::send) continue;
            std::vector<int> deps;
            for (int d : op.deps) {
              if (auto it = tmpl.find(d); it != tmpl.end()) deps.push_back(it->second);
            }
            if (op.kind == OpKind::recv) {
              Op r = op;
              r.peer = new_rank(step.forward ? n - 1 : n + 1, idx);
              r.tag = tag_of(dir, step.micro_batch, step.forward ? n - 1 : n + 1);
              tmpl[id] = emit(r, {}, n);
              ++recvs;
              ++boundary_msgs;
            } else {
              // A gather waits for the receive, the previous gather and the compute before it (train's order).
              if (prev_compute >= 0) deps.push_back(prev_compute);
              if (prev_gather >= 0) deps.push_back(prev_gather);
              tmpl[id] = emit(op, deps, n);
              prev_gather = tmpl[id];
            }
            entry = tmpl[id];
            if (tt == tr) newid[id] = tmpl[id];
          }
          if (recvs != 1) {
            refuse(fmt::format("rank {} has {} pipeline receive(s) in the {} of micro-batch {}; expected one", tt, recvs,
                               step.forward ? "forward" : "backward", step.micro_batch));
          }
        }
        // The step's own work, in traced order.
        const auto& mine = block_of(tr);
        for (int id : mine) in_block[static_cast<std::size_t>(id)] = 1;
        for (int id : mine) {
          if (boundary[static_cast<std::size_t>(id)] != 0) continue;
          emit_own(g.ops[static_cast<std::size_t>(id)], &in_block, entry);
        }
        for (int id : mine) in_block[static_cast<std::size_t>(id)] = 0;
        // Outgoing boundary: a send of the traced message's size after the step's last compute.
        const bool needs_out = step.forward ? n < newP - 1 : n > 0;
        if (needs_out) {
          const int ts = step.forward ? (s < P - 1 ? s : P - 2) : (s > 0 ? s : 1);
          const Op* send = nullptr;
          for (int id : block_of(rank_at(ts, idx))) {
            if (g.ops[static_cast<std::size_t>(id)].kind == OpKind::send) send = &g.ops[static_cast<std::size_t>(id)];
          }
          if (send == nullptr) {
            refuse(fmt::format("rank {} has no pipeline send in the {} of micro-batch {}", rank_at(ts, idx),
                               step.forward ? "forward" : "backward", step.micro_batch));
          }
          Op sd = *send;
          sd.peer = new_rank(step.forward ? n + 1 : n - 1, idx);
          sd.tag = tag_of(dir, step.micro_batch, n);
          std::vector<int> deps;
          if (prev_compute >= 0) deps.push_back(prev_compute);
          emit(sd, deps, n);
        }
      }
      for (int id : own_ops) {  // per-iteration ops after the steps (gradient reduction, optimizer)
        const Op& op = g.ops[static_cast<std::size_t>(id)];
        if (op.micro_batch < 0 && id >= first_block_op) emit_own(op, nullptr, -1);
      }
    }
  }
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
