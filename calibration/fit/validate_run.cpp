#include "calibration/fit/validate_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibration/fit/host_prior.hpp"
#include "common/error.hpp"

namespace commstack::fit {
namespace {

using sim::stack::Profile;

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Median (mean of the two middle values for an even count); 0 for none.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace

namespace {

ValidationResult validate_run_once(const MeasuredRun& run, const Profile& profile, bool explore);

// ValidationResult::alternatives: each setting the run did not already have, predicted, kept when it
// halves the error at >= 1 MiB.
std::vector<ValidationResult::Alternative> alternatives_for(const MeasuredRun& run, const Profile& profile,
                                                            const ValidationResult& base) {
  const auto& env = run.knobs.env;
  const bool forced_algo = env.algo.has_value();
  bool nvls_chosen = false;
  for (const auto& row : base.rows)
    nvls_chosen = nvls_chosen || row.prediction.algorithm == "NVLS" || row.prediction.algorithm == "NVLSTree";
  using Setting = ValidationResult::Alternative::Setting;
  std::vector<std::pair<MeasuredRun, ValidationResult::Alternative>> candidates;
  if (run.nodes > 1 && run.cluster.node.nvlink_domain_nodes > 1 && env.mnnvl_enable != 0) {
    MeasuredRun alt = run;
    alt.knobs.env.mnnvl_enable = 0;
    candidates.push_back({alt, {Setting::mnnvl_off, "--mnnvl off", "NCCL_MNNVL_ENABLE=0"}});
  }
  if (nvls_chosen && !forced_algo && env.nvls_enable != 0) {
    MeasuredRun alt = run;
    alt.knobs.env.nvls_enable = 0;
    candidates.push_back({alt, {Setting::nvls_off, "--nvls off", "NCCL_NVLS_ENABLE=0"}});
  }
  if (!run.knobs.collnet && !forced_algo && run.op == sim::CollectiveOp::allreduce && base.comm.n_nodes > 1) {
    MeasuredRun alt = run;
    alt.knobs.collnet = true;
    candidates.push_back(
        {alt, {Setting::collnet_on, "--collnet on", "NCCL_COLLNET_ENABLE=1 with a SHARP plugin"}});
  }
  std::vector<ValidationResult::Alternative> kept;
  for (auto& [alt_run, alt] : candidates) {
    const ValidationResult v = validate_run_once(alt_run, profile, false);
    if (!(v.mape_large_percent < 0.5 * base.mape_large_percent)) continue;
    alt.predicted_busbw_GBps = v.predicted_busbw_GBps;
    alt.mape_percent = v.mape_percent;
    alt.mape_large_percent = v.mape_large_percent;
    kept.push_back(alt);
  }
  return kept;
}

// The rows' indices from the smallest size to the largest (a log may list sizes in any order).
std::vector<std::size_t> size_order(const std::vector<ValidationRow>& rows) {
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a].bytes < rows[b].bytes; });
  return order;
}

