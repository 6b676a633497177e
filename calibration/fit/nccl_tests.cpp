#include "calibration/fit/nccl_tests.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calibration/fit/nccl_tests_table_op.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"

namespace commstack::fit {

using namespace detail;

namespace {

struct OpName {
  NcclTestsOp op;
  std::string_view name;
};
// Longest names first so "reduce_scatter" / "all_reduce" win over "reduce" in substring search.
constexpr std::array<OpName, 14> kOpNames{{
    {NcclTestsOp::reduce_scatter, "reduce_scatter"},
    {NcclTestsOp::reduce_scatter, "reducescatter"},
    {NcclTestsOp::all_reduce, "all_reduce"},
    {NcclTestsOp::all_reduce, "allreduce"},
    {NcclTestsOp::all_gather, "all_gather"},
    {NcclTestsOp::all_gather, "allgather"},
    {NcclTestsOp::hypercube, "hypercube"},
    {NcclTestsOp::broadcast, "broadcast"},
    {NcclTestsOp::sendrecv, "sendrecv"},
    {NcclTestsOp::alltoallv, "alltoallv"},  // before alltoall: uneven counts, not an alltoall
    {NcclTestsOp::alltoall, "alltoall"},
    {NcclTestsOp::scatter, "scatter"},
    {NcclTestsOp::gather, "gather"},
    {NcclTestsOp::reduce, "reduce"},
}};

NcclTestsOp op_in_text(std::string_view text) {
  std::string low = lower(text);
  for (const auto& o : kOpNames)
    if (low.find(o.name) != std::string::npos) return o.op;
  return NcclTestsOp::unknown;
}

enum class Col { size, count, type, redop, root, time, algbw, busbw, wrong, error, i_min, i_max, i_p99, i_cv, timestamp };

bool column_kind(std::string_view name, Col& out) {
  static const std::map<std::string, Col> names{
      {"size", Col::size},     {"count", Col::count},   {"type", Col::type},     {"redop", Col::redop},
      {"root", Col::root},     {"time", Col::time},     {"cputime", Col::time},  {"algbw", Col::algbw},
      {"busbw", Col::busbw},   {"#wrong", Col::wrong},  {"error", Col::error},   {"i_min", Col::i_min},
      {"i_max", Col::i_max},   {"i_p99", Col::i_p99},   {"i_cv%", Col::i_cv},    {"timestamp", Col::timestamp}};
  auto it = names.find(lower(name));
  if (it == names.end()) return false;
  out = it->second;
  return true;
}

// The line's first whitespace-separated word is `word` (case-insensitive): "Rank\t0 ..." as well as
// "Rank 0 ..." (logs copied through spreadsheets or editors turn spaces into tabs).
bool first_word_is(std::string_view text, std::string_view word) {
  const auto toks = split_ws(text);
  return !toks.empty() && equals_ci(toks.front(), word);
}

std::string_view strip_hashes(std::string_view line) {
  line = trim(line);
  while (!line.empty() && line.front() == '#') line.remove_prefix(1);
  return line;
}

bool is_column_header(std::string_view line) {
  std::string_view body = trim(line);
  if (body.empty() || body.front() != '#') return false;
  auto toks = split_ws(strip_hashes(body));
  if (toks.empty() || lower(toks[0]) != "size") return false;
  for (auto t : toks)
    if (lower(t) == "time" || lower(t) == "cputime") return true;
  return false;
}

std::optional<std::string> version_from_code(std::int64_t code) {
  if (code <= 0) return std::nullopt;
  std::int64_t major, minor, patch;
  if (code >= 20900) {
    major = code / 10000;
    minor = (code % 10000) / 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = (code % 1000) / 100;
    patch = code % 100;
  }
  return fmt::format("{}.{}.{}", major, minor, patch);
}

// "2.26.2+cuda12.8" -> "2.26.2"; nullopt when it does not look like a version.
std::optional<std::string> clean_version(std::string_view token) {
  auto plus = token.find('+');
  if (plus != std::string_view::npos) token = token.substr(0, plus);
  int dots = 0;
  if (token.empty()) return std::nullopt;
  for (char c : token) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return std::nullopt;
  }
  if (dots < 1 || token.front() == '.' || token.back() == '.') return std::nullopt;
  return std::string(token);
}

void parse_run_header(std::string_view body, NcclTestsRunHeader& run, const std::string& origin, int line) {
  auto t = split_ws(body);
  run.present = true;
  auto next_int = [&](std::size_t i, std::string_view field) -> int {
    if (i + 1 >= t.size()) fail(origin, line, fmt::format("run header: '{}' has no value", field));
    std::int64_t v = need_int(t[i + 1], origin, line, fmt::format("run header '{}'", field));
    if (v < 0 || v > 1000000000) fail(origin, line, fmt::format("run header '{}': value out of range", field));
    return static_cast<int>(v);
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string_view k = t[i];
    if (k == "nThread") run.n_thread = next_int(i, k);
    else if (k == "nGpus") run.n_gpus = next_int(i, k);
    else if (k == "minBytes") run.min_bytes = need_uint(i + 1 < t.size() ? t[i + 1] : "", origin, line, "run header 'minBytes'");
    else if (k == "maxBytes") run.max_bytes = need_uint(i + 1 < t.size() ? t[i + 1] : "", origin, line, "run header 'maxBytes'");
    else if (k == "iters:") {
      int v = next_int(i, "iters:");
      std::string_view prev = i > 0 ? t[i - 1] : "";
      if (prev == "warmup") run.warmup_iters = v;
      else if (prev == "agg") run.agg_iters = v;
      else run.iters = v;
    } else if (k == "validation:") run.validation = next_int(i, k);
    else if (k == "graph:") run.graph = next_int(i, k);
  }
}

NcclTestsRank parse_rank_line(std::string_view body, const std::string& origin, int line) {
  auto t = split_ws(body);
  NcclTestsRank r;
  std::size_t i = 0;
  auto expect = [&](std::string_view word) {
    if (i >= t.size() || t[i] != word)
      fail(origin, line, fmt::format("rank line: expected '{}' in '# Rank r Group g Pid p on host device d [busid] name', got '{}'",
                                     word, i < t.size() ? printable(t[i]) : std::string("end of line")));
    ++i;
  };
  auto value = [&](std::string_view field) -> std::string_view {
    if (i >= t.size()) fail(origin, line, fmt::format("rank line: '{}' has no value (truncated line?)", field));
    return t[i++];
  };
  expect("Rank");
  std::int64_t rank = need_int(value("Rank"), origin, line, "rank line 'Rank'");
  if (rank < 0 || rank > 10000000) fail(origin, line, "rank line 'Rank': expected 0 <= rank <= 10000000");
  r.rank = static_cast<int>(rank);
  if (i < t.size() && t[i] == "Group") {
    ++i;
    std::int64_t g = need_int(value("Group"), origin, line, "rank line 'Group'");
    if (g < 0 || g > 10000000) fail(origin, line, "rank line 'Group': out of range");
    r.group = static_cast<int>(g);
  }
  // Pid and host are left out by some published excerpts ("#  Rank 0 Group 0 device 0 [...] NVIDIA
  // B200"): the rank then has no host, and the lines give no node count.
  if (i < t.size() && t[i] == "device") {
    expect("device");
  } else {
    expect("Pid");
    r.pid = need_int(value("Pid"), origin, line, "rank line 'Pid'");
    expect("on");
    r.host = std::string(value("host"));
    expect("device");
  }
  std::int64_t d = need_int(value("device"), origin, line, "rank line 'device'");
  if (d < 0 || d > 1000000) fail(origin, line, "rank line 'device': out of range");
  r.device = static_cast<int>(d);
  std::string_view bus = value("[busid]");
  if (bus.size() < 2 || bus.front() != '[' || bus.back() != ']')
    fail(origin, line, fmt::format("rank line: expected '[busid]', got '{}'", printable(bus)));
  r.busid = std::string(bus.substr(1, bus.size() - 2));
  std::string name;
  for (; i < t.size(); ++i) name += (name.empty() ? "" : " ") + std::string(t[i]);
  if (name.empty()) fail(origin, line, "rank line: GPU name missing after the bus id (truncated line?)");
  r.gpu_name = name;
  return r;
}

void parse_timing_cell(Col kind, std::string_view tok, NcclTestsTiming& t, const std::string& origin, int line,
                       std::string_view col_name) {
  std::string field = fmt::format("column '{}'", col_name);
  switch (kind) {
    case Col::time: t.time_us = need_nonneg(tok, origin, line, field); break;
    case Col::algbw: t.algbw_GBps = need_nonneg(tok, origin, line, field); break;
    case Col::busbw: t.busbw_GBps = need_nonneg(tok, origin, line, field); break;
    case Col::wrong: {
      if (tok == "N/A") {
        t.wrong.reset();
        break;
      }
      double v = need_nonneg(tok, origin, line, fmt::format("{} (a count or N/A)", field));
      if (v != static_cast<double>(static_cast<std::int64_t>(v)) || v > 9.0e18)
        fail(origin, line, fmt::format("{}: expected a whole count or N/A, got '{}'", field, printable(tok)));
      t.wrong = static_cast<std::int64_t>(v);
      break;
    }
    case Col::error:  // nccl-tests before 2.13 prints N/A here when run with -c 0, as #wrong later
      if (tok == "N/A")
        t.max_error.reset();
      else
        t.max_error = need_nonneg(tok, origin, line, fmt::format("{} (a number or N/A)", field));
      break;
    case Col::i_min: t.i_min_us = need_nonneg(tok, origin, line, field); break;
    case Col::i_max: t.i_max_us = need_nonneg(tok, origin, line, field); break;
    case Col::i_p99: t.i_p99_us = need_nonneg(tok, origin, line, field); break;
    case Col::i_cv: t.i_cv_percent = need_nonneg(tok, origin, line, field); break;
    default: break;
  }
}

// A token that reads as a number (a time, a root): not a redop name.
bool is_number(std::string_view tok) {
  double v = 0;
  return to_double(tok, v);
}

// An unknown word in the column header, explained where the cause is plain: two tables pasted side
// by side ("... #wrong  |  #  size ..."), or a header cut short mid-word ("... algbw  bu").
[[noreturn]] void unknown_column(const std::vector<std::string_view>& header, std::string_view tok,
                                 const std::string& origin, int line) {
  if (tok.find('|') != std::string_view::npos)
    fail(origin, line,
         "column header: a '|' between columns: two tables side by side (e.g. two runs pasted next to each "
         "other); give each run its own file");
  if (&tok.front() == &header.back().front()) {
    static constexpr std::array<std::string_view, 8> kNames{"size",  "count",  "redop", "algbw",
                                                            "busbw", "#wrong", "error", "time"};
    for (auto name : kNames)
      if (tok.size() < name.size() && starts_with_ci(name, tok))
        fail(
            origin, line,
            fmt::format("column header: it ends in '{}', the start of '{}': the line is cut short (truncated "
                        "log?)",
                        printable(tok), name));
  }
  fail(origin, line, fmt::format("column header: unknown column '{}'", printable(tok)));
}

// Lines of [first, last) that look like nccl-tests result rows (a size, then at least seven more
// fields, most of them numbers): their count and the first one's line number.
std::pair<int, int> row_like_lines(const std::vector<Line>& lines, std::size_t first, std::size_t last) {
  int count = 0, first_line = 0;
  for (std::size_t i = first; i < last; ++i) {
    const auto toks = split_ws(trim(strip_launcher_prefix(lines[i].text)));
    std::int64_t size = 0;
    if (toks.size() < 8 || !to_int64(toks[0], size)) continue;
    const auto numbers =
        std::count_if(toks.begin(), toks.end(), [](std::string_view t) { return is_number(t); });
    if (numbers * 3 < static_cast<std::ptrdiff_t>(toks.size()) * 2) continue;
    if (count++ == 0) first_line = lines[i].number;
  }
  return {count, first_line};
}

// A table pasted without its column header: every row-like line has nccl-tests 2.x's standard 13
// fields (size count type redop root, then time algbw busbw #wrong out of place and in place), the
// last one possibly cut short. The index of the first row, or nullopt when any row has another
// shape (-I's extra columns, the old layout without root): those still need their header.
std::optional<std::size_t> headerless_standard_table(const std::vector<Line>& lines) {
  static constexpr std::array<std::string_view, 8> kRedops{"sum", "prod",      "max",    "min",
                                                           "avg", "premulsum", "mulsum", "none"};
  auto whole = [](std::string_view t) {
    std::int64_t v = 0;
    return to_int64(t, v);
  };
  auto wrong = [&](std::string_view t) { return t == "N/A" || whole(t); };
  std::optional<std::size_t> first;
  std::size_t short_rows = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto toks = split_ws(trim(strip_launcher_prefix(lines[i].text)));
    if (toks.empty() || !whole(toks[0]) || toks.size() < 5 || !nccl_tests_type_bytes(toks[2])) continue;
    const bool standard = toks.size() == 13 && whole(toks[1]) &&
                          std::find(kRedops.begin(), kRedops.end(), toks[3]) != kRedops.end() &&
                          whole(toks[4]) && is_number(toks[5]) && is_number(toks[6]) && is_number(toks[7]) &&
                          wrong(toks[8]) && is_number(toks[9]) && is_number(toks[10]) &&
                          is_number(toks[11]) && wrong(toks[12]);
    if (!standard && toks.size() >= 13) return std::nullopt;
    if (!standard) ++short_rows;  // fewer than 13 fields: a row cut short
    if (!first) first = i;
  }
  // One row may be cut short (the table reader then requires it to be the last).
  if (short_rows > 1) return std::nullopt;
  return first;
}

}  // namespace

