#pragma once
// Memory per GPU during training: weights, gradients, optimizer states (Adam with mixed
// precision, split by ZeRO stage) and activations (Korthikanti et al., arXiv:2205.05198, sec. 4,
// generalised to GQA, SwiGLU, MoE and context parallelism), for every pipeline stage.
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

// Bytes of activations one GPU keeps for one layer and one micro-batch until its backward.
double activation_bytes_per_layer(const ModelSpec& m, const ParallelConfig& par, std::int64_t layer);
// What an MTP layer keeps on top of its transformer layer's: the inputs of its two norms and of its
// 2h-wide projection (4 x b s h elements, split by SP).
double mtp_extra_activation_bytes(const ModelSpec& m, const ParallelConfig& par);

// Korthikanti's closed forms (bytes per layer, GPT with dropout, 2-byte activations):
//   none: sbh(34 + 5as/h) without TP; sbh(10 + 24/t + 5as/(ht)) with TP; sbh/t(34 + 5as/h) with TP+SP;
//   selective: the 5as/h term dropped; full: 2sbh (2sbh/t with SP).
double korthikanti_activation_bytes(double s, double b, double h, double a, double t, bool sp, Recompute rc);

struct StageMemory {
  int stage = 0;
  std::int64_t params_dense = 0;   // parameters this GPU owns before ZeRO (TP/PP split applied)
  std::int64_t params_expert = 0;  // routed-expert parameters on this GPU (EP split applied)
  double weights = 0;              // bytes: bf16 weights (ZeRO-3: a shard plus two gathered layers)
  double gradients = 0;            // bytes: grad_bytes per parameter, sharded from ZeRO-2
  double optimizer = 0;  // bytes: fp32 master weights + Adam m and v = 12 per parameter, sharded from ZeRO-1
  double activations =
      0;  // bytes: in-flight micro-batches x stored activations, plus logits on the last stage
  std::int64_t in_flight = 0;  // model chunks whose activations are held at the peak
  double total() const { return weights + gradients + optimizer + activations; }
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  const StageMemory& worst() const;
};

MemoryEstimate estimate_memory(const ModelSpec& m, const ParallelConfig& par);

// Throws InputError with the numbers when the worst stage needs more than `capacity_bytes`.
// `what` names the GPU (e.g. "H100-SXM5 (80 GiB)") for the message.
void check_fits(const MemoryEstimate& est, double capacity_bytes, const std::string& what);

}  // namespace commstack::workloads
