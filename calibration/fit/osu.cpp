#include "calibration/fit/osu.hpp"

#include <cctype>

#include <fmt/format.h>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::fit {

using namespace detail;

namespace {

// Header cells are separated by a tab or by two or more spaces ("Avg Latency(us)" has one).
std::vector<std::string> split_cells(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  int spaces = 0;
  auto flush = [&] {
    auto t = trim(cur);
    if (!t.empty()) out.emplace_back(t);
    cur.clear();
  };
  for (char c : s) {
    if (c == '\t') {
      flush();
      spaces = 0;
    } else if (c == ' ') {
      if (++spaces == 2) flush();
      else cur += c;
    } else {
      spaces = 0;
      cur += c;
    }
  }
  flush();
  return out;
}

OsuColumn classify(const std::string& name) {
  std::string n = lower(name);
  if (n.find("iteration") != std::string::npos) return OsuColumn::iterations;
  if (n.find("messages/s") != std::string::npos) return OsuColumn::message_rate;
  if (n.find("mb/s") != std::string::npos || n.find("bandwidth") != std::string::npos) return OsuColumn::bandwidth_MBps;
  if (n.find("lat") != std::string::npos) {
    if (n.rfind("min", 0) == 0) return OsuColumn::min_latency_us;
    if (n.rfind("max", 0) == 0) return OsuColumn::max_latency_us;
    if (n.find("latency") != std::string::npos && (n.rfind("avg", 0) == 0 || n.rfind("latency", 0) == 0))
      return OsuColumn::latency_us;
  }
  return OsuColumn::other;
}

std::string buffer_kind(std::string_view word) {
  std::string w = lower(word);
  if (w == "device" || w == "d") return "device";
  if (w == "host" || w == "h") return "host";
  if (w == "managed" || w == "m" || w == "mh" || w == "md") return "managed";
  return w;
}

}  // namespace

int OsuResult::column(OsuColumn kind) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == kind) return static_cast<int>(i);
  return -1;
}

OsuResult parse_osu(std::string_view text, const std::string& origin) {
  OsuResult res;
  res.origin = origin;
  if (trim(text).empty()) throw InputError(fmt::format("{}: empty input, expected OSU micro-benchmark output", origin));
  bool in_table = false;
  for (const auto& ln : split_lines(text)) {
    std::string_view body = trim(strip_launcher_prefix(ln.text));
    if (body.empty()) continue;
    if (body.front() == '#') {
      std::string_view h = body;
      while (!h.empty() && h.front() == '#') h.remove_prefix(1);
      h = trim(h);
      if (starts_with_ci(h, "OSU ")) {
        if (in_table) break;  // a second benchmark in the same file: keep the first
        res.title = std::string(h);
        auto toks = split_ws(h);
        // "OSU MPI-CUDA Latency Test v7.3"
        std::size_t first = 1;
        // "OSU NCCL-CUDA Allreduce Latency Test v7.5" (OSU 7's osu_xccl_* benchmarks)
        if (toks.size() > 1 && (starts_with_ci(toks[1], "MPI") || starts_with_ci(toks[1], "NCCL") ||
                                starts_with_ci(toks[1], "RCCL"))) {
          std::string flavour = lower(toks[1]);
          res.library = flavour.substr(0, flavour.find('-'));
          for (auto& ch : res.library) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          res.device_build = flavour.find("cuda") != std::string::npos || flavour.find("rocm") != std::string::npos ||
                             flavour.find("openacc") != std::string::npos;
          first = 2;
        }
        std::size_t last = toks.size();
        if (last > first && toks[last - 1].size() > 1 && (toks[last - 1][0] == 'v' || toks[last - 1][0] == 'V')) {
          res.version = std::string(toks[last - 1].substr(1));
          --last;
        }
        if (last > first && equals_ci(toks[last - 1], "Test")) --last;
        std::string name;
        for (std::size_t i = first; i < last; ++i) name += (name.empty() ? "" : " ") + std::string(toks[i]);
        res.benchmark = name;
        continue;
      }
      if (starts_with_ci(h, "Send Buffer on")) {
        // "# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)"
        auto toks = split_ws(h);
        if (toks.size() >= 4) res.send_buffer = buffer_kind(toks[3]);
        for (std::size_t i = 0; i + 3 < toks.size(); ++i)
          if (equals_ci(toks[i], "Receive")) res.recv_buffer = buffer_kind(toks[i + 3]);
        continue;
      }
      if (starts_with_ci(h, "Size")) {
        if (in_table) {
          if (!res.rows.empty()) break;
          res.column_names.clear();
          res.columns.clear();
        }
        auto cells = split_cells(h);
        if (cells.size() < 2)
          fail(origin, ln.number, "'# Size' header: expected at least one value column after Size");
        for (std::size_t i = 1; i < cells.size(); ++i) {
          res.column_names.push_back(cells[i]);
          res.columns.push_back(classify(cells[i]));
        }
        in_table = true;
        continue;
      }
      continue;
    }
    if (!in_table) continue;  // launcher chatter before the table
    auto toks = split_ws(body);
    if (toks.size() != res.columns.size() + 1)
      fail(origin, ln.number,
           fmt::format("expected a row 'size {}' ({} fields), got {} fields (truncated or mixed line?)",
                       fmt::join(res.column_names, " | "), res.columns.size() + 1, toks.size()));
    OsuRow row;
    row.line = ln.number;
    row.size_bytes = need_uint(toks[0], origin, ln.number, "column 'Size'");
    for (std::size_t i = 1; i < toks.size(); ++i)
      row.values.push_back(need_nonneg(toks[i], origin, ln.number, fmt::format("column '{}'", res.column_names[i - 1])));
    res.rows.push_back(std::move(row));
  }
  if (!in_table)
    throw InputError(fmt::format("{}: no OSU table header ('# Size  Latency (us)' or similar) found; is this OSU output?", origin));
  if (res.rows.empty()) throw InputError(fmt::format("{}: the OSU table has no data rows (empty or truncated output)", origin));
  return res;
}

OsuResult parse_osu_file(const std::string& path) {
  return parse_osu(read_input_file(path, "OSU micro-benchmark output"), path);
}

}  // namespace commstack::fit