std::string to_string(NcclTestsOp op) {
  switch (op) {
    case NcclTestsOp::all_reduce: return "all_reduce";
    case NcclTestsOp::all_gather: return "all_gather";
    case NcclTestsOp::reduce_scatter: return "reduce_scatter";
    case NcclTestsOp::alltoall: return "alltoall";
    case NcclTestsOp::broadcast: return "broadcast";
    case NcclTestsOp::reduce: return "reduce";
    case NcclTestsOp::sendrecv: return "sendrecv";
    case NcclTestsOp::gather: return "gather";
    case NcclTestsOp::scatter: return "scatter";
    case NcclTestsOp::hypercube: return "hypercube";
    case NcclTestsOp::alltoallv: return "alltoallv";
    case NcclTestsOp::unknown: break;
  }
  return "unknown";
}

std::optional<sim::CollectiveOp> collective_op_of(NcclTestsOp op) {
  switch (op) {
    case NcclTestsOp::all_reduce: return sim::CollectiveOp::allreduce;
    case NcclTestsOp::all_gather: return sim::CollectiveOp::allgather;
    case NcclTestsOp::reduce_scatter: return sim::CollectiveOp::reducescatter;
    case NcclTestsOp::alltoall: return sim::CollectiveOp::alltoall;
    case NcclTestsOp::broadcast: return sim::CollectiveOp::broadcast;
    case NcclTestsOp::reduce: return sim::CollectiveOp::reduce;
    case NcclTestsOp::sendrecv: return sim::CollectiveOp::sendrecv;
    default: return std::nullopt;
  }
}

