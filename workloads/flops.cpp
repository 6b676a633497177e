#include "workloads/flops.hpp"

namespace commstack::workloads {

double expert_flops_per_token(const ModelSpec& m) {
  if (!m.moe) return 0;
  const double matrices = m.mlp == MlpKind::gelu ? 2 : 3;
  return 2.0 * matrices * static_cast<double>(m.hidden) * static_cast<double>(m.moe->ffn_hidden);
}

LayerFlops layer_forward_flops(const ModelSpec& m, std::int64_t layer, std::int64_t batch, std::int64_t seq) {
  const double b = static_cast<double>(batch), s = static_cast<double>(seq),
               h = static_cast<double>(m.hidden);
  const double T = b * s;
  const double qw = static_cast<double>(m.q_width()), kvw = static_cast<double>(m.kv_width());
  LayerFlops f;
  f.qkv = 2 * T * h * (qw + 2 * kvw);
  f.attn_scores = 2 * b * s * s * qw;
  f.attn_over_v = 2 * b * s * s * qw;
  f.proj = 2 * T * qw * h;
  if (m.is_moe_layer(layer)) {
    f.router = 2 * T * h * m.moe->experts;
    f.mlp = T * (m.moe->top_k + m.moe->shared_experts) * expert_flops_per_token(m);
  } else {
    const double matrices = m.mlp == MlpKind::gelu ? 2 : 3;
    f.mlp = 2 * matrices * T * h * static_cast<double>(m.ffn_hidden);
  }
  return f;
}

double logits_forward_flops(const ModelSpec& m, std::int64_t batch, std::int64_t seq) {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(seq) * static_cast<double>(m.hidden) *
         static_cast<double>(m.vocab);
}

IterationFlops iteration_flops(const ModelSpec& m, std::int64_t batch, std::int64_t seq, Recompute rc) {
  IterationFlops it;
  double layers_fwd = 0, core_fwd = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    LayerFlops f = layer_forward_flops(m, l, batch, seq);
    layers_fwd += f.total();
    core_fwd += f.attention_core();
  }
  // Each MTP depth: its transformer layer (the last decoder layer's kind), the 2h -> h projection
  // and one more pass through the output layer (Megatron's num_floating_point_operations counts
  // the same).
  const double tokens = static_cast<double>(batch) * static_cast<double>(seq),
               h = static_cast<double>(m.hidden);
  for (std::int64_t l = m.layers; l < m.layers + m.mtp_layers; ++l) {
    LayerFlops f = layer_forward_flops(m, l, batch, seq);
    layers_fwd += f.total() + 2 * tokens * 2 * h * h;
    core_fwd += f.attention_core();
  }
  it.forward = layers_fwd + static_cast<double>(1 + m.mtp_layers) * logits_forward_flops(m, batch, seq);
  it.model = 3 * it.forward;
  // Full recomputation re-runs every layer's forward (not the output layer, whose input is
  // kept); selective re-runs only QK^T, softmax and attention over V.
  it.recompute = rc == Recompute::full ? layers_fwd : rc == Recompute::selective ? core_fwd : 0;
  it.hardware = it.model + it.recompute;
  return it;
}

double narayanan_full_recompute_flops(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}
double korthikanti_model_flops(double B, double s, double l, double h, double V) {
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
}
double korthikanti_selective_paper_flops(double B, double s, double l, double h, double V) {
  return 72 * B * s * l * h * h * (1 + s / (3 * h) + V / (12 * h * l));
}

double mfu(double model_flops, double iteration_s, int gpus, double peak_flops_per_gpu) {
  return model_flops / (iteration_s * gpus * peak_flops_per_gpu);
}

}  // namespace commstack::workloads
