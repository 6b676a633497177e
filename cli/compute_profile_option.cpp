#include "cli/compute_profile_option.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "workloads/compute/gpu_profile.hpp"

namespace commstack::cli {

namespace {

// A built-in profile with efficiency 1 that the user did not ask for as "-datasheet": its compute
// times are the datasheet roofline (no published training run calibrated it yet), so say so once.
workloads::ComputeProfile noted(workloads::ComputeProfile p) {
  const bool datasheet = p.name.size() > 10 && p.name.ends_with("-datasheet");
  if (!datasheet && p.eff_gemm == 1 && p.eff_memory == 1) {
    fmt::print(stderr,
               "commstack: note: compute profile {} is uncalibrated (efficiency 1: the datasheet roofline, "
               "no published "
               "training run fitted it): its compute times are lower bounds and its MFU an upper bound\n",
               p.name);
  }
  return p;
}

}  // namespace

// The compute profile: a built-in name, a JSON file, or (no flag) the one matching the cluster's GPU.
workloads::ComputeProfile compute_profile_option(const std::string& flag, const topologies::ClusterSpec& spec) {
  if (!flag.empty()) {
    for (const auto& n : workloads::builtin_compute_profile_names()) {
      if (n == flag) return noted(workloads::builtin_compute_profile(n));
    }
    if (!is_input_file(flag)) {
      throw InputError(fmt::format("--compute-profile: '{}' is neither a built-in profile ({}) nor a readable file", flag,
                                   fmt::join(workloads::builtin_compute_profile_names(), ", ")));
    }
    return workloads::load_compute_profile_file(flag);
  }
  const std::string& g = spec.node.gpu_model;
  if (const auto name = workloads::builtin_compute_profile_for_gpu(g))
    return noted(workloads::builtin_compute_profile(*name));
  throw InputError(fmt::format("--compute-profile: cluster {} has GPU model '{}' with no built-in compute profile; "
                               "pass one of {} or a JSON file",
                               spec.origin, g, fmt::join(workloads::builtin_compute_profile_names(), ", ")));
}

}  // namespace commstack::cli