NcclTestsOp nccl_tests_op_from_name(std::string_view name) {
  std::string n = lower(trim(name));
  for (const char* suffix : {"_perf_mpi", "_perf"}) {
    std::string_view s(suffix);
    if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) n.resize(n.size() - s.size());
  }
  if (n == "all_to_all") return NcclTestsOp::alltoall;
  for (const auto& o : kOpNames)
    if (n == o.name) return o.op;
  return NcclTestsOp::unknown;
}

namespace {

bool is_env_name(std::string_view name) {
  if (name.size() <= 5 || name.substr(0, 5) != "NCCL_") return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

std::string_view unquote(std::string_view v) {
  while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '"' || v.back() == '\'' || v.back() == ';')) v.remove_suffix(1);
  return v;
}

// "host:pid:tid [0] NCCL INFO NCCL_ALGO set by environment to Ring" (NCCL's ncclGetEnv report).
void note_env_from_info(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env) {
  constexpr std::string_view kSet = " set by environment to ";
  const auto at = body.find(kSet);
  if (at == std::string_view::npos) return;
  const auto name_toks = split_ws(body.substr(0, at));
  const auto value_toks = split_ws(body.substr(at + kSet.size()));
  if (name_toks.empty() || value_toks.empty() || !is_env_name(name_toks.back())) return;
  std::string_view value = value_toks[0];
  if (value_toks.size() == 1 && value.size() > 1 && value.back() == '.')
    value.remove_suffix(1);  // "... to 2."
  env.try_emplace(std::string(name_toks.back()), NcclTestsEnvSetting{std::string(value), line});
}

