#include "cli/validate_report.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/units.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/select/nccl_search.hpp"

namespace commstack::cli {
namespace {

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

// The communicator the predictions ran on, as NCCL_DEBUG=INFO prints it at init ("24 coll
// channels, ... nvls channels").
std::string comm_text(const fit::MeasuredRun& run, const fit::ValidationResult& v) {
  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (or the older NCCL_MIN/MAX_NCHANNELS) bound the communicator's
  // channels (NCCL prints its count after them, connect.cc); a small call may still use fewer.
  return select::describe_comm(v.comm, run.knobs.env);
}

nlohmann::json rows_json(const ValidateReport& report) {
  const fit::ValidationResult& v = report.result;
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
    if (r.logged_unavailable) j["nccl_logged_unavailable"] = *r.logged_unavailable;
    j["nccl_model_us"] = r.nccl_model_us > 0 ? nlohmann::json(r.nccl_model_us) : nlohmann::json(nullptr);
    if (report.breakdown) j["breakdown"] = sim::breakdown_json<nlohmann::json>(r.prediction.breakdown);
    rows.push_back(j);
  }
  return rows;
}

nlohmann::json report_json(const ValidateReport& report) {
  const fit::MeasuredRun& run = report.run;
  const fit::ValidationResult& v = report.result;
  const sim::stack::Profile& profile = report.profile;
  const select::CommShape& shape = v.comm;
  return nlohmann::json{{"measured", run.file},
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
                        {"rows", rows_json(report)},
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
}

void print_header(const ValidateReport& report, bool csv) {
  const fit::MeasuredRun& run = report.run;
  const sim::stack::Profile& profile = report.profile;
  const std::string comm_line = comm_text(run, report.result);
  if (csv) {
    fmt::print(
        "size,measured_us,predicted_us,error_percent,algorithm,protocol,channels,measured_busbw_GBps,"
        "predicted_busbw_GBps,nccl_model_us{}\n",
        report.breakdown ? fmt::format(",{}", sim::kBreakdownCsvColumns) : "");
  } else {
    fmt::print("# {} on {} ({} nodes x {} GPUs), {}, {} times, profile {} ({}), NCCL {} selection; {}\n",
               run.file, run.cluster_name, run.nodes, run.gpus_per_node, sim::to_string(run.op),
               run.in_place ? "in-place" : "out-of-place", profile.name, profile.origin,
               select::to_string(run.knobs.nccl_version), comm_line);
    fmt::print("{:>12} {:>12} {:>12} {:>8} {:>13}  {}\n", "size", "measured_us", "predicted_us", "error%",
               "nccl_model_us", "algo/proto/channels");
  }
}

// Notes before the rows: points the reader dropped, the selection against the log's TUNING lines,
// disturbed measurements, the fabric's contention.
void print_notes(const ValidateReport& report) {
  const fit::MeasuredRun& run = report.run;
  const fit::ValidationResult& v = report.result;
  for (const auto& note : run.notes) fmt::print("# note: {}\n", note);  // points the reader dropped and why
  int logged = 0, agree = 0;
  for (const auto& r : v.rows) {
    if (r.logged_unavailable) {
      ++logged;
      fmt::print(
          "# note: size {}: NCCL ran {} (its TUNING line), which this communicator as modelled cannot run "
          "(CollNet needs --collnet on, NVLS an NVSwitch with multicast): predicted with the model's {}/{}\n",
          r.bytes, *r.logged_unavailable, r.prediction.algorithm, select::to_string(r.prediction.proto));
      continue;
    }
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
}

void print_rows(const ValidateReport& report, bool csv) {
  const fit::MeasuredRun& run = report.run;
  const fit::ValidationResult& v = report.result;
  const double bf = sim::bus_bandwidth_factor(run.op, run.nodes * run.gpus_per_node);
  for (const auto& r : v.rows) {
    const auto& p = r.prediction;
    const auto& b = p.breakdown;
    if (csv) {
      fmt::print("{},{:.3f},{:.3f},{:.2f},{},{},{},{:.4f},{:.4f}", r.bytes, r.measured_us, r.predicted_us,
                 r.error_percent, p.algorithm, select::to_string(p.proto), p.channels,
                 r.bytes * bf / r.measured_us / 1e3, r.bytes * bf / r.predicted_us / 1e3);
      fmt::print(",{}", r.nccl_model_us > 0 ? fmt::format("{:.3f}", r.nccl_model_us) : "");
      if (report.breakdown) fmt::print(",{}", sim::breakdown_csv(b));
      fmt::print("\n");
    } else {
      fmt::print("{:>12} {:>12.2f} {:>12.2f} {:>8.1f} {:>13}  {}/{}/{}{}\n", r.bytes, r.measured_us,
                 r.predicted_us, r.error_percent,
                 r.nccl_model_us > 0 ? fmt::format("{:.2f}", r.nccl_model_us) : "-", p.algorithm,
                 select::to_string(p.proto), p.channels,
                 report.breakdown ? "  [" + sim::breakdown_text(b) + "]" : "");
    }
  }
}

// The diagnoses after the rows (where the error is, host floor, hardware bound, hints, choices, NCCL's
// own model) and the MAPE line.
void print_footer(const ValidateReport& report, bool csv) {
  const fit::MeasuredRun& run = report.run;
  const fit::ValidationResult& v = report.result;
  fmt::print("# where the error is: {}; {}\n", latency_side(v.split), bandwidth_side(v.split));
  if (v.host_floor.sizes > 0) fmt::print("# host floor: {}\n", host_floor_text(v.host_floor));
  if (v.below_hardware)
    fmt::print(
        "{}WARNING: at {} the run reaches {:.1f} GB/s bus bandwidth, {:.0f}% of the {:.1f} GB/s this cluster "
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
  fmt::print("{}MAPE {:.2f}% over {} sizes (>=1MiB: {:.2f}% over {}; <1MiB: {:.2f}% over {})\n",
             csv ? "# " : "", v.mape_percent, v.rows.size(), v.mape_large_percent, v.n_large,
             v.mape_small_percent, v.n_small);
}

}  // namespace

void print_validate_json(const ValidateReport& report) {
  fmt::print("{}\n", report_json(report).dump(2));
}

void print_validate_table(const ValidateReport& report, bool csv) {
  print_header(report, csv);
  print_notes(report);
  print_rows(report, csv);
  print_footer(report, csv);
}

}  // namespace commstack::cli
