#include "workloads/compute/compute_model.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/json_fields.hpp"

namespace commstack::workloads {

ComputeProfile parse_compute_profile(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where, "$");
  ComputeProfile p;
  p.name = f.string("name");
  p.provenance = f.string("provenance");
  if (p.provenance.empty()) f.fail("provenance", "must say where the numbers come from");
  p.peak_bf16_flops = f.number("peak_bf16_flops", 1e9, 1e18);
  p.peak_fp8_flops = f.number_or("peak_fp8_flops", 0, 0, 1e18);  // absent: the GPU has no FP8 tensor cores
  p.hbm_bytes_per_s = f.number("hbm_bytes_per_s", 1e9, 1e15);
  p.memory_bytes = f.number("memory_bytes", 1e6, 1e14);
  if (const nlohmann::json* e = f.object_or_null("efficiency")) {
    JsonFields g(*e, where, "$.efficiency");
    // Each class defaults to 1 (the datasheet roofline) when not given.
    p.eff_gemm = g.number_or("gemm", 1, 1e-6, 1);
    p.eff_attention = g.number_or("attention", 1, 1e-6, 1);
    p.eff_elementwise = g.number_or("elementwise", 1, 1e-6, 1);
    p.eff_optimizer = g.number_or("optimizer", 1, 1e-6, 1);
    p.eff_memory = g.number_or("memory", 1, 1e-6, 1);
    g.reject_unknown();
  }
  f.reject_unknown();
  return p;
}

ComputeProfile load_compute_profile_file(const std::string& path) {
  return parse_compute_profile(read_json_file(path, "compute profile"), path);
}

namespace {
struct Builtin {
  const char* name;
  const char* provenance;
  double bf16, fp8, hbm, mem;
  double tensor_eff, memory_eff;  // fraction of the tensor-core peak (gemm, attention) and of the HBM bandwidth
};
// Dense (no 2:4 sparsity) peaks and HBM from shared/research/hardware-specs.md. Memory capacity:
// the datasheet's size in decimal GB (80 GB = 80e9 bytes = 74.5 GiB). The device has more (NVML
// reports 81920 MiB on an A100 80GB, 81559 MiB on an H100: Modal's table of nvidia-smi totals,
// thundergolfer.com/blog/nvidia-gpu-memory-capacity); the difference, 5.5 GiB (7%), is left to
// what the memory estimate does not count: the CUDA context, NCCL's buffers, the caching
// allocator's fragmentation (docs/workloads.md "Memory"). Efficiencies: fitted
// on published training runs where the project has them (tests/unit/test_work_compute.cpp checks
// they equal the profiles the reproductions write), 1 (the datasheet roofline) where it does not.
constexpr Builtin kBuiltins[] = {
    {"a100-80gb",
     "NVIDIA A100 SXM4 80GB datasheet: 312 TFLOP/s BF16 dense, HBM2e 2039 GB/s, 80 GB; tensor-core "
     "efficiency 0.691 and "
     "HBM efficiency 0.668 fitted on Megatron-LM SC'21 Table 1 rows 1-3 "
     "(results/megatron-sc21-table1/a100-fitted.json)",
     312e12, 0, 2039e9, 80e9, 0.6912, 0.6682},
    {"a100-40gb",
     "NVIDIA A100 SXM4 40GB datasheet: 312 TFLOP/s BF16 dense, HBM2 1555 GB/s, 40 GB; efficiencies of the "
     "a100-80gb "
     "profile (same GA100 chip; the HBM fraction carried over to HBM2, not measured)",
     312e12, 0, 1555e9, 40e9, 0.6912, 0.6682},
    {"h100-sxm5",
     "NVIDIA H100 SXM5 datasheet: 989.4 TFLOP/s BF16 dense, 1978.9 FP8, HBM3 3.35 TB/s, 80 GB; tensor-core "
     "efficiency "
     "0.537 and HBM efficiency 0.544 fitted on the NeMo 24.07 DGX-H100 FP8 rows GPT3-5B, LLAMA2-7B, "
     "LLAMA3-8B "
     "(results/nemo-24.07-h100/h100-fitted.json); BF16 GEMMs assumed to reach the same fraction of the BF16 "
     "peak",
     989.4e12, 1978.9e12, 3.35e12, 80e9, 0.5369, 0.544},
    {"h200-sxm",
     "NVIDIA H200 SXM: H100 compute, 141 GB HBM3e at 4.8 TB/s; efficiencies of the H100 profile (same GH100 "
     "chip; "
     "the HBM fraction carried over to HBM3e, not measured)",
     989.4e12, 1978.9e12, 4.8e12, 141e9, 0.5369, 0.544},
    {"b200",
     "NVIDIA B200 (HGX, 1000 W): 2250 TFLOP/s BF16 dense, 4500 FP8, 8 TB/s, 180 GB usable; efficiency "
     "uncalibrated",
     2250e12, 4500e12, 8e12, 180e9, 1, 1},
};
constexpr const char* kDatasheetSuffix = "-datasheet";
}  // namespace

