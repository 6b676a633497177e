#include "workloads/importers/trace_graph.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::workloads::importers {

int RankBuilder::add(Proto p) {
  ops_.push_back(std::move(p));
  return static_cast<int>(ops_.size()) - 1;
}

int RankBuilder::host(const std::string& name, double start_s, double dur_s, int lane, int prev) {
  Proto p;
  p.name = name;
  p.op.kind = OpKind::compute;
  p.op.host = true;
  p.op.lane = lane;
  p.op.measured_s = dur_s;
  p.start_s = start_s;
  if (prev >= 0) p.deps.push_back(prev);
  const int id = add(std::move(p));
  if (prev >= 0) ops_[static_cast<std::size_t>(prev)].next_host = id;
  return id;
}

int RankBuilder::gpu(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps, bool comm) {
  Proto p;
  p.name = name;
  p.op.kind = OpKind::compute;
  p.op.stream = comm ? Stream::dp : Stream::compute;
  p.op.lane = lane;
  p.op.measured_s = dur_s;
  p.start_s = start_s;
  p.deps = deps;
  return add(std::move(p));
}

int RankBuilder::collective(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps,
                            Collective op, std::uint64_t bytes, const std::string& label, const std::vector<int>& ranks,
                            std::int64_t seq) {
  Proto p;
  p.name = name;
  p.op.kind = OpKind::collective;
  p.op.stream = Stream::dp;
  p.op.collective = op;
  p.op.bytes = bytes;
  p.op.lane = lane;
  p.op.measured_s = dur_s;
  p.start_s = start_s;
  p.deps = deps;
  p.label = label;
  p.ranks = ranks;
  p.seq = seq;
  return add(std::move(p));
}

int RankBuilder::p2p(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps, OpKind kind,
                     int peer, std::int64_t tag, std::uint64_t bytes) {
  Proto p;
  p.name = name;
  p.op.kind = kind;
  p.op.stream = Stream::pp;
  p.op.peer = peer;
  p.op.tag = tag;
  p.op.bytes = bytes;
  p.op.lane = lane;
  p.op.measured_s = dur_s;
  p.start_s = start_s;
  p.deps = deps;
  return add(std::move(p));
}

int RankBuilder::insert_wait(int call, const std::vector<int>& deps, double dur_s, double start_s) {
  const auto c = static_cast<std::size_t>(call);
  Proto p;
  p.name = ops_[c].name + " (wait)";
  p.op.kind = OpKind::compute;
  p.op.host = true;
  p.op.lane = ops_[c].op.lane;
  p.op.measured_s = dur_s;
  p.start_s = start_s;
  p.deps = deps;
  p.deps.push_back(call);
  const int next = ops_[c].next_host;
  p.next_host = next;
  const int id = add(std::move(p));
  ops_[c].next_host = id;
  if (next >= 0) std::replace(ops_[static_cast<std::size_t>(next)].deps.begin(), ops_[static_cast<std::size_t>(next)].deps.end(), call, id);
  return id;
}

void RankBuilder::add_dep(int op, int dep) {
  auto& d = ops_[static_cast<std::size_t>(op)].deps;
  if (op != dep && std::find(d.begin(), d.end(), dep) == d.end()) d.push_back(dep);
}

void RankBuilder::annotate(int op, int micro_batch, int layer, Phase phase) {
  Op& o = ops_[static_cast<std::size_t>(op)].op;
  o.micro_batch = micro_batch;
  o.layer = layer;
  o.phase = phase;
}

OpGraph TraceGraphBuilder::finish(std::vector<double>& traced_start_s, std::vector<std::string>& warnings) {
  OpGraph g;
  g.world = world_;
  for (const auto& [r, rb] : ranks_) g.ranks.push_back(r);
  match_collectives(g, warnings);
  match_p2p(warnings);
  append_ranks(g, traced_start_s);
  check_graph(g);
  return g;
}

void TraceGraphBuilder::match_collectives(OpGraph& g, std::vector<std::string>& warnings) {
  std::map<GroupKey, std::map<int, std::vector<int>>> calls;  // group -> rank -> local op indices in order
  for (auto& entry : ranks_) {
    // Named references, not a structured binding: the sort's lambda uses rb, and clang accepts a
    // lambda capturing a structured binding only from version 16.
    const int r = entry.first;
    const RankBuilder& rb = entry.second;
    std::vector<int> coll;
    for (std::size_t i = 0; i < rb.ops_.size(); ++i) {
      if (rb.ops_[i].op.kind == OpKind::collective) coll.push_back(static_cast<int>(i));
    }
    std::stable_sort(coll.begin(), coll.end(), [&](int a, int b) {
      return rb.ops_[static_cast<std::size_t>(a)].start_s < rb.ops_[static_cast<std::size_t>(b)].start_s;
    });
    for (int i : coll) {
      const auto& p = rb.ops_[static_cast<std::size_t>(i)];
      calls[{p.label, p.ranks}][r].push_back(i);
    }
  }
  for (auto& [key, per_rank] : calls)
    number_group(key, per_rank, g.imported_communicator(key.first, key.second), warnings);
}

