// Replay jobs in scenarios (replay_job.hpp, docs/scenario-format.md).
#include "sim/scenario/replay_job.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "sim/replay/scale_pp.hpp"
#include "sim/scenario/job.hpp"
#include "workloads/compute/gpu_profile.hpp"
#include "workloads/importers/load_trace.hpp"

namespace commstack::sim::scenario {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const JsonPlace& at, const std::string& message) {
  throw InputError(fmt::format("{}: {}", at.str(), message));
}

// Scale factors: 1..65536, as `commstack replay --scale-dp`.
constexpr long long max_scale = 1 << 16;

json scale_field(const json& v, const JsonPlace& at) {
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max_scale) {
    fail(at, fmt::format("expected a whole number of replicas 1..{}, got {}", max_scale, v.dump()));
  }
  return v;
}

// A compute profile named by a built-in name, a file or an object (no "auto").
workloads::ComputeProfile profile_from(const json& v, const JsonPlace& at) {
  if (v.is_object()) return workloads::parse_compute_profile(v, at.str());
  const std::string name = v.get<std::string>();
  const auto names = workloads::builtin_compute_profile_names();
  if (std::find(names.begin(), names.end(), name) != names.end())
    return workloads::builtin_compute_profile(name);
  return workloads::load_compute_profile_file(name);
}

}  // namespace

const std::vector<std::string>& replay_fields() {
  static const std::vector<std::string> f = {"trace", "iteration", "scale_dp", "traced_gpu", "scale_pp"};
  return f;
}

