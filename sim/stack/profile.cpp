#include "sim/stack/profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"
#include "sim/select/tuning_constants.hpp"
#include "sim/stack/embedded_profiles.hpp"

namespace commstack::sim::stack {
namespace {

using nlohmann::json;

constexpr std::array<ParamInfo, kNumParams> kInfo{{
    {"launch_us", "us",
     "host time of one call (enqueue + kernel launch); back-to-back calls hide it behind the previous call's device "
     "time",
     0.0, 1000.0},
    {"lat_nvlink_ll_us", "us", "per algorithm step between GPUs of one NVLink domain, LL protocol (the whole step, NVLink route included)", 0.0, 100.0},
    {"lat_nvlink_ll128_us", "us", "per algorithm step between GPUs of one NVLink domain, LL128 protocol (the whole step, NVLink route included)", 0.0, 100.0},
    {"lat_nvlink_simple_us", "us", "per algorithm step between GPUs of one NVLink domain, Simple protocol (the whole step, NVLink route included)", 0.0, 100.0},
    {"lat_net_ll_us", "us", "per algorithm step that crosses the network (proxy, NIC, switches), LL", 0.0, 500.0},
    {"lat_net_ll128_us", "us", "per algorithm step that crosses the network, LL128", 0.0, 500.0},
    {"lat_net_simple_us", "us", "per algorithm step that crosses the network, Simple", 0.0, 500.0},
    {"nvls_latency_us", "us", "one NVLink SHARP round (multimem reduce + multicast) in the NVSwitch, the two NVLink routes included", 0.0, 500.0},
    {"eta_nvlink", "fraction", "achieved / line rate of GPU-to-GPU copies over NVLink (P2P transport)", 0.01, 1.0},
    {"eta_nvls", "fraction", "achieved / line rate of NVLS multimem loads and stores per GPU link", 0.01, 1.0},
    {"eta_nic", "fraction", "achieved / line rate of one NIC (NET transport with GPUDirect RDMA)", 0.01, 1.0},
    {"cap_ll_GBps", "GB/s", "user data one channel (thread block) moves per second with LL", 0.01, 2000.0},
    {"cap_ll128_GBps", "GB/s", "user data one channel moves per second with LL128", 0.01, 2000.0},
    {"cap_simple_GBps", "GB/s", "user data one channel moves per second with Simple", 0.01, 2000.0},
    {"chunk_sync_us", "us", "per chunk wait on a FIFO slot's flags (in series with the copy)", 0.0, 100.0},
    {"kernel_us", "us",
     "device-side fixed cost of one call (kernel start, work fetch, completion), not hidden by the host loop", 0.0,
     1000.0},
    {"eta_nvlstree", "fraction",
     "achieved / line rate of NVLS multimem traffic per GPU link inside NVLSTree (the kernel gives the NVLS copies "
     "fewer warps to run the network tree)",
     0.01, 1.0},
}};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void bad(const std::string& origin, const std::string& path, const std::string& what) {
  throw InputError(fmt::format("profile {}: {}: {}", origin, path, what));
}

double get_number(const json& obj, const char* key, const std::string& origin, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(origin, path + "." + key, "missing (expected a number)");
  if (!it->is_number()) bad(origin, path + "." + key, "expected a number");
  double v = it->get<double>();
  if (!std::isfinite(v)) bad(origin, path + "." + key, "expected a finite number");
  return v;
}

std::string get_string(const json& obj, const char* key, const std::string& origin, const std::string& path,
                       bool required = true) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) bad(origin, path + "." + key, "missing (expected a string)");
    return {};
  }
  if (!it->is_string()) bad(origin, path + "." + key, "expected a string");
  return it->get<std::string>();
}

void only_keys(const json& obj, std::initializer_list<const char*> keys, const std::string& origin,
               const std::string& path) {
  if (!obj.is_object()) bad(origin, path, "expected an object");
  std::set<std::string> allowed(keys.begin(), keys.end());
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!allowed.count(it.key())) bad(origin, path + "." + it.key(), "unknown field");
}

}  // namespace

