#include "calibration/fit/nccl_tests.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calibration/fit/nccl_tests_info_lines.hpp"
#include "calibration/fit/nccl_tests_table_op.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
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

namespace {

// One run of nccl-tests output, read line by line: the result table's columns and rows, and what
// the comment and launcher lines around it say (ranks, run header, op, NCCL version, footer).
class RunReader {
 public:
  RunReader(NcclTestsResult& res, const std::string& origin) : res_(res), origin_(origin) {}

  // The table's columns from its header's words (or the standard ones of a headerless table).
  void begin_table(const std::vector<std::string_view>& header, int line);
  bool in_table() const { return in_table_; }

  // One line; false when the run's table has ended (its footer, or a second table after rows).
  bool read(const Line& ln);

  // After the last line: the errors of a run without a usable table, and the notes of lines skipped.
  void finish(const std::vector<Line>& lines, std::size_t run_first, std::size_t run_last);

  // The op the output names, most explicit first (docs/measurement-formats.md), and where it says so.
  std::pair<NcclTestsOp, std::string> logged_op() const;

 private:
  bool comment_line(std::string_view body, int line);
  void launcher_line(std::string_view body, int line);
  void table_line(std::string_view body, int line);
  void read_cell(std::size_t i, std::string_view tok, NcclTestsRow& row, int line);
  void check_times(const NcclTestsRow& row, int line) const;
  void reset_table();

