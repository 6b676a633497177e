#include "sim/sweep/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/input_file.hpp"

namespace commstack::sim::sweep {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kFormat = "commstack-sweep-results 1";

std::string read_text(const fs::path& file) {
  return read_input_file(file.string(), "sweep results file");
}

void write_atomically(const fs::path& file, const std::string& text) {
  const fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw InputError(fmt::format("{}: cannot write", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) throw InputError(fmt::format("{}: cannot rename to {}: {}", tmp.string(), file.string(), ec.message()));
}

std::string restart_hint(const fs::path& dir) {
  return fmt::format("use another --output directory, or --restart to discard the results in {}", dir.string());
}

// RFC 4180 cell: quoted when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_value(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// Scalar leaves of a result as dotted names; arrays (per-op breakdowns) stay in results.jsonl only.
void flatten(const ojson& v, const std::string& prefix, std::vector<std::pair<std::string, ojson>>& out) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.items())
      flatten(child, prefix.empty() ? k : fmt::format("{}.{}", prefix, k), out);
  } else if (!v.is_array()) {
    out.emplace_back(prefix, v);
  }
}

// {pointer: value}: the same point whether its paths are written "a.b" or "/a/b".
json canonical(const ojson& point, const std::string& where) {
  json out = json::object();
  for (const auto& [path, value] : point.items()) out[to_pointer(path, where + ": /point").to_string()] = json(value);
  return out;
}

}  // namespace

Row make_row(const Point& point, const PointOutcome& outcome) {
  Row row;
  row["index"] = point.index;
  row["id"] = point.id;
  row["point"] = point.overrides;
  row["status"] = to_string(outcome.status);
  if (outcome.status == PointStatus::ok) {
    try {
      row["result"] = ojson::parse(outcome.payload);
    } catch (const ojson::parse_error& e) {
      row["status"] = to_string(PointStatus::failed);
      row["error"] = fmt::format("the point returned a result that is not JSON: {}", e.what());
    }
  } else {
    row["error"] = outcome.payload;
  }
  if (!outcome.log.empty()) row["stderr"] = outcome.log;
  return row;
}

void read_rows(const std::string& text, const std::string& origin, const std::vector<Point>& points,
               StoredRows& into) {
  std::unordered_map<std::string, std::size_t> index_of;
  for (const auto& p : points) index_of.emplace(p.id, p.index);
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // an unfinished last line: the run was killed while writing it
    const std::string line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = fmt::format("{} line {}", origin, line_no);
    ojson row;
    try {
      row = ojson::parse(line);
    } catch (const ojson::parse_error& e) {
      throw InputError(fmt::format("{}: not valid JSON ({}); the file was edited or damaged", where, e.what()));
    }
    if (!row.is_object() || !row.contains("id") || !row["id"].is_string() || !row.contains("point") ||
        !row["point"].is_object() || !row.contains("status") || !row["status"].is_string()) {
      throw InputError(fmt::format("{}: expected a sweep result row with id, point and status", where));
    }
    const std::string status = row["status"].get<std::string>();
    if (status != "ok" && status != "invalid" && status != "failed") {
      throw InputError(fmt::format("{}: /status: unknown '{}'; expected ok, invalid or failed", where, status));
    }
    const auto it = index_of.find(row["id"].get<std::string>());
    if (it == index_of.end()) {
      ++into.dropped;
      continue;
    }
    const Point& p = points[it->second];
    if (canonical(row["point"], where) != canonical(p.overrides, where)) {
      throw InputError(fmt::format("{}: /point: {} has the id of grid point {} {} but other values; {}", where,
                                   row["point"].dump(), p.index, p.overrides.dump(), "the file was edited or damaged"));
    }
    if (status == "failed") {
      ++into.retried;
      continue;
    }
    if (into.by_index.contains(p.index)) continue;  // the same point from two journals
    row["index"] = p.index;  // the point's place in the current grid
    into.by_index.emplace(p.index, std::move(row));
  }
}