const ParamInfo& param_info(Param p) { return kInfo[static_cast<std::size_t>(p)]; }
const ParamInfo& param_info(int index) { return kInfo.at(static_cast<std::size_t>(index)); }

int sm_of_gpu_model(const std::string& model) {
  const std::string m = lower(model);
  if (m.find("b200") != std::string::npos || m.find("b100") != std::string::npos ||
      m.find("gb300") != std::string::npos || m.find("b300") != std::string::npos)
    return 100;
  if (m.find("h100") != std::string::npos || m.find("h200") != std::string::npos ||
      m.find("h800") != std::string::npos || m.find("gh200") != std::string::npos)
    return 90;
  if (m.find("a100") != std::string::npos || m.find("a800") != std::string::npos) return 80;
  if (m.find("v100") != std::string::npos) return 70;
  return 0;
}

Profile prior_profile(int sm) {
  if (sm != 70 && sm != 80 && sm != 90 && sm != 100)
    throw InputError(fmt::format("profile: no prior for compute capability {} (known: 70, 80, 90, 100)", sm));
  const auto& k = select::tuner_constants(select::default_nccl_version());
  const int cc = select::arch_index(sm);
  const int ring = static_cast<int>(select::Algo::ring);
  const int nvls = static_cast<int>(select::Algo::nvls);
  const int nvl = select::idx(select::Hw::nvlink);
  const int net = select::idx(select::Hw::net);
  Profile p;
  p.name = fmt::format("prior-sm{}", sm);
  p.origin = "built-in prior";
  p.sm = sm;
  p.description = "NCCL tuning-model constants and NCCL maintainers' statements; nothing fitted";
  const std::string tuning = "prior: NCCL " + select::to_string(select::default_nccl_version()) + " src/graph/tuning.cc ";
  auto set = [&](Param par, double v, double sigma, std::string prov) {
    auto& pv = p.params[static_cast<std::size_t>(par)];
    pv.value = pv.prior = v;
    pv.prior_sigma_log = sigma;
    pv.provenance = std::move(prov);
  };
  // NCCL's base latency (Ring Simple) stands for the launch: it is what NCCL adds once per call.
  set(Param::launch_us, k.base_latency_us[ring][2], 1.0, tuning + "baseLat Ring/Simple");
  set(Param::lat_nvlink_ll_us, k.hw_latency_us[nvl][ring][0], 1.0, tuning + "hwLat NVLINK Ring/LL");
  set(Param::lat_nvlink_ll128_us, k.hw_latency_us[nvl][ring][1], 1.0, tuning + "hwLat NVLINK Ring/LL128");
  set(Param::lat_nvlink_simple_us, k.hw_latency_us[nvl][ring][2], 1.0, tuning + "hwLat NVLINK Ring/Simple");
  set(Param::lat_net_ll_us, k.hw_latency_us[net][ring][0], 1.0, tuning + "hwLat NET Ring/LL");
  set(Param::lat_net_ll128_us, k.hw_latency_us[net][ring][1], 1.0, tuning + "hwLat NET Ring/LL128");
  set(Param::lat_net_simple_us, k.hw_latency_us[net][ring][2], 1.0, tuning + "hwLat NET Ring/Simple");
  set(Param::nvls_latency_us, k.hw_latency_us[nvl][nvls][2], 1.0, tuning + "hwLat NVLINK NVLS/Simple");
  set(Param::eta_nvlink, 370.0 / 450.0, 0.3, "prior: sjeaugey, nccl-tests#212: ~370 of 450 GB/s NVLink4 with protocol overhead");
  set(Param::eta_nvls, 275.0 / 450.0, 0.3, "prior: sjeaugey, nccl-tests#212: NVLS all-reduce algbw ~275 GB/s on 450 GB/s NVLink4");
  set(Param::eta_nvlstree, 275.0 / 450.0, 0.3,
      "prior: eta_nvls's (sjeaugey, nccl-tests#212); NCCL's NVLSTree kernel gives scatter/gather 6 + 5 warps where "
      "NVLS has 8 + 7 (src/device/all_reduce.h), no published rate");
  set(Param::eta_nic, 48.0 / 50.0, 0.2, "prior: AddyLaddy, nccl-tests#267: CX-7 NDR reaches 48-49 of 50 GB/s");
  set(Param::cap_ll_GBps, k.ll_max_bw[cc][0] / 16.0, 1.0, tuning + "llMaxBws (1 node) / 16 channels");
  set(Param::cap_ll128_GBps, k.per_ch_max_ring_ll128_bw[cc][0], 1.0, tuning + "perChMaxRingLL128Bws (1 node)");
  set(Param::cap_simple_GBps, k.per_ch_max_tree_bw[cc][0], 1.0, tuning + "perChMaxTreeBws (1 node), NCCL's only Simple per-channel cap");
  set(Param::chunk_sync_us, 0.5, 1.5, "prior: order of one flag round trip over NVLink (no published value)");
  // NCCL's per-call base latency of the LL protocol is the device-side fixed cost in NCCL's own model.
  set(Param::kernel_us, k.base_latency_us[ring][0], 1.5, tuning + "baseLat Ring/LL (device-side fixed cost of a call)");
  return p;
}

