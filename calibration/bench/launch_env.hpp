#pragma once
// How the bench was started, read from the environment before any MPI or CUDA call (host-only):
// mpirun (Open MPI, MPICH/Hydra, PMIx) and srun export the world size and the rank; a bench built
// without MPI that finds itself one of several processes must stop with a clear message instead of
// running N independent single-process benches that would each claim every GPU.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace commstack::bench {

struct LaunchEnv {
  int world_size = 1;          // processes in the job, 1 when started directly
  std::optional<int> rank;     // this process's rank, when a launcher said so
  std::optional<int> local_rank;
  std::string source;          // the variable that gave the world size, e.g. "OMPI_COMM_WORLD_SIZE"
};

using EnvGetter = std::function<std::optional<std::string>(const std::string&)>;

// Reads OMPI_COMM_WORLD_*, PMIX_*/PMI_*, MPI_LOCALNRANKS-style and SLURM_* variables (SLURM_NTASKS
// only counts when SLURM_PROCID is also set, i.e. inside an srun step). Throws InputError when a
// variable holds something other than a positive integer.
LaunchEnv read_launch_env(const EnvGetter& getenv_fn);
// The process environment.
LaunchEnv read_launch_env();

// Messages for environments the bench cannot run in; empty string = fine.
// built_with_mpi: whether this binary has the MPI bootstrap.
std::string launch_mismatch(const LaunchEnv& env, bool built_with_mpi);
// local ranks (processes or, single-process, requested GPUs) vs GPUs visible on this host.
std::string gpu_shortage(int ranks_on_host, int visible_gpus, const std::string& host);

// The NCCL_* variables of the environment, "NAME=value", sorted (recorded in the report).
std::vector<std::string> nccl_environment();

}  // namespace commstack::bench
