#include "calibration/bench/report.hpp"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"

namespace commstack::bench {
namespace {

using nlohmann::json;

json summary_json(const Summary& s) {
  return {{"n", s.n},         {"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"min", s.min},
          {"max", s.max},     {"mean", s.mean},     {"stddev", s.stddev}, {"cv", s.cv}};
}

// Reads fields of one JSON object and names the full path of anything wrong.
class Reader {
public:
  Reader(const json& j, std::string path, const std::string& origin) : j_(j), path_(std::move(path)), origin_(origin) {
    if (!j_.is_object()) fail("", "an object");
  }
  [[noreturn]] void fail(std::string_view key, std::string_view expected) const {
    const std::string where = key.empty() ? path_ : fmt::format("{}.{}", path_, key);
    throw InputError(fmt::format("{}: field '{}': expected {}", origin_, where, expected));
  }
  const json& at(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "to be present");
    return *it;
  }
  bool has(const char* key) const { return j_.contains(key); }
  std::string str(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "a string");
    return v.get<std::string>();
  }
  std::string str_or(const char* key, std::string fallback) const {
    return has(key) ? str(key) : std::move(fallback);
  }
  double num(const char* key) const {
    const json& v = at(key);
    if (!v.is_number()) fail(key, "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(key, "a finite number");
    return d;
  }
  double nonneg(const char* key) const {
    const double d = num(key);
    if (d < 0) fail(key, "a number >= 0");
    return d;
  }
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "an integer");
    // Unsigned values above int64 range would wrap: read them as unsigned first.
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail(key, fmt::format("an integer in [{}, {}]", lo, hi));
    const auto i = v.get<std::int64_t>();
    if (i < lo || i > hi) fail(key, fmt::format("an integer in [{}, {}]", lo, hi));
    return i;
  }
  std::uint64_t u64(const char* key) const {
    const json& v = at(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      fail(key, "a non-negative integer");
    return v.get<std::uint64_t>();
  }
  std::vector<std::string> strings(const char* key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.is_string()) fail(key, "an array of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  // Array of objects: calls f(element_reader) for each.
  template <class F>
  void objects(const char* key, F&& f) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "an array");
    for (std::size_t i = 0; i < v.size(); ++i) f(Reader(v[i], fmt::format("{}.{}[{}]", path_, key, i), origin_));
  }
  Reader child(const char* key) const { return Reader(at(key), fmt::format("{}.{}", path_, key), origin_); }
  const std::string& path() const { return path_; }
  const std::string& origin() const { return origin_; }

private:
  const json& j_;
  std::string path_;
  const std::string& origin_;
};

Summary read_summary(const Reader& r) {
  Summary s;
  s.n = static_cast<int>(r.integer("n", 0, 1 << 30));  // 0: a failed point (see its status)
  s.median = r.nonneg("median");
  s.p10 = r.nonneg("p10");
  s.p90 = r.nonneg("p90");
  s.min = r.nonneg("min");
  s.max = r.nonneg("max");
  s.mean = r.nonneg("mean");
  s.stddev = r.nonneg("stddev");
  s.cv = r.nonneg("cv");
  if (!(s.min <= s.median && s.median <= s.max)) r.fail("median", "min <= median <= max");
  return s;
}

std::string where(const Reader& r, const char* key) { return fmt::format("{}: field '{}.{}'", r.origin(), r.path(), key); }

}  // namespace

