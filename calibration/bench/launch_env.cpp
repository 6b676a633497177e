#include "calibration/bench/launch_env.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"

extern char** environ;

namespace commstack::bench {
namespace {

std::optional<int> positive_int(const EnvGetter& g, const std::string& name, int min_value) {
  auto v = g(name);
  if (!v) return std::nullopt;
  const std::string& text = *v;
  int out = 0;
  const char* e = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), e, out);
  if (ec != std::errc() || p != e || out < min_value)
    throw InputError(fmt::format("environment variable {}='{}': expected an integer >= {}", name, *v, min_value));
  return out;
}

}  // namespace

LaunchEnv read_launch_env(const EnvGetter& g) {
  LaunchEnv env;
  struct Source {
    const char* size;
    const char* rank;
    const char* local_rank;
  };
  // Most specific first: a launcher's own variables win over the batch system's.
  static const Source kSources[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"PMIX_SIZE", "PMIX_RANK", "PMIX_LOCAL_RANK"},
      {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"},
  };
  for (const auto& s : kSources) {
    if (auto size = positive_int(g, s.size, 1)) {
      env.world_size = *size;
      env.source = s.size;
      env.rank = positive_int(g, s.rank, 0);
      env.local_rank = positive_int(g, s.local_rank, 0);
      return env;
    }
  }
  if (g("SLURM_PROCID")) {  // inside an srun step, not merely inside an allocation
    if (auto size = positive_int(g, "SLURM_NTASKS", 1)) {
      env.world_size = *size;
      env.source = "SLURM_NTASKS";
      env.rank = positive_int(g, "SLURM_PROCID", 0);
      env.local_rank = positive_int(g, "SLURM_LOCALID", 0);
    }
  }
  return env;
}

LaunchEnv read_launch_env() {
  return read_launch_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

std::string launch_mismatch(const LaunchEnv& env, bool built_with_mpi) {
  if (!built_with_mpi && env.world_size > 1)
    return fmt::format(
        "this commstack-bench was built without MPI but was started as one of {} processes ({}={}); rebuild with "
        "MPI (install libopenmpi-dev, reconfigure) or run one process per node without mpirun/srun",
        env.world_size, env.source, env.world_size);
  return "";
}

std::string gpu_shortage(int ranks_on_host, int visible_gpus, const std::string& host) {
  if (ranks_on_host <= visible_gpus) return "";
  return fmt::format("{} ranks on host {} but only {} GPU(s) visible (check CUDA_VISIBLE_DEVICES and the launcher's "
                     "processes per node)",
                     ranks_on_host, host, visible_gpus);
}

std::vector<std::string> nccl_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "NCCL_", 5) == 0) out.emplace_back(*e);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace commstack::bench