StoredRows open_output(const fs::path& dir, const SweepSpec& spec, const std::vector<Point>& points, bool restart) {
  std::error_code ec;
  const fs::path manifest_file = dir / "manifest.json";
  const fs::path journal_file = dir / "points.jsonl";
  const fs::path parts = dir / "parts";
  if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw InputError(fmt::format("--output {}: exists and is not a directory", dir.string()));
  }
  const bool has_results = fs::exists(manifest_file) || fs::exists(journal_file);
  if (!has_results && fs::exists(dir) && !fs::is_empty(dir)) {
    throw InputError(fmt::format("--output {}: a directory with other files and no sweep results; expected a new or "
                                 "empty directory, or the output of an earlier run of this sweep",
                                 dir.string()));
  }
  if (restart) {
    for (const auto& f : {manifest_file, journal_file, dir / "results.jsonl", dir / "results.csv"}) fs::remove(f, ec);
    fs::remove_all(parts, ec);
  }
  fs::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("--output {}: cannot create the directory: {}", dir.string(), ec.message()));

  ojson manifest;
  manifest["format"] = kFormat;
  manifest["sweep"] = spec.origin;
  manifest["base"] = spec.base_origin;
  manifest["base_fingerprint"] = base_fingerprint(spec);
  StoredRows stored;
  if (fs::exists(manifest_file)) {
    ojson old;
    try {
      old = ojson::parse(read_text(manifest_file));
    } catch (const ojson::parse_error& e) {
      throw InputError(fmt::format("{}: not valid JSON ({}); {}", manifest_file.string(), e.what(), restart_hint(dir)));
    }
    if (!old.is_object() || old.value("format", "") != kFormat) {
      throw InputError(fmt::format("{}: /format: expected \"{}\"; {}", manifest_file.string(), kFormat, restart_hint(dir)));
    }
    if (old.value("base_fingerprint", "") != manifest["base_fingerprint"]) {
      throw InputError(fmt::format("{}: the results there were computed from another base job ({} in {}, "
                                   "fingerprint {}; now {} in {}): the sweep changed since; {}",
                                   manifest_file.string(), old.value("base", "?"), old.value("sweep", "?"),
                                   old.value("base_fingerprint", "?"), manifest["base_fingerprint"].get<std::string>(),
                                   spec.origin, restart_hint(dir)));
    }
  } else if (fs::exists(journal_file)) {
    throw InputError(fmt::format("{}: missing next to {}; {}", manifest_file.string(), journal_file.string(),
                                 restart_hint(dir)));
  } else {
    write_atomically(manifest_file, manifest.dump(2) + "\n");
  }

  if (fs::exists(journal_file)) {
    std::string text = read_text(journal_file);
    const std::size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (keep < text.size()) {
      // Cut the unfinished line so that the next append starts on a line of its own.
      fs::resize_file(journal_file, keep, ec);
      if (ec) throw InputError(fmt::format("{}: cannot truncate an unfinished last line: {}", journal_file.string(), ec.message()));
      text.resize(keep);
    }
    read_rows(text, journal_file.string(), points, stored);
  }
  if (fs::is_directory(parts)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(parts)) {
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) read_rows(read_text(f), f.string(), points, stored);
  }
  return stored;
}

Journal::Journal(const fs::path& file) : file_(file) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open for appending: {}", file.string(), std::strerror(errno)));
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const Row& row) {
  const std::string line = row.dump() + "\n";
  const char* data = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("{}: write failed: {}", file_.string(), std::strerror(errno)));
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string results_jsonl(const std::vector<Row>& rows) {
  std::string out;
  for (const auto& r : rows) out += r.dump() + "\n";
  return out;
}

std::string results_csv(const SweepSpec& spec, const std::vector<Row>& rows) {
  std::vector<std::string> axis_paths;
  for (const auto& g : spec.groups) {
    for (const auto& a : g.axes) axis_paths.push_back(a.path);
  }
  // Result columns: the union over rows, in order of first appearance (rows are sorted by index).
  std::vector<std::string> columns;
  std::set<std::string> seen;
  std::vector<std::vector<std::pair<std::string, ojson>>> flat(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].contains("result")) flatten(rows[i]["result"], "", flat[i]);
    for (const auto& [k, v] : flat[i]) {
      if (seen.insert(k).second) columns.push_back(k);
    }
  }
  std::string out = "index,id";
  for (const auto& p : axis_paths) out += "," + csv_cell(p);
  out += ",status";
  for (const auto& c : columns) out += "," + csv_cell(c);
  out += ",error\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out += fmt::format("{},{}", r["index"].get<std::size_t>(), r["id"].get<std::string>());
    for (const auto& p : axis_paths) out += "," + csv_cell(csv_value(r["point"].value(p, ojson())));
    out += "," + r["status"].get<std::string>();
    std::map<std::string, const ojson*> cells;
    for (const auto& [k, v] : flat[i]) cells[k] = &v;
    for (const auto& c : columns) {
      const auto it = cells.find(c);
      out += "," + (it == cells.end() ? std::string() : csv_cell(csv_value(*it->second)));
    }
    out += "," + csv_cell(r.contains("error") ? r["error"].get<std::string>() : std::string()) + "\n";
  }
  return out;
}

void write_results(const fs::path& dir, const SweepSpec& spec, const std::vector<Row>& rows) {
  write_atomically(dir / "results.jsonl", results_jsonl(rows));
  write_atomically(dir / "results.csv", results_csv(spec, rows));
}

}  // namespace commstack::sim::sweep
