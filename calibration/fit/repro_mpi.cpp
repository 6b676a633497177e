#include "calibration/fit/repro_mpi.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::fit {

using namespace detail;

ReproMpiResult parse_repro_mpi(std::string_view text, const std::string& origin) {
  ReproMpiResult res;
  res.origin = origin;
  if (trim(text).empty()) throw InputError(fmt::format("{}: empty input, expected ReproMPI mpibenchmark output", origin));
  int col_test = -1, col_nrep = -1, col_count = -1, col_time = -1;
  std::size_t ncols = 0;
  for (const auto& ln : split_lines(text)) {
    std::string_view body = trim(strip_launcher_prefix(ln.text));
    if (body.empty()) continue;
    if (body.front() == '#') {
      if (body.size() > 2 && body[1] == '@') {
        auto eq = body.find('=');
        if (eq == std::string_view::npos) fail(origin, ln.number, "metadata line: expected '#@key=value'");
        std::string key(trim(body.substr(2, eq - 2)));
        std::string value(trim(body.substr(eq + 1)));
        if (key == "nprocs") {
          std::int64_t v = need_int(value, origin, ln.number, "#@nprocs");
          if (v <= 0 || v > 100000000) fail(origin, ln.number, "#@nprocs: expected a positive process count");
          res.nprocs = static_cast<int>(v);
        } else if (key == "datatype_size_bytes") {
          res.datatype_size_bytes = need_uint(value, origin, ln.number, "#@datatype_size_bytes");
        }
        res.meta[key] = value;
      }
      continue;
    }
    auto toks = split_ws(body);
    if (col_test < 0) {
      if (toks.empty() || toks[0] != "test") continue;  // launcher output before the header
      for (std::size_t i = 0; i < toks.size(); ++i) {
        if (toks[i] == "test") col_test = static_cast<int>(i);
        else if (toks[i] == "nrep") col_nrep = static_cast<int>(i);
        else if (toks[i] == "count" || toks[i] == "msize") col_count = static_cast<int>(i);
        else if (col_time < 0 && toks[i].size() > 4 && toks[i].substr(toks[i].size() - 4) == "_sec")
          col_time = static_cast<int>(i);
      }
      if (col_nrep < 0 || col_count < 0 || col_time < 0)
        fail(origin, ln.number,
             "header: expected the per-repetition columns 'test nrep count runtime_sec' "
             "(summary output from --summary is not supported)");
      ncols = toks.size();
      continue;
    }
    if (toks.size() != ncols)
      fail(origin, ln.number, fmt::format("expected a row with {} fields like 'MPI_Allreduce 0 1 0.0000109', got {}",
                                          ncols, toks.size()));
    ReproMpiSample s;
    s.line = ln.number;
    s.test = std::string(toks[static_cast<std::size_t>(col_test)]);
    s.nrep = need_int(toks[static_cast<std::size_t>(col_nrep)], origin, ln.number, "column 'nrep'");
    s.count = need_uint(toks[static_cast<std::size_t>(col_count)], origin, ln.number, "column 'count'");
    s.runtime_s = need_nonneg(toks[static_cast<std::size_t>(col_time)], origin, ln.number, "column 'runtime_sec'");
    res.samples.push_back(std::move(s));
  }
  if (col_test < 0)
    throw InputError(fmt::format("{}: no ReproMPI header line 'test nrep count runtime_sec' found", origin));
  if (res.samples.empty()) throw InputError(fmt::format("{}: no measurement rows after the header (truncated?)", origin));
  return res;
}

std::vector<ReproMpiResult::Summary> ReproMpiResult::summarize() const {
  std::vector<Summary> out;
  std::vector<std::vector<double>> values;
  for (const auto& s : samples) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Summary& x) { return x.test == s.test && x.count == s.count; });
    std::size_t idx;
    if (it == out.end()) {
      out.push_back({s.test, s.count, s.count * datatype_size_bytes, 0, 0, 0, 0});
      values.emplace_back();
      idx = out.size() - 1;
    } else {
      idx = static_cast<std::size_t>(it - out.begin());
    }
    values[idx].push_back(s.runtime_s);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& v = values[i];
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    out[i].n = static_cast<int>(v.size());
    out[i].mean_s = sum / static_cast<double>(v.size());
    out[i].min_s = v.front();
    out[i].median_s = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  return out;
}

ReproMpiResult parse_repro_mpi_file(const std::string& path) {
  return parse_repro_mpi(read_input_file(path, "ReproMPI output"), path);
}

}  // namespace commstack::fit
