#pragma once
// The processes of one bench run. With MPI (COMMSTACK_BENCH_MPI): one process per GPU under
// mpirun/srun, collectives over MPI_COMM_WORLD for bootstrap (ncclUniqueId broadcast, hostnames)
// and for combining timings. Without MPI: a single process that drives every local GPU.
#include <cstddef>
#include <string>
#include <vector>

namespace commstack::bench {

class ProcessGroup {
public:
  ProcessGroup(int* argc, char*** argv);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  static bool built_with_mpi();
  std::string library_version() const;  // MPI library version line, "" without MPI

  void barrier();
  std::vector<std::string> allgather(const std::string& value);
  void broadcast(void* data, std::size_t bytes, int root);
  double sum(double v);
  double max(double v);
  // Ends every process (MPI_Abort) with `code`; without MPI, exits.
  [[noreturn]] void abort(int code);

private:
  int rank_ = 0;
  int size_ = 1;
  bool initialized_ = false;
};

}  // namespace commstack::bench
