// commstack validate: predict every size of a measured nccl-tests run with the stack model and
// print measured vs predicted, the error, NCCL's algorithm/protocol, and the MAPE.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibration/fit/validate_run.hpp"
#include "calibration/fit/validation_plot.hpp"
#include "cli/option_values.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "sim/select/nccl_search.hpp"

namespace commstack::cli {
namespace {

struct ValidateOptions {
  std::string cluster;
  std::string measured;
  std::optional<int> nodes, gpus_per_node, gpus_per_thread, run;
  std::optional<std::string> algo, proto, op, profile;
  std::optional<int> min_channels, max_channels;
  std::optional<std::string> nvls, collnet, cuda_graph, nccl_version, mnnvl;
  std::optional<std::string> min_bytes, max_bytes;
  std::string format = "text";
  bool breakdown = false;
  bool in_place = false;
  std::string plot;
};

std::string breakdown_text(const sim::stack::Breakdown& b) {
  return fmt::format("launch {:.2f} alg-lat {:.2f} fab-lat {:.2f} fab-bw {:.2f} transport {:.2f} protocol {:.2f} "
                     "contention {:.2f}",
                     b.launch_s * 1e6, b.algorithm_latency_s * 1e6, b.fabric_latency_s * 1e6,
                     b.fabric_bandwidth_s * 1e6, b.transport_s * 1e6, b.protocol_s * 1e6, b.contention_s * 1e6);
}

nlohmann::json breakdown_json(const sim::stack::Breakdown& b) {
  return nlohmann::json{{"launch_us", b.launch_s * 1e6},
                        {"algorithm_latency_us", b.algorithm_latency_s * 1e6},
                        {"fabric_latency_us", b.fabric_latency_s * 1e6},
                        {"fabric_bandwidth_us", b.fabric_bandwidth_s * 1e6},
                        {"transport_us", b.transport_s * 1e6},
                        {"protocol_us", b.protocol_s * 1e6},
                        {"contention_us", b.contention_s * 1e6}};
}

// --measured FILE@key=value,... (calibrate --input's run spec, e.g. a published table's series= /
// config=): folds the keys into `spec`, which holds the flags; a setting given both ways is an error.
// A path that exists as typed is a file even when it contains '@'.
void merge_measured_keys(const std::string& measured, fit::RunSpec& spec) {
  spec.file = measured;
  if (measured.find('@') == std::string::npos || std::filesystem::exists(measured)) return;
  const fit::RunSpec keys = fit::parse_run_spec(measured, "--measured");
  // Only keys folded below are taken: a run-spec key added later fails here instead of being lost.
  const std::vector<std::string> folded{"cluster",    "nodes",     "gpus_per_node", "gpus_per_thread",
                                        "op",         "run",       "series",        "config",
                                        "min_bytes",  "max_bytes", "algo",          "proto",
                                        "min_ctas",   "max_ctas",  "nvls",          "collnet",
                                        "cuda_graph", "in_place",  "nccl_version",  "mnnvl"};
  for (std::size_t pos = 0; pos < keys.knob_text.size();) {
    const auto comma = std::min(keys.knob_text.find(',', pos), keys.knob_text.size());
    const std::string key = keys.knob_text.substr(pos, keys.knob_text.find('=', pos) - pos);
    if (std::find(folded.begin(), folded.end(), key) == folded.end())
      throw InputError(
          fmt::format("--measured {}: key \"{}\" is not taken here; pass it as a validate flag", measured, key));
    pos = comma + 1;
  }
  auto twice = [&](const char* key, const char* flag) {
    throw InputError(fmt::format("--measured {}: {} is given both here and as {}", measured, key, flag));
  };
  spec.file = keys.file;
  spec.knob_text = keys.knob_text;
  spec.series = keys.series;
  spec.config = keys.config;
  if (keys.cluster && *keys.cluster != spec.cluster.value_or(*keys.cluster)) twice("cluster", "--cluster");
  // A key set in the spec (an engaged optional, a non-zero count, true) moves into `spec` unless the
  // matching flag already set it.
  auto fold = [&](const auto& from, auto& to, const char* key, const char* flag) {
    if (!from) return;
    if (to) twice(key, flag);
    to = from;
  };
  fold(keys.nodes, spec.nodes, "nodes", "--nodes");
  fold(keys.gpus_per_node, spec.gpus_per_node, "gpus_per_node", "--gpus-per-node");
  fold(keys.gpus_per_thread, spec.gpus_per_thread, "gpus_per_thread", "--gpus-per-thread");
  fold(keys.cuda_graph, spec.cuda_graph, "cuda_graph", "--cuda-graph");
  fold(keys.nccl_version, spec.nccl_version, "nccl_version", "--nccl-version");
  fold(keys.knobs.collnet, spec.knobs.collnet, "collnet", "--collnet");
  if (keys.in_place) {
    if (spec.in_place) twice("in_place", "--in-place");
    spec.in_place = true;
  }
  fold(keys.op, spec.op, "op", "--op");
  fold(keys.run, spec.run, "run", "--run");
  fold(keys.min_bytes, spec.min_bytes, "min_bytes", "--min-bytes");
  fold(keys.max_bytes, spec.max_bytes, "max_bytes", "--max-bytes");
  const auto& k = keys.knobs.env;
  auto& e = spec.knobs.env;
  fold(k.algo, e.algo, "algo", "--algo");
  fold(k.proto, e.proto, "proto", "--proto");
  fold(k.min_ctas, e.min_ctas, "min_ctas", "--min-channels");
  fold(k.max_ctas, e.max_ctas, "max_ctas", "--max-channels");
  if (k.nvls_enable != select::NcclEnv{}.nvls_enable) {
    if (e.nvls_enable != select::NcclEnv{}.nvls_enable) twice("nvls", "--nvls");
    e.nvls_enable = k.nvls_enable;
  }
  if (k.mnnvl_enable != select::NcclEnv{}.mnnvl_enable) {
    if (e.mnnvl_enable != select::NcclEnv{}.mnnvl_enable) twice("mnnvl", "--mnnvl");
    e.mnnvl_enable = k.mnnvl_enable;
  }
  select::validate(e);
}

// Why a system may have run NCCL that way without anyone asking (fit::ValidationResult::alternatives).
std::string alternative_reason(const fit::ValidationResult::Alternative& a, const fit::MeasuredRun& run) {
  using Setting = fit::ValidationResult::Alternative::Setting;
  switch (a.setting) {
    case Setting::mnnvl_off:
      return fmt::format(
          "the {} nodes share one NVLink domain on {}, but NCCL uses it only when the fabric and IMEX allow "
          "it "
          "(its log then says 'MNNVL 1'); without it the nodes talk over their NICs",
          run.nodes, run.cluster_name);
    case Setting::nvls_off:
      return "NCCL may have run without NVLink SHARP (it needs the fabric manager's multicast support; "
             "NCCL_DEBUG=INFO prints 'NVLS multicast support is not available' when it is missing)";
    case Setting::collnet_on: break;
  }
  return "the run may have reduced in the network switches (SHARP), which the cluster's defaults leave off";
}

nlohmann::json alternatives_json(const fit::ValidationResult& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : v.alternatives)
    out.push_back({{"setting", a.flag},
                   {"nccl", a.nccl_env},
                   {"largest_size_predicted_busbw_GBps", a.predicted_busbw_GBps},
                   {"mape_percent", a.mape_percent},
                   {"mape_ge_1MiB_percent", a.mape_large_percent}});
  return out;
}

nlohmann::json other_choices_json(const fit::ValidationResult& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : v.other_choices)
    out.push_back({{"min_bytes", c.min_bytes},
                   {"max_bytes", c.max_bytes},
                   {"sizes", c.sizes},
                   {"modelled_choice", c.modelled},
                   {"modelled_mape_percent", c.modelled_mape_percent},
                   {"matching_choice", c.other},
                   {"matching_mape_percent", c.other_mape_percent}});
  return out;
}

