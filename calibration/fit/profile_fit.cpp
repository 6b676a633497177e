#include "calibration/fit/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/math/tools/minima.hpp>

#include "common/error.hpp"

namespace commstack::fit {
namespace {

using sim::stack::Profile;

struct FitPoint {
  std::size_t run;
  sim::stack::Predictor::Choice choice;
  double measured_s;
};

struct Objective {
  const std::vector<std::unique_ptr<sim::stack::Predictor>>& predictors;
  const std::vector<FitPoint>& points;
  std::vector<double> run_weight;  // 1 / points of the run
  const Profile& prior;
  FitOptions options;

  // The data term of every run, or of one run (`only_run`): provenance asks which runs move a
  // parameter.
  double data(const Profile& p, std::optional<std::size_t> only_run = std::nullopt) const {
    double sum = 0;
    const double c2 = options.robust_scale * options.robust_scale;
    const bool soft_l1 = options.loss == "soft_l1";
    for (const auto& pt : points) {
      if (only_run && pt.run != *only_run) continue;
      const double pred = predictors[pt.run]->evaluate(pt.choice, p).time_s;
      const double r = std::log(pred / pt.measured_s);
      // Cauchy: bounded influence of a spike (one 68 us point among 13 us neighbours) and of a run
      // the model cannot follow. Soft L1 (pseudo-Huber): quadratic below c, linear above; it keeps
      // pulling on an error shared by many sizes, so a whole range 30% off cannot lose against
      // the prior.
      sum += run_weight[pt.run] * (soft_l1 ? 2 * c2 * (std::sqrt(1 + r * r / c2) - 1) : c2 * std::log1p(r * r / c2));
    }
    return sum;
  }
  double prior_term(const Profile& p) const {
    double sum = 0;
    for (int i = 0; i < sim::stack::kNumParams; ++i) {
      const auto& v = p.params[static_cast<std::size_t>(i)];
      const double z = (std::log(std::max(v.value, 1e-9)) - std::log(std::max(v.prior, 1e-9))) / v.prior_sigma_log;
      sum += z * z;
    }
    return options.prior_weight * sum;
  }
  double operator()(const Profile& p) const { return data(p) + prior_term(p); }
};

// The points of every run with NCCL's choice for each (computed once), and each run's weight.
struct FitData {
  std::vector<std::unique_ptr<sim::stack::Predictor>> predictors;  // one per run
  std::vector<FitPoint> points;
  std::vector<double> weights;  // per run
};

FitData fit_data(const std::vector<MeasuredRun>& runs, const Profile& prior) {
  FitData d;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const auto& run = runs[r];
    const int sm = sim::stack::sm_of_gpu_model(run.cluster.node.gpu_model);
    if (sm != prior.sm)
      throw InputError(fmt::format("{}: cannot use this run: cluster {} has sm {} GPUs but the profile being fitted "
                                   "is for sm {} (fit one GPU generation at a time)",
                                   run.file, run.cluster_name, sm, prior.sm));
    d.predictors.push_back(
        std::make_unique<sim::stack::Predictor>(run.cluster, run.nodes, run.gpus_per_node, run.knobs));
    std::map<std::pair<int, int>, std::unique_ptr<sim::stack::Predictor>> forced;
    for (std::size_t i = 0; i < run.bytes.size(); ++i)
      d.points.push_back(
          {r, choose_for_run(run, *d.predictors.back(), run.bytes[i], forced), run.measured_us[i] * 1e-6});
    // One measurement campaign (one input file) weighs as much as one full sweep, whether it is
    // one nccl-tests sweep or a table split into many 1-3 point runs (series / configs of one file).
    const auto same_file =
        std::count_if(runs.begin(), runs.end(), [&](const MeasuredRun& o) { return o.file == run.file; });
    d.weights.push_back(1.0 / (static_cast<double>(run.bytes.size()) * static_cast<double>(same_file)));
  }
  return d;
}

// One parameter's best value with the others held: a log grid over its physical range, then Brent
// around the best grid point (or the current value). Updates `p` and `best` when it improves.
void minimise_param(const Objective& f, int i, Profile& p, double& best) {
  const auto& info = sim::stack::param_info(i);
  auto& v = p.params[static_cast<std::size_t>(i)];
  const double lo = std::log(std::max(info.min, 1e-4));
  const double hi = std::log(info.max);
  const double x0 = std::log(std::max(v.value, 1e-4));
  Profile trial = p;
  auto g = [&](double x) {
    trial.params[static_cast<std::size_t>(i)].value = std::exp(x);
    return f(trial);
  };
  // A parameter can sit where the data do not depend on it (a per-channel cap above the rate
  // the transport allows: zero slope), with a lower objective far away. Scan its whole
  // physical range on a log grid first, then refine around the best grid point (or the
  // current value) with Brent.
  constexpr int kGrid = 24;
  const double step = (hi - lo) / kGrid;
  double centre = x0, f_centre = g(x0);
  for (int k = 0; k <= kGrid; ++k) {
    const double xk = lo + step * k;
    const double fk = g(xk);
    if (fk < f_centre) {
      centre = xk;
      f_centre = fk;
    }
  }
  const double half = centre == x0 ? 2.0 : 2.0 * step;
  auto [x, fx] =
      boost::math::tools::brent_find_minima(g, std::max(lo, centre - half), std::min(hi, centre + half), 40);
  if (f_centre < fx) {
    x = centre;
    fx = f_centre;
  }
  if (fx < best) {
    best = fx;
    v.value = std::exp(x);
  }
}

// A run as the profile names it: its file, and the settings that pick it out of the file (`@keys`).
std::string run_label(const MeasuredRun& run) {
  return run.knob_text.empty() ? run.file : run.file + "@" + run.knob_text;
}

// Provenance: the runs whose data term moves by > 1e-6 for a 10% change of a parameter, each named
// once (a file can hold several runs: the NDm table has nine); a parameter no run moves says so.
void mark_provenance(const Objective& f, const std::vector<MeasuredRun>& runs, const Profile& prior,
                     Profile& p) {
  std::vector<double> base(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) base[r] = f.data(p, r);
  for (int i = 0; i < sim::stack::kNumParams; ++i) {
    auto& v = p.params[static_cast<std::size_t>(i)];
    Profile up = p, down = p;
    up.params[static_cast<std::size_t>(i)].value *= 1.1;
    down.params[static_cast<std::size_t>(i)].value /= 1.1;
    std::vector<std::string> movers;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      const double sens = std::max(std::fabs(f.data(up, r) - base[r]), std::fabs(f.data(down, r) - base[r]));
      const std::string label = run_label(runs[r]);
      if (sens > 1e-6 && std::ranges::find(movers, label) == movers.end()) movers.push_back(label);
    }
    const std::string prior_prov = prior.params[static_cast<std::size_t>(i)].provenance;
    if (!movers.empty())
      v.provenance = fmt::format("{}{}{}{:.4g}: {})", kFittedProvenance, fmt::join(movers, ", "),
                                 kFittedPriorMarker, v.prior, prior_prov);
    else
      v.provenance = fmt::format("not constrained by the inputs, kept near the prior: {}", prior_prov);
  }
}

