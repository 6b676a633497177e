#include "workloads/rank_params.hpp"

namespace commstack::workloads {

namespace {

double norm_params(const ModelSpec& m) {
  return static_cast<double>(m.norm == NormKind::layernorm ? 2 * m.hidden
                                                           : m.hidden);  // LayerNorm has a bias
}

}  // namespace

double layer_tp_replicated_params(const ModelSpec& m, std::int64_t l) {
  const double h = static_cast<double>(m.hidden);
  const double row_bias = m.bias ? h : 0;         // the bias added after a row-parallel GEMM's all-reduce
  double replicated = norm_params(m) + row_bias;  // attention: its norm and the projection's bias
  if (m.is_moe_layer(l)) {
    replicated += norm_params(m) + h * m.moe->experts + row_bias * m.moe->shared_experts;  // router
  } else {
    replicated += norm_params(m) + row_bias;  // MLP: its norm and the second matrix's bias
  }
  return replicated;
}

double layer_dense_params_on_rank(const ModelSpec& m, std::int64_t l, int tp) {
  const ParamCount pc = count_params(m);
  double total = static_cast<double>(pc.attention_per_layer);
  total += m.is_moe_layer(l) ? static_cast<double>(pc.moe_mlp_per_layer - pc.expert_per_layer)
                             : static_cast<double>(pc.dense_mlp_per_layer);
  const double replicated = layer_tp_replicated_params(m, l);
  return (total - replicated) / tp + replicated;
}

double layer_expert_params_on_rank(const ModelSpec& m, std::int64_t l, int ep) {
  return m.is_moe_layer(l) ? static_cast<double>(count_params(m).expert_per_layer) / ep : 0;
}

double embedding_params_on_rank(const ModelSpec& m, int tp) {
  const double positions = m.position == PositionKind::learned ? static_cast<double>(m.seq * m.hidden) : 0;
  return static_cast<double>(m.vocab * m.hidden) / tp + positions;
}

double output_params_on_rank(const ModelSpec& m, int pp, int tp) {
  const bool own_matrix = !m.tied_embeddings || pp > 1;
  return (own_matrix ? static_cast<double>(m.vocab * m.hidden) / tp : 0) + norm_params(m);
}

}  // namespace commstack::workloads
