#pragma once
// Parser for OSU Micro-Benchmarks text output (osu_latency, osu_bw, osu_bibw, osu_mbw_mr,
// osu_allreduce, osu_allgather, osu_bcast, osu_alltoall, osu_reduce_scatter, ... with host or
// CUDA/ROCm buffers). The table is recognised by its "# Size" header; each further header
// column becomes one value column (latency, bandwidth, message rate, iterations).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::fit {

enum class OsuColumn {
  latency_us,      // "Latency (us)" / "Avg Latency(us)"
  min_latency_us,  // "Min Latency(us)"
  max_latency_us,  // "Max Latency(us)"
  bandwidth_MBps,  // "Bandwidth (MB/s)" / "MB/s" (OSU MB = 1e6 bytes)
  message_rate,    // "Messages/s"
  iterations,      // "Iterations"
  other            // any other numeric column (e.g. "P50 Tail Lat(us)"); kept by name
};

struct OsuRow {
  int line = 0;
  std::uint64_t size_bytes = 0;
  std::vector<double> values;  // one per OsuResult::columns entry
};

struct OsuResult {
  std::string origin;
  std::string title;        // e.g. "OSU MPI-CUDA Bi-Directional Bandwidth Test v7.3"
  std::string benchmark;    // title without "OSU MPI[-CUDA] " and " Test vX": "Bi-Directional Bandwidth"
  std::string version;      // "7.3" when printed
  bool device_build = false;  // title says MPI-CUDA / MPI-ROCM / MPI-OPENACC / NCCL-CUDA ...
  // The communication library measured: "MPI" (osu_latency, osu_allreduce, ...), "NCCL" or "RCCL"
  // (OSU 7's osu_xccl_* benchmarks: "OSU NCCL-CUDA Allreduce Latency Test"); "" when not printed.
  std::string library;
  std::string send_buffer;  // "host", "device", "managed" or "" when not printed
  std::string recv_buffer;
  std::vector<std::string> column_names;  // value columns as printed (after "Size")
  std::vector<OsuColumn> columns;
  std::vector<OsuRow> rows;

  // Index of the first column of a kind, or -1.
  int column(OsuColumn kind) const;
};

OsuResult parse_osu(std::string_view text, const std::string& origin);
OsuResult parse_osu_file(const std::string& path);

}  // namespace commstack::fit