// The "# host floor" line: which sizes the host's launches set, and where launch_us comes from.
std::string host_floor_text(const fit::HostFloor& h) {
  const std::string source = h.measured ? "fitted on this profile's runs"
                             : h.other_generations
                                 ? "no run of this profile shows its host: taken from other GPU generations' "
                                   "hosts (calibrate --host-from)"
                                 : "no run of this profile shows its host: NCCL's base latency stands in "
                                   "(calibrate on this run to measure it)";
  const std::string what =
      h.synchronized
          ? fmt::format(
                "every size pays its host time (calls timed one at a time): {} x {:.2f} us = {:.1f} us",
                h.launches, h.launch_us, h.launches * h.launch_us)
          : fmt::format(
                "sizes up to {} are host-bound: {} kernel launch{} per call from one thread "
                "(nccl-tests -g {}), {} x {:.2f} us = {:.1f} us, exceed the device time",
                format_bytes(h.max_bytes), h.launches, h.launches == 1 ? "" : "es", h.launches, h.launches,
                h.launch_us, h.launches * h.launch_us);
  return fmt::format("{}; launch_us: {}", what, source);
}

// The two halves of the "where the error is" line (fit::ErrorSplit).
std::string latency_side(const fit::ErrorSplit& sp) {
  if (sp.n_latency == 0) return "no latency-bound size";
  return fmt::format(
      "latency-bound sizes ({}, up to {}): measured - predicted {:+.2f} us (median; launch and "
      "latency layers {:.2f} us)",
      sp.n_latency, format_bytes(sp.latency_max_bytes), sp.latency_excess_us, sp.latency_layers_us);
}

