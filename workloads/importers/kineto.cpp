#include "workloads/importers/kineto.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/units.hpp"
#include "workloads/importers/json_stream.hpp"
#include "workloads/importers/trace_graph.hpp"

namespace commstack::workloads::importers {
namespace {

using nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Numeric field or nullopt (missing, null or not a number).
std::optional<double> num(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
std::optional<std::int64_t> integer(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return std::nullopt;
  // Values beyond 2^50 are no ids, ranks or sizes a trace can mean: treated as missing.
  constexpr double kLimit = 1125899906842624.0;
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(kLimit)) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  if (it->is_number_integer()) {
    const auto v = it->get<std::int64_t>();
    if (v > kLimit || v < -kLimit) return std::nullopt;
    return v;
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (!(v < kLimit && v > -kLimit)) return std::nullopt;
    return static_cast<std::int64_t>(v);
  }
  return std::nullopt;
}
std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

struct Step {
  std::string name;
  double ts = 0, dur = 0;
};

enum class EvKind { runtime, gpu, comm_meta };

// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Event {
  EvKind kind = EvKind::runtime;
  std::string name;
  double ts = 0, dur = 0;  // microseconds, as traced
  std::int64_t tid = 0;     // CPU thread (runtime, comm_meta)
  std::int64_t stream = 0;  // CUDA stream (gpu)
  std::int64_t corr = -1;   // correlation id linking a launch call and its GPU op
  json args;                // kept only for NCCL kernels and collective metadata ops
};

// What pass 1 learns about a file.
// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct FileInfo {
  std::vector<Step> steps;
  json distributed;
  std::string device;
  double first = std::numeric_limits<double>::infinity(), last = -std::numeric_limits<double>::infinity();
};

bool is_gpu_cat(const std::string& c) {
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "memcpy" || c == "memset";
}
// A complete event's start and duration (us), or why it cannot be one: the profiler writes no
// negative durations, and none of 1e12 us (11.6 days) or more, nor timestamps beyond 1e18 us (the
// epoch microseconds of Kineto are about 1.7e15); such values come from a mangled trace.
struct EventTimes {
  double ts = 0, dur = 0;
  const char* bad = nullptr;  // the skipped-events category, nullptr when the times are usable
};
EventTimes event_times(const json& e) {
  EventTimes t;
  auto ts = num(e, "ts"), dur = num(e, "dur");
  if (!ts || !dur)
    t.bad = "complete events without a numeric ts/dur";
  else if (*dur < 0)
    t.bad = "complete events with a negative dur";
  else if (!(*dur < 1e12) || !(std::abs(*ts) < 1e18))
    t.bad = "complete events with a dur of 1e12 us or more, or a ts beyond 1e18 us";
  else {
    t.ts = *ts;
    t.dur = *dur;
  }
  return t;
}

bool is_runtime_cat(const std::string& c) { return c == "cuda_runtime" || c == "cuda_driver" || c == "runtime"; }

FileInfo scan(const std::string& path) {
  FileInfo info;
  StreamCallbacks cb;
  cb.element = [&](json&& e, std::int64_t) {
    if (!e.is_object()) return;
    const EventTimes t = event_times(e);
    if (t.bad || str(e, "ph") != "X") return;
    info.first = std::min(info.first, t.ts);
    info.last = std::max(info.last, t.ts + t.dur);
    const std::string name = str(e, "name");
    if (starts_with(name, "ProfilerStep#")) info.steps.push_back({name, t.ts, t.dur});
  };
  cb.member = [&](const std::string& key, json&& v) {
    if (key == "distributedInfo" && v.is_object()) info.distributed = std::move(v);
    else if (key == "deviceProperties" && v.is_array() && !v.empty() && v[0].is_object())
      info.device = str(v[0], "name");
  };
  stream_json_file(path, "traceEvents", cb);
  std::sort(info.steps.begin(), info.steps.end(), [](const Step& a, const Step& b) { return a.ts < b.ts; });
  return info;
}

struct Window {
  std::string name;
  double begin = 0, end = 0;
};