json profile_to_json(const Profile& p) {
  json params = json::object();
  for (int i = 0; i < kNumParams; ++i) {
    const auto& info = kInfo[static_cast<std::size_t>(i)];
    const auto& v = p.params[static_cast<std::size_t>(i)];
    params[info.name] = json{{"value", v.value},       {"unit", info.unit},
                             {"meaning", info.meaning}, {"prior", v.prior},
                             {"prior_sigma_log", v.prior_sigma_log}, {"provenance", v.provenance}};
  }
  json inputs = json::array();
  for (const auto& in : p.inputs)
    inputs.push_back(json{{"file", in.file},
                          {"settings", in.settings},
                          {"cluster", in.cluster},
                          {"op", in.op},
                          {"nodes", in.nodes},
                          {"gpus_per_node", in.gpus_per_node},
                          {"points", in.points},
                          {"min_bytes", in.min_bytes},
                          {"max_bytes", in.max_bytes}});
  json res = json::array();
  for (const auto& r : p.residuals)
    res.push_back(json{{"file", r.file},
                       {"settings", r.settings},
                       {"bytes", r.bytes},
                       {"measured_us", r.measured_us},
                       {"predicted_us", r.predicted_us},
                       {"error_percent", r.error_percent}});
  return json{{"format", "commstack-profile/1"},
              {"name", p.name},
              {"sm", p.sm},
              {"description", p.description},
              {"parameters", params},
              {"inputs", inputs},
              {"fit", json{{"rms_log_residual", p.fit_rms_log_residual},
                           {"mape_percent", p.fit_mape_percent},
                           {"residuals", res}}}};
}

