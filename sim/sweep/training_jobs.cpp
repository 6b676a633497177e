#include "sim/sweep/training_jobs.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"
#include "sim/scenario/job.hpp"
#include "sim/scenario/scenario.hpp"

namespace commstack::sim::sweep {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

json read_json(const std::filesystem::path& file, const std::string& where) {
  const std::string text = read_input_file(file.string(), fmt::format("base job file of {}", where));
  try {
    return parse_input_json<json>(text, file.string());
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

}  // namespace

ResolvedBase resolve_training_base(const ojson& base, const std::string& where, const std::filesystem::path& base_dir) {
  if (base.is_object()) {
    return {scenario::normalize_job(json(base), {where, "$"}), where};
  }
  if (!base.is_string()) {
    throw InputError(fmt::format("{}: expected a job object, a built-in scenario name or a job/scenario file, got {}",
                                 where, base.type_name()));
  }
  const std::string name = base.get<std::string>();
  const auto builtin = scenario::builtin_scenario_names();
  if (std::find(builtin.begin(), builtin.end(), name) != builtin.end()) {
    const auto sc = scenario::load_scenario(name);
    return {sc.runs.front().job, fmt::format("the baseline of built-in scenario {}", name)};
  }
  std::filesystem::path file = name;
  if (file.is_relative()) file = base_dir / file;
  const json doc = read_json(file, where);
  if (doc.is_object() && doc.contains("baseline")) {
    const auto sc = scenario::load_scenario(file.string());
    return {sc.runs.front().job, fmt::format("the baseline of scenario {}", file.string())};
  }
  return {scenario::normalize_job(doc, {file.string(), "$"}), file.string()};
}

SweepSpec load_training_sweep(const std::filesystem::path& file) { return load_sweep(file, resolve_training_base); }

json training_overrides(const SweepSpec& spec, const Point& point) {
  // The patched job's sections, whole: apply_overrides() merges objects key by key and replaces
  // arrays and names, so a section that is the base's with one leaf changed overrides exactly it.
  const json patched = apply_point(spec, point);
  json overrides = json::object();
  for (const auto& g : spec.groups) {
    for (const auto& axis : g.axes) {
      const std::string section = axis.pointer.to_string().substr(1, axis.pointer.to_string().find('/', 1) - 1);
      overrides[section] = patched.at(section);
    }
  }
  return overrides;
}

ojson evaluate_training_point(const SweepSpec& spec, const Point& point) {
  const scenario::JsonPlace place{fmt::format("{} point {} {}", spec.origin, point.index, point.overrides.dump()), "$"};
  const json job = scenario::apply_overrides(spec.base, training_overrides(spec, point), place);
  return scenario::run_job(scenario::prepare_job(job, place));
}

}  // namespace commstack::sim::sweep