// Collects the events of one iteration window (CPU side inside it; GPU side up to one more
// window length later, filtered by launch afterwards).
std::vector<Event> collect(const std::string& path, const Window& w, std::map<std::string, long long>& skipped) {
  std::vector<Event> out;
  const double gpu_limit = w.end + (w.end - w.begin);
  StreamCallbacks cb;
  cb.element = [&](json&& e, std::int64_t) {
    if (!e.is_object()) {
      ++skipped["elements that are not objects"];
      return;
    }
    const std::string ph = str(e, "ph");
    if (ph != "X") return;  // flows, counters, metadata, instants: not ops
    const std::string cat = lower(str(e, "cat"));
    const EventTimes t = event_times(e);
    if (t.bad) {
      ++skipped[t.bad];
      return;
    }
    Event ev;
    ev.ts = t.ts;
    ev.dur = t.dur;
    ev.name = str(e, "name");
    const json& args = e.contains("args") && e["args"].is_object() ? e["args"] : json::object();
    ev.corr = integer(args, "correlation").value_or(-1);
    if (is_runtime_cat(cat)) {
      if (ev.ts < w.begin || ev.ts > w.end) return;
      ev.kind = EvKind::runtime;
      ev.tid = integer(e, "tid").value_or(0);
    } else if (is_gpu_cat(cat)) {
      if (ev.ts < w.begin || ev.ts > gpu_limit) return;
      ev.kind = EvKind::gpu;
      ev.stream = integer(args, "stream").value_or(integer(e, "tid").value_or(0));
      if (starts_with(ev.name, "nccl")) ev.args = args;
    } else if (cat == "cpu_op" || cat == "user_annotation") {
      if (ev.ts < w.begin || ev.ts > w.end || !args.contains("Collective name")) return;
      ev.kind = EvKind::comm_meta;
      ev.tid = integer(e, "tid").value_or(0);
      ev.args = args;
    } else {
      if (cat != "python_function" && cat != "fwdbwd" && cat != "ac2g" && cat != "async_cpu_to_gpu" && cat != "trace" &&
          cat != "gpu_user_annotation" && cat != "cuda_sync" && cat != "cpu_instant_event" && cat != "python_function") {
        ++skipped["events of unknown category '" + cat + "'"];
      }
      return;
    }
    out.push_back(std::move(ev));
  };
  stream_json_file(path, "traceEvents", cb);
  return out;
}

// Element sizes of the dtype names PyTorch writes in record_param_comms.
std::optional<int> dtype_bytes(std::string d) {
  d = lower(d);
  if (d == "float" || d == "float32" || d == "int" || d == "int32" || d == "uint32") return 4;
  if (d == "half" || d == "float16" || d == "bfloat16" || d == "short" || d == "int16") return 2;
  if (d == "double" || d == "float64" || d == "long" || d == "int64" || d == "uint64") return 8;
  if (d == "byte" || d == "char" || d == "bool" || d == "uint8" || d == "int8" || starts_with(d, "float8")) return 1;
  return std::nullopt;
}

// PyTorch's collective names (record_param_comms "Collective name") in op_graph terms.
enum class CommClass { collective, p2p, other };
CommClass classify(const std::string& name_in, Collective& c) {
  const std::string n = lower(name_in);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("allreduce") || has("all_reduce")) c = Collective::all_reduce;
  else if (has("allgather") || has("all_gather")) c = Collective::all_gather;
  else if (has("reducescatter") || has("reduce_scatter")) c = Collective::reduce_scatter;
  else if (has("alltoall") || has("all_to_all")) c = Collective::all_to_all;
  else if (has("broadcast")) c = Collective::broadcast;
  else if (n == "reduce" || n == "_reduce_oop") c = Collective::reduce;
  else if (has("send") || has("recv")) return CommClass::p2p;
  else return CommClass::other;
  return CommClass::collective;
}

