#include "sim/train/scheduler.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>
#include <tuple>

namespace commstack::sim::train {
namespace {

using workloads::Op;
using workloads::OpGraph;
using workloads::OpKind;

// Ops that must start together (a collective instance or a send/recv pair): started when `need`
// of them are ready, at the latest ready time.
struct Rendezvous {
  std::vector<int> ops;
  int need = 0;
  double latest = 0;
  int latest_op = -1;
};

class Runner {
public:
  Runner(const OpGraph& g, const DurationFn& duration) : g_(g), duration_(duration) {
    const std::size_t n = g.ops.size();
    s_.start.assign(n, 0);
    s_.finish.assign(n, -1);
    s_.binding.assign(n, -1);
    ready_.assign(n, 0);
    pending_.assign(n, 0);
    bind_dep_.assign(n, -1);
    succ_.resize(n);
    generated_.assign(static_cast<std::size_t>(std::max(g.world, 1)), 0);
    for (int r : g.ranks) generated_[static_cast<std::size_t>(r)] = 1;
    for (const Op& op : g.ops) {
      pending_[static_cast<std::size_t>(op.id)] = static_cast<int>(op.deps.size());
      for (int d : op.deps) succ_[static_cast<std::size_t>(d)].push_back(op.id);
    }
    // Generated members per communicator: how many ops a collective instance waits for.
    for (const auto& c : g.communicators) {
      int k = 0;
      for (int r : c.ranks) k += generated_[static_cast<std::size_t>(r)];
      members_.push_back(k);
    }
  }

  Schedule run() {
    std::deque<int> queue;
    for (const Op& op : g_.ops) {
      if (op.deps.empty()) queue.push_back(op.id);
    }
    while (!queue.empty()) {
      const int id = queue.front();
      queue.pop_front();
      on_ready(id, queue);
    }
    for (std::size_t i = 0; i < s_.finish.size(); ++i) {
      if (s_.finish[i] < 0) {
        throw std::logic_error("train scheduler: op " + std::to_string(i) + " (" + g_.ops[i].name +
                               ") never started: the op graph deadlocks");
      }
      s_.iteration_s = std::max(s_.iteration_s, s_.finish[i]);
    }
    return std::move(s_);
  }

private:
  void finish(int id, double start, int binding, std::deque<int>& queue) {
    const auto i = static_cast<std::size_t>(id);
    s_.start[i] = start;
    s_.binding[i] = binding;
    s_.finish[i] = start + duration_(g_.ops[i]);
    for (int s : succ_[i]) {
      const auto j = static_cast<std::size_t>(s);
      // Remember the latest predecessor (the first one wins ties).
      if (bind_dep_[j] < 0 || s_.finish[i] > ready_[j]) {
        ready_[j] = std::max(ready_[j], s_.finish[i]);
        bind_dep_[j] = id;
      }
      if (--pending_[j] == 0) queue.push_back(s);
    }
  }

  int own_binding(int id) const { return bind_dep_[static_cast<std::size_t>(id)]; }

  void join(Rendezvous& rv, int id) {
    const double r = ready_[static_cast<std::size_t>(id)];
    if (rv.ops.empty() || r > rv.latest) {
      rv.latest = r;
      rv.latest_op = id;
    }
    rv.ops.push_back(id);
  }

  void release(Rendezvous& rv, std::deque<int>& queue) {
    for (int op : rv.ops) {
      // Waiting on our own predecessor, or on the member/peer that came last.
      const bool mine = ready_[static_cast<std::size_t>(op)] >= rv.latest;
      finish(op, rv.latest, mine ? own_binding(op) : rv.latest_op, queue);
    }
  }

  void on_ready(int id, std::deque<int>& queue) {
    const Op& op = g_.ops[static_cast<std::size_t>(id)];
    switch (op.kind) {
      case OpKind::compute: finish(id, ready_[static_cast<std::size_t>(id)], own_binding(id), queue); return;
      case OpKind::collective: {
        Rendezvous& rv = collectives_[{op.communicator, op.instance}];
        rv.need = members_[static_cast<std::size_t>(op.communicator)];
        join(rv, id);
        if (static_cast<int>(rv.ops.size()) == rv.need) release(rv, queue);
        return;
      }
      case OpKind::send:
      case OpKind::recv: break;
    }
    const bool peer_generated = generated_[static_cast<std::size_t>(op.peer)] != 0;
    if (peer_generated) {
      const int src = op.kind == OpKind::send ? op.rank : op.peer;
      const int dst = op.kind == OpKind::send ? op.peer : op.rank;
      Rendezvous& rv = pairs_[{src, dst, op.tag}];
      rv.need = 2;
      join(rv, id);
      if (static_cast<int>(rv.ops.size()) == 2) release(rv, queue);
      return;
    }
    // The peer is folded away: a send just goes; a recv's data leaves the peer when our own send
    // with the same tag leaves (the peer is our mirror image), if we have one.
    if (op.kind == OpKind::send) {
      finish(id, ready_[static_cast<std::size_t>(id)], own_binding(id), queue);
      Rendezvous& rv = mirrors_[{op.rank, op.tag}];
      rv.need = 2;
      join(rv, id);
      if (rv.ops.size() == 2) release_mirror(rv, queue);
      return;
    }
    Rendezvous& rv = mirrors_[{op.rank, op.tag}];
    rv.need = 2;
    join(rv, id);
    if (!has_mirror_send(op)) {
      finish(id, ready_[static_cast<std::size_t>(id)], own_binding(id), queue);
    } else if (rv.ops.size() == 2) {
      release_mirror(rv, queue);
    }
  }

  // Only the recv of a mirror pair still has to start (the send already went).
  void release_mirror(Rendezvous& rv, std::deque<int>& queue) {
    for (int op : rv.ops) {
      if (g_.ops[static_cast<std::size_t>(op)].kind != OpKind::recv) continue;
      const bool mine = ready_[static_cast<std::size_t>(op)] >= rv.latest;
      finish(op, rv.latest, mine ? own_binding(op) : rv.latest_op, queue);
    }
  }

  bool has_mirror_send(const Op& recv) {
    if (mirror_sends_.empty()) {
      for (const Op& o : g_.ops) {
        if (o.kind == OpKind::send && generated_[static_cast<std::size_t>(o.peer)] == 0) mirror_sends_[{o.rank, o.tag}] = 1;
      }
      mirror_sends_[{-1, -1}] = 0;  // marks the table as built
    }
    return mirror_sends_.count({recv.rank, recv.tag}) != 0;
  }

  const OpGraph& g_;
  const DurationFn& duration_;
  Schedule s_;
  std::vector<double> ready_;
  std::vector<int> pending_;
  std::vector<std::vector<int>> succ_;
  std::vector<char> generated_;
  std::vector<int> members_;
  std::vector<int> bind_dep_;
  std::map<std::pair<int, int>, Rendezvous> collectives_;
  std::map<std::tuple<int, int, std::int64_t>, Rendezvous> pairs_;
  std::map<std::pair<int, std::int64_t>, Rendezvous> mirrors_;
  std::map<std::pair<int, std::int64_t>, int> mirror_sends_;
};

}  // namespace

Schedule schedule_ops(const OpGraph& g, const DurationFn& duration) { return Runner(g, duration).run(); }

}  // namespace commstack::sim::train
