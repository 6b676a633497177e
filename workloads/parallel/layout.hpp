#pragma once
// Rank placement: which global GPU rank holds which (tp, cp, dp, pp) coordinate, and the
// communicators (lists of global ranks) each kind of parallelism uses. Default order is
// Megatron-Core's "tp-cp-ep-dp-pp": TP varies fastest (so a TP group sits inside one node when
// tp <= GPUs per node), then CP, then DP, then PP slowest. Experts are not TP-sharded (expert TP
// = 1, Megatron's --expert-tensor-parallel-size 1), so Megatron's expert grid "etp-ep-edp-pp"
// numbers a stage's ranks with EP innermost: EP groups are consecutive blocks of the in-stage index
// j = tp + tp_size*(cp + cp_size*dp), ep_rank = j % ep and the expert-data-parallel index is j / ep
// (Mixtral TP8 EP8: the EP group is the node's 8 TP ranks).
#include <string>
#include <vector>

#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int ep = 0;   // expert-parallel rank (0 when ep == 1)
  int edp = 0;  // expert-data-parallel index
};

enum class GroupKind {
  tp,         // tensor parallel: same cp, dp, pp
  cp,         // context parallel ring
  dp,         // pure data parallel
  dp_cp,      // dense-gradient reduction group (Megatron: data parallel with context parallel)
  pp,         // one pipeline: same tp, cp, dp
  ep,         // expert parallel all-to-all: same pp and edp (consecutive in-stage ranks)
  expert_dp,  // expert-gradient reduction: same pp and ep rank (tp*cp*dp/ep ranks; experts are not
              // TP-sharded)
  embedding,  // first and last pipeline stage of one pipeline (tied embedding gradient)
};
std::string to_string(GroupKind k);

class RankLayout {
public:
  explicit RankLayout(const ParallelConfig& par);

  int world() const { return world_; }
  int rank(const RankCoord& c) const;
  RankCoord coord(int rank) const;
  // The sorted ranks of `kind` that contain `rank`.
  std::vector<int> group_of(GroupKind kind, int rank) const;
  // Every group of a kind, ordered by smallest member.
  std::vector<std::vector<int>> groups(GroupKind kind) const;
  // One rank per pipeline stage with tp = cp = dp = 0: the ranks that stand for their
  // equivalence class (all other ranks of a stage run the same ops on other data).
  std::vector<int> representative_ranks() const;

private:
  int size_of(Dim d) const;
  ParallelConfig par_;
  int world_ = 0;
  int stride_[4] = {1, 1, 1, 1};  // indexed by Dim
};

}  // namespace commstack::workloads