Profile profile_from_json(const json& doc, const std::string& origin) {
  only_keys(doc, {"format", "name", "sm", "description", "parameters", "inputs", "fit"}, origin, "$");
  if (get_string(doc, "format", origin, "$") != "commstack-profile/1")
    bad(origin, "$.format", "expected \"commstack-profile/1\"");
  const double sm = get_number(doc, "sm", origin, "$");
  if (sm != 70 && sm != 80 && sm != 90 && sm != 100)
    bad(origin, "$.sm",
        fmt::format("is {}; expected the GPU's compute capability x 10: 70, 80, 90 or 100", sm));
  Profile p = prior_profile(static_cast<int>(sm));
  p.origin = origin;
  p.name = get_string(doc, "name", origin, "$");
  p.description = get_string(doc, "description", origin, "$", false);
  auto pit = doc.find("parameters");
  if (pit == doc.end() || !pit->is_object()) bad(origin, "$.parameters", "missing (expected an object)");
  for (auto it = pit->begin(); it != pit->end(); ++it) {
    bool known = false;
    for (const auto& info : kInfo) known = known || it.key() == info.name;
    if (!known) bad(origin, "$.parameters." + it.key(), "unknown parameter");
  }
  for (int i = 0; i < kNumParams; ++i) {
    const auto& info = kInfo[static_cast<std::size_t>(i)];
    const std::string path = std::string("$.parameters.") + info.name;
    auto it = pit->find(info.name);
    if (it == pit->end()) bad(origin, path, "missing");
    only_keys(*it, {"value", "unit", "meaning", "prior", "prior_sigma_log", "provenance"}, origin, path);
    auto& v = p.params[static_cast<std::size_t>(i)];
    v.value = get_number(*it, "value", origin, path);
    if (v.value < info.min || v.value > info.max)
      bad(origin, path + ".value", fmt::format("expected {} in [{}, {}], got {}", info.unit, info.min, info.max, v.value));
    const std::string unit = get_string(*it, "unit", origin, path, false);
    if (!unit.empty() && unit != info.unit) bad(origin, path + ".unit", fmt::format("expected \"{}\"", info.unit));
    if (it->contains("prior")) v.prior = get_number(*it, "prior", origin, path);
    if (it->contains("prior_sigma_log")) {
      v.prior_sigma_log = get_number(*it, "prior_sigma_log", origin, path);
      if (!(v.prior_sigma_log > 0)) bad(origin, path + ".prior_sigma_log", "expected a number > 0");
    }
    v.provenance = get_string(*it, "provenance", origin, path, false);
  }
  if (auto it = doc.find("inputs"); it != doc.end()) {
    if (!it->is_array()) bad(origin, "$.inputs", "expected an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      const std::string path = fmt::format("$.inputs[{}]", i);
      only_keys(
          e,
          {"file", "settings", "cluster", "op", "nodes", "gpus_per_node", "points", "min_bytes", "max_bytes"},
          origin, path);
      InputRun r;
      r.file = get_string(e, "file", origin, path);
      r.settings = get_string(e, "settings", origin, path, false);
      r.cluster = get_string(e, "cluster", origin, path, false);
      r.op = get_string(e, "op", origin, path, false);
      r.nodes = static_cast<int>(get_number(e, "nodes", origin, path));
      r.gpus_per_node = static_cast<int>(get_number(e, "gpus_per_node", origin, path));
      r.points = static_cast<int>(get_number(e, "points", origin, path));
      if (e.contains("min_bytes")) r.min_bytes = static_cast<std::uint64_t>(get_number(e, "min_bytes", origin, path));
      if (e.contains("max_bytes")) r.max_bytes = static_cast<std::uint64_t>(get_number(e, "max_bytes", origin, path));
      p.inputs.push_back(r);
    }
  }
  if (auto it = doc.find("fit"); it != doc.end()) {
    only_keys(*it, {"rms_log_residual", "mape_percent", "residuals"}, origin, "$.fit");
    if (it->contains("rms_log_residual")) p.fit_rms_log_residual = get_number(*it, "rms_log_residual", origin, "$.fit");
    if (it->contains("mape_percent")) p.fit_mape_percent = get_number(*it, "mape_percent", origin, "$.fit");
    if (auto rit = it->find("residuals"); rit != it->end()) {
      if (!rit->is_array()) bad(origin, "$.fit.residuals", "expected an array");
      for (std::size_t i = 0; i < rit->size(); ++i) {
        const json& e = (*rit)[i];
        const std::string path = fmt::format("$.fit.residuals[{}]", i);
        only_keys(e, {"file", "settings", "bytes", "measured_us", "predicted_us", "error_percent"}, origin,
                  path);
        FitResidual r;
        r.file = get_string(e, "file", origin, path);
        r.settings = get_string(e, "settings", origin, path, false);
        r.bytes = static_cast<std::uint64_t>(get_number(e, "bytes", origin, path));
        r.measured_us = get_number(e, "measured_us", origin, path);
        r.predicted_us = get_number(e, "predicted_us", origin, path);
        r.error_percent = get_number(e, "error_percent", origin, path);
        p.residuals.push_back(r);
      }
    }
  }
  return p;
}

