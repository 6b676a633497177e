#pragma once
// Compute-time model: how long a compute op of the op graph takes on one GPU.
//   time = max(FLOPs / (peak(precision) * efficiency(op)), HBM bytes / HBM bandwidth)
// a roofline with a per-kernel-class efficiency. Efficiencies are parameters of a compute
// profile (JSON, with a provenance field saying where the numbers come from); calibration
// against measured kernels will replace the placeholders later.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "workloads/graph/op_graph.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

struct ComputeProfile {
  std::string name;        // "h100-sxm5"
  std::string provenance;  // datasheet / measurement the numbers come from
  double peak_bf16_flops = 0;  // dense tensor-core FLOP/s
  double peak_fp8_flops = 0;   // dense FP8 FLOP/s (0: no FP8 support)
  double hbm_bytes_per_s = 0;
  double memory_bytes = 0;     // HBM capacity
  // Fraction of peak FLOP/s each kernel class reaches (0 < e <= 1).
  double eff_gemm = 1;
  double eff_attention = 1;
  double eff_elementwise = 1;
  double eff_optimizer = 1;
  // Fraction of the datasheet HBM bandwidth that streaming kernels reach (0 < e <= 1); divides the
  // memory side of every op's roofline.
  double eff_memory = 1;
};

ComputeProfile parse_compute_profile(const nlohmann::json& j, const std::string& where);
ComputeProfile load_compute_profile_file(const std::string& path);
// Built-in profiles "a100-80gb", "h100-sxm5", "h200-sxm", "b200": datasheet peaks with the
// efficiencies fitted on published training runs (A100: Megatron SC'21 Table 1; H100/H200: NeMo
// 24.07; B200: none yet, efficiency 1); "<name>-datasheet": the same peaks at efficiency 1.
ComputeProfile builtin_compute_profile(const std::string& name);
std::vector<std::string> builtin_compute_profile_names();

// Efficiency for a kernel class. The op shape does not matter yet; this is the hook where a
// calibrated, shape-dependent model goes.
double efficiency(const ComputeProfile& prof, ComputeClass cls, double flops);
// Roofline time of a compute op in seconds (0 for non-compute ops).
double compute_time(const ComputeProfile& prof, const Op& op, Precision precision);

}  // namespace commstack::workloads
