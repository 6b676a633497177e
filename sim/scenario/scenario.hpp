#pragma once
// A what-if scenario (docs/scenario-format.md): a baseline job and named variants, each a set of
// overrides of the baseline. Parsed strictly: unknown fields, overrides of fields the baseline
// does not have and invalid values are InputErrors naming the file and the JSON path.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/job.hpp"

namespace commstack::sim::scenario {

struct ScenarioRun {
  std::string name;                                     // "baseline" for the baseline
  std::string description;                              // optional, for reports
  nlohmann::json overrides = nlohmann::json::object();  // as written ({} for the baseline)
  nlohmann::json job;  // normalized job: the baseline with the overrides applied
  JsonPlace place;     // "$.baseline" or "$.variants[i]" in the scenario file
};

struct Scenario {
  std::string origin;  // file path or "built-in scenario <name>"
  std::string name;
  std::string description;
  std::vector<ScenarioRun> runs;  // runs[0] is the baseline, then the variants in file order
};

// Parses a scenario document; `where` names it in errors. `base_dir`: the folder relative trace
// paths of replay jobs are taken from (the scenario file's folder; "" = the current directory).
Scenario parse_scenario(const nlohmann::json& doc, const std::string& where, const std::string& base_dir = "");
// A built-in scenario name (builtin_scenario_names()) or a path to a JSON file.
Scenario load_scenario(const std::string& name_or_path);

// Built-in scenarios (sim/scenario/scenarios/*.json, compiled in), sorted by name; the first
// entry of default_scenario_name() is what `commstack whatif` runs without arguments.
std::vector<std::string> builtin_scenario_names();
std::string builtin_scenario_json(const std::string& name);  // throws InputError for unknown names
std::string default_scenario_name();

}  // namespace commstack::sim::scenario
