#include "workloads/memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "workloads/rank_params.hpp"

namespace commstack::workloads {

double korthikanti_activation_bytes(double s, double b, double h, double a, double t, bool sp, Recompute rc) {
  const double sbh = s * b * h;
  if (rc == Recompute::full) return sp ? 2 * sbh / t : 2 * sbh;
  const double quad = rc == Recompute::selective ? 0 : 5 * a * s / h;
  if (sp) return sbh / t * (34 + quad);
  return sbh * (10 + 24 / t + quad / t);
}

double activation_bytes_per_layer(const ModelSpec& m, const ParallelConfig& par, std::int64_t layer) {
  const double t = par.tp;
  const double b = static_cast<double>(par.micro_batch);
  const double s = static_cast<double>(par.seq);
  const double sl = s / par.cp;  // tokens of each sequence held by this CP rank
  const double h = static_cast<double>(m.hidden);
  const double e = par.activation_bytes();
  const double tokens = b * sl;
  const bool sp = par.sequence_parallel && par.tp > 1;
  if (par.recompute == Recompute::full) return e * tokens * h / (sp ? t : 1);  // the layer input only
  const double mask = m.dropout ? 1 : 0;  // dropout masks are 1 byte per element
  const bool moe = m.is_moe_layer(layer);
  // Replicated over TP ranks unless SP: the inputs of the two norms, of the QKV GEMM and of the
  // first MLP GEMM (or the router), and the two dropout masks.
  const double replicated = tokens * h * (2 * e + 2 * e + 2 * mask);
  // Split over TP: Q, K, V, the projection input, and the MLP intermediates.
  const double qw = static_cast<double>(m.q_width()), kvw = static_cast<double>(m.kv_width());
  double sharded = tokens * e * (2 * qw + 2 * kvw);
  const double mlp_tensors = m.mlp == MlpKind::gelu ? 2 : 3;  // GeLU in + fc2 in; gate, up, fc2 in
  if (!moe) sharded += tokens * e * mlp_tensors * static_cast<double>(m.ffn_hidden);
  // Materialized attention keeps the softmax output for the backward, plus the dropout mask and
  // output when dropout is used: Korthikanti's 5as^2b (with CP each rank holds its sl queries
  // against all s keys). A fused (flash) kernel keeps none of it, only the fp32 log-sum-exp per query
  // row and head (the backward recomputes the scores blockwise), and selective recomputation drops it.
  const double heads_rows = b * static_cast<double>(m.heads) * sl;
  const double quadratic = par.recompute == Recompute::selective     ? 0
                           : par.attention == AttentionKernel::flash ? heads_rows * 4
                                                                     : heads_rows * s * (e + mask * (1 + e));
  double bytes = (sp ? replicated / t : replicated) + (sharded + quadratic) / t;
  if (moe) {
    // Each token (already split over TP ranks by SP) is copied to top_k routed + shared experts;
    // each copy keeps its input and the expert's intermediates. A routed copy arrives on all etp
    // ranks of its expert (the expert-TP all-gather), each keeping the whole input and 1/etp of the
    // intermediates; the shared experts' copies stay on this rank.
    const double f = static_cast<double>(m.moe->ffn_hidden), etp = par.expert_tp();
    const double routed = tokens / t * static_cast<double>(m.moe->top_k);
    const double shared = tokens / t * static_cast<double>(m.moe->shared_experts);
    bytes += routed * e * (etp * h + mlp_tensors * f) + shared * e * (h + mlp_tensors * f);
  }
  return bytes;
}

double mtp_extra_activation_bytes(const ModelSpec& m, const ParallelConfig& par) {
  // The two norms' inputs (embedding, hidden states) and the projection's 2h-wide input, sharded by SP.
  const double tokens = static_cast<double>(par.micro_batch) * static_cast<double>(par.seq) / par.cp;
  const bool sp = par.sequence_parallel && par.tp > 1;
  return tokens * static_cast<double>(m.hidden) * par.activation_bytes() * 4 / (sp ? par.tp : 1);
}

const StageMemory& MemoryEstimate::worst() const {
  return *std::max_element(stages.begin(), stages.end(),
                           [](const StageMemory& a, const StageMemory& b) { return a.total() < b.total(); });
}

MemoryEstimate estimate_memory(const ModelSpec& m, const ParallelConfig& par) {
  const double t = par.tp;
  const double n_dense = static_cast<double>(par.dp) * par.cp;  // dense grads: DP x CP
  const double n_expert = par.expert_dp();                      // expert-DP group: tp*dp*cp / (etp*ep)
  const RankParams held(m, par.tp, par.pp, par.ep, par.expert_tp());
  MemoryEstimate est;
  for (int stage = 0; stage < par.pp; ++stage) {
    StageMemory sm;
    sm.stage = stage;
    double dense = 0, expert = 0, acts = 0, largest_layer = 0;
    for (int c = 0; c < par.virtual_stages; ++c) {
      // The chunk's decoder layers, and on the last one the MTP layers (each keeps a decoder
      // layer's activations plus its 2h-wide projection input).
      for (const LayerRange r : {stage_layers(m, par, stage, c), mtp_stage_layers(m, par, stage, c)}) {
        for (std::int64_t l = r.first; l < r.last; ++l) {
          const double layer_dense = held.layer_dense(l);
          const double layer_expert = held.layer_expert(l);
          dense += layer_dense;
          expert += layer_expert;
          largest_layer = std::max(largest_layer, layer_dense + layer_expert);
          acts += activation_bytes_per_layer(m, par, l) +
                  (m.is_mtp_layer(l) ? mtp_extra_activation_bytes(m, par) : 0);
        }
      }
    }
    if (stage == 0) dense += held.embedding();
    if (stage == par.pp - 1) dense += held.output() + held.mtp_embedding_copy();
    sm.params_dense = static_cast<std::int64_t>(dense);
    sm.params_expert = static_cast<std::int64_t>(expert);
    const int z = par.zero;
    sm.weights = 2 * (z >= 3 ? dense / n_dense + expert / n_expert + 2 * largest_layer : dense + expert);
    sm.gradients = par.grad_bytes * (z >= 2 ? dense / n_dense + expert / n_expert : dense + expert);
    sm.optimizer = 12 * (z >= 1 ? dense / n_dense + expert / n_expert : dense + expert);
    sm.in_flight = in_flight_chunks(par, stage);
    sm.activations = acts / par.virtual_stages * static_cast<double>(sm.in_flight);
    if (stage == par.pp - 1) {
      // fp32 logits for the cross-entropy of one micro-batch: Korthikanti's 4sbV/t, once for the
      // decoder and once per MTP depth (each depth's loss keeps its own).
      sm.activations += 4.0 * static_cast<double>(par.micro_batch) * static_cast<double>(par.seq) / par.cp *
                        static_cast<double>(m.vocab) / t * static_cast<double>(1 + m.mtp_layers);
    }
    est.stages.push_back(sm);
  }
  return est;
}

void check_fits(const MemoryEstimate& est, double capacity_bytes, const std::string& what) {
  const StageMemory& w = est.worst();
  if (w.total() <= capacity_bytes) return;
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  throw InputError(fmt::format(
      "memory: pipeline stage {} needs {:.1f} GiB per GPU (weights {:.1f}, gradients {:.1f}, optimizer "
      "{:.1f}, "
      "activations {:.1f} for {} in-flight micro-batch chunks) but {} has {:.1f} GiB; raise tp/pp/zero, use "
      "recompute, or lower micro_batch",
      w.stage, w.total() / GiB, w.weights / GiB, w.gradients / GiB, w.optimizer / GiB, w.activations / GiB,
      w.in_flight, what, capacity_bytes / GiB));
}

}  // namespace commstack::workloads