std::optional<std::vector<int>> parse_ranks(const json& v) {
  json list = v;
  if (v.is_string()) {
    list = json::parse(v.get<std::string>(), nullptr, false);
    if (list.is_discarded()) return std::nullopt;
  }
  if (!list.is_array() || list.empty()) return std::nullopt;
  std::vector<int> r;
  for (const auto& x : list) {
    if (!x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() >= kMaxGpus)
      return std::nullopt;
    r.push_back(x.get<int>());
  }
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

struct CommInfo {
  bool ok = false;
  Collective op = Collective::none;
  CommClass cls = CommClass::other;
  std::uint64_t bytes = 0;
  std::string label;
  std::vector<int> ranks;
  std::string why;  // why it is not re-simulated
};

CommInfo comm_info(const json& args, int rank, int world) {
  CommInfo ci;
  const std::string cname = str(args, "Collective name");
  if (cname.empty()) {
    ci.why = "no collective name";
    return ci;
  }
  ci.cls = classify(cname, ci.op);
  if (ci.cls != CommClass::collective) {
    ci.why = ci.cls == CommClass::p2p ? "point-to-point without a peer in the trace" : "collective '" + cname + "' not modelled";
    return ci;
  }
  const auto elem = dtype_bytes(str(args, "dtype"));
  const auto in = integer(args, "In msg nelems"), out = integer(args, "Out msg nelems");
  const auto n = ci.op == Collective::all_gather ? out : in;
  if (!elem || !n || *n < 0) {
    ci.why = "no message size or dtype";
    return ci;
  }
  // A count that would wrap bytes (a mangled trace): no call moves 2^50 elements.
  if (*n > (std::int64_t{1} << 50)) {
    ci.why = fmt::format("message of {} elements (more than 2^50)", *n);
    return ci;
  }
  ci.bytes = static_cast<std::uint64_t>(*n) * static_cast<std::uint64_t>(*elem);
  const auto size = integer(args, "Group size");
  if (args.contains("Process Group Ranks")) {
    if (auto r = parse_ranks(args["Process Group Ranks"])) ci.ranks = *r;
  }
  if (ci.ranks.empty() && size && *size > 0) {
    // No rank list: a strided range from "Global rank start/stride" when given, else the aligned
    // block of `size` ranks that holds this rank (documented assumption).
    const auto start = integer(args, "Global rank start"), stride = integer(args, "Global rank stride");
    const std::int64_t st = stride.value_or(1) > 0 ? stride.value_or(1) : 1;
    const std::int64_t first = start ? *start : rank / *size * *size;
    for (std::int64_t i = 0; i < *size; ++i) ci.ranks.push_back(static_cast<int>(first + i * st));
  }
  if (ci.ranks.empty()) {
    ci.why = "no process group";
    return ci;
  }
  if (ci.ranks.size() < 2) {
    ci.why = "process group of one rank";
    return ci;
  }
  if (!std::binary_search(ci.ranks.begin(), ci.ranks.end(), rank) ||
      ci.ranks.back() >= std::max<long long>(world, kMaxGpus)) {
    ci.why = "process group does not contain the file's rank";
    return ci;
  }
  std::string pg = str(args, "Process Group Name");
  if (pg.empty() && args.contains("Process Group ID")) pg = args["Process Group ID"].dump();
  ci.label = pg.empty() ? "pg" : "pg " + pg;
  ci.ok = true;
  return ci;
}

// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct RankFile {
  std::string path;
  FileInfo info;
  int rank = -1;
  int world = 0;
};

int rank_from_name(const std::string& path) {
  static const std::regex re(R"(rank[-_]?(\d+))", std::regex::icase);
  std::smatch m;
  const std::string base = path.substr(path.find_last_of('/') + 1);
  if (std::regex_search(base, m, re) && m[1].length() < 9) return std::stoi(m[1]);
  return -1;
}