// The calls of one group: sequence numbers every traced member has (all calls numbered), else the
// first `common` calls by order; the others become compute that keeps its traced duration.
void TraceGraphBuilder::number_group(const GroupKey& key, std::map<int, std::vector<int>>& per_rank, int comm,
                                     std::vector<std::string>& warnings) {
  const auto& [label, members] = key;
  std::vector<int> traced_members;
  for (int m : members) {
    if (ranks_.count(m)) traced_members.push_back(m);
  }
  // Sequence numbers every traced member has (all calls numbered), else the first `common`
  // calls by order.
  bool numbered = true;
  for (auto& [r, list] : per_rank) {
    for (int i : list) numbered = numbered && ranks_[r].ops_[static_cast<std::size_t>(i)].seq >= 0;
  }
  std::map<std::int64_t, int> seq_instance;
  std::size_t common = SIZE_MAX;
  if (numbered) {
    std::map<std::int64_t, int> seen;
    for (int m : traced_members) {
      if (!per_rank.count(m)) continue;
      std::set<std::int64_t> mine;
      for (int i : per_rank[m]) mine.insert(ranks_[m].ops_[static_cast<std::size_t>(i)].seq);
      for (auto q : mine) ++seen[q];
    }
    int n = 0;
    for (const auto& [q, count] : seen) {
      if (count == static_cast<int>(traced_members.size())) seq_instance[q] = n++;
    }
  } else {
    for (int m : traced_members) common = std::min(common, per_rank.count(m) ? per_rank[m].size() : 0);
  }
  for (auto& [r, list] : per_rank) {
    std::size_t unmatched = 0;
    std::set<std::int64_t> used;
    for (std::size_t n = 0; n < list.size(); ++n) {
      Op& op = ranks_[r].ops_[static_cast<std::size_t>(list[n])].op;
      const std::int64_t q = ranks_[r].ops_[static_cast<std::size_t>(list[n])].seq;
      int instance = -1;
      if (numbered) {
        if (auto it = seq_instance.find(q); it != seq_instance.end() && used.insert(q).second)
          instance = it->second;
      } else if (n < common) {
        instance = static_cast<int>(n);
      }
      if (instance >= 0) {
        op.communicator = comm;
        op.instance = instance;
      } else {
        op.kind = OpKind::compute;
        op.collective = Collective::none;
        ++unmatched;
      }
    }
    if (unmatched > 0) {
      warnings.push_back(
          fmt::format("rank {}: {} of {} calls on {} ({} ranks) have no counterpart on every traced member; "
                      "they keep their traced duration",
                      r, unmatched, list.size(), label, members.size()));
    }
  }
  demote_disagreeing_calls(label, per_rank, warnings);
}

// One call of a group is one collective for all its ranks: NCCL would hang (or mix up the data)
// if rank 0 ran an all-reduce of 256 MiB while rank 1 ran an all-gather of 4 KiB as the same call.
// A trace whose ranks disagree on a call's collective or size was cut or misread; simulating each
// rank's own version would end the call at different times for different ranks. Such calls keep
// their traced durations on every rank, with a warning naming the first one.
void TraceGraphBuilder::demote_disagreeing_calls(const std::string& label,
                                                 std::map<int, std::vector<int>>& per_rank,
                                                 std::vector<std::string>& warnings) {
  struct First {
    int rank = -1;
    Collective collective = Collective::none;
    std::uint64_t bytes = 0;
  };
  std::map<int, First> first;  // instance -> the first rank's version
  std::set<int> disagreeing;
  std::string example;
  for (auto& [r, list] : per_rank) {
    for (const int i : list) {
      const Op& op = ranks_[r].ops_[static_cast<std::size_t>(i)].op;
      if (op.instance < 0 || op.kind != OpKind::collective) continue;
      const auto [it, fresh] = first.try_emplace(op.instance, First{r, op.collective, op.bytes});
      if (fresh || (it->second.collective == op.collective && it->second.bytes == op.bytes)) continue;
      if (disagreeing.insert(op.instance).second && example.empty())
        example = fmt::format("call {}: rank {} runs {} of {} B, rank {} {} of {} B", op.instance,
                              it->second.rank, to_string(it->second.collective), it->second.bytes, r,
                              to_string(op.collective), op.bytes);
    }
  }
  if (disagreeing.empty()) return;
  for (auto& [r, list] : per_rank) {
    for (const int i : list) {
      Op& op = ranks_[r].ops_[static_cast<std::size_t>(i)].op;
      if (op.instance < 0 || !disagreeing.count(op.instance)) continue;
      op.kind = OpKind::compute;
      op.collective = Collective::none;
      op.communicator = -1;
      op.instance = -1;
    }
  }
  warnings.push_back(
      fmt::format("{} call(s) on {} are not the same collective and size on every rank ({}): the "
                  "trace's ranks disagree (cut or mixed traces); they keep their traced durations",
                  disagreeing.size(), label, example));
}