json to_json(const BenchReport& rep) {
  const auto& m = rep.machine;
  json j;
  j["schema"] = kSchemaName;
  j["schema_version"] = rep.schema_version;
  j["machine"] = {{"gpu_model", m.gpu_model},         {"sm", m.sm},
                  {"driver_version", m.driver_version}, {"cuda_runtime", m.cuda_runtime},
                  {"nccl_version", m.nccl_version},   {"nodes", m.nodes},
                  {"gpus_per_node", m.gpus_per_node}, {"nranks", m.nranks},
                  {"hostnames", m.hostnames},         {"launcher", m.launcher},
                  {"topo_dump_path", m.topo_dump_path}, {"topo_dump_xml", m.topo_dump_xml},
                  {"nccl_env", m.nccl_env}};
  const auto& s = rep.settings;
  j["settings"] = {{"preset", s.preset}, {"warmup", s.warmup}, {"iters", s.iters},
                   {"reps", s.reps},     {"dtype", s.dtype},   {"timing", s.timing}};
  json colls = json::array();
  for (const auto& c : rep.collectives) {
    json pts = json::array();
    for (const auto& p : c.points)
      pts.push_back({{"bytes", p.bytes}, {"count", p.count}, {"time_us", summary_json(p.time_us)},
                     {"algbw_GBps", p.algbw_GBps}, {"busbw_GBps", p.busbw_GBps}});
    colls.push_back({{"op", to_string(c.op)}, {"algo", to_string(c.algo)}, {"proto", to_string(c.proto)},
                     {"ctas", c.ctas}, {"status", c.status}, {"points", pts}});
  }
  j["collectives"] = colls;
  json p2p = json::array();
  for (const auto& c : rep.p2p) {
    json pts = json::array();
    for (const auto& p : c.points)
      pts.push_back({{"bytes", p.bytes}, {"time_us", summary_json(p.time_us)}, {"bw_GBps", p.bw_GBps}});
    p2p.push_back({{"kind", c.kind}, {"src_rank", c.src_rank}, {"dst_rank", c.dst_rank}, {"src_host", c.src_host},
                   {"dst_host", c.dst_host}, {"src_device", c.src_device}, {"dst_device", c.dst_device},
                   {"points", pts}});
  }
  j["p2p"] = p2p;
  json kern = json::array();
  for (const auto& k : rep.kernels)
    kern.push_back({{"kind", k.kind}, {"device", k.device}, {"bytes", k.bytes}, {"time_us", summary_json(k.time_us)},
                    {"bw_GBps", k.bw_GBps}});
  j["kernels"] = kern;
  json gemm = json::array();
  for (const auto& g : rep.gemm)
    gemm.push_back({{"dtype", g.dtype}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"status", g.status},
                    {"time_us", summary_json(g.time_us)}, {"tflops", g.tflops}});
  j["gemm"] = gemm;
  j["skipped"] = rep.skipped;
  return j;
}