Window pick_window(const RankFile& f, const std::string& wanted, std::vector<std::string>& warnings) {
  if (f.info.steps.empty()) {
    if (!std::isfinite(f.info.first)) throw InputError(fmt::format("{}: no complete (\"ph\": \"X\") events with ts and dur", f.path));
    warnings.push_back(fmt::format("{}: no ProfilerStep# span; the whole trace is taken as one iteration", f.path));
    return {"whole trace", f.info.first, f.info.last};
  }
  for (const Step& s : f.info.steps) {
    if (s.name == wanted) return {s.name, s.ts, s.ts + s.dur};
  }
  std::vector<std::string> names;
  for (const Step& s : f.info.steps) names.push_back(s.name);
  throw InputError(fmt::format("{}: iteration '{}' not in the trace; it has {}", f.path, wanted, fmt::join(names, ", ")));
}

// The rank files, each with its rank (distributedInfo, else the file name), in rank order, and
// the world they make.
std::pair<std::vector<RankFile>, int> open_rank_files(const std::vector<std::string>& files,
                                                      std::vector<std::string>& warnings) {
  std::vector<RankFile> rf;
  for (const auto& p : files) {
    RankFile f;
    f.path = p;
    f.info = scan(p);
    const auto& di = f.info.distributed;
    // A rank or world size the trace gives but that is no count is refused, not replaced by the
    // file name's rank.
    for (const char* key : {"rank", "world_size"}) {
      if (!di.is_object() || !di.contains(key)) continue;
      const json& v = di[key];
      const bool is_rank = std::string_view(key) == "rank";
      const auto value = integer(di, key);
      if (!(v.is_number_integer() || v.is_number_unsigned()) || !value || *value < (is_rank ? 0 : 1) ||
          *value > kMaxGpus - (is_rank ? 1 : 0))
        throw InputError(
            fmt::format("{}: distributedInfo.{} is {}: expected {}", p, key, v.dump().substr(0, 40),
                        is_rank ? fmt::format("the rank of the file, an integer from 0 to {}", kMaxGpus - 1)
                                : fmt::format("the number of ranks, an integer from 1 to {}", kMaxGpus)));
      (is_rank ? f.rank : f.world) = static_cast<int>(*value);
    }
    if (f.rank < 0) {
      f.rank = rank_from_name(p);
      if (f.rank < 0 && files.size() == 1) f.rank = 0;
      if (f.rank < 0) {
        throw InputError(fmt::format("{}: no distributedInfo.rank and no rank in the file name (rank-N); cannot tell "
                                     "which rank it is",
                                     p));
      }
      warnings.push_back(
          fmt::format("{}: no distributedInfo.rank; taken as rank {} from the file name", p, f.rank));
    }
    if (f.rank >= kMaxGpus || f.world < 0 || f.world > kMaxGpus || (f.world > 0 && f.rank >= f.world)) {
      throw InputError(fmt::format(
          "{}: distributedInfo: rank {} / world_size {} out of range (expected 0 <= rank < world_size <= {})",
          p, f.rank, f.world, kMaxGpus));
    }
    rf.push_back(std::move(f));
  }
  std::sort(rf.begin(), rf.end(), [](const RankFile& a, const RankFile& b) { return a.rank < b.rank; });
  int world = 0;
  for (std::size_t i = 0; i < rf.size(); ++i) {
    if (i > 0 && rf[i].rank == rf[i - 1].rank) {
      throw InputError(fmt::format("{} and {} are both rank {}; give one file per rank", rf[i - 1].path, rf[i].path, rf[i].rank));
    }
    if (rf[i].world > 0 && world > 0 && rf[i].world != world) {
      warnings.push_back(fmt::format("{}: world_size {} differs from {} in another file; the larger is used",
                                     rf[i].path, rf[i].world, world));
    }
    world = std::max({world, rf[i].world, rf[i].rank + 1});
  }
  for (const auto& f : rf) {
    if (f.rank >= world) throw InputError(fmt::format("{}: rank {} is not below world_size {}", f.path, f.rank, world));
  }
  return {std::move(rf), world};
}