std::string bandwidth_side(const fit::ErrorSplit& sp) {
  if (sp.n_bandwidth == 0) return "no bandwidth-bound size";
  return fmt::format(
      "bandwidth-bound sizes ({}, from {}): the run reaches {:.3f}x the modeled rate (fabric "
      "bandwidth, transport and protocol layers)",
      sp.n_bandwidth, format_bytes(sp.bandwidth_min_bytes), sp.bandwidth_rate_ratio);
}

void run_validate(const ValidateOptions& o) {
  if (o.format != "text" && o.format != "csv" && o.format != "json")
    throw InputError(fmt::format("--format {}: expected text, csv or json", o.format));
  fit::RunSpec spec;
  spec.file = o.measured;
  spec.cluster = o.cluster;
  spec.nodes = o.nodes;
  spec.gpus_per_node = o.gpus_per_node;
  spec.gpus_per_thread = o.gpus_per_thread;
  if (o.gpus_per_thread && *o.gpus_per_thread < 1)
    throw InputError(fmt::format("--gpus-per-thread {}: expected >= 1 (nccl-tests -g)", *o.gpus_per_thread));
  spec.op = o.op;
  spec.run = o.run;
  if (o.run && *o.run < 1)
    throw InputError(fmt::format("--run {}: expected >= 1 (the log's first nccl-tests run is 1)", *o.run));
  if (o.min_bytes) spec.min_bytes = parse_bytes(*o.min_bytes, "--min-bytes");
  if (o.max_bytes) spec.max_bytes = parse_bytes(*o.max_bytes, "--max-bytes");
  spec.knobs.env.algo = o.algo;
  spec.knobs.env.proto = o.proto;
  if (o.min_channels) spec.knobs.env.min_ctas = *o.min_channels;
  if (o.max_channels) spec.knobs.env.max_ctas = *o.max_channels;
  if (o.nvls) spec.knobs.env.nvls_enable = parse_nccl_switch(*o.nvls, "--nvls") ? 1 : 0;
  if (o.collnet) spec.knobs.collnet = parse_nccl_switch(*o.collnet, "--collnet");
  if (o.mnnvl) spec.knobs.env.mnnvl_enable = parse_nccl_switch(*o.mnnvl, "--mnnvl") ? 1 : 0;
  if (o.cuda_graph) spec.cuda_graph = parse_on_off(*o.cuda_graph, "--cuda-graph");
  if (o.nccl_version) spec.nccl_version = select::parse_nccl_version(*o.nccl_version, "--nccl-version");
  spec.in_place = o.in_place;
  select::EnableMatrix check;  // names the flag for an unknown algorithm / protocol
  if (o.algo) select::apply_nccl_list(*o.algo, "--algo", true, check);
  if (o.proto) select::apply_nccl_list(*o.proto, "--proto", false, check);
  try {
    select::validate(spec.knobs.env);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--algo/--proto/--min-channels/--max-channels: {}", e.what()));
  }
  merge_measured_keys(o.measured, spec);
  const fit::MeasuredRun run = fit::load_measured_run(spec, o.cluster);
  const int sm = sim::stack::sm_of_gpu_model(run.cluster.node.gpu_model);
  const sim::stack::Profile profile = o.profile
                                          ? sim::stack::load_profile(*o.profile)
                                          : sim::stack::default_profile_for_gpu(run.cluster.node.gpu_model);
  if (profile.sm != sm)
    throw InputError(fmt::format("--profile {}: a profile for sm {} cannot predict cluster {} (sm {})",
                                 profile.origin, profile.sm, run.cluster_name, sm));
  const fit::ValidationResult v = fit::validate_run(run, profile);
  if (!o.plot.empty()) fit::validation_plot(run, v, o.plot);
  // The communicator the predictions ran on (NCCL_DEBUG=INFO prints the same counts at init:
  // "24 coll channels, ... nvls channels").
  const select::CommShape& shape = v.comm;
  std::string comm_line = select::describe_comm(shape);
  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (or the older NCCL_MIN/MAX_NCHANNELS) bound the communicator's
  // channels (NCCL prints its count after them, connect.cc); a small call may still use fewer.
  if (const auto& env = run.knobs.env; env.min_ctas > 0 || env.max_ctas > 0) {
    int bounded = shape.n_channels;
    if (env.max_ctas > 0) bounded = std::min(bounded, env.max_ctas);
    if (env.min_ctas > 0) bounded = std::max(bounded, env.min_ctas);
    comm_line += fmt::format(", {} under NCCL_MIN/MAX_CTAS", bounded);
  }

  if (o.format == "json") {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : v.rows) {
      nlohmann::json j{{"bytes", r.bytes},
                       {"measured_us", r.measured_us},
                       {"predicted_us", r.predicted_us},
                       {"error_percent", r.error_percent},
                       {"algorithm", r.prediction.algorithm},
                       {"protocol", select::to_string(r.prediction.proto)},
                       {"channels", r.prediction.channels},
                       {"disturbed", r.disturbed},
                       {"nccl_logged_choice", r.logged_choice}};
      if (r.model_choice) j["model_choice"] = *r.model_choice;
      j["nccl_model_us"] = r.nccl_model_us > 0 ? nlohmann::json(r.nccl_model_us) : nlohmann::json(nullptr);
      if (o.breakdown) j["breakdown"] = breakdown_json(r.prediction.breakdown);
      rows.push_back(j);
    }
    nlohmann::json doc{{"measured", run.file},
                       {"cluster", run.cluster_name},
                       {"op", sim::to_string(run.op)},
                       {"nodes", run.nodes},
                       {"gpus_per_node", run.gpus_per_node},
                       {"time_column", run.in_place ? "in-place" : "out-of-place"},
                       {"profile", profile.name},
                       {"nccl_selection", select::to_string(run.knobs.nccl_version)},
                       {"nccl_comm",
                        {{"coll_channels", shape.n_channels},
                         {"ring_graph_channels", shape.ring.n_channels},
                         {"ring_graph_bw_GBps", shape.ring.bw_intra},
                         {"nvls_channels", shape.nvls_support ? shape.nvls_channels : 0}}},
                       {"rows", rows},
                       {"mape_percent", v.mape_percent},
                       {"mape_ge_1MiB_percent", v.mape_large_percent},
                       {"n_ge_1MiB", v.n_large},
                       {"mape_lt_1MiB_percent", v.mape_small_percent},
                       {"n_lt_1MiB", v.n_small},
                       {"largest_size_measured_busbw_GBps", v.measured_busbw_GBps},
                       {"largest_size_predicted_busbw_GBps", v.predicted_busbw_GBps},
                       {"below_hardware", v.below_hardware},
                       {"alternatives", alternatives_json(v)},
                       {"other_choices", other_choices_json(v)},
                       {"nccl_model",
                        {{"what",
                          "NCCL's own time estimate (ncclTopoGetAlgoTime) for the algorithm and protocol it "
                          "runs, on the sizes it models"},
                         {"mape_percent", v.nccl_model_mape_percent},
                         {"mape_ge_1MiB_percent", v.nccl_model_mape_large_percent},
                         {"n_ge_1MiB", v.nccl_model_n_large},
                         {"mape_lt_1MiB_percent", v.nccl_model_mape_small_percent},
                         {"n_lt_1MiB", v.nccl_model_n_small}}},
                       {"host_floor",
                        {{"host_bound_sizes", v.host_floor.sizes},
                         {"host_bound_max_bytes", v.host_floor.max_bytes},
                         {"launches_per_call", v.host_floor.launches},
                         {"launch_us", v.host_floor.launch_us},
                         {"calls_timed_one_at_a_time", v.host_floor.synchronized},
                         {"launch_measured_by_profile_runs", v.host_floor.measured},
                         {"launch_from_other_generations", v.host_floor.other_generations}}},
                       {"error_split",
                        {{"latency_bound_sizes", v.split.n_latency},
                         {"latency_bound_max_bytes", v.split.latency_max_bytes},
                         {"latency_excess_us", v.split.latency_excess_us},
                         {"latency_layers_us", v.split.latency_layers_us},
                         {"bandwidth_bound_sizes", v.split.n_bandwidth},
                         {"bandwidth_bound_min_bytes", v.split.bandwidth_min_bytes},
                         {"bandwidth_rate_ratio", v.split.bandwidth_rate_ratio}}},
                       {"notes", run.notes}};
    fmt::print("{}\n", doc.dump(2));
    return;
  }
  const bool csv = o.format == "csv";
  const double bf = sim::bus_bandwidth_factor(run.op, run.nodes * run.gpus_per_node);
  if (csv) {
    fmt::print(
        "size,measured_us,predicted_us,error_percent,algorithm,protocol,channels,measured_busbw_GBps,"
        "predicted_busbw_GBps,nccl_model_us{}\n",
        o.breakdown ? ",launch_us,algorithm_latency_us,fabric_latency_us,fabric_bandwidth_us,transport_us,"
                      "protocol_us,contention_us"
                    : "");
  } else {
    fmt::print("# {} on {} ({} nodes x {} GPUs), {}, {} times, profile {} ({}), NCCL {} selection; {}\n",
               run.file, run.cluster_name, run.nodes, run.gpus_per_node, sim::to_string(run.op),
               run.in_place ? "in-place" : "out-of-place", profile.name, profile.origin,
               select::to_string(run.knobs.nccl_version), comm_line);
    fmt::print("{:>12} {:>12} {:>12} {:>8} {:>13}  {}\n", "size", "measured_us", "predicted_us", "error%",
               "nccl_model_us", "algo/proto/channels");
  }
  for (const auto& note : run.notes) fmt::print("# note: {}\n", note);  // points the reader dropped and why
  int logged = 0, agree = 0;
  for (const auto& r : v.rows) {
    if (!r.logged_choice) continue;
    ++logged;
    if (!r.model_choice) {
      ++agree;
      continue;
    }
    fmt::print(
        "# note: size {}: NCCL ran {}/{} (its TUNING line), the model's selection picks {}: predicted with "
        "NCCL's\n",
        r.bytes, r.prediction.algorithm, select::to_string(r.prediction.proto), *r.model_choice);
  }
  if (logged > 0)
    fmt::print(
        "# selection: the model picks NCCL's algorithm and protocol at {} of the {} sizes its TUNING lines "
        "give\n",
        agree, logged);
  for (const auto& r : v.rows)
    if (r.disturbed)
      fmt::print(
          "# note: size {}: measured {:.2f} us is {:.1f}x the {:.2f} us of size {}, which moves more bytes: "
          "likely a disturbed measurement (say one slow iteration in nccl-tests' average); it still counts "
          "in the MAPE\n",
          r.bytes, r.measured_us, r.measured_us / r.next_measured_us, r.next_measured_us, r.next_bytes);
  double contention = 1.0;
  for (const auto& r : v.rows) contention = std::max(contention, r.prediction.contention_factor);
  if (contention > 1.0)
    fmt::print(
        "# note: the cluster's fabric carries this run's network traffic up to {:.3f}x slower than its NICs "
        "alone (oversubscribed or shared switch links): the contention layer (docs/stack-model.md)\n",
        contention);
  for (const auto& r : v.rows) {
    const auto& p = r.prediction;
    const auto& b = p.breakdown;
    if (csv) {
      fmt::print("{},{:.3f},{:.3f},{:.2f},{},{},{},{:.4f},{:.4f}", r.bytes, r.measured_us, r.predicted_us, r.error_percent,
                 p.algorithm, select::to_string(p.proto), p.channels, r.bytes * bf / r.measured_us / 1e3,
                 r.bytes * bf / r.predicted_us / 1e3);
      fmt::print(",{}", r.nccl_model_us > 0 ? fmt::format("{:.3f}", r.nccl_model_us) : "");
      if (o.breakdown)
        fmt::print(",{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}", b.launch_s * 1e6, b.algorithm_latency_s * 1e6,
                   b.fabric_latency_s * 1e6, b.fabric_bandwidth_s * 1e6, b.transport_s * 1e6, b.protocol_s * 1e6,
                   b.contention_s * 1e6);
      fmt::print("\n");
    } else {
      fmt::print("{:>12} {:>12.2f} {:>12.2f} {:>8.1f} {:>13}  {}/{}/{}{}\n", r.bytes, r.measured_us,
                 r.predicted_us, r.error_percent,
                 r.nccl_model_us > 0 ? fmt::format("{:.2f}", r.nccl_model_us) : "-", p.algorithm,
                 select::to_string(p.proto), p.channels, o.breakdown ? "  [" + breakdown_text(b) + "]" : "");
    }
  }
  fmt::print("# where the error is: {}; {}\n", latency_side(v.split), bandwidth_side(v.split));
  if (v.host_floor.sizes > 0) fmt::print("# host floor: {}\n", host_floor_text(v.host_floor));
  if (v.below_hardware)
    fmt::print("{}WARNING: at {} the run reaches {:.1f} GB/s bus bandwidth, {:.0f}% of the {:.1f} GB/s this cluster "
               "allows: the measured system is far below its hardware (outlier; do not calibrate on it)\n",
               csv ? "# " : "", format_bytes(v.rows.back().bytes), v.measured_busbw_GBps,
               100 * v.measured_busbw_GBps / v.predicted_busbw_GBps, v.predicted_busbw_GBps);
  for (const auto& a : v.alternatives)
    fmt::print(
        "# hint: {} ({}) predicts {:.1f} GB/s at {} (measured {:.1f}) and this run within {:.2f}% at "
        ">= 1 MiB, where the cluster's defaults are {:.2f}% off: {}\n",
        a.flag, a.nccl_env, a.predicted_busbw_GBps, format_bytes(v.rows.back().bytes), v.measured_busbw_GBps,
        a.mape_large_percent, v.mape_large_percent, alternative_reason(a, run));
  for (const auto& c : v.other_choices)
    fmt::print(
        "# choice: from {} to {} ({} sizes) the measured times follow {} (within {:.1f}% on average) "
        "where the modelled choice ({}) is {:.1f}% off: NCCL probably ran {} there (an NCCL_ALGO / "
        "NCCL_PROTO setting, or a topology that rules out the modelled one); the TUNING lines of an "
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING log of the run say, and validate uses them\n",
        format_bytes(c.min_bytes), format_bytes(c.max_bytes), c.sizes, c.other, c.other_mape_percent,
        c.modelled, c.modelled_mape_percent, c.other);
  // The baseline: what NCCL's own tuning model says of the same sizes (unfitted; docs/calibration.md).
  if (v.nccl_model_n_large + v.nccl_model_n_small > 0)
    fmt::print(
        "# NCCL's own model (ncclTopoGetAlgoTime, {} constants) on the same sizes: MAPE {:.2f}% over {} "
        "sizes "
        "(>=1MiB: {:.2f}% over {}; <1MiB: {:.2f}% over {})\n",
        select::to_string(run.knobs.nccl_version), v.nccl_model_mape_percent,
        v.nccl_model_n_large + v.nccl_model_n_small, v.nccl_model_mape_large_percent, v.nccl_model_n_large,
        v.nccl_model_mape_small_percent, v.nccl_model_n_small);
  fmt::print("{}MAPE {:.2f}% over {} sizes (>=1MiB: {:.2f}% over {}; <1MiB: {:.2f}% over {})\n", csv ? "# " : "",
             v.mape_percent, v.rows.size(), v.mape_large_percent, v.n_large, v.mape_small_percent, v.n_small);
}

}  // namespace

