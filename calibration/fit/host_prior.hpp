#pragma once
// Host-side parameters taken from profiles fitted on other GPU generations.
//
// `launch_us` (enqueue + kernel launch, per call and per GPU one host thread drives) is the host's
// CPU, CUDA driver and NCCL's enqueue path, not the GPU's. Only runs whose host time shows (nccl-tests
// -g G > 1 at small sizes, OSU's synchronized calls) constrain it, and most generations have none:
// their fit keeps NCCL's base latency as a stand-in. `calibrate --host-from` centres the prior of
// the host-side parameters on what other generations' runs measured instead
// (docs/calibration.md, "Host-side parameters from other generations").
#include <string>
#include <vector>

#include "sim/stack/profile.hpp"

namespace commstack::fit {

// The parameters that describe the host, not the GPU.
const std::vector<sim::stack::Param>& host_side_params();

// True when `fit_profile` found the parameter constrained by its inputs (its provenance says
// "fitted on ..."), false when the inputs left it at its prior.
bool fitted_on_data(const sim::stack::ParamValue& v);

// True when the value's prior came from other generations' fits (apply_host_prior), whether or
// not the profile's own runs then moved it.
bool taken_from_other_generations(const sim::stack::ParamValue& v);

struct HostPriorNote {
  sim::stack::Param param;
  int sources = 0;  // profiles whose inputs constrain the parameter
  double value = 0;
};

// Moves the prior (and starting value) of every host-side parameter of `prior` to the geometric
// mean of the values fitted in `sources` (the profiles whose inputs constrain it); a parameter no
// source constrains keeps its prior. The provenance names each source and its value. Returns one
// note per host-side parameter.
std::vector<HostPriorNote> apply_host_prior(sim::stack::Profile& prior,
                                            const std::vector<sim::stack::Profile>& sources);

}  // namespace commstack::fit