// The iteration: asked for, or the last ProfilerStep every file has ("" when the files have none).
std::string wanted_iteration(const std::vector<RankFile>& rf, const KinetoOptions& options) {
  std::string wanted = options.iteration;
  if (!wanted.empty() && !starts_with(wanted, "ProfilerStep#")) wanted = "ProfilerStep#" + wanted;
  if (!wanted.empty()) return wanted;
  std::set<std::string> common;
  bool first = true;
  for (const auto& f : rf) {
    std::set<std::string> mine;
    for (const auto& s : f.info.steps) mine.insert(s.name);
    if (first)
      common = mine;
    else {
      std::set<std::string> keep;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                            std::inserter(keep, keep.end()));
      common = keep;
    }
    first = false;
  }
  for (const auto& s : rf.front().info.steps) {
    if (common.count(s.name) != 0) wanted = s.name;  // steps are in time order: the last common one wins
  }
  if (wanted.empty() && !rf.front().info.steps.empty()) {
    throw InputError("kineto import: the files have no ProfilerStep# in common; pass --iteration");
  }
  return wanted;
}

// One rank's window of events as ops of the trace graph: the host's runtime calls per thread, the
// GPU ops they launched, and the waits that tie them (synchronizing calls, cudaStreamWaitEvent).
class RankImport {
 public:
  RankImport(const RankFile& f, const Window& w, int world, RankBuilder& rb, std::vector<Event> evs)
      : f_(f), w_(w), world_(world), rb_(rb), evs_(std::move(evs)) {}

  void host_side();
  // Returns the end of the rank's traced GPU work (trace time, us).
  double gpu_side(std::vector<std::string>& warnings);
  void sync_waits();
  void stream_waits();
  // GPU ops (kernels, copies, NCCL kernels) the window holds, after gpu_side.
  std::size_t gpu_ops() const { return gpu_ops_.size(); }

 private:
  double rel(double us) const { return (us - w_.begin) * 1e-6; }
  const Event* enclosing_meta(std::int64_t corr) const;

  struct PendingSync {
    int call_op;
    const Event* ev;
  };
  struct GpuRef {
    int op;
    const Event* ev;
    double launched;  // launch call start (trace time), or the op's own start
  };
  // A synchronizing call returns when the GPU work it waited for is done; 5 us clock tolerance.
  static constexpr double kTolUs = 5;

  const RankFile& f_;
  const Window& w_;
  const int world_;
  RankBuilder& rb_;
  const std::vector<Event> evs_;
  std::vector<const Event*> metas_;
  std::unordered_map<std::int64_t, int> launch_of_;         // correlation -> host op
  std::unordered_map<std::int64_t, const Event*> call_of_;  // correlation -> runtime event
  std::vector<PendingSync> syncs_;
  std::vector<std::pair<std::int64_t, const Event*>> stream_waits_;  // (tid, cudaStreamWaitEvent)
  std::vector<GpuRef> gpu_ops_;
};

// Host side: runtime calls per thread, in traced order, with the CPU time between them.
void RankImport::host_side() {
  std::map<std::int64_t, std::vector<const Event*>> threads;
  for (const Event& e : evs_) {
    if (e.kind == EvKind::runtime) threads[e.tid].push_back(&e);
    if (e.kind == EvKind::comm_meta) metas_.push_back(&e);
  }
  for (auto& [tid, calls] : threads) {
    std::stable_sort(calls.begin(), calls.end(),
                     [](const Event* a, const Event* b) { return a->ts < b->ts; });
    double cursor = w_.begin;
    int prev = -1;
    for (const Event* c : calls) {
      if (c->ts + c->dur <= cursor && prev >= 0) {  // nested inside the previous call: same launch op
        if (c->corr >= 0) launch_of_[c->corr] = prev, call_of_[c->corr] = c;
        continue;
      }
      const double gap = std::max(0.0, c->ts - cursor);
      if (gap > 0) prev = rb_.host("cpu", rel(cursor), gap * 1e-6, static_cast<int>(tid), prev);
      const bool sync = c->name.find("Synchronize") != std::string::npos ||
                        (starts_with(c->name, "cudaMemcpy") && c->name.find("Async") == std::string::npos);
      prev = rb_.host(c->name, rel(c->ts), sync ? 0.0 : c->dur * 1e-6, static_cast<int>(tid), prev);
      if (sync) syncs_.push_back({prev, c});
      if (c->name == "cudaStreamWaitEvent") stream_waits_.emplace_back(tid, c);
      if (c->corr >= 0) launch_of_[c->corr] = prev, call_of_[c->corr] = c;
      cursor = std::max(cursor, c->ts + c->dur);
    }
    if (w_.end > cursor && !calls.empty())
      rb_.host("cpu", rel(cursor), (w_.end - cursor) * 1e-6, static_cast<int>(tid), prev);
  }
}