void register_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "Predict a measured nccl-tests run and report the error per size");
  sub->add_option(
         "--cluster", o->cluster,
         "Cluster preset or JSON file the run was measured on; auto: the preset of the GPU the log's rank "
         "lines name (an assumption, printed as a note)")
      ->required();
  sub->add_option(
         "--measured", o->measured,
         "nccl-tests output (text or -J JSON), OSU NCCL benchmark output (osu_xccl_*) or published table, "
         "FILE[@key=value,...] (calibrate "
         "--input's keys, e.g. "
         "series=NAME or config=NAME,op=NAME for a table)")
      ->required();
  sub->add_option("--nodes", o->nodes, "Nodes (default: from the log's rank lines)");
  sub->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (default: from the log's rank lines)");
  sub->add_option("--gpus-per-thread", o->gpus_per_thread,
                  "GPUs one host thread drives, nccl-tests -g (default: the log header's nGpus, else 1)");
  sub->add_option("--cuda-graph", o->cuda_graph,
                  "on|off: the run replayed its calls from a CUDA graph, nccl-tests -G "
                  "(default: the log header's graph:)");
  sub->add_flag(
      "--in-place", o->in_place,
      "Validate the in-place time column (nccl-tests' second half; a published table: its numbers are "
      "in-place); default: out-of-place");
  sub->add_option("--op", o->op, "Collective, when the log does not say (all_reduce, all_gather, ...)");
  sub->add_option(
      "--run", o->run,
      "Which nccl-tests run of a log that holds several (1 = the first table); default: the one run of "
      "--op, else the only run");
  sub->add_option("--algo", o->algo,
                  "Force algorithms like NCCL_ALGO (ring, tree, nvls, nvlstree, pat, collnetdirect); "
                  "default: the NCCL_ALGO the log shows "
                  "(NCCL INFO 'set by environment', mpirun -x), else NCCL's choice");
  sub->add_option(
      "--proto", o->proto,
      "Force protocols like NCCL_PROTO (ll, ll128, simple); default: the log's NCCL_PROTO, as for --algo");
  sub->add_option("--min-channels", o->min_channels,
                  "Like NCCL_MIN_CTAS (default: the log's NCCL_MIN_CTAS / NCCL_MIN_NCHANNELS)");
  sub->add_option("--max-channels", o->max_channels,
                  "Like NCCL_MAX_CTAS (default: the log's NCCL_MAX_CTAS / NCCL_MAX_NCHANNELS)");
  sub->add_option("--nvls", o->nvls,
                  "on|off, like NCCL_NVLS_ENABLE (1 or 0; default: the log's NCCL_NVLS_ENABLE)");
  sub->add_option("--collnet", o->collnet, "on|off, like NCCL_COLLNET_ENABLE with a SHARP plugin loaded (default off)");
  sub->add_option("--mnnvl", o->mnnvl,
                  "on|off, like NCCL_MNNVL_ENABLE (1 or 0); off: the nodes of a multi-node NVLink domain "
                  "(GB200 NVL72) talk over their NICs (default: the log's NCCL_MNNVL_ENABLE or 'MNNVL 0' "
                  "line, else the cluster's domains)");
  sub->add_option(
      "--nccl-version", o->nccl_version,
      "Whose tuning model picks algorithm, protocol and channels: 2.28.9, 2.29.3, 2.29.7 or 2.30.7 "
      "(default: the NCCL version the log printed, its nearest modeled release noted; else 2.28.9)");
  sub->add_option("--min-bytes", o->min_bytes, "Only sizes >= this (e.g. 1M)");
  sub->add_option("--max-bytes", o->max_bytes, "Only sizes <= this");
  sub->add_option("--profile", o->profile, "Calibration profile (file or shipped name; default: the GPU generation's)");
  sub->add_option("--format", o->format, "text, csv or json");
  sub->add_flag("--breakdown", o->breakdown, "Show each layer's contribution");
  sub->add_option(
      "--plot", o->plot,
      "Write a PNG of measured vs predicted bus bandwidth and the error per size here, with its .dat "
      "and .gp next to it (gnuplot)");
  on_selected(sub, [o] { run_validate(*o); });
}

}  // namespace commstack::cli