std::vector<std::string> builtin_compute_profile_names() {
  std::vector<std::string> out;
  for (const Builtin& b : kBuiltins) {
    out.emplace_back(b.name);
    out.emplace_back(std::string(b.name) + kDatasheetSuffix);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ComputeProfile builtin_compute_profile(const std::string& name) {
  for (const Builtin& b : kBuiltins) {
    // "<gpu>-datasheet": the same peaks with efficiency 1 (the uncalibrated roofline).
    const bool datasheet = name == std::string(b.name) + kDatasheetSuffix;
    if (name == b.name || datasheet) {
      ComputeProfile p;
      p.name = name;
      p.provenance = datasheet ? std::string(b.provenance).substr(0, std::string(b.provenance).find(';')) +
                                     "; efficiency 1 (datasheet roofline, uncalibrated)"
                               : b.provenance;
      p.peak_bf16_flops = b.bf16;
      p.peak_fp8_flops = b.fp8;
      p.hbm_bytes_per_s = b.hbm;
      p.memory_bytes = b.mem;
      if (!datasheet) {
        p.eff_gemm = p.eff_attention = b.tensor_eff;
        p.eff_memory = b.memory_eff;
      }
      return p;
    }
  }
  throw InputError(fmt::format("compute profile '{}': unknown; known: {}", name,
                               fmt::join(builtin_compute_profile_names(), ", ")));
}

double efficiency(const ComputeProfile& prof, ComputeClass cls, double /*flops*/) {
  switch (cls) {
    case ComputeClass::gemm: return prof.eff_gemm;
    case ComputeClass::attention: return prof.eff_attention;
    case ComputeClass::elementwise: return prof.eff_elementwise;
    case ComputeClass::optimizer: return prof.eff_optimizer;
    case ComputeClass::none: return 1;
  }
  return 1;
}

double compute_time(const ComputeProfile& prof, const Op& op, Precision precision) {
  if (op.kind != OpKind::compute) return 0;
  // FP8 applies to the GEMMs only (Transformer Engine); attention and the rest stay in BF16.
  const bool fp8 = precision == Precision::fp8 && op.cclass == ComputeClass::gemm;
  if (fp8 && prof.peak_fp8_flops <= 0) {
    throw InputError(fmt::format("compute profile '{}': precision fp8 requested but peak_fp8_flops is not set", prof.name));
  }
  const double peak = fp8 ? prof.peak_fp8_flops : prof.peak_bf16_flops;
  const double t_flops = op.flops / (peak * efficiency(prof, op.cclass, op.flops));
  const double t_mem = op.mem_bytes / (prof.hbm_bytes_per_s * prof.eff_memory);
  return std::max(t_flops, t_mem);
}

}  // namespace commstack::workloads