// The innermost collective op that encloses a kernel's launch call on the launching thread.
const Event* RankImport::enclosing_meta(std::int64_t corr) const {
  const auto it = call_of_.find(corr);
  if (it == call_of_.end()) return nullptr;
  const Event* best = nullptr;
  for (const Event* m : metas_) {
    if (m->tid == it->second->tid && m->ts <= it->second->ts && it->second->ts <= m->ts + m->dur &&
        (best == nullptr || m->ts >= best->ts)) {
      best = m;
    }
  }
  return best;
}

// GPU side: ops launched inside the window (or, without a launch record, running inside it).
double RankImport::gpu_side(std::vector<std::string>& warnings) {
  std::vector<const Event*> gpu;
  for (const Event& e : evs_) {
    if (e.kind != EvKind::gpu) continue;
    if (launch_of_.count(e.corr) != 0 || (e.ts <= w_.end && e.corr < 0)) gpu.push_back(&e);
  }
  std::stable_sort(gpu.begin(), gpu.end(), [](const Event* a, const Event* b) { return a->ts < b->ts; });
  double traced_end = w_.end;
  std::map<std::int64_t, int> last_on_stream;
  std::map<std::string, int> not_resim;
  for (const Event* e : gpu) {
    std::vector<int> deps;
    if (auto it = last_on_stream.find(e->stream); it != last_on_stream.end()) deps.push_back(it->second);
    double launched = e->ts;
    if (auto it = launch_of_.find(e->corr); it != launch_of_.end()) {
      deps.push_back(it->second);
      launched = call_of_.at(e->corr)->ts;
    }
    int id = -1;
    if (starts_with(e->name, "nccl")) {
      // Collective metadata: the kernel's own args, else the enclosing collective op's.
      json args = e->args;
      if (!args.contains("Collective name"))
        if (const Event* meta = enclosing_meta(e->corr)) args = meta->args;
      CommInfo ci = comm_info(args, f_.rank, world_);
      if (ci.ok && ci.ranks.back() >= world_)
        throw InputError(
            fmt::format("{}: kernel '{}' at ts {}: its process group holds rank {}, beyond the {} ranks "
                        "of the trace (distributedInfo.world_size, or the rank files)",
                        f_.path, e->name.substr(0, 60), e->ts, ci.ranks.back(), world_));
      if (ci.ok) {
        id = rb_.collective(e->name, rel(e->ts), e->dur * 1e-6, static_cast<int>(e->stream), deps, ci.op,
                            ci.bytes, ci.label, ci.ranks);
      } else {
        id = rb_.gpu(e->name, rel(e->ts), e->dur * 1e-6, static_cast<int>(e->stream), deps, /*comm=*/true);
        ++not_resim[ci.why];
      }
    } else {
      id = rb_.gpu(e->name, rel(e->ts), e->dur * 1e-6, static_cast<int>(e->stream), deps, /*comm=*/false);
    }
    last_on_stream[e->stream] = id;
    gpu_ops_.push_back({id, e, launched});
    traced_end = std::max(traced_end, e->ts + e->dur);
  }
  for (const auto& [why, n] : not_resim) {
    warnings.push_back(fmt::format("{}: {} NCCL kernel(s) keep their traced duration: {}", f_.path, n, why));
  }
  return traced_end;
}

