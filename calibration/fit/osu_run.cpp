#include "calibration/fit/osu_run.hpp"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"

namespace commstack::fit {

using namespace detail;

namespace {

struct OsuOpName {
  std::string_view words;  // the benchmark name's start, lower case
  NcclTestsOp op;
  bool per_peer_size;  // OSU's size is what one rank sends to each peer (x ranks = nccl-tests' size)
};
// Longest first: "reduce scatter" before "reduce". osu_xccl_alltoall sends `size` bytes to every
// rank (its source: ncclSend(sendbuf + proc * size, size, ...)); all-gather contributes `size` per
// rank, as MPI_Allgather's count does in osu_allgather.
constexpr std::array<OsuOpName, 9> kOsuOps{{
    {"reduce_scatter", NcclTestsOp::reduce_scatter, false},
    {"reduce scatter", NcclTestsOp::reduce_scatter, false},
    {"reduce-scatter", NcclTestsOp::reduce_scatter, false},
    {"allreduce", NcclTestsOp::all_reduce, false},
    {"allgather", NcclTestsOp::all_gather, true},
    {"all-to-all", NcclTestsOp::alltoall, true},
    {"alltoall", NcclTestsOp::alltoall, true},
    {"broadcast", NcclTestsOp::broadcast, false},
    {"reduce", NcclTestsOp::reduce, false},
}};

}  // namespace

namespace {

// The first "# OSU ..." banner of the text, without its '#'s; "" when none.
std::string osu_banner(std::string_view text) {
  for (const auto& ln : split_lines(text)) {
    std::string_view body = trim(strip_launcher_prefix(ln.text));
    if (body.empty() || body.front() != '#') continue;
    while (!body.empty() && body.front() == '#') body.remove_prefix(1);
    body = trim(body);
    if (starts_with_ci(body, "OSU ")) return std::string(body);
  }
  return "";
}

}  // namespace

bool looks_like_osu(std::string_view text) {
  return !osu_banner(text).empty();
}

void refuse_mpi_osu(std::string_view text, const std::string& origin) {
  const std::string banner = osu_banner(text);
  const auto toks = split_ws(banner);
  const bool xccl = toks.size() > 1 && (starts_with_ci(toks[1], "NCCL") || starts_with_ci(toks[1], "RCCL"));
  if (!banner.empty() && !xccl)
    throw InputError(fmt::format(
        "{}: '{}' measures the MPI library (its own algorithms and transport), not NCCL, which is what "
        "commstack predicts; measure with nccl-tests or with OSU's NCCL benchmarks (osu_xccl_allreduce, ...)",
        origin, banner));
}

NcclTestsResult nccl_tests_result_from_osu(const OsuResult& osu, int ranks, NcclTestsOp op_hint) {
  const std::string& file = osu.origin;
  if (osu.library != "NCCL" && osu.library != "RCCL")
    throw InputError(fmt::format("{}: '{}' measures the MPI library, not NCCL", file, osu.title));
  const std::string name = lower(osu.benchmark);
  const OsuOpName* match = nullptr;
  for (const auto& o : kOsuOps)
    if (name.rfind(o.words, 0) == 0) {
      match = &o;
      break;
    }
  if (match == nullptr)
    throw InputError(fmt::format(
        "{}: '{}' is a point-to-point test (a window of back-to-back messages between two ranks), which the "
        "stack model does not predict; nccl-tests' sendrecv_perf is the send/receive it predicts",
        file, osu.title));
  if (op_hint != NcclTestsOp::unknown && op_hint != match->op)
    throw InputError(fmt::format("{}: op {} contradicts the log: '{}' is {}", file, to_string(op_hint),
                                 osu.title, to_string(match->op)));
  const int col = osu.column(OsuColumn::latency_us);
  if (col < 0)
    throw InputError(
        fmt::format("{}: the OSU table has no average latency column ('Avg Latency(us)'; it has: {})", file,
                    fmt::join(osu.column_names, ", ")));
  NcclTestsResult res;
  res.origin = file;
  res.op = res.logged_op = match->op;
  res.op_source = res.logged_op_source = "OSU title";
  res.table_first_line = osu.rows.front().line;
  res.table_last_line = osu.rows.back().line;
  for (const auto& r : osu.rows) {
    NcclTestsRow row;
    row.line = r.line;
    row.size_bytes = match->per_peer_size ? r.size_bytes * static_cast<std::uint64_t>(ranks) : r.size_bytes;
    row.out_of_place.emplace();
    row.out_of_place->time_us = r.values[static_cast<std::size_t>(col)];
    if (row.size_bytes > 0 && !plausible_time_us(row.out_of_place->time_us))  // 0 or absurd: a corrupt row
      fail(file, r.line,
           fmt::format("column '{}' (the time): expected {}, got {:g}",
                       osu.column_names[static_cast<std::size_t>(col)], plausible_time_text(),
                       row.out_of_place->time_us));
    res.rows.push_back(row);
  }
  res.notes.push_back(fmt::format(
      "{}: '{}': each call timed on its own (launched, then waited for), so the host launch adds to the "
      "device time; the wait's wake-up is not modelled{}",
      file, osu.title,
      match->per_peer_size ? fmt::format("; OSU's sizes are bytes per peer, x {} ranks here", ranks) : ""));
  return res;
}

}  // namespace commstack::fit
