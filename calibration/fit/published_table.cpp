#include "calibration/fit/published_table.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "sim/algorithms/collective.hpp"

namespace commstack::fit {
namespace {

using detail::fail;
using detail::lower;
using detail::printable;
using detail::trim;

struct Csv {
  int header_line = 0;
  std::vector<std::string> columns;
  struct Row {
    int line = 0;
    std::vector<std::string_view> cells;
  };
  std::vector<Row> rows;

  // Index of `name` (case-insensitive), or -1.
  int find(std::string_view name) const {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (detail::equals_ci(columns[i], name)) return static_cast<int>(i);
    return -1;
  }
  std::size_t need(std::string_view name, std::string_view origin, std::string_view format) const {
    const int i = find(name);
    if (i < 0)
      fail(origin, header_line,
           fmt::format("header: expected a column '{}' (the {} table format), got '{}'", name, format,
                       printable(fmt::format("{}", fmt::join(columns, ",")))));
    return static_cast<std::size_t>(i);
  }
};

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const auto comma = text.find(',', pos);
    out.push_back(
        trim(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos)));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// Non-comment, non-blank lines; the first is the header. Every row must have the header's width.
Csv read_csv(std::string_view text, std::string_view origin) {
  Csv csv;
  for (const auto& ln : detail::split_lines(text)) {
    const auto t = trim(ln.text);
    if (t.empty() || t.front() == '#') continue;
    if (t.find('"') != std::string_view::npos)
      fail(origin, ln.number, "expected plain comma-separated values (quoted fields are not supported)");
    auto cells = split_commas(t);
    if (csv.columns.empty()) {
      csv.header_line = ln.number;
      for (auto c : cells) csv.columns.emplace_back(c);
      continue;
    }
    if (cells.size() != csv.columns.size())
      fail(origin, ln.number,
           fmt::format("expected {} comma-separated fields like the header on line {}, got {}",
                       csv.columns.size(), csv.header_line, cells.size()));
    csv.rows.push_back({ln.number, std::move(cells)});
  }
  if (csv.columns.empty())
    throw InputError(fmt::format("{}: no header line, expected a published-table CSV", origin));
  return csv;
}

// Half a unit of the last printed digit: "0.06" -> 0.005, "12" -> 0.5.
double rounding_bound(std::string_view token) {
  const auto dot = token.find('.');
  int decimals = 0;
  if (dot != std::string_view::npos) {
    for (std::size_t i = dot + 1; i < token.size() && token[i] >= '0' && token[i] <= '9'; ++i) ++decimals;
  }
  return 0.5 * std::pow(10.0, -decimals);
}

// nccl-tests' busbw = algbw x this; 1 (busbw = algbw) for ops the simulator does not model.
double bus_factor(NcclTestsOp op, int ranks) {
  const auto c = collective_op_of(op);
  return c ? sim::bus_bandwidth_factor(*c, ranks) : 1.0;
}

// Adds `item` to a ", "-separated list of the distinct values a column holds (for error messages).
void add_distinct(std::string& list, std::string_view item) {
  for (const auto part : split_commas(list))
    if (part == item) return;
  list += (list.empty() ? "" : ", ") + std::string(item);
}

struct Point {
  int line = 0;
  std::string_view size_field, value_field;
  std::string_view size_text, value_text;
  bool is_latency = false;  // the value is a time in us, not a busbw in GB/s
};

// Turns the selected points into rows (busbw -> time through the op's bus factor), dropping those
// the rounding of the printed value leaves uncertain by more than kMaxRoundingFraction.
void add_points(PublishedTableRun& out, const std::vector<Point>& points, int ranks,
                const std::string& origin) {
  const double bf = bus_factor(out.result.op, ranks);
  if (ranks > 1 && !(bf > 0))
    throw InputError(
        fmt::format("{}: a bus factor of 0 for {} ranks of {}", origin, ranks, to_string(out.result.op)));
  for (const auto& p : points) {
    const std::uint64_t bytes = published_size_label(p.size_text, origin, p.line, p.size_field);
    const double v = detail::need_double(p.value_text, origin, p.line, p.value_field);
    if (!(v > 0))
      fail(origin, p.line,
           fmt::format("{}: expected a {} > 0, got '{}'", p.value_field,
                       p.is_latency ? "time" : "bus bandwidth", printable(p.value_text)));
    if (!p.is_latency && ranks == 1)
      fail(origin, p.line,
           fmt::format("{}: a bus bandwidth on one rank has no bus factor to undo", p.value_field));
    const double uncertain = rounding_bound(p.value_text) / v;
    if (uncertain > kMaxRoundingFraction) {
      out.notes.push_back(
          fmt::format("{}:{}: dropped size {}: {} {} printed as '{}' is only known to {:.1f}% "
                      "(rounding; the limit is {:.0f}%)",
                      origin, p.line, bytes, p.value_field, p.is_latency ? "us" : "GB/s", p.value_text,
                      100 * uncertain, 100 * kMaxRoundingFraction));
      continue;
    }
    NcclTestsTiming t;
    if (p.is_latency) {
      t.time_us = v;
      t.algbw_GBps = static_cast<double>(bytes) / (v * 1e3);
      t.busbw_GBps = *t.algbw_GBps * bf;
    } else {
      t.busbw_GBps = v;
      t.algbw_GBps = v / bf;
      t.time_us = static_cast<double>(bytes) / (*t.algbw_GBps * 1e3);
    }
    if (bytes > 0 && !detail::plausible_time_us(t.time_us))  // a time, or a bandwidth, no call can have
      fail(origin, p.line,
           fmt::format("{}: '{}' gives a time per call of {:g} us; expected {}", p.value_field,
                       printable(p.value_text), t.time_us, detail::plausible_time_text()));
    NcclTestsRow row;
    row.line = p.line;
    row.size_bytes = bytes;
    row.out_of_place = t;
    out.result.rows.push_back(row);
  }
  if (out.result.rows.empty())
    throw InputError(
        fmt::format("{}: the selected series has no point left ({} dropped by the rounding rule)", origin,
                    out.notes.size()));
}

int checked_ranks(const PublishedTableSelection& sel, std::optional<int> table_ranks,
                  const std::string& origin, int line) {
  if (sel.nodes && sel.gpus_per_node) {
    if (*sel.nodes < 1 || *sel.gpus_per_node < 1 ||
        static_cast<long long>(*sel.nodes) * *sel.gpus_per_node > 100'000'000)
      throw InputError(
          fmt::format("{}: nodes and GPUs per node must be >= 1 (and at most 1e8 ranks), got {} x {}", origin,
                      *sel.nodes, *sel.gpus_per_node));
    const int spec = *sel.nodes * *sel.gpus_per_node;
    if (table_ranks && *table_ranks != spec)
      fail(origin, line,
           fmt::format("the table gives {} ranks but nodes x GPUs per node = {} x {}", *table_ranks,
                       *sel.nodes, *sel.gpus_per_node));
    return spec;
  }
  if (table_ranks) return *table_ranks;
  throw InputError(
      fmt::format("{}: the table does not say how many ranks ran: pass nodes=N,gpus_per_node=G", origin));
}

NcclTestsOp need_op(const PublishedTableSelection& sel, const std::string& origin, std::string_view choices) {
  if (sel.op == NcclTestsOp::unknown)
    throw InputError(
        fmt::format("{}: say which collective with op=NAME (this table holds {})", origin, choices));
  return sel.op;
}

// message_size_label,<a>_busbw_GBps,<b>_busbw_GBps,...
PublishedTableRun parse_busbw_series(const Csv& csv, const std::string& origin,
                                     const PublishedTableSelection& sel) {
  PublishedTableRun out;
  out.format = PublishedTableFormat::busbw_series;
  std::string names;
  for (std::size_t i = 1; i < csv.columns.size(); ++i) names += (names.empty() ? "" : ", ") + csv.columns[i];
  if (!sel.series)
    throw InputError(fmt::format("{}: say which column with series=NAME (one of {})", origin, names));
  const int col = csv.find(*sel.series);
  if (col <= 0)
    throw InputError(
        fmt::format("{}: series \"{}\": no such column (expected one of {})", origin, *sel.series, names));
  if (sel.config)
    throw InputError(
        fmt::format("{}: config=... selects rows of the multi-op and peak-summary tables; this one has "
                    "only series (columns)",
                    origin));
  out.result.op = need_op(sel, origin, "one collective per column, the file does not say which");
  out.result.op_source = "explicit";
  const int ranks = checked_ranks(sel, std::nullopt, origin, csv.header_line);
  std::vector<Point> points;
  for (const auto& r : csv.rows)
    points.push_back({r.line, csv.columns[0], csv.columns[static_cast<std::size_t>(col)], r.cells[0],
                      r.cells[static_cast<std::size_t>(col)], false});
  add_points(out, points, ranks, origin);
  return out;
}

// config,nodes,gpus_per_node,metric,message_size,nccl_<op>,...
PublishedTableRun parse_multi_op(const Csv& csv, const std::string& origin,
                                 const PublishedTableSelection& sel) {
  constexpr std::string_view kFormat = "multi-op";
  PublishedTableRun out;
  out.format = PublishedTableFormat::multi_op;
  const auto c_config = csv.need("config", origin, kFormat), c_nodes = csv.need("nodes", origin, kFormat),
             c_gpus = csv.need("gpus_per_node", origin, kFormat),
             c_metric = csv.need("metric", origin, kFormat),
             c_size = csv.need("message_size", origin, kFormat);
  std::string ops;
  int col = -1;
  for (std::size_t i = 0; i < csv.columns.size(); ++i) {
    const std::string name = lower(csv.columns[i]);
    if (name.rfind("nccl_", 0) != 0) continue;
    ops += (ops.empty() ? "" : ", ") + name.substr(5);
    if (sel.op != NcclTestsOp::unknown && nccl_tests_op_from_name(name.substr(5)) == sel.op)
      col = static_cast<int>(i);
  }
  std::string configs;
  for (const auto& r : csv.rows) add_distinct(configs, r.cells[c_config]);
  if (sel.series)
    throw InputError(fmt::format(
        "{}: series=... selects a column of a busbw-series table; here say config=NAME,op=NAME", origin));
  if (!sel.config)
    throw InputError(fmt::format("{}: say which rows with config=NAME (one of {})", origin, configs));
  out.result.op = need_op(sel, origin, ops);
  out.result.op_source = "explicit";
  if (col < 0)
    throw InputError(fmt::format("{}: op {}: no nccl_<op> column for it (expected one of {})", origin,
                                 to_string(sel.op), ops));
  std::optional<int> nodes, gpus;
  int first_line = 0;
  std::vector<Point> points;
  for (const auto& r : csv.rows) {
    if (!detail::equals_ci(r.cells[c_config], *sel.config)) continue;
    const int n = static_cast<int>(detail::need_int(r.cells[c_nodes], origin, r.line, "nodes"));
    const int g = static_cast<int>(detail::need_int(r.cells[c_gpus], origin, r.line, "gpus_per_node"));
    if (n < 1 || g < 1 || n > 1000000 || g > 1024)
      fail(origin, r.line, fmt::format("nodes, gpus_per_node: expected >= 1, got {} and {}", n, g));
    if (nodes && (*nodes != n || *gpus != g))
      fail(origin, r.line,
           fmt::format("config {}: {} x {} GPUs here but {} x {} on line {}", *sel.config, n, g, *nodes,
                       *gpus, first_line));
    nodes = n;
    gpus = g;
    if (!first_line) first_line = r.line;
    const std::string metric = lower(r.cells[c_metric]);
    if (metric != "latency_us" && metric != "busbw_gbps")
      fail(origin, r.line,
           fmt::format("metric: expected latency_us or busbw_GBps, got '{}'", printable(r.cells[c_metric])));
    points.push_back({r.line, "message_size", csv.columns[static_cast<std::size_t>(col)], r.cells[c_size],
                      r.cells[static_cast<std::size_t>(col)], metric == "latency_us"});
  }
  if (points.empty())
    throw InputError(
        fmt::format("{}: config \"{}\": no such rows (expected one of {})", origin, *sel.config, configs));
  const int ranks = checked_ranks(sel, *nodes * *gpus, origin, first_line);
  if (sel.nodes && sel.gpus_per_node && (*sel.nodes != *nodes || *sel.gpus_per_node != *gpus))
    fail(origin, first_line,
         fmt::format("the table gives {} nodes x {} GPUs but the run spec says {} x {}", *nodes, *gpus,
                     *sel.nodes, *sel.gpus_per_node));
  out.result.n_hosts = *nodes;
  out.result.gpus_per_node = *gpus;
  out.result.n_ranks = ranks;
  out.result.ranks_complete = true;
  add_points(out, points, ranks, origin);
  return out;
}

// collective,ranks,scope,peak_busbw_GBps,at_size[,...]
PublishedTableRun parse_peak_summary(const Csv& csv, const std::string& origin,
                                     const PublishedTableSelection& sel) {
  constexpr std::string_view kFormat = "peak-summary";
  PublishedTableRun out;
  out.format = PublishedTableFormat::peak_summary;
  const auto c_coll = csv.need("collective", origin, kFormat), c_ranks = csv.need("ranks", origin, kFormat),
             c_scope = csv.need("scope", origin, kFormat),
             c_peak = csv.need("peak_busbw_GBps", origin, kFormat),
             c_size = csv.need("at_size", origin, kFormat);
  std::string scopes, colls;
  for (const auto& r : csv.rows) {
    add_distinct(scopes, r.cells[c_scope]);
    add_distinct(colls, r.cells[c_coll]);
  }
  if (sel.series)
    throw InputError(fmt::format(
        "{}: series=... selects a column of a busbw-series table; here say config=SCOPE,op=NAME", origin));
  if (!sel.config)
    throw InputError(fmt::format("{}: say which scope with config=SCOPE (one of {})", origin, scopes));
  out.result.op = need_op(sel, origin, colls);
  out.result.op_source = "explicit";
  const Csv::Row* hit = nullptr;
  bool scope_seen = false;
  for (const auto& r : csv.rows) {
    if (!detail::equals_ci(r.cells[c_scope], *sel.config)) continue;
    scope_seen = true;
    // Exact name: "alltoall_v2" (a second, differently configured run) is not "alltoall".
    if (lower(r.cells[c_coll]) != to_string(sel.op)) continue;
    if (hit)
      fail(origin, r.line,
           fmt::format("{} {}: a second row (first on line {})", *sel.config, to_string(sel.op), hit->line));
    hit = &r;
  }
  if (!scope_seen)
    throw InputError(
        fmt::format("{}: config \"{}\": no such scope (expected one of {})", origin, *sel.config, scopes));
  if (!hit)
    throw InputError(fmt::format("{}: no {} row in scope {} (collectives: {})", origin, to_string(sel.op),
                                 *sel.config, colls));
  const auto table_ranks = detail::need_int(hit->cells[c_ranks], origin, hit->line, "ranks");
  if (table_ranks < 1 || table_ranks > 1000000)
    fail(origin, hit->line, fmt::format("ranks: expected >= 1, got {}", table_ranks));
  const int ranks = checked_ranks(sel, static_cast<int>(table_ranks), origin, hit->line);
  out.result.n_ranks = ranks;
  out.result.ranks_complete = true;
  // "intra-node" says one node; any other scope leaves the node count to the run spec.
  if (detail::equals_ci(hit->cells[c_scope], "intra-node")) {
    out.result.n_hosts = 1;
    out.result.gpus_per_node = ranks;
  }
  add_points(out, {{hit->line, "at_size", "peak_busbw_GBps", hit->cells[c_size], hit->cells[c_peak], false}},
             ranks, origin);
  return out;
}

std::string_view first_data_line(std::string_view text) {
  for (const auto& ln : detail::split_lines(text)) {
    const auto t = trim(ln.text);
    if (!t.empty() && t.front() != '#') return t;
  }
  return {};
}

}  // namespace

