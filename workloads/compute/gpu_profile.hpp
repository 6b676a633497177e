#pragma once
// The built-in compute profile that matches a cluster's GPU model, shared by every place that
// picks a profile when the user names none (train, plan, what-if jobs).
#include <optional>
#include <string>

namespace commstack::workloads {

// "A100...40GB..." -> "a100-40gb", other "A100..." -> "a100-80gb", "H100..." -> "h100-sxm5", "H200..." ->
// "h200-sxm", "B200..." -> "b200"; nullopt for a GPU model with no built-in profile.
std::optional<std::string> builtin_compute_profile_for_gpu(const std::string& gpu_model);

}  // namespace commstack::workloads