// "NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels
// per peer": the communicator's channel counts (the first line printed; a count that is not a small
// positive number leaves the field unset).
void note_channels_from_info(std::string_view body, int line, NcclTestsResult& res) {
  if (res.coll_channels || body.find(" coll channels") == std::string_view::npos) return;
  const auto toks = split_ws(body);
  for (std::size_t i = 0; i + 2 < toks.size(); ++i) {
    if (toks[i + 2].substr(0, 8) != "channels") continue;
    int v = 0;
    const auto [ptr, ec] = std::from_chars(toks[i].data(), toks[i].data() + toks[i].size(), v);
    if (ec != std::errc{} || ptr != toks[i].data() + toks[i].size() || v < 1 || v > 64) continue;
    if (toks[i + 1] == "coll") res.coll_channels = v;
    if (toks[i + 1] == "nvls") res.nvls_channels = v;
  }
  if (res.coll_channels) res.channels_line = line;
}

// "NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0" (src/init.cc;
// releases before MNNVL print no such field and leave both unset).
void note_comm_from_info(std::string_view body, int line, NcclTestsResult& res) {
  if (res.comm_mnnvl || body.find(" MNNVL ") == std::string_view::npos) return;
  const auto toks = split_ws(body);
  std::optional<int> mnnvl, nodes;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    std::int64_t v = 0;
    if (!to_int64(toks[i + 1], v)) continue;
    if (toks[i] == "MNNVL" && (v == 0 || v == 1)) mnnvl = static_cast<int>(v);
    if (toks[i] == "nNodes" && v >= 1 && v <= (1 << 24)) nodes = static_cast<int>(v);
  }
  if (!mnnvl) return;
  res.comm_mnnvl = mnnvl;
  res.comm_nodes = nodes;
  res.comm_line = line;
}

// VAR=value words of a launcher line: "mpirun -x NCCL_ALGO=Ring ...", "srun --export=ALL,NCCL_PROTO=Simple",
// "NCCL_MIN_CTAS=24 ./all_reduce_perf", "export NCCL_ALGO=Tree".
void note_env_from_command(std::string_view body, int line, std::map<std::string, NcclTestsEnvSetting>& env) {
  for (auto tok : split_ws(body)) {
    std::size_t pos = 0;
    while (pos < tok.size()) {
      const auto start = tok.find("NCCL_", pos);
      if (start == std::string_view::npos) break;
      // The name must start the word or follow '=' / ',' (--export=A,NCCL_X=1, --env=NCCL_X=1).
      if (start > 0 && tok[start - 1] != ',' && tok[start - 1] != '=' && tok[start - 1] != '"' &&
          tok[start - 1] != '\'') {
        pos = start + 5;
        continue;
      }
      const auto eq = tok.find('=', start);
      const auto comma = tok.find(',', start);
      if (eq == std::string_view::npos || (comma != std::string_view::npos && comma < eq)) {
        pos = start + 5;
        continue;
      }
      const std::string_view name = tok.substr(start, eq - start);
      const auto end = comma == std::string_view::npos ? tok.size() : comma;
      const std::string_view value = unquote(tok.substr(eq + 1, end - eq - 1));
      if (is_env_name(name) && !value.empty())
        env.try_emplace(std::string(name), NcclTestsEnvSetting{std::string(value), line});
      pos = end;
    }
  }
}

}  // namespace