BenchReport report_from_json(const json& j, const std::string& origin) {
  Reader root(j, "$", origin);
  if (root.str("schema") != kSchemaName) root.fail("schema", fmt::format("\"{}\"", kSchemaName));
  BenchReport rep;
  rep.schema_version = static_cast<int>(root.integer("schema_version", kSchemaVersion, kSchemaVersion));
  {
    Reader m = root.child("machine");
    auto& mi = rep.machine;
    mi.gpu_model = m.str("gpu_model");
    mi.sm = static_cast<int>(m.integer("sm", 0, 1000));
    mi.driver_version = m.str("driver_version");
    mi.cuda_runtime = m.str("cuda_runtime");
    mi.nccl_version = m.str("nccl_version");
    mi.nodes = static_cast<int>(m.integer("nodes", 1, 1 << 20));
    mi.gpus_per_node = static_cast<int>(m.integer("gpus_per_node", 1, 1024));
    mi.nranks = static_cast<int>(m.integer("nranks", 1, 1 << 24));
    if (static_cast<std::int64_t>(mi.nodes) * mi.gpus_per_node != mi.nranks)
      m.fail("nranks", "nodes x gpus_per_node");
    mi.hostnames = m.strings("hostnames");
    if (!mi.hostnames.empty() && static_cast<int>(mi.hostnames.size()) != mi.nranks)
      m.fail("hostnames", "one hostname per rank (nranks entries)");
    mi.launcher = m.str("launcher");
    mi.topo_dump_path = m.str_or("topo_dump_path", "");
    mi.topo_dump_xml = m.str_or("topo_dump_xml", "");
    mi.nccl_env = m.has("nccl_env") ? m.strings("nccl_env") : std::vector<std::string>{};
  }
  {
    Reader s = root.child("settings");
    rep.settings.preset = s.str("preset");
    rep.settings.warmup = static_cast<int>(s.integer("warmup", 0, 1 << 20));
    rep.settings.iters = static_cast<int>(s.integer("iters", 1, 1 << 20));
    rep.settings.reps = static_cast<int>(s.integer("reps", 1, 1 << 20));
    rep.settings.dtype = s.str("dtype");
    rep.settings.timing = s.str_or("timing", "");
  }
  root.objects("collectives", [&](const Reader& c) {
    CollectiveSeries cs;
    cs.op = op_from_name(c.str("op"), where(c, "op"));
    cs.algo = algo_from_name(c.str("algo"), where(c, "algo"));
    cs.proto = proto_from_name(c.str("proto"), where(c, "proto"));
    cs.ctas = static_cast<int>(c.integer("ctas", 0, 64));
    cs.status = c.str("status");
    c.objects("points", [&](const Reader& p) {
      CollectivePoint pt;
      pt.bytes = p.u64("bytes");
      pt.count = p.u64("count");
      pt.time_us = read_summary(p.child("time_us"));
      pt.algbw_GBps = p.nonneg("algbw_GBps");
      pt.busbw_GBps = p.nonneg("busbw_GBps");
      cs.points.push_back(pt);
    });
    rep.collectives.push_back(std::move(cs));
  });
  root.objects("p2p", [&](const Reader& c) {
    P2pSeries ps;
    ps.kind = c.str("kind");
    if (ps.kind != "nccl_sendrecv" && ps.kind != "memcpy_peer" && ps.kind != "nccl_rail")
      c.fail("kind", "\"nccl_sendrecv\", \"memcpy_peer\" or \"nccl_rail\"");
    ps.src_rank = static_cast<int>(c.integer("src_rank", 0, 1 << 24));
    ps.dst_rank = static_cast<int>(c.integer("dst_rank", 0, 1 << 24));
    ps.src_host = c.str("src_host");
    ps.dst_host = c.str("dst_host");
    ps.src_device = static_cast<int>(c.integer("src_device", 0, 1024));
    ps.dst_device = static_cast<int>(c.integer("dst_device", 0, 1024));
    c.objects("points", [&](const Reader& p) {
      P2pPoint pt;
      pt.bytes = p.u64("bytes");
      pt.time_us = read_summary(p.child("time_us"));
      pt.bw_GBps = p.nonneg("bw_GBps");
      ps.points.push_back(pt);
    });
    rep.p2p.push_back(std::move(ps));
  });
  root.objects("kernels", [&](const Reader& k) {
    KernelPoint kp;
    kp.kind = k.str("kind");
    kp.device = static_cast<int>(k.integer("device", 0, 1024));
    kp.bytes = k.u64("bytes");
    kp.time_us = read_summary(k.child("time_us"));
    kp.bw_GBps = k.nonneg("bw_GBps");
    rep.kernels.push_back(kp);
  });
  root.objects("gemm", [&](const Reader& g) {
    GemmPoint gp;
    gp.dtype = g.str("dtype");
    gp.m = g.integer("m", 1, std::int64_t{1} << 40);
    gp.n = g.integer("n", 1, std::int64_t{1} << 40);
    gp.k = g.integer("k", 1, std::int64_t{1} << 40);
    gp.status = g.str("status");
    gp.time_us = read_summary(g.child("time_us"));
    gp.tflops = g.nonneg("tflops");
    rep.gemm.push_back(gp);
  });
  rep.skipped = root.strings("skipped");
  return rep;
}

BenchReport load_report(const std::string& path) {
  return report_from_text(read_input_file(path, "bench JSON file"), path);
}

BenchReport report_from_text(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = parse_input_json<json>(text, origin);
  } catch (const json::exception&) {  // a syntax error, or a number that overflows
    throw InputError(fmt::format("{}: not valid JSON (expected a commstack-bench report)", origin));
  }
  return report_from_json(j, origin);
}

std::string dump_report(const BenchReport& report) { return to_json(report).dump(2) + "\n"; }

std::vector<GemmShape> transformer_gemm_shapes(const std::vector<std::int64_t>& hidden_sizes, std::int64_t tokens) {
  std::vector<GemmShape> out;
  for (std::int64_t h : hidden_sizes) {
    out.push_back({tokens, 3 * h, h, fmt::format("qkv h={}", h)});
    out.push_back({tokens, h, h, fmt::format("attn_out h={}", h)});
    out.push_back({tokens, 4 * h, h, fmt::format("mlp_up h={}", h)});
    out.push_back({tokens, h, 4 * h, fmt::format("mlp_down h={}", h)});
  }
  return out;
}

}  // namespace commstack::bench
