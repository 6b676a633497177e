#include "calibration/bench/process_group.hpp"

#include <cstdlib>
#include <cstring>

#ifdef COMMSTACK_BENCH_MPI
#include <mpi.h>
#endif

namespace commstack::bench {

#ifdef COMMSTACK_BENCH_MPI

ProcessGroup::ProcessGroup(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  initialized_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}
ProcessGroup::~ProcessGroup() {
  if (initialized_) MPI_Finalize();
}
bool ProcessGroup::built_with_mpi() { return true; }
std::string ProcessGroup::library_version() const {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(len));
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}
void ProcessGroup::barrier() { MPI_Barrier(MPI_COMM_WORLD); }
std::vector<std::string> ProcessGroup::allgather(const std::string& value) {
  constexpr int kLen = 256;  // hostnames and short labels; longer values are cut
  char mine[kLen] = {};
  std::strncpy(mine, value.c_str(), kLen - 1);
  std::vector<char> all(static_cast<std::size_t>(kLen) * static_cast<std::size_t>(size_));
  MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + static_cast<std::size_t>(r) * kLen);
  return out;
}
void ProcessGroup::broadcast(void* data, std::size_t bytes, int root) {
  MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}
double ProcessGroup::sum(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}
double ProcessGroup::max(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}
void ProcessGroup::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else

ProcessGroup::ProcessGroup(int*, char***) {}
ProcessGroup::~ProcessGroup() = default;
bool ProcessGroup::built_with_mpi() { return false; }
std::string ProcessGroup::library_version() const { return ""; }
void ProcessGroup::barrier() {}
std::vector<std::string> ProcessGroup::allgather(const std::string& value) { return {value}; }
void ProcessGroup::broadcast(void*, std::size_t, int) {}
double ProcessGroup::sum(double v) { return v; }
double ProcessGroup::max(double v) { return v; }
void ProcessGroup::abort(int code) { std::_Exit(code); }

#endif

}  // namespace commstack::bench