namespace {

// nccl-tests' own comment lines with their leading '#' lost, as happens when a log is pasted into a
// Markdown page outside a code block (a line starting with '#' becomes a heading): the run
// header, "Using devices", the rank lines, the column header and its units line, the
// out-of-place / in-place group line and the footer. A data row never matches.
bool lost_hash(std::string_view body) {
  if (first_word_is(body, "nThread")) return true;
  for (std::string_view prefix : {"Using devices", "(B)", "Out of bounds values", "Avg bus bandwidth",
                                  "Collective test starting:", "nccl-tests version"})
    if (starts_with_ci(body, prefix)) return true;
  const auto toks = split_ws(body);
  if (toks.size() >= 4 && equals_ci(toks[0], "Rank") &&
      std::all_of(toks[1].begin(), toks[1].end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      (equals_ci(toks[2], "Group") || equals_ci(toks[2], "Pid")))
    return true;
  if (toks.size() == 2 && equals_ci(toks[0], "out-of-place") && equals_ci(toks[1], "in-place")) return true;
  if (!toks.empty() && equals_ci(toks[0], "size"))
    for (auto t : toks)
      if (equals_ci(t, "time")) return true;
  return false;
}

// A line as the parser reads it: the launcher's prefix removed, trimmed, a header's lost '#'
// restored (into `restored`, which the returned view may point into).
std::string_view normalized_line(std::string_view text, std::string& restored) {
  std::string_view body = trim(strip_launcher_prefix(text));
  if (!body.empty() && body.front() != '#' && lost_hash(body)) {
    restored = "# " + std::string(body);
    body = restored;
  }
  return body;
}

bool is_footer(std::string_view body) {
  return !body.empty() && body.front() == '#' &&
         starts_with_ci(trim(strip_hashes(body)), "Avg bus bandwidth");
}

// Line ranges [first, last) of the runs in the text: a run ends with its "Avg bus bandwidth"
// footer, or where a new column header follows a table that has rows (the footer lost). Text after
// the last run without a table of its own (shutdown chatter) is no run.
struct RunSpan {
  std::size_t first = 0, last = 0;
};
std::vector<RunSpan> run_spans(const std::vector<Line>& lines) {
  std::vector<RunSpan> spans;
  std::size_t begin = 0;
  bool header = false, rows = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string restored;
    const std::string_view body = normalized_line(lines[i].text, restored);
    if (body.empty()) continue;
    if (body.front() == '#') {
      if (is_column_header(body)) {
        if (rows) spans.push_back({begin, i}), begin = i, rows = false;
        header = true;
      } else if (is_footer(body) && header) {
        spans.push_back({begin, i + 1});
        begin = i + 1, header = false, rows = false;
      }
      continue;
    }
    std::int64_t size = 0;
    const auto toks = split_ws(body);
    if (header && !toks.empty() && to_int64(toks[0], size)) rows = true;
  }
  if (header) spans.push_back({begin, lines.size()});
  return spans;
}

}  // namespace

int count_nccl_tests_runs(std::string_view text) {
  return static_cast<int>(run_spans(split_lines(text)).size());
}

