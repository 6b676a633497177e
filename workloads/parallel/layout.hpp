#pragma once
// Rank placement: which global GPU rank holds which (tp, cp, dp, pp) coordinate, and the
// communicators (lists of global ranks) each kind of parallelism uses. Default order is
// Megatron-Core's "tp-cp-ep-dp-pp": TP varies fastest (so a TP group sits inside one node when
// tp <= GPUs per node), then CP, then DP, then PP slowest. The routed experts have a grid of their
// own, Megatron's "etp-ep-edp-pp" (parallel_state.initialize_model_parallel, cp = 1): over the
// in-stage index j = tp + tp_size*(cp + cp_size*dp), expert TP is innermost (etp_rank = j % etp),
// then EP (ep_rank = (j / etp) % ep), then expert data parallelism (edp = j / (etp*ep)). With
// Megatron's default etp = tp the expert-TP group is the TP group and an EP group takes every
// tp-th rank (Mixtral TP2 EP8 on 16 GPUs: ranks 0, 2, ..., 14); with etp = 1 an EP group is a block
// of consecutive ranks (Mixtral TP8 EP8 etp 1: the node's 8 TP ranks).
#include <string>
#include <vector>

#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int ep = 0;   // expert-parallel rank (0 when ep == 1)
  int edp = 0;  // expert-data-parallel index
  int etp = 0;  // expert-tensor-parallel rank (0 when etp == 1)
};

enum class GroupKind {
  tp,            // tensor parallel: same cp, dp, pp
  cp,            // context parallel ring
  dp,            // pure data parallel
  dp_cp,         // dense-gradient reduction group (Megatron: data parallel with context parallel)
  pp,            // one pipeline: same tp, cp, dp
  ep,            // expert parallel all-to-all: same pp, edp and expert-TP rank
  expert_tp,     // one expert's weight shards: same pp, edp and ep rank (etp consecutive in-stage ranks)
  expert_dp,     // expert-gradient reduction: same pp, ep and expert-TP rank (tp*cp*dp/(etp*ep) ranks)
  expert_tp_ep,  // the all-gather token dispatcher's group: same pp and edp (etp*ep ranks; Megatron tp_ep)
  embedding,     // first and last pipeline stage of one pipeline (tied embedding gradient)
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
