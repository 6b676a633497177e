#include "calibration/fit/host_prior.hpp"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "calibration/fit/profile_fit.hpp"

namespace commstack::fit {

using sim::stack::Param;
using sim::stack::Profile;

const std::vector<Param>& host_side_params() {
  // launch_us only: kernel_us is the device's share of a call's fixed cost (kernel start, work
  // fetch, completion flag) and belongs to the GPU.
  static const std::vector<Param> params{Param::launch_us};
  return params;
}

bool fitted_on_data(const sim::stack::ParamValue& v) {
  return v.provenance.starts_with(kFittedProvenance);
}

namespace {

// What apply_host_prior's provenance starts with; a fit keeps it after its own prefix.
constexpr std::string_view kHostSideProvenance = "prior: host-side, ";

}  // namespace

bool taken_from_other_generations(const sim::stack::ParamValue& v) {
  return v.provenance.find(kHostSideProvenance) != std::string::npos;
}

namespace {

// "a100 6.962 us (sm 80; fitted on A, B@op=...)": the runs of the source that moved the parameter.
std::string describe_source(const Profile& source, Param param) {
  const auto& info = sim::stack::param_info(param);
  return fmt::format("{} {:.4g} {} (sm {}; {}{})", source.name, source[param], info.unit, source.sm,
                     kFittedProvenance,
                     fitted_on_runs(source.params[static_cast<std::size_t>(param)].provenance));
}

}  // namespace

std::vector<HostPriorNote> apply_host_prior(Profile& prior, const std::vector<Profile>& sources) {
  std::vector<HostPriorNote> notes;
  for (const Param param : host_side_params()) {
    HostPriorNote note{param, 0, prior[param]};
    double sum_log = 0;
    std::string from;
    for (const auto& source : sources) {
      const auto& v = source.params[static_cast<std::size_t>(param)];
      if (!fitted_on_data(v) || !(v.value > 0)) continue;
      sum_log += std::log(v.value);
      ++note.sources;
      from += (from.empty() ? "" : "; ") + describe_source(source, param);
    }
    if (note.sources > 0) {
      // Geometric mean: the parameters are fitted on ln(value), and a host twice as fast and one
      // twice as slow average to the middle one.
      note.value = std::exp(sum_log / note.sources);
      auto& pv = prior.params[static_cast<std::size_t>(param)];
      pv.value = pv.prior = note.value;
      pv.provenance = fmt::format(
          "{}geometric mean of {} profile(s) of other GPU generations whose runs show the host time: {}",
          kHostSideProvenance, note.sources, from);
    }
    notes.push_back(note);
  }
  return notes;
}

}  // namespace commstack::fit
