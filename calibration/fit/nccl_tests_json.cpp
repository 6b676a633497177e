#include "calibration/fit/nccl_tests_json.hpp"

#include <fmt/format.h>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/json_input.hpp"

namespace commstack::fit {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& origin, const std::string& path, const std::string& expected) {
  throw InputError(fmt::format("{}: {}: expected {}", origin, path, expected));
}

const json* member(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

double number(const json& v, const std::string& origin, const std::string& path) {
  // nccl-tests writes a NaN as the string "nan".
  if (!v.is_number() || !std::isfinite(v.get<double>())) bad(origin, path, "a finite number");
  return v.get<double>();
}

std::int64_t integer(const json& v, const std::string& origin, const std::string& path) {
  if (!v.is_number_integer()) bad(origin, path, "an integer");
  // An unsigned value above INT64_MAX would wrap to a negative one.
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    bad(origin, path, "an integer below 2^63");
  return v.get<std::int64_t>();
}

// An integer field narrowed to int: range-checked first (as the text log's rank lines and run
// header are), so 2^40 is refused rather than truncated to 0.
int bounded(const json& v, const std::string& origin, const std::string& path, std::int64_t lo,
            std::int64_t hi) {
  const std::int64_t x = integer(v, origin, path);
  if (x < lo || x > hi) bad(origin, path, fmt::format("an integer from {} to {}, got {}", lo, hi, x));
  return static_cast<int>(x);
}

std::uint64_t nonnegative(const json& v, const std::string& origin, const std::string& path) {
  const std::int64_t x = integer(v, origin, path);
  if (x < 0) bad(origin, path, fmt::format("a byte count >= 0, got {}", x));
  return static_cast<std::uint64_t>(x);
}

std::string text(const json& v, const std::string& origin, const std::string& path) {
  if (!v.is_string()) bad(origin, path, "a string");
  return v.get<std::string>();
}

std::optional<NcclTestsTiming> timing(const json& row, const char* key, const std::string& origin,
                                      const std::string& at) {
  const json* t = member(row, key);
  if (t == nullptr) return std::nullopt;  // nccl-tests writes null for a half it did not run
  const std::string path = at + "." + key;
  if (!t->is_object()) bad(origin, path, "an object with time, alg_bw, bus_bw, nwrong");
  NcclTestsTiming out;
  const json* time = member(*t, "time");
  if (time == nullptr) time = member(*t, "cpu_time");
  if (time == nullptr) bad(origin, path + ".time", "the time per call in us");
  out.time_us = number(*time, origin, path + ".time");
  if (out.time_us < 0) bad(origin, path + ".time", "a time >= 0");
  if (const json* a = member(*t, "alg_bw")) out.algbw_GBps = number(*a, origin, path + ".alg_bw");
  if (const json* b = member(*t, "bus_bw")) out.busbw_GBps = number(*b, origin, path + ".bus_bw");
  if (const json* w = member(*t, "nwrong")) {
    const double wrong = number(*w, origin, path + ".nwrong");
    if (wrong < 0) bad(origin, path + ".nwrong", "a count >= 0");
    out.wrong = static_cast<std::int64_t>(wrong);
  }
  return out;
}

// The environment: NCCL settings of the run, as the text log's "set by environment" lines.
void read_env(const json& doc, const std::string& origin, NcclTestsResult& res) {
  if (const json* env = member(doc, "env")) {
    if (!env->is_array()) bad(origin, "env", "the environment as a list of NAME=value strings");
    for (std::size_t i = 0; i < env->size(); ++i) {
      const std::string kv = text(env->at(i), origin, fmt::format("env[{}]", i));
      const auto eq = kv.find('=');
      if (eq == std::string::npos || kv.rfind("NCCL_", 0) != 0) continue;
      res.env.emplace(kv.substr(0, eq), NcclTestsEnvSetting{kv.substr(eq + 1), 0});
    }
  }
}

// The run header ("config"): threads, GPUs per thread, iterations, sizes.
void read_config(const json& doc, const std::string& origin, NcclTestsResult& res) {
  if (const json* cfg = member(doc, "config")) {
    if (!cfg->is_object()) bad(origin, "config", "an object (the run header)");
    res.run.present = true;
    const auto opt_int = [&](const char* key, std::optional<int>& out) {
      if (const json* v = member(*cfg, key))
        out = bounded(*v, origin, fmt::format("config.{}", key), 0, 1000000000);
    };
    opt_int("nthreads", res.run.n_thread);
    opt_int("ngpus", res.run.n_gpus);
    opt_int("warmup_iters", res.run.warmup_iters);
    opt_int("iterations", res.run.iters);
    opt_int("aggregated_iterations", res.run.agg_iters);
    opt_int("validation", res.run.validation);
    opt_int("graph", res.run.graph);
    if (const json* v = member(*cfg, "minimum_bytes"))
      res.run.min_bytes = nonnegative(*v, origin, "config.minimum_bytes");
    if (const json* v = member(*cfg, "maximum_bytes"))
      res.run.max_bytes = nonnegative(*v, origin, "config.maximum_bytes");
  }
}

// The ranks ("devices"), as the text log's rank lines.
void read_devices(const json& doc, const std::string& origin, NcclTestsResult& res) {
  if (const json* devices = member(doc, "devices")) {
    if (!devices->is_array()) bad(origin, "devices", "a list of ranks");
    for (std::size_t i = 0; i < devices->size(); ++i) {
      const json& d = devices->at(i);
      const std::string at = fmt::format("devices[{}]", i);
      if (!d.is_object()) bad(origin, at, "an object (rank, hostname, device, device_info)");
      NcclTestsRank r;
      r.rank = bounded(d.value("rank", json()), origin, at + ".rank", 0, 10000000);
      if (const json* g = member(d, "group")) r.group = bounded(*g, origin, at + ".group", 0, 10000000);
      if (const json* p = member(d, "pid")) r.pid = integer(*p, origin, at + ".pid");
      r.host = text(d.value("hostname", json()), origin, at + ".hostname");
      if (const json* dev = member(d, "device")) r.device = bounded(*dev, origin, at + ".device", 0, 1000000);
      if (const json* hex = member(d, "device_hex")) r.busid = text(*hex, origin, at + ".device_hex");
      if (const json* info = member(d, "device_info"))
        r.gpu_name = std::string(detail::trim(text(*info, origin, at + ".device_info")));
      for (const auto& seen : res.ranks)
        if (seen.rank == r.rank)
          bad(origin, at + ".rank", fmt::format("a rank listed once (rank {} is listed twice)", r.rank));
      res.ranks.push_back(std::move(r));
    }
  }
}

// One result row (`at`: its path in the document, for errors).
NcclTestsRow read_row(const json& r, const std::string& origin, const std::string& at) {
  if (!r.is_object()) bad(origin, at, "an object (size, count, type, redop, root, out_of_place, in_place)");
  NcclTestsRow row;
  const std::int64_t size = integer(r.value("size", json()), origin, at + ".size");
  if (size < 0) bad(origin, at + ".size", "bytes >= 0");
  row.size_bytes = static_cast<std::uint64_t>(size);
  if (const json* c = member(r, "count")) {
    const std::int64_t count = integer(*c, origin, at + ".count");
    if (count < 0) bad(origin, at + ".count", "elements >= 0");
    row.count = static_cast<std::uint64_t>(count);
  }
  if (const json* t = member(r, "type")) row.type = text(*t, origin, at + ".type");
  if (const json* o = member(r, "redop"))
    row.redop = std::string(detail::trim(text(*o, origin, at + ".redop")));
  if (const json* rt = member(r, "root")) {
    // Printed as a padded string ("    -1"), as in the text table.
    std::int64_t root = 0;
    const std::string s = rt->is_string() ? std::string(detail::trim(rt->get<std::string>())) : std::string();
    if (rt->is_number_integer())
      root = rt->get<std::int64_t>();
    else if (!detail::to_int64(s, root))
      bad(origin, at + ".root", "an integer (-1 when not rooted)");
    row.root = root;
  }
  row.out_of_place = timing(r, "out_of_place", origin, at);
  row.in_place = timing(r, "in_place", origin, at);
  if (!row.out_of_place && !row.in_place) bad(origin, at, "an out_of_place or in_place timing");
  // A row that moves data must have taken a plausible time (0-byte rows are left out later).
  for (const auto& [timing, key] :
       {std::pair{&row.out_of_place, "out_of_place"}, std::pair{&row.in_place, "in_place"}})
    if (row.size_bytes > 0 && *timing && !detail::plausible_time_us((*timing)->time_us))
      bad(origin, fmt::format("{}.{}.time", at, key),
          fmt::format("{}, got {:g}", detail::plausible_time_text(), (*timing)->time_us));
  row.line = 0;
  return row;
}

}  // namespace

