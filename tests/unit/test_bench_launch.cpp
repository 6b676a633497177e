// Bench launch environment: world size from mpirun/srun variables, mismatch and shortage messages.
#include <map>
#include <string>

#include <doctest/doctest.h>

#include "calibration/bench/launch_env.hpp"
#include "common/error.hpp"

using namespace commstack::bench;

namespace {
EnvGetter env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST_CASE("bench: launch environment from Open MPI, Slurm, or nothing") {
  const LaunchEnv plain = read_launch_env(env_of({}));
  CHECK(plain.world_size == 1);
  CHECK_FALSE(plain.rank.has_value());
  const LaunchEnv ompi = read_launch_env(
      env_of({{"OMPI_COMM_WORLD_SIZE", "16"}, {"OMPI_COMM_WORLD_RANK", "9"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
              {"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}}));
  CHECK(ompi.world_size == 16);
  CHECK(ompi.rank == 9);
  CHECK(ompi.local_rank == 1);
  CHECK(ompi.source == "OMPI_COMM_WORLD_SIZE");
  const LaunchEnv srun = read_launch_env(env_of({{"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "3"}}));
  CHECK(srun.world_size == 8);
  CHECK(srun.rank == 3);
  // An allocation (salloc/sbatch) without an srun step is not a multi-process launch.
  CHECK(read_launch_env(env_of({{"SLURM_NTASKS", "8"}})).world_size == 1);
  CHECK_THROWS_WITH_AS(read_launch_env(env_of({{"OMPI_COMM_WORLD_SIZE", "many"}})),
                       doctest::Contains("OMPI_COMM_WORLD_SIZE"), commstack::InputError);
  CHECK_THROWS_AS(read_launch_env(env_of({{"PMI_SIZE", "0"}})), commstack::InputError);
}

TEST_CASE("bench: a bench without MPI refuses to run as one of several processes") {
  LaunchEnv env;
  env.world_size = 4;
  env.source = "SLURM_NTASKS";
  const std::string msg = launch_mismatch(env, false);
  CHECK(msg.find("built without MPI") != std::string::npos);
  CHECK(msg.find("SLURM_NTASKS=4") != std::string::npos);
  CHECK(launch_mismatch(env, true).empty());
  env.world_size = 1;
  CHECK(launch_mismatch(env, false).empty());
  CHECK(gpu_shortage(8, 8, "n0").empty());
  CHECK(gpu_shortage(8, 4, "n0").find("8 ranks on host n0 but only 4 GPU(s)") != std::string::npos);
}