std::string to_string(PublishedTableFormat format) {
  switch (format) {
    case PublishedTableFormat::busbw_series: return "busbw-series";
    case PublishedTableFormat::multi_op: return "multi-op";
    case PublishedTableFormat::peak_summary: return "peak-summary";
    case PublishedTableFormat::none: break;
  }
  return "none";
}

PublishedTableFormat published_table_format(std::string_view text) {
  const auto header = split_commas(first_data_line(text));
  if (header.empty()) return PublishedTableFormat::none;
  const std::string first = lower(header[0]);
  if (first == "message_size_label" && header.size() >= 2) return PublishedTableFormat::busbw_series;
  if (first == "config" && header.size() >= 6) return PublishedTableFormat::multi_op;
  if (first == "collective" && header.size() >= 5) return PublishedTableFormat::peak_summary;
  return PublishedTableFormat::none;
}

bool is_published_table(const std::string& path) {
  try {
    return published_table_format(read_input_file(path)) != PublishedTableFormat::none;
  } catch (const InputError&) {
    return false;
  }
}

PublishedTableRun parse_published_table(std::string_view text, const std::string& origin,
                                        const PublishedTableSelection& selection) {
  const auto format = published_table_format(text);
  if (format == PublishedTableFormat::none)
    throw InputError(
        fmt::format("{}: not a published-table CSV (expected a header starting message_size_label, "
                    "config or collective)",
                    origin));
  const Csv csv = read_csv(text, origin);
  PublishedTableRun out;
  switch (format) {
    case PublishedTableFormat::busbw_series: out = parse_busbw_series(csv, origin, selection); break;
    case PublishedTableFormat::multi_op: out = parse_multi_op(csv, origin, selection); break;
    case PublishedTableFormat::peak_summary: out = parse_peak_summary(csv, origin, selection); break;
    case PublishedTableFormat::none: break;
  }
  out.result.origin = origin;
  return out;
}