bool looks_like_nccl_tests_json(std::string_view text) {
  // By its shape, not a full parse: a malformed file of this kind should get the JSON reader's
  // error, not the text parser's.
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  return text.find("\"results\"") != std::string_view::npos &&
         (text.find("\"config\"") != std::string_view::npos ||
          text.find("\"devices\"") != std::string_view::npos);
}

NcclTestsResult parse_nccl_tests_json(std::string_view input, const std::string& origin,
                                      NcclTestsOp op_hint) {
  json doc;
  try {
    doc = parse_input_json<json>(input, origin);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number that overflows
    throw InputError(fmt::format("{}: malformed JSON (nccl-tests -J output expected): {}", origin, e.what()));
  }
  if (!doc.is_object()) bad(origin, "(top level)", "an object (nccl-tests -J output)");
  NcclTestsResult res;
  res.origin = origin;

  // The command line: its binary names the op (all_reduce_perf, all_gather_perf_mpi, ...).
  NcclTestsOp from_args = NcclTestsOp::unknown;
  if (const json* args = member(doc, "args")) {
    if (!args->is_array()) bad(origin, "args", "the command line as a list of strings");
    if (!args->empty()) {
      const std::string bin = text(args->front(), origin, "args[0]");
      from_args = nccl_tests_op_from_name(bin.substr(bin.find_last_of('/') + 1));
    }
  }
  read_env(doc, origin, res);
  if (const json* v = member(doc, "nccl_version"))
    res.nccl_version = nccl_version_from_code(integer(*v, origin, "nccl_version"));

  read_config(doc, origin, res);
  read_devices(doc, origin, res);
  const json* results = member(doc, "results");
  if (results == nullptr || !results->is_array()) bad(origin, "results", "the list of result rows");
  res.columns = {"size",  "count",  "type", "redop", "root",  "time",  "algbw",
                 "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"};
  for (std::size_t i = 0; i < results->size(); ++i)
    res.rows.push_back(read_row(results->at(i), origin, fmt::format("results[{}]", i)));
  if (res.rows.empty())
    throw InputError(fmt::format("{}: results: no rows (empty or interrupted run)", origin));
  if (const json* avg = member(doc, "average_bus_bandwidth"))
    if (const json* bw = avg->is_object() ? member(*avg, "bandwidth") : nullptr)
      res.avg_busbw_GBps = number(*bw, origin, "average_bus_bandwidth.bandwidth");
  if (const json* oob = member(doc, "out_of_bounds"))
    if (const json* c = oob->is_object() ? member(*oob, "count") : nullptr)
      res.out_of_bounds = integer(*c, origin, "out_of_bounds.count");

  // The binary names the op; a renamed one leaves the file name, as for the text output.
  if (from_args != NcclTestsOp::unknown) {
    finish_nccl_tests_result(res, op_hint, from_args, "command line");
  } else {
    const NcclTestsOp named = nccl_tests_op_in_text(origin.substr(origin.find_last_of("/\\") + 1));
    finish_nccl_tests_result(res, op_hint, named, "filename");
  }
  return res;
}

}  // namespace commstack::fit
