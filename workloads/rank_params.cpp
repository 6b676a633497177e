#include "workloads/rank_params.hpp"

namespace commstack::workloads {

double RankParams::layer_tp_replicated(std::int64_t l) const {
  const double h = static_cast<double>(m_.hidden);
  const double row_bias = m_.bias ? h : 0;  // the bias added after a row-parallel GEMM's all-reduce
  double replicated = norm() + row_bias;    // attention: its norm and the projection's bias
  if (m_.is_moe_layer(l)) {
    replicated += norm() + h * m_.moe->experts + row_bias * m_.moe->shared_experts;  // router
  } else {
    replicated += norm() + row_bias;  // MLP: its norm and the second matrix's bias
  }
  if (m_.is_mtp_layer(l)) replicated += 3 * norm();  // MTP: embedding, hidden-state and final norms
  return replicated;
}

double RankParams::layer_dense(std::int64_t l) const {
  double total = static_cast<double>(pc_.attention_per_layer);
  total += m_.is_moe_layer(l) ? static_cast<double>(pc_.moe_mlp_per_layer - pc_.expert_per_layer)
                              : static_cast<double>(pc_.dense_mlp_per_layer);
  if (m_.is_mtp_layer(l)) {
    // eh_proj (2h -> h, column-parallel) and the three norms.
    const double h = static_cast<double>(m_.hidden);
    total += 2 * h * h + 3 * norm();
  }
  const double replicated = layer_tp_replicated(l);
  return (total - replicated) / tp_ + replicated;
}

namespace {
// Weight-matrix entries of one MLP of width f (GELU: fc1 and fc2; SwiGLU: gate, up and down).
double mlp_gemm(const ModelSpec& m, std::int64_t f) {
  return (m.mlp == MlpKind::gelu ? 2.0 : 3.0) * static_cast<double>(m.hidden) * static_cast<double>(f);
}
}  // namespace

double RankParams::layer_dense_gemm(std::int64_t l) const {
  const double h = static_cast<double>(m_.hidden);
  double gemm = 2 * h * static_cast<double>(m_.q_width()) + 2 * h * static_cast<double>(m_.kv_width());
  if (m_.is_moe_layer(l)) {
    gemm += m_.moe->shared_experts * mlp_gemm(m_, m_.moe->ffn_hidden);
  } else {
    gemm += mlp_gemm(m_, m_.ffn_hidden);
  }
  if (m_.is_mtp_layer(l)) gemm += 2 * h * h;  // eh_proj
  return gemm / tp_;                          // every matrix is split over TP (column- or row-parallel)
}

double RankParams::layer_expert_gemm(std::int64_t l) const {
  if (!m_.is_moe_layer(l)) return 0;
  return static_cast<double>(m_.moe->experts) / ep_ * mlp_gemm(m_, m_.moe->ffn_hidden) / etp_;
}

double RankParams::layer_expert(std::int64_t l) const {
  if (!m_.is_moe_layer(l)) return 0;
  const double local_experts = static_cast<double>(m_.moe->experts) / ep_;
  const double row_bias = m_.bias ? static_cast<double>(m_.hidden) : 0;
  const double one_expert = static_cast<double>(pc_.expert_per_layer) / static_cast<double>(m_.moe->experts);
  return local_experts * ((one_expert - row_bias) / etp_ + row_bias);
}

double RankParams::embedding() const {
  const double words = static_cast<double>(m_.vocab * m_.hidden);
  const double positions = static_cast<double>(pc_.embedding) - words;  // the learned s x h table, if any
  return words / tp_ + positions;
}

double RankParams::mtp_embedding_copy() const {
  // Megatron builds the embedding on the MTP stage too (GPTModel: pre_process or mtp_process);
  // with pp = 1 that is the same module, and with tied embeddings it is the output layer's matrix,
  // which output() already counts on the last stage.
  return m_.mtp_layers > 0 && pp_ > 1 && !m_.tied_embeddings ? embedding() : 0;
}

double RankParams::output() const {
  const bool own_matrix = !m_.tied_embeddings || pp_ > 1;
  return (own_matrix ? static_cast<double>(m_.vocab * m_.hidden) / tp_ : 0) + norm();
}

}  // namespace commstack::workloads
