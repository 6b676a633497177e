#pragma once
// Sweeps of training jobs (sim/scenario/job.hpp): the base is a job, normalized so that every
// default is written out and any field can be swept; a point is the base with the point's values
// applied as job overrides, checked and simulated for one iteration (the report of
// `commstack train --format json`).
#include <nlohmann/json.hpp>

#include "sim/sweep/spec.hpp"

namespace commstack::sim::sweep {

// "base": a job object; or a string: a built-in scenario name or a scenario file (its baseline),
// or a job file (relative to the sweep file's directory).
ResolvedBase resolve_training_base(const nlohmann::ordered_json& base, const std::string& where,
                                   const std::filesystem::path& base_dir);

// A sweep file whose base is a training job.
SweepSpec load_training_sweep(const std::filesystem::path& file);

// The point as job overrides: each top-level section the point changes, with its new content.
nlohmann::json training_overrides(const SweepSpec& spec, const Point& point);

// Applies, checks and simulates a point (InputError if its configuration is impossible). Creates
// a SimGrid engine: call it in a process of its own (the sweep's worker processes).
nlohmann::ordered_json evaluate_training_point(const SweepSpec& spec, const Point& point);

}  // namespace commstack::sim::sweep