void TraceGraphBuilder::match_p2p(std::vector<std::string>& warnings) {
  // Each needs exactly one counterpart on a traced peer (an untraced peer is folded: the scheduler
  // mirrors it).
  std::map<std::tuple<int, int, std::int64_t>, std::vector<std::pair<int, int>>> sends,
      recvs;  // (src, dst, tag) -> (rank, op)
  for (auto& [r, rb] : ranks_) {
    for (std::size_t i = 0; i < rb.ops_.size(); ++i) {
      const Op& op = rb.ops_[i].op;
      if (op.kind == OpKind::send) sends[{r, op.peer, op.tag}].emplace_back(r, static_cast<int>(i));
      if (op.kind == OpKind::recv) recvs[{op.peer, r, op.tag}].emplace_back(r, static_cast<int>(i));
    }
  }
  long long unmatched = 0;
  auto demote = [&](const std::pair<int, int>& ref) {
    Op& op = ranks_[ref.first].ops_[static_cast<std::size_t>(ref.second)].op;
    op.kind = OpKind::compute;
    op.stream = Stream::dp;
    ++unmatched;
  };
  for (auto& [key, list] : sends) {
    const bool peer_traced = ranks_.count(std::get<1>(key)) != 0;
    const auto it = recvs.find(key);
    const bool ok = list.size() == 1 && (!peer_traced || (it != recvs.end() && it->second.size() == 1));
    if (!ok) {
      for (const auto& ref : list) demote(ref);
      if (it != recvs.end()) {
        for (const auto& ref : it->second) demote(ref);
        it->second.clear();
      }
    }
  }
  for (auto& [key, list] : recvs) {
    const bool peer_traced = ranks_.count(std::get<0>(key)) != 0;
    const auto it = sends.find(key);
    if (list.empty()) continue;
    const bool ok = list.size() == 1 && (!peer_traced || (it != sends.end() && it->second.size() == 1));
    if (!ok) {
      for (const auto& ref : list) demote(ref);
    }
  }
  if (unmatched > 0) {
    warnings.push_back(
        fmt::format("{} send/recv op(s) without exactly one counterpart on the traced peer keep their traced "
                    "duration",
                    unmatched));
  }
}

void TraceGraphBuilder::append_ranks(OpGraph& g, std::vector<double>& traced_start_s) {
  for (auto& [r, rb] : ranks_) {
    using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
    G dag(rb.ops_.size());
    for (std::size_t i = 0; i < rb.ops_.size(); ++i) {
      for (int d : rb.ops_[i].deps) boost::add_edge(static_cast<std::size_t>(d), i, dag);
    }
    std::vector<std::size_t> order;
    try {
      boost::topological_sort(dag, std::back_inserter(order));
    } catch (const boost::not_a_dag&) {
      throw InputError(fmt::format("rank {}: the traced dependencies form a cycle (inconsistent timestamps or correlation ids)", r));
    }
    std::reverse(order.begin(), order.end());
    std::vector<int> gid(rb.ops_.size(), -1);
    const int base = static_cast<int>(g.ops.size());
    for (std::size_t k = 0; k < order.size(); ++k) gid[order[k]] = base + static_cast<int>(k);
    for (std::size_t idx : order) {
      auto& p = rb.ops_[idx];
      Op op = p.op;
      op.id = gid[idx];
      op.rank = r;
      op.name = g.intern(p.name);
      op.deps.clear();
      for (int d : p.deps) op.deps.push_back(gid[static_cast<std::size_t>(d)]);
      std::sort(op.deps.begin(), op.deps.end());
      op.deps.erase(std::unique(op.deps.begin(), op.deps.end()), op.deps.end());
      g.ops.push_back(std::move(op));
      traced_start_s.push_back(p.start_s);
    }
  }
}

}  // namespace commstack::workloads::importers