  NcclTestsResult& res_;
  const std::string& origin_;
  NcclTestsOp op_start_ = NcclTestsOp::unknown, op_line_ = NcclTestsOp::unknown,
              op_cmd_ = NcclTestsOp::unknown;
  std::vector<Col> kinds_;
  std::vector<int> half_;  // 0 = row key, 1 = out-of-place, 2 = in-place
  bool in_table_ = false, done_ = false;
  std::set<int> seen_ranks_;
  std::optional<std::size_t> redop_at_;  // the redop column's index
  struct OtherLines {                    // lines inside the table that are not result rows
    int count = 0, line = 0;
    std::string text;
  } other_;
  struct CutRow {  // a row with too few fields, waiting to see whether it is the table's last
    int line = 0;
    std::string message;
    std::size_t fields = 0, want = 0;
  };
  std::optional<CutRow> cut_;
};

void RunReader::read_cell(std::size_t i, std::string_view tok, NcclTestsRow& row, int line) {
  switch (kinds_[i]) {
    case Col::size: row.size_bytes = need_uint(tok, origin_, line, "column 'size'"); break;
    case Col::count: row.count = need_uint(tok, origin_, line, "column 'count'"); break;
    case Col::type: row.type = std::string(tok); break;
    case Col::redop: row.redop = std::string(tok); break;
    case Col::root: row.root = need_int(tok, origin_, line, "column 'root'"); break;
    case Col::timestamp: break;
    default: {
      auto& slot = half_[i] == 1 ? row.out_of_place : row.in_place;
      if (!slot) slot.emplace();
      parse_timing_cell(kinds_[i], tok, *slot, origin_, line, res_.columns[i]);
    }
  }
}

// A row that moves data must have taken a plausible time in each half (0-byte rows move nothing:
// take_rows leaves them out with a note).
void RunReader::check_times(const NcclTestsRow& row, int line) const {
  if (row.size_bytes == 0) return;
  for (const auto& [timing, half] :
       {std::pair{&row.out_of_place, "out-of-place"}, std::pair{&row.in_place, "in-place"}})
    if (*timing && !plausible_time_us((*timing)->time_us))
      fail(origin_, line,
           fmt::format("column 'time' ({}): expected {}, got {:g}", half, plausible_time_text(),
                       (*timing)->time_us));
}

void RunReader::begin_table(const std::vector<std::string_view>& header, int line) {
  int time_groups = 0;
  redop_at_.reset();
  for (auto tok : header) {
    Col k;
    if (!column_kind(tok, k)) unknown_column(header, tok, origin_, line);
    if (k == Col::redop) redop_at_ = kinds_.size();
    if (k == Col::time) ++time_groups;
    if (time_groups > 2) fail(origin_, line, "column header: more than two time columns");
    kinds_.push_back(k);
    half_.push_back(time_groups);
    res_.columns.emplace_back(tok);
  }
  for (std::size_t i = 0; i < kinds_.size(); ++i)
    if (kinds_[i] != Col::timestamp && half_[i] == 0 && kinds_[i] > Col::root)
      fail(origin_, line, fmt::format("column header: '{}' before any time column", res_.columns[i]));
  in_table_ = true;
  res_.table_first_line = line;
}

void RunReader::reset_table() {
  other_ = OtherLines{};
  cut_.reset();
  kinds_.clear();
  half_.clear();
  res_.columns.clear();
}

bool RunReader::read(const Line& ln) {
  if (done_) return false;
  std::string restored;  // a header line that lost its '#' (docs/measurement-formats.md)
  const std::string_view body = normalized_line(ln.text, restored);
  if (body.empty()) return true;

  // NCCL's own version line (NCCL_DEBUG=VERSION or INFO), anywhere before the footer.
  if (auto p = body.find("NCCL version "); p != std::string_view::npos && !res_.nccl_version) {
    auto toks = split_ws(body.substr(p + 13));
    if (!toks.empty()) res_.nccl_version = clean_version(toks[0]);
  }
  if (body.find("NCCL INFO") != std::string_view::npos || body.find("NCCL WARN") != std::string_view::npos) {
    if (!in_table_ || res_.rows.empty()) {
      note_env_from_info(body, ln.number, res_.env);
      note_channels_from_info(body, ln.number, origin_, res_);
      note_comm_from_info(body, ln.number, res_);
    }
    return true;  // interleaved NCCL debug output
  }
  if (body.front() == '#') return comment_line(body, ln.number);
  if (body == "..." || body == "[...]") {  // a published excerpt left lines out
    res_.elided = true;
    if (!in_table_) res_.rank_lines_elided = true;
    return true;
  }
  if (!in_table_)
    launcher_line(body, ln.number);
  else
    table_line(body, ln.number);
  return true;
}

// The text after a footer's colon: its first word, or a clear error when the line is cut there.
std::string_view footer_value(std::string_view h, std::string_view name, const std::string& origin,
                              int line) {
  const auto colon = h.find(':');
  const auto toks = split_ws(colon == std::string_view::npos ? std::string_view{} : h.substr(colon + 1));
  if (toks.empty()) fail(origin, line, fmt::format("footer '{}': value missing (truncated?)", name));
  return toks[0];
}

bool RunReader::comment_line(std::string_view body, int line) {
  const std::string_view h = trim(strip_hashes(body));
  if (is_column_header(body)) {
    if (in_table_) {
      if (!res_.rows.empty()) return false;  // a second table starts: keep the first
      reset_table();
    }
    begin_table(split_ws(h), line);
  } else if (first_word_is(h, "Rank")) {
    if (in_table_ && !res_.rows.empty())
      fail(origin_, line, "rank line inside the result table (mixed output from several runs?)");
    NcclTestsRank r = parse_rank_line(h, origin_, line);
    if (!seen_ranks_.insert(r.rank).second)
      fail(origin_, line,
           fmt::format("rank line: rank {} listed twice (mixed output from several runs?)", r.rank));
    res_.ranks.push_back(std::move(r));
  } else if (first_word_is(h, "nThread")) {
    if (res_.run.present) fail(origin_, line, "a second '# nThread' run header (several runs in one file?)");
    parse_run_header(h, res_.run, origin_, line);
  } else if (starts_with_ci(h, "Collective test starting:")) {
    op_start_ = nccl_tests_op_from_name(h.substr(25));
  } else if (starts_with_ci(h, "OP:")) {
    auto toks = split_ws(h.substr(3));
    if (!toks.empty()) {
      std::string_view name = toks[0];
      if (!name.empty() && name.back() == ',') name.remove_suffix(1);
      op_line_ = nccl_tests_op_from_name(name);
    }
  } else if (starts_with_ci(h, "nccl-tests version")) {
    for (auto tok : split_ws(h))
      if (starts_with_ci(tok, "nccl-library=")) {
        std::int64_t code = 0;
        if (to_int64(tok.substr(13), code)) res_.nccl_version = version_from_code(code);
      }
  } else if (starts_with_ci(h, "Avg bus bandwidth")) {
    res_.avg_busbw_GBps = need_nonneg(footer_value(h, "Avg bus bandwidth", origin_, line), origin_, line,
                                      "footer 'Avg bus bandwidth'");
    if (in_table_) done_ = true;
  } else if (starts_with_ci(h, "Out of bounds values")) {
    res_.out_of_bounds = need_int(footer_value(h, "Out of bounds values", origin_, line), origin_, line,
                                  "footer 'Out of bounds values'");
  }
  return true;  // other comments are skipped
}

// Launcher output before the table: NCCL_* settings on a command line, and the benchmark binary.
void RunReader::launcher_line(std::string_view body, int line) {
  note_env_from_command(body, line, res_.env);
  if (op_cmd_ != NcclTestsOp::unknown) return;
  for (auto tok : split_ws(body)) {
    const auto slash = tok.rfind('/');
    const std::string_view base = slash == std::string_view::npos ? tok : tok.substr(slash + 1);
    if (base.find("_perf") == std::string_view::npos) continue;
    const NcclTestsOp o = nccl_tests_op_from_name(base);
    if (o != NcclTestsOp::unknown) {
      op_cmd_ = o;
      return;
    }
  }
}

// A data row starts with its size. Any other line inside the table is someone else's output (a
// launcher's or driver's message, a user's comment): skipped, and counted in a note.
void RunReader::table_line(std::string_view body, int line) {
  auto toks = split_ws(body);
  if (std::int64_t lead = 0; toks.empty() || !to_int64(toks[0], lead)) {
    if (other_.count++ == 0) other_.line = line, other_.text = printable(body);
    return;
  }
  if (cut_) fail(origin_, cut_->line, cut_->message);  // a short row with rows after it: not a cut log
  const bool has_ts = !kinds_.empty() && kinds_.back() == Col::timestamp;
  const std::size_t want = has_ts ? kinds_.size() - 1 : kinds_.size();
  // Old nccl-tests printed no redop word for ops without one (alltoall): the field is blank.
  if (redop_at_ && toks.size() + 1 == want && *redop_at_ < toks.size() && is_number(toks[*redop_at_]))
    toks.insert(toks.begin() + static_cast<std::ptrdiff_t>(*redop_at_), std::string_view{});
  const std::string shape = fmt::format("expected a result row with {} columns ({}), got {} fields", want,
                                        fmt::join(res_.columns, " "), toks.size());
  if (toks.size() > want && !has_ts) fail(origin_, line, shape + " (mixed line?)");
  if (toks.size() < want) {
    // Cut short: fine as the last row of a pasted or interrupted log (its fields but the last,
    // which may be cut mid-word, must still read as their columns), an error anywhere else.
    NcclTestsRow scratch;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) read_cell(i, toks[i], scratch, line);
    cut_ = CutRow{line, shape + " (truncated or mixed line?)", toks.size(), want};
    return;
  }
  NcclTestsRow row;
  row.line = line;
  for (std::size_t i = 0; i < want; ++i) read_cell(i, toks[i], row, line);
  check_times(row, line);
  res_.rows.push_back(std::move(row));
  res_.table_last_line = line;
}