std::string resolve_trace_path(const std::string& written, const std::string& base_dir) {
  const std::filesystem::path p(written);
  if (base_dir.empty() || p.is_absolute()) return written;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

json complete_replay(const json& v, const JsonPlace& at, const std::string& base_dir) {
  if (!v.is_object()) {
    fail(at, fmt::format("expected a replay object ({}), got {}", fmt::join(replay_fields(), ", "),
                         v.type_name()));
  }
  for (const auto& [key, unused] : v.items()) {
    const auto& f = replay_fields();
    if (std::find(f.begin(), f.end(), key) == f.end()) {
      fail(at.at(key), fmt::format("unknown field; expected one of {}", fmt::join(f, ", ")));
    }
  }
  if (!v.contains("trace"))
    fail(at, "missing required field 'trace' (a trace file or a directory of per-rank files)");
  json out = json::object();
  const json& t = v["trace"];
  if (!t.is_string() || t.get<std::string>().empty()) {
    fail(at.at("trace"), fmt::format("expected the path of a trace file or directory, got {}", t.dump()));
  }
  const std::string path = resolve_trace_path(t.get<std::string>(), base_dir);
  std::error_code ec;  // a name the file system refuses (too long) is no file
  if (!std::filesystem::exists(path, ec)) {
    fail(at.at("trace"),
         fmt::format("'{}' does not exist{}", path,
                     base_dir.empty()
                         ? std::string()
                         : fmt::format(" (a relative trace path is taken from the scenario file's "
                                       "folder, '{}')",
                                       base_dir)));
  }
  // A device or a pipe exists but is no trace: the importer would call it missing.
  if (const std::string kind = special_file_kind(path); !kind.empty()) {
    fail(at.at("trace"),
         fmt::format("'{}' is {}, not a regular file; expected a trace file or a directory of per-rank files",
                     path, kind));
  }
  out["trace"] = path;
  const json iteration = v.value("iteration", json("last"));
  const bool iteration_ok = (iteration.is_string() && iteration.get<std::string>() == "last") ||
                            (iteration.is_number_integer() && iteration.get<long long>() >= 0);
  if (!iteration_ok) {
    fail(at.at("iteration"),
         fmt::format("expected \"last\" or a ProfilerStep number >= 0 (Kineto traces), got {}",
                     iteration.dump()));
  }
  out["iteration"] = iteration;
  out["scale_dp"] = scale_field(v.value("scale_dp", json(1)), at.at("scale_dp"));
  const json traced_gpu = v.value("traced_gpu", json("auto"));
  if (traced_gpu.is_object()) {
    (void)workloads::parse_compute_profile(traced_gpu, at.at("traced_gpu").str());
  } else {
    const auto names = workloads::builtin_compute_profile_names();
    const bool ok = traced_gpu.is_string() &&
                    (traced_gpu.get<std::string>() == "auto" ||
                     std::find(names.begin(), names.end(), traced_gpu.get<std::string>()) != names.end() ||
                     std::filesystem::exists(traced_gpu.get<std::string>()));
    if (!ok) {
      fail(at.at("traced_gpu"),
           fmt::format(
               "expected \"auto\" (from the trace's device name), a built-in compute profile ({}), a file or "
               "a profile object, got {}",
               fmt::join(names, ", "), traced_gpu.dump()));
    }
  }
  out["traced_gpu"] = traced_gpu;
  out["scale_pp"] = scale_field(v.value("scale_pp", json(1)), at.at("scale_pp"));
  return out;
}

std::shared_ptr<const ReplaySetup> prepare_replay(const json& job, const JsonPlace& at,
                                                  const std::optional<workloads::ComputeProfile>& target) {
  auto r = std::make_shared<ReplaySetup>();
  const json& rj = job.at("replay");
  const JsonPlace rat = at.at("replay");
  r->trace_path = rj.at("trace").get<std::string>();
  workloads::importers::LoadOptions lo;
  if (rj.at("iteration").is_number_integer())
    lo.iteration = std::to_string(rj.at("iteration").get<long long>());
  // The variants of a scenario usually replay the baseline's trace: read each (path, iteration)
  // once per process (a 1 GB trace takes tens of seconds to import).
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<const workloads::ImportedTrace>> cache;
  auto& cached = cache[{r->trace_path, lo.iteration}];
  if (!cached) {
    try {
      cached = std::make_shared<const workloads::ImportedTrace>(
          workloads::importers::load_trace(r->trace_path, lo));
    } catch (const InputError& e) {
      fail(rat.at("trace"), e.what());
    }
  }
  r->trace = cached;
  // Pipeline scale-out (sim/replay/scale_pp.hpp): the deeper trace, built once per (trace, depth).
  const int scale_pp = rj.at("scale_pp").get<int>();
  if (scale_pp > 1) {
    static std::map<std::tuple<std::string, std::string, int>, std::shared_ptr<const workloads::ImportedTrace>> deeper;
    auto& d = deeper[{r->trace_path, lo.iteration, scale_pp}];
    if (!d) {
      std::string rule;
      try {
        d = std::make_shared<const workloads::ImportedTrace>(replay::scale_pipeline(*cached, scale_pp, rule));
      } catch (const InputError& e) {
        fail(rat.at("scale_pp"), e.what());
      }
    }
    r->trace = d;
  }
  r->options.scale_dp = rj.at("scale_dp").get<int>();
  if (target) {
    r->options.target_gpu = *target;
    const json& tg = rj.at("traced_gpu");
    if (tg.is_string() && tg.get<std::string>() == "auto") {
      // Traces write the CUDA device name ("NVIDIA A100-SXM4-80GB"); cluster files the model.
      std::string device = r->trace->device;
      if (device.rfind("NVIDIA ", 0) == 0) device.erase(0, 7);
      const auto builtin = workloads::builtin_compute_profile_for_gpu(device);
      if (!builtin) {
        fail(rat.at("traced_gpu"),
             fmt::format(
                 "\"auto\": the trace names no GPU with a built-in profile ('{}'); name the profile of the "
                 "GPU "
                 "it was recorded on ({}), or set compute_profile to \"traced\" to keep the measured times",
                 r->trace->device, fmt::join(workloads::builtin_compute_profile_names(), ", ")));
      }
      r->options.traced_gpu = workloads::builtin_compute_profile(*builtin);
    } else {
      r->options.traced_gpu = profile_from(tg, rat.at("traced_gpu"));
    }
  }
  const json& comm = job.at("comm");
  if (comm.at("channels").is_number_integer()) r->options.comm.channels = comm.at("channels").get<int>();
  r->options.comm.fidelity = fidelity_from_string(comm.at("fidelity").get<std::string>());
  r->label_config = fmt::format(
      "replay of {} ({}), scale-dp {}{}, compute {}", r->trace_path, r->trace->format, r->options.scale_dp,
      scale_pp > 1 ? fmt::format(", scale-pp {}", scale_pp) : std::string(),
      target ? fmt::format("rescaled {} -> {}", r->options.traced_gpu->name, target->name)
             : std::string("as traced"));
  return r;
}

int replay_world(const ReplaySetup& r) {
  return std::max(r.trace->graph.world, 1) * r.options.scale_dp;
}

}  // namespace commstack::sim::scenario
