#pragma once
// The parameters one GPU holds under tensor, pipeline and expert parallelism. Megatron splits the
// GEMM weights and the column-parallel biases over the TP ranks, but keeps a whole copy of the
// norms, the row-parallel biases (attention projection, second MLP matrix), the MoE router and the
// learned position table on every TP rank. Gradient buckets, ZeRO shards, the optimizer and the
// memory estimate all count what one rank holds, so they all come from here.
#include <cstdint>

#include "workloads/model.hpp"

namespace commstack::workloads {

class RankParams {
 public:
  RankParams(const ModelSpec& m, int tp, int pp, int ep, int etp)
      : m_(m), pc_(count_params(m)), tp_(tp), pp_(pp), ep_(ep), etp_(etp) {}

  // Non-expert parameters of layer `l` on one TP rank (attention, dense MLP or the MoE layer's
  // shared experts and router, and the norms). An MTP layer (l >= layers) adds its projection and
  // its three norms.
  double layer_dense(std::int64_t l) const;
  // The part of those that every TP rank holds whole (norms, row-parallel biases, router): with
  // sequence parallelism each rank sees a different sequence shard, so Megatron all-reduces their
  // gradients over the TP group once per iteration.
  double layer_tp_replicated(std::int64_t l) const;
  // Routed-expert parameters of layer `l` on one rank: the experts split over EP, each expert's
  // matrices (and fc1's bias) over expert TP; fc2's bias, added after the expert-TP reduction, whole.
  double layer_expert(std::int64_t l) const;
  // The GEMM weight matrices among those (QKV, the attention projection, the MLP's or the shared
  // experts' matrices, MTP's eh_proj), without norms, biases and router: what Transformer Engine
  // holds as FP8 tensors under --fp8-param-gather.
  double layer_dense_gemm(std::int64_t l) const;
  // The routed experts' weight matrices on one rank (their biases excluded).
  double layer_expert_gemm(std::int64_t l) const;
  // The input embedding on the first stage: the vocabulary split over TP, the learned position
  // table (s x h) whole.
  double embedding() const;
  // The copy of the input embedding the last stage holds for the MTP layers when pp > 1 (its
  // gradients are summed with the first stage's); 0 without MTP or with pp = 1.
  double mtp_embedding_copy() const;
  // The last stage's output layer and final norm. With tied embeddings and pp > 1 Megatron keeps
  // a copy of the word embeddings there; with pp = 1 the output layer is the embedding itself.
  double output() const;
  // One norm's parameters (every norm has the final norm's size).
  double norm() const { return static_cast<double>(pc_.final_norm); }

 private:
  const ModelSpec& m_;
  ParamCount pc_;
  int tp_, pp_, ep_, etp_;
};

}  // namespace commstack::workloads
