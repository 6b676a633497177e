#pragma once
// Floating-point operation counts of transformer training, per op and per iteration. A multiply-
// add is 2 FLOPs. Attention scores are counted over the full s x s matrix (no causal halving),
// as Narayanan et al. and Korthikanti et al. do. Backward = 2x forward (input and weight grads).
//
// "Model FLOPs" are what the model needs (forward + backward = 3 passes); "hardware FLOPs" add
// what activation recomputation executes again. MFU uses model FLOPs, HFU hardware FLOPs.
#include <cstdint>

#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

// Forward FLOPs of one transformer layer for `batch` sequences of `seq` tokens (whole layer,
// before any TP/CP split).
struct LayerFlops {
  double qkv = 0;          // 2*T*h*(a*d + 2*kv*d), T = batch*seq tokens
  double attn_scores = 0;  // Q K^T: 2*batch*seq^2*a*d
  double attn_over_v = 0;  // softmax(QK^T) V: 2*batch*seq^2*a*d
  double proj = 0;         // 2*T*a*d*h
  double mlp = 0;          // dense: 4*T*h*f (GeLU) or 6*T*h*f (SwiGLU); MoE: (top_k + shared) experts per token
  double router = 0;       // MoE gate: 2*T*h*experts
  double attention_core() const { return attn_scores + attn_over_v; }
  double total() const { return qkv + attn_scores + attn_over_v + proj + mlp + router; }
};

LayerFlops layer_forward_flops(const ModelSpec& m, std::int64_t layer, std::int64_t batch, std::int64_t seq);
// Output layer (logits): 2*T*h*V.
double logits_forward_flops(const ModelSpec& m, std::int64_t batch, std::int64_t seq);
// FLOPs of one expert's MLP for one token (2*h*f*2 GeLU, 2*h*f*3 SwiGLU).
double expert_flops_per_token(const ModelSpec& m);

struct IterationFlops {
  double forward = 0;   // one forward pass over the batch, all layers + logits
  double model = 0;     // 3 x forward
  double hardware = 0;  // model + recomputation
  double recompute = 0;
};
// Sum of the per-layer counts over a batch of `batch` sequences.
IterationFlops iteration_flops(const ModelSpec& m, std::int64_t batch, std::int64_t seq, Recompute rc);

// Published closed forms (GPT with h = a*d, f = 4h), for checks and reports.
// Narayanan et al. SC'21 eq. (3), full recomputation (logits not recomputed):
//   96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double narayanan_full_recompute_flops(double B, double s, double l, double h, double V);
// Korthikanti et al. eq. for model FLOPs: 72 B s l h^2 (1 + s/(6h) + V/(12 h l)).
double korthikanti_model_flops(double B, double s, double l, double h, double V);
// Korthikanti et al.'s printed hardware FLOPs with selective recomputation:
//   72 B s l h^2 (1 + s/(3h) + V/(12 h l)). Their published HFU/MFU ratios follow it, but it
// counts twice the 4Bs^2h per layer that re-running QK^T and softmax*V costs; our per-op sum
// gives 72 B s l h^2 (1 + 2s/(9h) + V/(12 h l)) (docs/workloads.md).
double korthikanti_selective_paper_flops(double B, double s, double l, double h, double V);

// Model FLOPs utilisation: model FLOPs per second per GPU over peak.
double mfu(double model_flops, double iteration_s, int gpus, double peak_flops_per_gpu);

}  // namespace commstack::workloads
