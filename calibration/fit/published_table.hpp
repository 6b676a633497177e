#pragma once
// Reader for published nccl-tests results that come as tables instead of logs (a vendor guide's
// busbw column, a project's docs table, a cluster report's peak-busbw summary), copied into
// calibration/data/nccl-tests as CSV with a '#' source header. One selected series becomes the same
// NcclTestsResult rows the nccl-tests parser produces (size, out-of-place time, algbw, busbw), so
// load_measured_run / validate / calibrate take it like a log. Formats, selection keys and the
// rounding rule are in docs/measurement-formats.md.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/fit/nccl_tests.hpp"

namespace commstack::fit {

// Recognised from the first non-comment line (the CSV header), not from the file name.
enum class PublishedTableFormat {
  none,
  busbw_series,  // message_size_label,<series>_busbw_GBps,...: one busbw column per system (sweep)
  multi_op,      // config,nodes,gpus_per_node,metric,message_size,nccl_<op>,...: latency_us / busbw_GBps rows
  peak_summary,  // collective,ranks,scope,peak_busbw_GBps,at_size[,...]: one peak point per collective and
                 // scope
};
std::string to_string(PublishedTableFormat format);
PublishedTableFormat published_table_format(std::string_view text);
// Whether `path` is readable and holds one of the formats (false otherwise: the caller tries the
// nccl-tests parser, which gives its own error).
bool is_published_table(const std::string& path);

struct PublishedTableSelection {
  std::optional<std::string> series;  // busbw_series: the value column (e.g. ndv4_a100_busbw_GBps)
  std::optional<std::string>
      config;  // multi_op: the config column (2node_8gpu); peak_summary: scope (inter-node)
  NcclTestsOp op = NcclTestsOp::unknown;  // the collective (busbw_series: required, the table does not say)
  // From the run spec: the rank count the bus factor needs where the table does not give it, and a
  // cross-check where it does.
  std::optional<int> nodes, gpus_per_node;
};

// A point whose printed value is uncertain by more than this fraction (half a unit of its last
// printed digit over the value) is dropped: a 2-decimal busbw of 0.06 GB/s is only known to 8%.
inline constexpr double kMaxRoundingFraction = 0.01;

struct PublishedTableRun {
  PublishedTableFormat format = PublishedTableFormat::none;
  NcclTestsResult result;          // op, rows (out-of-place timing), and the ranks where the table says them
  std::vector<std::string> notes;  // what was dropped or assumed, one sentence each (for provenance)
};

// Throws InputError naming origin, line, field and what was expected for anything it cannot use:
// unknown series / config / op, missing columns, malformed numbers, busbw or time <= 0, a size
// label that is not a power of two, nodes x GPUs that contradict the table, no point left.
PublishedTableRun parse_published_table(std::string_view text, const std::string& origin,
                                        const PublishedTableSelection& selection);
PublishedTableRun load_published_table(const std::string& path, const PublishedTableSelection& selection);

// "65K" -> 65536, "132K" -> 131072, "1G" -> 1073741824, "16.00 GiB" -> 17179869184: a size label
// rounded to the power of two it abbreviates. K/M/G/T labels may be decimal (65K = 65.5 thousand)
// or binary; the result must be a power of two within 10% of the label. Throws InputError naming
// origin, line and field otherwise.
std::uint64_t published_size_label(std::string_view label, std::string_view origin, int line,
                                   std::string_view field);

}  // namespace commstack::fit
