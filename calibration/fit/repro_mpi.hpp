#pragma once
// Parser for ReproMPI (hunsa/reprompi) `mpibenchmark` output, the per-repetition variant:
//   #@key=value metadata lines (nprocs, datatype_size_bytes, clock, sync, nrep, ...),
//   a header line "test  nrep  count  runtime_sec" (more *_sec columns allowed), then one row
//   per measured repetition: "MPI_Allreduce  0  1  0.0000109819".
// Summary-mode output (--summary) is not accepted: its columns are statistics, not samples.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::fit {

struct ReproMpiSample {
  int line = 0;
  std::string test;      // MPI call, e.g. "MPI_Allreduce"
  std::int64_t nrep = 0;  // repetition index
  std::uint64_t count = 0;  // elements of the datatype
  double runtime_s = 0;     // the first *_sec column (runtime_sec)
};

struct ReproMpiResult {
  std::string origin;
  std::map<std::string, std::string> meta;  // "#@key=value" lines
  int nprocs = 0;                          // from #@nprocs, 0 when absent
  std::uint64_t datatype_size_bytes = 0;   // from #@datatype_size_bytes, 0 when absent
  std::vector<ReproMpiSample> samples;

  // Mean runtime (seconds) of every (test, count) pair, in input order of first appearance.
  struct Summary {
    std::string test;
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;  // count x datatype_size_bytes (0 when the size is unknown)
    int n = 0;
    double mean_s = 0;
    double min_s = 0;
    double median_s = 0;
  };
  std::vector<Summary> summarize() const;
};

ReproMpiResult parse_repro_mpi(std::string_view text, const std::string& origin);
ReproMpiResult parse_repro_mpi_file(const std::string& path);

}  // namespace commstack::fit