namespace {
// A profile's JSON text; errors name `origin` (a path, or a shipped profile's name).
Profile profile_from_text(std::string_view text, const std::string& origin) {
  json doc;
  try {
    doc = parse_input_json<json>(text, "profile " + origin);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("profile {}: malformed JSON: {}", origin, e.what()));
  }
  return profile_from_json(doc, origin);
}

std::vector<std::filesystem::path> profile_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("COMMSTACK_PROFILE_DIR")) dirs.emplace_back(env);
  dirs.emplace_back("calibration/profiles");
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / ".." / "calibration" / "profiles");
    dirs.push_back(exe.parent_path() / ".." / ".." / "calibration" / "profiles");
  }
  return dirs;
}

// A shipped profile by name: a calibration/profiles directory on disk first (so a refit is used
// without rebuilding), then the copy compiled into the binary (so one built or installed anywhere
// still has them). Empty when neither has it.
std::optional<Profile> shipped_profile(const std::string& name) {
  for (const auto& d : profile_dirs()) {
    auto candidate = d / (name + ".json");
    std::error_code ec;  // a name the file system refuses (too long) is no file
    if (std::filesystem::is_regular_file(candidate, ec)) return load_profile(candidate.string());
  }
  for (const auto& [stem, text] : embedded_profile_files())
    if (stem == name)
      return profile_from_text(text, fmt::format("calibration/profiles/{}.json, built in", name));
  return std::nullopt;
}

}  // namespace

Profile load_profile(const std::string& name_or_path, std::string_view option) {
  const std::filesystem::path path(name_or_path);
  const bool bare = name_or_path.find('/') == std::string::npos && path.extension() != ".json";
  if (bare) {
    if (auto p = shipped_profile(name_or_path)) return *p;
    // A bare name that exists on disk (a directory, say) is a path: its own error says why.
    std::error_code ec;
    if (std::filesystem::exists(path, ec))
      return profile_from_text(read_input_file(name_or_path, "profile"), name_or_path);
    std::string known;
    for (const auto& [stem, text] : embedded_profile_files())
      known += fmt::format("{}{}", known.empty() ? "" : ", ", stem);
    throw InputError(fmt::format("{} {}: no such file, and no shipped profile of that name (known: {})",
                                 option, name_or_path, known));
  }
  return profile_from_text(read_input_file(name_or_path, "profile"), name_or_path);
}

void save_profile(const Profile& p, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("--output {}: cannot write file", path));
  out << profile_to_json(p).dump(2) << "\n";
  if (!out) throw InputError(fmt::format("--output {}: write failed", path));
}

Profile default_profile(int sm) {
  const char* name = sm == 80 ? "a100" : sm == 90 ? "h100" : sm == 100 ? "b200" : nullptr;
  if (name)
    if (auto p = shipped_profile(name)) return *p;
  return prior_profile(sm);
}

Profile default_profile_for_gpu(const std::string& gpu_model) {
  const std::string m = lower(gpu_model);
  const char* family = m.find("gb200") != std::string::npos || m.find("gb300") != std::string::npos ? "gb200"
                       : m.find("gh200") != std::string::npos                                       ? "gh200"
                                                                                                    : nullptr;
  if (family)
    if (auto p = shipped_profile(family)) return *p;
  return default_profile(sm_of_gpu_model(gpu_model));
}

}  // namespace commstack::sim::stack