void RunReader::finish(const std::vector<Line>& lines, std::size_t run_first, std::size_t run_last) {
  const std::string& origin = origin_;
  if (kinds_.empty()) {
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
  if (std::find(kinds_.begin(), kinds_.end(), Col::size) == kinds_.end())
    throw InputError(fmt::format("{}: the result table has no 'size' column", origin));
  if (res_.rows.empty()) {
    if (cut_)
      throw InputError(
          fmt::format("{}:{}: the result table's only row is cut short ({}); no complete row to use", origin,
                      cut_->line, cut_->message));
    if (other_.count > 0)
      throw InputError(
          fmt::format("{}: the result table (header at line {}) has no data rows; the first line "
                      "after it is line {}: '{}' (did the run stop after printing the header?)",
                      origin, res_.table_first_line, other_.line, other_.text));
    throw InputError(fmt::format("{}: the result table has no data rows (empty or truncated output)", origin));
  }
  if (cut_)
    res_.notes.push_back(
        fmt::format("{}:{}: the table's last row has {} of its {} fields (the log is cut short?): "
                    "not used",
                    origin, cut_->line, cut_->fields, cut_->want));
  if (other_.count > 0)
    res_.notes.push_back(
        fmt::format("{}: {} line(s) inside the result table are not result rows and were skipped "
                    "(the first, line {}: '{}')",
                    origin, other_.count, other_.line, other_.text));
}

std::pair<NcclTestsOp, std::string> RunReader::logged_op() const {
  if (op_start_ != NcclTestsOp::unknown) return {op_start_, "test-start line"};
  if (op_line_ != NcclTestsOp::unknown) return {op_line_, "OP line"};
  if (op_cmd_ != NcclTestsOp::unknown) return {op_cmd_, "command line"};
  // The file name last.
  const auto slash = origin_.find_last_of("/\\");
  const std::string base = slash == std::string::npos ? origin_ : origin_.substr(slash + 1);
  if (auto o = op_in_text(base); o != NcclTestsOp::unknown) return {o, "filename"};
  return {NcclTestsOp::unknown, "unknown"};
}

}  // namespace

NcclTestsResult parse_nccl_tests(std::string_view text, const std::string& origin, NcclTestsOp op_hint,
                                 int run) {
  NcclTestsResult res;
  res.origin = origin;
  const auto lines = split_lines(text);
  if (trim(text).empty())
    throw InputError(fmt::format("{}: empty input, expected nccl-tests output", origin));

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

  RunReader reader(res, origin);
  for (std::size_t li = run_first; li < run_last; ++li) {
    if (li == headerless && !reader.in_table()) {
      static const std::vector<std::string_view> kStandardColumns{"size",  "count", "type",  "redop",  "root",
                                                                  "time",  "algbw", "busbw", "#wrong", "time",
                                                                  "algbw", "busbw", "#wrong"};
      reader.begin_table(kStandardColumns, lines[li].number);
    }
    if (!reader.read(lines[li])) break;
  }
  reader.finish(lines, run_first, run_last);
  const auto [logged, source] = reader.logged_op();
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
    res.ranks_complete = !res.rank_lines_elided && static_cast<int>(numbers.size()) == res.n_ranks &&
                         *numbers.begin() == 0 && *numbers.rbegin() == res.n_ranks - 1;
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
  return parse_nccl_tests(read_input_file(path, "nccl-tests output"), path, op_hint, run);
}

}  // namespace commstack::fit