// A synchronizing call returns when the GPU work it waited for is done: per stream, the last op
// launched before the call that finished before the call returned.
void RankImport::sync_waits() {
  for (const auto& s : syncs_) {
    std::map<std::int64_t, const GpuRef*> awaited;
    for (const auto& g : gpu_ops_) {
      if (g.launched <= s.ev->ts && g.ev->ts + g.ev->dur <= s.ev->ts + s.ev->dur + kTolUs)
        awaited[g.ev->stream] = &g;
    }
    std::vector<int> deps;
    double done = s.ev->ts;
    for (const auto& [stream, g] : awaited) {
      deps.push_back(g->op);
      done = std::max(done, g->ev->ts + g->ev->dur);
    }
    const double tail = std::max(0.0, s.ev->ts + s.ev->dur - done);
    rb_.insert_wait(s.call_op, deps, tail * 1e-6, rel(s.ev->ts + s.ev->dur) - tail * 1e-6);
  }
}

// cudaStreamWaitEvent: the next op this thread launches waits for the op of another stream that
// finished last before that op started (the event it waited on).
void RankImport::stream_waits() {
  for (const auto& [tid, c] : stream_waits_) {
    const GpuRef* next = nullptr;
    for (const auto& g : gpu_ops_) {
      auto it = call_of_.find(g.ev->corr);
      if (it == call_of_.end() || it->second->tid != tid || g.launched < c->ts) continue;
      if (next == nullptr || g.launched < next->launched) next = &g;
    }
    if (next == nullptr) continue;
    const GpuRef* waited = nullptr;
    for (const auto& g : gpu_ops_) {
      if (g.ev->stream == next->ev->stream || g.launched > c->ts) continue;
      const double end = g.ev->ts + g.ev->dur;
      if (end > next->ev->ts + kTolUs) continue;
      if (waited == nullptr || end > waited->ev->ts + waited->ev->dur) waited = &g;
    }
    if (waited != nullptr) rb_.add_dep(next->op, waited->op);
  }
}

}  // namespace

ImportedTrace import_kineto(const std::vector<std::string>& files, const KinetoOptions& options) {
  if (files.empty()) throw InputError("kineto import: no trace files");
  ImportedTrace t;
  t.format = "kineto";
  auto [rf, world] = open_rank_files(files, t.warnings);
  const std::string wanted = wanted_iteration(rf, options);
  t.iteration = wanted.empty() ? "whole trace" : wanted;

  TraceGraphBuilder builder(world);
  std::vector<std::string> sources;
  for (const auto& f : rf) {
    const Window w = pick_window(f, wanted, t.warnings);
    if (t.device.empty()) t.device = f.info.device;
    std::map<std::string, long long> skipped;
    std::vector<Event> evs = collect(f.path, w, skipped);
    for (const auto& [what, n] : skipped) t.warnings.push_back(fmt::format("{}: {} {} skipped", f.path, n, what));
    sources.push_back(fmt::format("rank {}", f.rank));
    RankImport ri(f, w, world, builder.rank(f.rank), std::move(evs));
    ri.host_side();
    const double traced_end = ri.gpu_side(t.warnings);
    // A window that launched no GPU work (a ProfilerStep of dur 0, or one whose ts lies outside
    // the trace's events) would replay as 0 ms, -100 %: nothing of the iteration is in it.
    if (ri.gpu_ops() == 0) {
      throw InputError(fmt::format(
          "{}: the selected step {} (ts {} us, dur {} us) holds no GPU ops: no kernel, memcpy or memset "
          "is launched inside it; expected the span of one iteration (check the step's ts and dur, or pick "
          "another with --iteration)",
          f.path, w.name == "whole trace" ? "(the whole trace)" : "'" + w.name + "'", w.begin,
          w.end - w.begin));
    }
    ri.sync_waits();
    ri.stream_waits();
    t.traced_iteration_s[f.rank] = (traced_end - w.begin) * 1e-6;
  }
  t.graph = builder.finish(t.traced_start_s, t.warnings);
  t.traced_s = 0;
  for (const auto& [r, s] : t.traced_iteration_s) t.traced_s = std::max(t.traced_s, s);
  t.source = fmt::format("{} Kineto file{} ({}), {}", rf.size(), rf.size() == 1 ? "" : "s", fmt::join(sources, ", "), t.iteration);
  return t;
}

}  // namespace commstack::workloads::importers