PublishedTableRun load_published_table(const std::string& path, const PublishedTableSelection& selection) {
  return parse_published_table(read_input_file(path, "published table"), path, selection);
}

std::uint64_t published_size_label(std::string_view label, std::string_view origin, int line,
                                   std::string_view field) {
  const auto t = trim(label);
  std::size_t split = 0;
  while (split < t.size() && ((t[split] >= '0' && t[split] <= '9') || t[split] == '.')) ++split;
  double number = 0;
  if (split == 0 || !detail::to_double(t.substr(0, split), number) || !(number > 0))
    fail(origin, line,
         fmt::format("{}: expected a size like 65K, 1G or 16.00 GiB, got '{}'", field, printable(label)));
  std::string unit = lower(trim(t.substr(split)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "GiB", "GB", "KB" -> "gi", "g", "k"
  const bool binary = !unit.empty() && unit.back() == 'i';
  if (binary) unit.pop_back();
  static const std::map<std::string, int> kPower{{"", 0}, {"k", 1}, {"m", 2}, {"g", 3}, {"t", 4}};
  const auto it = kPower.find(unit);
  if (it == kPower.end())
    fail(origin, line,
         fmt::format("{}: expected a size unit K, M, G, T (or KiB, MiB, GiB, TiB), got '{}'", field,
                     printable(label)));
  const double bin = number * std::pow(1024.0, it->second);
  if (bin > 1e15)
    fail(origin, line, fmt::format("{}: size '{}' is larger than 1 PB", field, printable(label)));
  if (binary || it->second == 0) {
    if (bin != std::floor(bin) || bin < 1)
      fail(origin, line,
           fmt::format("{}: expected a whole number of bytes, got '{}'", field, printable(label)));
    return static_cast<std::uint64_t>(bin);
  }
  // Decimal-ish abbreviation: the nearest power of two, within 10% of either reading of the label.
  const double dec = number * std::pow(1000.0, it->second);
  const double p = std::exp2(std::round(std::log2(std::sqrt(dec * bin))));
  if (std::fabs(p / dec - 1) > 0.1 && std::fabs(p / bin - 1) > 0.1)
    fail(origin, line,
         fmt::format(
             "{}: '{}' is not an abbreviation of a power of two (nearest {:.0f}); expected a sweep size",
             field, printable(label), p));
  return static_cast<std::uint64_t>(p);
}

}  // namespace commstack::fit