// ValidationResult::other_choices. Each pair NCCL could run is predicted with NCCL_ALGO /
// NCCL_PROTO forced to it (the channels NCCL would give it); a pair the communicator does not allow
// is skipped.
std::vector<ValidationResult::OtherChoice> other_choices_for(const MeasuredRun& run, const Profile& profile,
                                                             const ValidationResult& base) {
  std::vector<ValidationResult::OtherChoice> found;
  const auto& env = run.knobs.env;
  if (!run.logged_choices.empty() || (env.algo && env.proto)) return found;
  if (base.rows.empty() || base.rows.front().prediction.algorithm == "P2P" ||
      base.rows.front().prediction.algorithm == "Local")
    return found;
  const auto name_of = [](const std::string& algorithm, select::Proto proto) {
    return algorithm + "/" + select::to_string(proto);
  };
  const auto missed = [](const ValidationRow& row) {
    return std::fabs(row.error_percent) > kOtherChoiceTrigger;
  };
  if (std::count_if(base.rows.begin(), base.rows.end(), missed) < kOtherChoiceMinSizes) return found;
  // Rows in size order, each with the other pair that predicts it best where the modelled choice
  // misses it.
  struct Hit {
    std::size_t row = 0;
    std::string pair;  // empty: none
    double error = 0;
  };
  std::vector<Hit> hits;
  for (std::size_t i : size_order(base.rows)) hits.push_back(Hit{i, "", 0});
  // One predictor at a time (a large communicator's topology is not small) per pair NCCL could be
  // told to run. What the run itself set stays: its NCCL_ALGO when only the protocol is tried, its
  // NCCL_PROTO when only the algorithm is.
  const auto try_pair = [&](std::optional<select::Algo> algo, std::optional<select::Proto> proto) {
    sim::stack::Knobs k = run.knobs;
    if (algo) k.env.algo = select::to_string(*algo);
    if (proto) k.env.proto = select::to_string(*proto);
    std::optional<sim::stack::Predictor> predictor;
    try {
      predictor.emplace(run.cluster, run.nodes, run.gpus_per_node, k);
    } catch (const InputError&) {
      return;  // a pair the communicator does not allow (NVLS on a preset without NVSwitch multicast)
    }
    for (auto& h : hits) {
      const auto& row = base.rows[h.row];
      if (!missed(row)) continue;
      sim::stack::Predictor::Choice c;
      try {
        c = predictor->choose(run.op, row.bytes);
      } catch (const InputError&) {
        continue;
      }
      const std::string name = name_of(c.algorithm, c.proto);
      if (name == name_of(row.prediction.algorithm, row.prediction.proto)) continue;
      const double us = predictor->evaluate(c, profile).time_s * 1e6;
      const double err = 100.0 * std::fabs(us - row.measured_us) / row.measured_us;
      if (err <= kOtherChoiceMatch && err <= 0.5 * std::fabs(row.error_percent) &&
          (h.pair.empty() || err < h.error)) {
        h.pair = name;
        h.error = err;
      }
    }
  };
  if (env.algo) {
    for (select::Proto proto : select::kAllProtos) try_pair(std::nullopt, proto);
  } else {
    for (select::Algo algo : select::kAllAlgos) {
      if (env.proto)
        try_pair(algo, std::nullopt);
      else
        for (select::Proto proto : select::kAllProtos) try_pair(algo, proto);
    }
  }
  // Runs of consecutive sizes with the same other pair.
  for (std::size_t a = 0; a < hits.size();) {
    std::size_t b = a + 1;
    while (b < hits.size() && hits[b].pair == hits[a].pair) ++b;
    if (!hits[a].pair.empty() && static_cast<int>(b - a) >= kOtherChoiceMinSizes) {
      ValidationResult::OtherChoice oc;
      oc.min_bytes = base.rows[hits[a].row].bytes;
      oc.max_bytes = base.rows[hits[b - 1].row].bytes;
      oc.sizes = static_cast<int>(b - a);
      oc.other = hits[a].pair;
      std::vector<std::string> modelled;
      for (std::size_t k = a; k < b; ++k) {
        const auto& r = base.rows[hits[k].row];
        const std::string m = name_of(r.prediction.algorithm, r.prediction.proto);
        if (std::find(modelled.begin(), modelled.end(), m) == modelled.end()) modelled.push_back(m);
        oc.modelled_mape_percent += std::fabs(r.error_percent) / oc.sizes;
        oc.other_mape_percent += hits[k].error / oc.sizes;
      }
      oc.modelled = fmt::format("{}", fmt::join(modelled, ", "));
      found.push_back(oc);
    }
    a = b;
  }
  return found;
}

}  // namespace

ValidationResult validate_run(const MeasuredRun& run, const Profile& profile) {
  return validate_run_once(run, profile, true);
}

