#include "sim/sweep/ranks.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "common/error.hpp"

#ifndef COMMSTACK_HAVE_MPI
#define COMMSTACK_HAVE_MPI 0  // set to 1 by CMake when it finds MPI
#endif
#if COMMSTACK_HAVE_MPI
// The C API only: the deprecated C++ bindings do not compile cleanly with our warnings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace commstack::sim::sweep {
namespace {

class SingleProcess final : public Ranks {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string broadcast(const std::string& text) override { return text; }
  std::vector<std::string> gather(const std::string& text) override { return {text}; }
  [[noreturn]] void abort(int exit_code) override { std::exit(exit_code); }
};

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return (*end == '\0' && n > 0 && n < (1 << 24)) ? static_cast<int>(n) : 0;
}

// Set by mpirun/mpiexec (OpenMPI, MPICH's Hydra) or srun for each process they start.
[[maybe_unused]] bool started_by_launcher() {  // unused without MPI
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

#if COMMSTACK_HAVE_MPI
class MpiRanks final : public Ranks {
public:
  MpiRanks() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiRanks() override { MPI_Finalize(); }
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string broadcast(const std::string& text) override {
    long long n = static_cast<long long>(text.size());
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    std::string out = rank_ == 0 ? text : std::string(static_cast<std::size_t>(n), '\0');
    check_count(n);
    MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
    return out;
  }
  std::vector<std::string> gather(const std::string& text) override {
    check_count(static_cast<long long>(text.size()));
    int mine = static_cast<int>(text.size());
    std::vector<int> counts(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
    MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> displs(counts.size());
    long long total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      displs[r] = static_cast<int>(total);
      total += counts[r];
    }
    check_count(total);
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Gatherv(text.data(), mine, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(counts[r])));
    }
    return out;
  }
  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::exit(exit_code);
  }

private:
  void check_count(long long n) {
    if (n >= (1LL << 31)) {
      fmt::print(stderr, "commstack: error: sweep results of {} bytes exceed MPI's 2 GiB message limit; split the sweep\n", n);
      abort(2);
    }
  }
  int rank_ = 0, size_ = 1;
};
#endif

}  // namespace

std::unique_ptr<Ranks> single_process() { return std::make_unique<SingleProcess>(); }

int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    if (const int n = env_int(v); n > 0) return n;
  }
  return 1;
}

std::unique_ptr<Ranks> launch_ranks() {
#if COMMSTACK_HAVE_MPI
  if (started_by_launcher()) {
    // libsimgrid exports MPI_* too (SMPI); the build puts libmpi first (CMakeLists.txt). Check it.
    if (mpi_description().rfind("SMPI", 0) == 0) {
      throw std::runtime_error("MPI calls resolve to SimGrid's SMPI instead of the MPI library (link order); rebuild");
    }
    return std::make_unique<MpiRanks>();
  }
#endif
  if (launcher_world_size() > 1) {
    throw InputError(fmt::format("this commstack was built without MPI, but a launcher started {} copies of it (each "
                                 "would run the whole sweep); run it once, or rebuild with MPI (libopenmpi-dev)",
                                 launcher_world_size()));
  }
  return single_process();
}

bool mpi_built() { return COMMSTACK_HAVE_MPI != 0; }

std::string mpi_description() {
#if COMMSTACK_HAVE_MPI
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<std::size_t>(len));
  if (const auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
  return v;
#else
  return "not built with MPI";
#endif
}

}  // namespace commstack::sim::sweep