// The profile's record of its inputs and of the fit's residual at every point.
void record_fit(const std::vector<MeasuredRun>& runs, const FitData& d, Profile& p) {
  p.inputs.clear();
  p.residuals.clear();
  double sq = 0, ape = 0;
  for (const auto& run : runs) {
    sim::stack::InputRun in;
    in.file = run.file;
    in.settings = run.knob_text;
    in.cluster = run.cluster_name;
    in.op = sim::to_string(run.op);
    in.nodes = run.nodes;
    in.gpus_per_node = run.gpus_per_node;
    in.points = static_cast<int>(run.bytes.size());
    in.min_bytes = run.min_bytes;
    in.max_bytes = run.max_bytes;
    p.inputs.push_back(in);
  }
  for (const auto& pt : d.points) {
    const auto& run = runs[pt.run];
    const double pred = d.predictors[pt.run]->evaluate(pt.choice, p).time_s;
    sim::stack::FitResidual r;
    r.file = run.file;
    r.settings = run.knob_text;
    r.bytes = pt.choice.bytes;
    r.measured_us = pt.measured_s * 1e6;
    r.predicted_us = pred * 1e6;
    r.error_percent = 100.0 * (pred - pt.measured_s) / pt.measured_s;
    sq += std::pow(std::log(pred / pt.measured_s), 2);
    ape += std::fabs(r.error_percent);
    p.residuals.push_back(r);
  }
  p.fit_rms_log_residual = std::sqrt(sq / static_cast<double>(d.points.size()));
  p.fit_mape_percent = ape / static_cast<double>(d.points.size());
}

}  // namespace

std::string_view fitted_on_runs(std::string_view provenance) {
  if (!provenance.starts_with(kFittedProvenance)) return {};
  provenance.remove_prefix(kFittedProvenance.size());
  return provenance.substr(0, provenance.find(kFittedPriorMarker));
}

Profile fit_profile(const std::vector<MeasuredRun>& runs, const Profile& prior, const FitOptions& options) {
  if (runs.empty()) throw InputError("calibrate: no usable input runs");
  if (options.loss != "cauchy" && options.loss != "soft_l1")
    throw InputError(fmt::format("calibrate: --loss {}: expected cauchy or soft_l1", options.loss));
  const FitData d = fit_data(runs, prior);
  const Objective f{d.predictors, d.points, d.weights, prior, options};

  // Coordinate descent: each parameter in turn, sweeps until a sweep gains nothing.
  Profile p = prior;
  p.name = options.name;
  double best = f(p);
  for (int sweep = 0; sweep < options.max_sweeps; ++sweep) {
    const double start = best;
    for (int i = 0; i < sim::stack::kNumParams; ++i) minimise_param(f, i, p, best);
    if (start - best < 1e-12) break;
  }
  mark_provenance(f, runs, prior, p);
  record_fit(runs, d, p);
  return p;
}

}  // namespace commstack::fit