NcclTestsResult parse_nccl_tests(std::string_view text, const std::string& origin, NcclTestsOp op_hint,
                                 int run) {
  NcclTestsResult res;
  res.origin = origin;
  const auto lines = split_lines(text);
  if (trim(text).empty()) throw InputError(fmt::format("{}: empty input, expected nccl-tests output", origin));

  NcclTestsOp op_start = NcclTestsOp::unknown, op_line = NcclTestsOp::unknown, op_cmd = NcclTestsOp::unknown;
  std::vector<Col> kinds;
  std::vector<int> half;  // 0 = row key, 1 = out-of-place, 2 = in-place
  bool in_table = false, done = false;
  std::set<int> seen_ranks;
  std::optional<std::size_t> redop_at;  // the redop column's index
  struct OtherLines {                   // lines inside the table that are not result rows
    int count = 0, line = 0;
    std::string text;
  } other;
  struct CutRow {  // a row with too few fields, waiting to see whether it is the table's last
    int line = 0;
    std::string message;
    std::size_t fields = 0, want = 0;
  };
  std::optional<CutRow> cut;
  auto read_cell = [&](std::size_t i, std::string_view tok, NcclTestsRow& row, int line) {
    switch (kinds[i]) {
      case Col::size: row.size_bytes = need_uint(tok, origin, line, "column 'size'"); break;
      case Col::count: row.count = need_uint(tok, origin, line, "column 'count'"); break;
      case Col::type: row.type = std::string(tok); break;
      case Col::redop: row.redop = std::string(tok); break;
      case Col::root: row.root = need_int(tok, origin, line, "column 'root'"); break;
      case Col::timestamp: break;
      default: {
        auto& slot = half[i] == 1 ? row.out_of_place : row.in_place;
        if (!slot) slot.emplace();
        parse_timing_cell(kinds[i], tok, *slot, origin, line, res.columns[i]);
      }
    }
  };

  // The table's columns from its header's words (or the standard ones of a headerless table).
  auto begin_table = [&](const std::vector<std::string_view>& header, int line) {
    int time_groups = 0;
    redop_at.reset();
    for (auto tok : header) {
      Col k;
      if (!column_kind(tok, k)) unknown_column(header, tok, origin, line);
      if (k == Col::redop) redop_at = kinds.size();
      if (k == Col::time) ++time_groups;
      if (time_groups > 2) fail(origin, line, "column header: more than two time columns");
      kinds.push_back(k);
      half.push_back(time_groups);
      res.columns.emplace_back(tok);
    }
    for (std::size_t i = 0; i < kinds.size(); ++i)
      if (kinds[i] != Col::timestamp && half[i] == 0 && kinds[i] > Col::root)
        fail(origin, line, fmt::format("column header: '{}' before any time column", res.columns[i]));
    in_table = true;
    res.table_first_line = line;
  };

  // Several runs in one text (a job that ran several *_perf binaries): parse the run-th.
  const auto spans = run_spans(lines);
  if (run < 0 || (run > 0 && static_cast<std::size_t>(run) >= spans.size()))
    throw InputError(fmt::format("{}: run {} asked for, but the output holds {} nccl-tests run(s)", origin,
                                 run + 1, spans.size()));
  const std::size_t run_first = spans.empty() ? 0 : spans[static_cast<std::size_t>(run)].first;
  const std::size_t run_last = spans.empty() ? lines.size() : spans[static_cast<std::size_t>(run)].last;

  // No column header anywhere: rows of nccl-tests' standard 13 columns are read as those, with a note.
  // (A plain index, npos for none: GCC 12 warns of an optional<size_t> read in the loop below.)
  const std::size_t headerless =
      spans.empty() ? headerless_standard_table(lines).value_or(std::string::npos) : std::string::npos;
  if (headerless != std::string::npos)
    res.notes.push_back(fmt::format(
        "{}: no column header: the rows (from line {}) have nccl-tests' standard 13 columns and are read as "
        "size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and in place",
        origin, lines[headerless].number));

  for (std::size_t li = run_first; li < run_last; ++li) {
    const Line& ln = lines[li];
    if (done) break;
    if (li == headerless && !in_table) {
      static const std::vector<std::string_view> kStandardColumns{"size",  "count", "type",  "redop",  "root",
                                                                  "time",  "algbw", "busbw", "#wrong", "time",
                                                                  "algbw", "busbw", "#wrong"};
      begin_table(kStandardColumns, ln.number);
    }
    std::string restored;  // a header line that lost its '#' (docs/measurement-formats.md)
    std::string_view body = normalized_line(ln.text, restored);
    if (body.empty()) continue;

    // NCCL's own version line (NCCL_DEBUG=VERSION or INFO), anywhere before the footer.
    if (auto p = body.find("NCCL version "); p != std::string_view::npos && !res.nccl_version) {
      auto toks = split_ws(body.substr(p + 13));
      if (!toks.empty()) res.nccl_version = clean_version(toks[0]);
    }
    if (body.find("NCCL INFO") != std::string_view::npos ||
        body.find("NCCL WARN") != std::string_view::npos) {
      if (!in_table || res.rows.empty()) {
        note_env_from_info(body, ln.number, res.env);
        note_channels_from_info(body, ln.number, res);
        note_comm_from_info(body, ln.number, res);
      }
      continue;  // interleaved NCCL debug output
    }

    if (body.front() == '#') {
      std::string_view h = trim(strip_hashes(body));
      if (is_column_header(body)) {
        if (in_table) {
          if (!res.rows.empty()) break;  // a second table starts: keep the first
          other = OtherLines{};
          cut.reset();
          kinds.clear();
          half.clear();
          res.columns.clear();
        }
        begin_table(split_ws(h), ln.number);
        continue;
      }
      if (first_word_is(h, "Rank")) {
        if (in_table && !res.rows.empty())
          fail(origin, ln.number, "rank line inside the result table (mixed output from several runs?)");
        NcclTestsRank r = parse_rank_line(h, origin, ln.number);
        if (!seen_ranks.insert(r.rank).second)
          fail(origin, ln.number, fmt::format("rank line: rank {} listed twice (mixed output from several runs?)", r.rank));
        res.ranks.push_back(std::move(r));
        continue;
      }
      if (first_word_is(h, "nThread")) {
        if (res.run.present) fail(origin, ln.number, "a second '# nThread' run header (several runs in one file?)");
        parse_run_header(h, res.run, origin, ln.number);
        continue;
      }
      if (starts_with_ci(h, "Collective test starting:")) {
        op_start = nccl_tests_op_from_name(h.substr(25));
        continue;
      }
      if (starts_with_ci(h, "OP:")) {
        auto toks = split_ws(h.substr(3));
        if (!toks.empty()) {
          std::string_view name = toks[0];
          if (!name.empty() && name.back() == ',') name.remove_suffix(1);
          op_line = nccl_tests_op_from_name(name);
        }
        continue;
      }
      if (starts_with_ci(h, "nccl-tests version")) {
        for (auto tok : split_ws(h))
          if (starts_with_ci(tok, "nccl-library=")) {
            std::int64_t code = 0;
            if (to_int64(tok.substr(13), code)) res.nccl_version = version_from_code(code);
          }
        continue;
      }
      if (starts_with_ci(h, "Avg bus bandwidth")) {
        auto colon = h.find(':');
        auto toks = split_ws(colon == std::string_view::npos ? std::string_view{} : h.substr(colon + 1));
        if (toks.empty()) fail(origin, ln.number, "footer 'Avg bus bandwidth': value missing (truncated?)");
        res.avg_busbw_GBps = need_nonneg(toks[0], origin, ln.number, "footer 'Avg bus bandwidth'");
        if (in_table) done = true;
        continue;
      }
      if (starts_with_ci(h, "Out of bounds values")) {
        auto colon = h.find(':');
        auto toks = split_ws(colon == std::string_view::npos ? std::string_view{} : h.substr(colon + 1));
        if (toks.empty()) fail(origin, ln.number, "footer 'Out of bounds values': value missing (truncated?)");
        res.out_of_bounds = need_int(toks[0], origin, ln.number, "footer 'Out of bounds values'");
        continue;
      }
      continue;  // other comments
    }

    if (body == "..." || body == "[...]") {  // a published excerpt left lines out
      res.elided = true;
      continue;
    }
    if (!in_table) {
      // Launcher output before the table: NCCL_* settings on a command line, and the benchmark binary.
      note_env_from_command(body, ln.number, res.env);
      if (op_cmd == NcclTestsOp::unknown)
        for (auto tok : split_ws(body)) {
          auto slash = tok.rfind('/');
          std::string_view base = slash == std::string_view::npos ? tok : tok.substr(slash + 1);
          if (base.find("_perf") != std::string_view::npos) {
            NcclTestsOp o = nccl_tests_op_from_name(base);
            if (o != NcclTestsOp::unknown) {
              op_cmd = o;
              break;
            }
          }
        }
      continue;
    }
    // A data row starts with its size. Any other line inside the table is someone else's output (a
    // launcher's or driver's message, a user's comment): skipped, and counted in a note.
    auto toks = split_ws(body);
    if (std::int64_t lead = 0; toks.empty() || !to_int64(toks[0], lead)) {
      if (other.count++ == 0) other.line = ln.number, other.text = printable(body);
      continue;
    }
    if (cut) fail(origin, cut->line, cut->message);  // a short row with rows after it: not a cut log
    bool has_ts = !kinds.empty() && kinds.back() == Col::timestamp;
    std::size_t want = has_ts ? kinds.size() - 1 : kinds.size();
    // Old nccl-tests printed no redop word for ops without one (alltoall): the field is blank.
    if (redop_at && toks.size() + 1 == want && *redop_at < toks.size() && is_number(toks[*redop_at]))
      toks.insert(toks.begin() + static_cast<std::ptrdiff_t>(*redop_at), std::string_view{});
    const std::string shape = fmt::format("expected a result row with {} columns ({}), got {} fields", want,
                                          fmt::join(res.columns, " "), toks.size());
    if (toks.size() > want && !has_ts) fail(origin, ln.number, shape + " (mixed line?)");
    if (toks.size() < want) {
      // Cut short: fine as the last row of a pasted or interrupted log (its fields but the last,
      // which may be cut mid-word, must still read as their columns), an error anywhere else.
      NcclTestsRow scratch;
      for (std::size_t i = 0; i + 1 < toks.size(); ++i) read_cell(i, toks[i], scratch, ln.number);
      cut = CutRow{ln.number, shape + " (truncated or mixed line?)", toks.size(), want};
      continue;
    }
    NcclTestsRow row;
    row.line = ln.number;
    for (std::size_t i = 0; i < want; ++i) read_cell(i, toks[i], row, ln.number);
    res.rows.push_back(std::move(row));
    res.table_last_line = ln.number;
  }

  if (kinds.empty()) {
    if (std::any_of(lines.begin(), lines.end(),
                    [](const Line& l) { return l.text.find("NCCL INFO") != std::string_view::npos; }))
      throw InputError(
          fmt::format("{}: no nccl-tests result table ('#  size  count  type ... time  algbw  busbw'): this "
                      "is NCCL's debug "
                      "output (NCCL INFO lines) alone; `commstack replay --trace {}` replays its COLL lines, "
                      "and TUNING lines "
                      "are read together with the nccl-tests table they were printed with",
                      origin, origin));
    const auto [row_lines, first_row] = row_like_lines(lines, run_first, run_last);
    if (row_lines > 0)
      throw InputError(fmt::format(
          "{}: no nccl-tests column header ('#  size  count  type ... time  algbw  busbw') found, though {} "
          "line(s) look like result rows (the first at line {}): the header says what each column is; "
          "include the log from its '# nThread' line",
          origin, row_lines, first_row));
    throw InputError(fmt::format("{}: no nccl-tests column header ('#  size  count  type ... time  algbw  busbw') found; "
                                 "is this nccl-tests output?",
                                 origin));
  }
  if (std::find(kinds.begin(), kinds.end(), Col::size) == kinds.end())
    throw InputError(fmt::format("{}: the result table has no 'size' column", origin));
  if (res.rows.empty()) {
    if (cut)
      throw InputError(
          fmt::format("{}:{}: the result table's only row is cut short ({}); no complete row to use", origin,
                      cut->line, cut->message));
    if (other.count > 0)
      throw InputError(
          fmt::format("{}: the result table (header at line {}) has no data rows; the first line "
                      "after it is line {}: '{}' (did the run stop after printing the header?)",
                      origin, res.table_first_line, other.line, other.text));
    throw InputError(fmt::format("{}: the result table has no data rows (empty or truncated output)", origin));
  }
  if (cut)
    res.notes.push_back(
        fmt::format("{}:{}: the table's last row has {} of its {} fields (the log is cut short?): "
                    "not used",
                    origin, cut->line, cut->fields, cut->want));
  if (other.count > 0)
    res.notes.push_back(
        fmt::format("{}: {} line(s) inside the result table are not result rows and were skipped "
                    "(the first, line {}: '{}')",
                    origin, other.count, other.line, other.text));

  // Op evidence in the output, most explicit first (docs/measurement-formats.md); the file name last.
  auto base_name = [&]() {
    auto slash = origin.find_last_of("/\\");
    return slash == std::string::npos ? origin : origin.substr(slash + 1);
  };
  NcclTestsOp logged = NcclTestsOp::unknown;
  std::string source = "unknown";
  if (op_start != NcclTestsOp::unknown)
    logged = op_start, source = "test-start line";
  else if (op_line != NcclTestsOp::unknown)
    logged = op_line, source = "OP line";
  else if (op_cmd != NcclTestsOp::unknown)
    logged = op_cmd, source = "command line";
  else if (auto o = op_in_text(base_name()); o != NcclTestsOp::unknown)
    logged = o, source = "filename";
  finish_nccl_tests_result(res, op_hint, logged, source);
  return res;
}

