#include "workloads/compute/gpu_profile.hpp"

namespace commstack::workloads {

std::optional<std::string> builtin_compute_profile_for_gpu(const std::string& gpu_model) {
  const auto starts = [&](const char* prefix) { return gpu_model.rfind(prefix, 0) == 0; };
  // The 40 GB A100 differs in capacity and HBM (HBM2, 1555 GB/s): its own profile.
  if (starts("A100")) return gpu_model.find("40GB") != std::string::npos ? "a100-40gb" : "a100-80gb";
  if (starts("H100")) return "h100-sxm5";
  if (starts("H200")) return "h200-sxm";
  if (starts("B200")) return "b200";
  return std::nullopt;
}

}  // namespace commstack::workloads