namespace {

// Every size predicted, with its error and NCCL's own model's, and the MAPEs (all sizes, and split
// at 1 MiB).
void predict_rows(const MeasuredRun& run, const Profile& profile, ValidationResult& out) {
  sim::stack::Predictor predictor(run.cluster, run.nodes, run.gpus_per_node, run.knobs);
  std::map<std::pair<int, int>, std::unique_ptr<sim::stack::Predictor>> forced;
  out.comm = predictor.shape();
  // Absolute percentage errors, all sizes and split at 1 MiB: commstack's and NCCL's own model's.
  struct Apes {
    std::vector<double> all, large, small;
    void add(std::uint64_t bytes, double ape) {
      all.push_back(ape);
      (bytes >= (1u << 20) ? large : small).push_back(ape);
    }
  } ours, nccl;
  for (std::size_t i = 0; i < run.bytes.size(); ++i) {
    ValidationRow row;
    row.bytes = run.bytes[i];
    row.measured_us = run.measured_us[i];
    const auto choice =
        choose_for_run(run, predictor, row.bytes, forced, &row.model_choice, &row.logged_unavailable);
    row.logged_choice = run.logged_choices.count(row.bytes) > 0 && !row.logged_unavailable;
    row.prediction = predictor.evaluate(choice, profile);
    row.predicted_us = row.prediction.time_s * 1e6;
    row.error_percent = 100.0 * (row.predicted_us - row.measured_us) / row.measured_us;
    const double ape = std::fabs(row.error_percent);
    ours.add(row.bytes, ape);
    row.nccl_model_us = choice.nccl_model_us;
    if (row.nccl_model_us > 0)
      nccl.add(row.bytes, 100.0 * std::fabs(row.nccl_model_us - row.measured_us) / row.measured_us);
    out.rows.push_back(row);
  }
  out.mape_percent = mean(ours.all);
  out.mape_large_percent = mean(ours.large);
  out.mape_small_percent = mean(ours.small);
  out.n_large = static_cast<int>(ours.large.size());
  out.n_small = static_cast<int>(ours.small.size());
  out.nccl_model_mape_percent = mean(nccl.all);
  out.nccl_model_mape_large_percent = mean(nccl.large);
  out.nccl_model_mape_small_percent = mean(nccl.small);
  out.nccl_model_n_large = static_cast<int>(nccl.large.size());
  out.nccl_model_n_small = static_cast<int>(nccl.small.size());
}

// Disturbed points: each size against the next larger one of the sweep.
void mark_disturbed(ValidationResult& out) {
  const std::vector<std::size_t> order = size_order(out.rows);
  for (std::size_t k = 0; k + 1 < order.size(); ++k) {
    auto& row = out.rows[order[k]];
    const auto& next = out.rows[order[k + 1]];
    if (next.bytes > row.bytes && next.bytes <= 2 * row.bytes &&
        row.measured_us > kDisturbedRatio * next.measured_us) {
      row.disturbed = true;
      row.next_bytes = next.bytes;
      row.next_measured_us = next.measured_us;
    }
  }
}

// The largest size's bus bandwidths, and whether the run is far below what its hardware allows.
void check_hardware_bound(const MeasuredRun& run, ValidationResult& out) {
  const auto& last = out.rows.back();
  const double bf = sim::bus_bandwidth_factor(run.op, run.nodes * run.gpus_per_node);
  out.measured_busbw_GBps = static_cast<double>(last.bytes) * bf / (last.measured_us * 1e-6) / 1e9;
  out.predicted_busbw_GBps = static_cast<double>(last.bytes) * bf / (last.predicted_us * 1e-6) / 1e9;
  // Only a size whose predicted time is mostly moving bytes says anything about the hardware's
  // bandwidth; a latency-bound largest size (a window of small sizes) is never flagged.
  const auto& lb = last.prediction.breakdown;
  const bool bandwidth_bound =
      lb.fabric_bandwidth_s + lb.transport_s + lb.protocol_s > 0.5 * last.prediction.time_s;
  out.below_hardware =
      bandwidth_bound && out.measured_busbw_GBps < kBelowHardwareRatio * out.predicted_busbw_GBps;
}

// The error split by regime: a latency-bound size's error is the fixed-cost layers', a
// bandwidth-bound size's is the byte-moving layers' (the other side is under kRegimeShare of it).
// Medians, so that one disturbed size does not speak for the regime.
ErrorSplit error_split(const std::vector<ValidationRow>& rows) {
  ErrorSplit sp;
  std::vector<double> excess, layers, ratio;
  for (const auto& row : rows) {
    const auto& b = row.prediction.breakdown;
    const double fixed_us = (b.launch_s + b.algorithm_latency_s + b.fabric_latency_s) * 1e6;
    const double moving_us = row.predicted_us - fixed_us;
    if (moving_us < kRegimeShare * row.predicted_us) {
      sp.latency_max_bytes = std::max(sp.latency_max_bytes, row.bytes);
      excess.push_back(row.measured_us - row.predicted_us);
      layers.push_back(fixed_us);
    } else if (fixed_us < kRegimeShare * row.predicted_us && row.measured_us > fixed_us) {
      sp.bandwidth_min_bytes = ratio.empty() ? row.bytes : std::min(sp.bandwidth_min_bytes, row.bytes);
      ratio.push_back(moving_us / (row.measured_us - fixed_us));
    }
  }
  sp.n_latency = static_cast<int>(excess.size());
  sp.n_bandwidth = static_cast<int>(ratio.size());
  sp.latency_excess_us = median(excess);
  sp.latency_layers_us = median(layers);
  sp.bandwidth_rate_ratio = median(ratio);
  return sp;
}

// Which sizes the host's kernel launches set (nccl-tests -g), and where launch_us came from.
HostFloor host_floor(const MeasuredRun& run, const Profile& profile, const std::vector<ValidationRow>& rows) {
  HostFloor hf;
  const auto& launch = profile.params[static_cast<std::size_t>(sim::stack::Param::launch_us)];
  hf.launches = run.knobs.cuda_graph ? 0 : run.knobs.gpus_per_thread;
  hf.launch_us = launch.value;
  hf.synchronized = run.knobs.synchronized_calls && !run.knobs.cuda_graph;
  hf.measured = fitted_on_data(launch);
  hf.other_generations = taken_from_other_generations(launch);
  const double kernel_s = profile[sim::stack::Param::kernel_us] * 1e-6;
  for (const auto& row : rows)
    if (hf.launches > 0 && (hf.synchronized || row.prediction.breakdown.launch_s > kernel_s * (1 + 1e-9))) {
      ++hf.sizes;
      hf.max_bytes = std::max(hf.max_bytes, row.bytes);
    }
  return hf;
}

ValidationResult validate_run_once(const MeasuredRun& run, const Profile& profile, bool explore) {
  ValidationResult out;
  predict_rows(run, profile, out);
  mark_disturbed(out);
  check_hardware_bound(run, out);
  if (explore && out.n_large > 0 && (out.below_hardware || out.mape_large_percent > kAlternativeTrigger))
    out.alternatives = alternatives_for(run, profile, out);
  // A run far below its hardware is slow everywhere; some slow pair would match it by chance.
  if (explore && !out.below_hardware) out.other_choices = other_choices_for(run, profile, out);
  out.split = error_split(out.rows);
  out.host_floor = host_floor(run, profile, out.rows);
  return out;
}

}  // namespace
}  // namespace commstack::fit