void finish_nccl_tests_result(NcclTestsResult& res, NcclTestsOp op_hint, NcclTestsOp logged_op,
                              const std::string& logged_source) {
  // Derived cluster shape from the rank lines.
  if (!res.ranks.empty()) {
    res.n_ranks = static_cast<int>(res.ranks.size());
    std::map<std::string, int> per_host;
    std::set<int> numbers;
    for (const auto& r : res.ranks) ++per_host[r.host], numbers.insert(r.rank);
    const bool hosts_known = per_host.count("") == 0;  // rank lines without "Pid p on host"
    res.n_hosts = hosts_known ? static_cast<int>(per_host.size()) : 0;
    const int first = per_host.begin()->second;
    const bool uniform =
        std::all_of(per_host.begin(), per_host.end(), [&](const auto& kv) { return kv.second == first; });
    res.gpus_per_node = uniform && hosts_known ? first : 0;
    res.ranks_complete = static_cast<int>(numbers.size()) == res.n_ranks && *numbers.begin() == 0 &&
                         *numbers.rbegin() == res.n_ranks - 1;
    res.gpu_model = res.ranks.front().gpu_name;
    // Two ranks on the same GPU (same host, device and bus id): the run shared a GPU, which the
    // prediction (one GPU per rank) does not.
    std::map<std::tuple<std::string, int, std::string>, int> gpu_of;
    for (const auto& r : res.ranks) {
      if (r.host.empty()) continue;  // no host printed: ranks on two nodes may name the same device
      const auto [it, fresh] = gpu_of.try_emplace({r.host, r.device, r.busid}, r.rank);
      if (!fresh) {
        res.notes.push_back(
            fmt::format("{}: ranks {} and {} both name host {} device {} [{}]: they shared one GPU, "
                        "where the prediction gives each rank its own",
                        res.origin, it->second, r.rank, r.host, r.device, r.busid));
        break;
      }
    }
  }
  // What the output itself says is kept even under an explicit op, so a caller can catch the two
  // disagreeing. The table's own columns (they need the shape above) come last, and check an
  // explicit op.
  res.logged_op = logged_op;
  res.logged_op_source = logged_op == NcclTestsOp::unknown ? "unknown" : logged_source;
  const TableOpInference t = op_from_table(res);
  res.table_op = t.op;
  res.op_table_reason = t.reason;
  res.table_ops = t.candidates;
  // A file name is weak evidence (files get renamed, copied, mislabelled): columns that rule its op
  // out win, with a note, or leave the op open when they cannot decide themselves.
  if (res.logged_op != NcclTestsOp::unknown && res.logged_op_source == "filename" && !t.candidates.empty() &&
      std::find(t.candidates.begin(), t.candidates.end(), res.logged_op) == t.candidates.end()) {
    const std::string named = to_string(res.logged_op);
    if (t.op != NcclTestsOp::unknown) {
      res.notes.push_back(
          fmt::format("{}: the file name says {}, but the result table's columns give {} ({}): {} "
                      "is used",
                      res.origin, named, to_string(t.op), t.reason, to_string(t.op)));
    } else {
      res.op_table_reason = fmt::format("{}; the file name's {} is ruled out by them", t.reason, named);
    }
    res.logged_op = NcclTestsOp::unknown;
    res.logged_op_source = "unknown";
  }
  if (res.logged_op == NcclTestsOp::unknown && t.op != NcclTestsOp::unknown)
    res.logged_op = t.op, res.logged_op_source = "table columns";
  if (op_hint != NcclTestsOp::unknown)
    res.op = op_hint, res.op_source = "explicit";
  else
    res.op = res.logged_op, res.op_source = res.logged_op_source;
}

std::optional<std::string> nccl_version_from_code(std::int64_t code) {
  return version_from_code(code);
}

NcclTestsOp nccl_tests_op_in_text(std::string_view text) {
  return op_in_text(text);
}

NcclTestsResult parse_nccl_tests_file(const std::string& path, NcclTestsOp op_hint, int run) {
  return parse_nccl_tests(read_text_file(path), path, op_hint, run);
}

}  // namespace commstack::fit
