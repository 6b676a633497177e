#pragma once
// Fitting a calibration profile to measured runs: robust least squares on log time with a prior on
// every parameter. docs/calibration.md describes the objective and its choices. Loading runs is
// measured_run.hpp, checking a profile against one validate_run.hpp.
#include <string>
#include <string_view>
#include <vector>

#include "calibration/fit/measured_run.hpp"
#include "sim/stack/profile.hpp"

namespace commstack::fit {

struct FitOptions {
  double robust_scale = 0.1;    // loss scale on ln(pred/meas): 10% errors are "normal"
  // "cauchy": c^2 ln(1 + (r/c)^2), saturates, so a run whose structure the model misses cannot drag
  // the others; "soft_l1": 2 c^2 (sqrt(1 + (r/c)^2) - 1), linear tail, never gives up on an error
  // many sizes share (docs/calibration.md compares the two on results/validation).
  std::string loss = "cauchy";
  // Weight of one prior standard deviation relative to one run's mean loss; 0.01 had the lowest mean
  // leave-one-out MAPE of {0.001, 0.01, 0.1} on results/validation (docs/calibration.md).
  double prior_weight = 1e-2;
  int max_sweeps = 40;
  std::string name = "fitted";
};

// Fits every parameter of `prior` (its values are the start and the prior means) to `runs`.
// Deterministic. Fills inputs, residuals and provenance: a parameter the runs constrain gets
// kFittedProvenance + the runs that move it + kFittedPriorMarker + its prior, one they leave at the
// prior says so.
inline constexpr std::string_view kFittedProvenance = "fitted on ";
inline constexpr std::string_view kFittedPriorMarker = " (prior ";
// The runs a fitted parameter's provenance names ("A.txt, B.csv@op=all_gather"); empty when it was not
// fitted on data.
std::string_view fitted_on_runs(std::string_view provenance);
sim::stack::Profile fit_profile(const std::vector<MeasuredRun>& runs, const sim::stack::Profile& prior,
                                const FitOptions& options = {});

}  // namespace commstack::fit
