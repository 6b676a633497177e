#pragma once
// Collectives carrying a sequence number (NCCL's opCount) match on it instead of on call order.
// Builds an imported op graph rank by rank (shared by the trace importers). Ops are added in any
// order with local dependencies; finish() matches collective instances across ranks (n-th call on
// a process group), turns calls that some traced member lacks into ops that keep their traced
// duration (with a warning), orders each rank's ops topologically (Boost.Graph) and numbers them
// so that OpGraph's invariants hold (deps point to earlier ops of the same rank).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.hpp"

namespace commstack::workloads::importers {

class RankBuilder {
public:
  // CPU op chained after `prev` (-1: none). Returns its local index.
  int host(const std::string& name, double start_s, double dur_s, int lane, int prev);
  // GPU op (kernel, memcpy, memset; comm: a communication kernel that keeps its traced duration).
  int gpu(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps, bool comm);
  // A collective re-simulated on the target cluster; matched across ranks by (label, ranks, n-th call).
  int collective(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps,
                 Collective op, std::uint64_t bytes, const std::string& label, const std::vector<int>& ranks,
                 std::int64_t seq = -1);
  // A send or recv of `bytes` to/from `peer`, matched with the peer's op of the same tag.
  int p2p(const std::string& name, double start_s, double dur_s, int lane, const std::vector<int>& deps, OpKind kind,
          int peer, std::int64_t tag, std::uint64_t bytes);
  // After host op `call`, a wait (duration dur_s) that also needs `deps`; the op that followed
  // `call` on its thread now follows the wait.
  int insert_wait(int call, const std::vector<int>& deps, double dur_s, double start_s);
  void add_dep(int op, int dep);
  // The training step an op belongs to, when the trace says (commstack --otf2 archives).
  void annotate(int op, int micro_batch, int layer, Phase phase);
  std::size_t size() const { return ops_.size(); }

private:
  friend class TraceGraphBuilder;
  struct Proto {
    Op op;
    std::string name;
    std::vector<int> deps;
    double start_s = 0;
    std::string label;       // collectives: process group label
    std::vector<int> ranks;  // collectives: process group ranks
    std::int64_t seq = -1;   // collectives: the trace's own sequence number on the group (NCCL opCount), -1: none
    int next_host = -1;
  };
  int add(Proto p);
  std::vector<Proto> ops_;
};

class TraceGraphBuilder {
public:
  explicit TraceGraphBuilder(int world) : world_(world) {}
  RankBuilder& rank(int r) { return ranks_[r]; }
  // Throws InputError when a rank's dependencies form a cycle. Appends to `warnings`.
  OpGraph finish(std::vector<double>& traced_start_s, std::vector<std::string>& warnings);

private:
 using GroupKey = std::pair<std::string, std::vector<int>>;  // process group: label, ranks
 // Collective instances: the n-th call of each rank on a process group.
 void match_collectives(OpGraph& g, std::vector<std::string>& warnings);
 void number_group(const GroupKey& key, std::map<int, std::vector<int>>& per_rank, int comm,
                   std::vector<std::string>& warnings);
 // Calls whose collective or size differ between ranks become compute with their traced durations.
 void demote_disagreeing_calls(const std::string& label, std::map<int, std::vector<int>>& per_rank,
                               std::vector<std::string>& warnings);
 // Send/recv pairs; the unmatched ones keep their traced duration.
 void match_p2p(std::vector<std::string>& warnings);
 // Per rank: topological order, then global ids.
 void append_ranks(OpGraph& g, std::vector<double>& traced_start_s);

 int world_ = 0;
 std::map<int, RankBuilder> ranks_;
};

}  // namespace commstack::workloads::importers
