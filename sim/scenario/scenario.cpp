// Scenario files (scenario.hpp, docs/scenario-format.md).
#include "sim/scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "sim/scenario/embedded.hpp"
#include "workloads/json_fields.hpp"

namespace commstack::sim::scenario {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const JsonPlace& at, const std::string& message) {
  throw InputError(fmt::format("{}: {}", at.str(), message));
}

// A control character's name for messages ("tab", "U+001F").
std::string control_name(unsigned char c) {
  switch (c) {
    case '\0': return "NUL";
    case '\t': return "a tab";
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    case 0x1b: return "ESC";
    case 0x7f: return "DEL";
    default: return fmt::format("U+{:04X}", c);
  }
}

// The names and descriptions of a scenario and its variants (every string read here). They are
// printed in text tables, CSV rows, the tab-separated .dat and the gnuplot labels of --plot, which
// a control character would break: refused, with where it is.
std::string string_field(const json& obj, const std::string& key, const JsonPlace& at, bool required) {
  if (!obj.contains(key)) {
    if (required) fail(at, fmt::format("missing required field '{}'", key));
    return {};
  }
  const json& v = obj[key];
  if (!v.is_string()) fail(at.at(key), fmt::format("expected a string, got {}", v.dump()));
  const std::string text = v.get<std::string>();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      fail(at.at(key),
           fmt::format("{} at byte {}; expected text without control characters (it is printed in "
                       "tables, CSV rows and plot labels)",
                       control_name(c), i));
    }
  }
  return text;
}

void reject_unknown(const json& obj, const std::vector<std::string>& known, const JsonPlace& at) {
  for (const auto& [key, unused] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(at.at(key), fmt::format("unknown field; expected one of {}", fmt::join(known, ", ")));
    }
  }
}

}  // namespace

Scenario parse_scenario(const json& doc, const std::string& where, const std::string& base_dir) {
  const JsonPlace root{where, "$"};
  if (!doc.is_object()) fail(root, fmt::format("expected a scenario object, got {}", doc.type_name()));
  reject_unknown(doc, {"name", "description", "baseline", "variants"}, root);
  Scenario s;
  s.origin = where;
  s.name = string_field(doc, "name", root, true);
  s.description = string_field(doc, "description", root, false);
  if (!doc.contains("baseline"))
    fail(root, "missing required field 'baseline' (a job: cluster, nodes, model, parallel, ...)");
  ScenarioRun base;
  base.name = "baseline";
  base.place = root.at("baseline");
  base.job = normalize_job(doc["baseline"], base.place, base_dir);
  s.runs.push_back(base);

  if (!doc.contains("variants"))
    fail(root, "missing required field 'variants' (a list of {name, overrides})");
  const json& variants = doc["variants"];
  if (!variants.is_array() || variants.empty()) {
    fail(root.at("variants"),
         fmt::format("expected a non-empty array of {{name, overrides}}, got {}", variants.dump()));
  }
  std::set<std::string> names = {"baseline"};
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const JsonPlace at = root.at("variants").at(i);
    const json& v = variants[i];
    if (!v.is_object())
      fail(at, fmt::format("expected an object {{name, description, overrides}}, got {}", v.dump()));
    reject_unknown(v, {"name", "description", "overrides"}, at);
    ScenarioRun run;
    run.name = string_field(v, "name", at, true);
    if (run.name.empty()) fail(at.at("name"), "must not be empty");
    if (!names.insert(run.name).second) {
      fail(at.at("name"),
           fmt::format("'{}' is already used (the baseline is called 'baseline'); names must be unique",
                       run.name));
    }
    run.description = string_field(v, "description", at, false);
    if (!v.contains("overrides"))
      fail(at, "missing required field 'overrides' ({} for a copy of the baseline)");
    run.overrides = v["overrides"];
    run.place = at;
    run.job = apply_overrides(base.job, run.overrides, at.at("overrides"), base_dir);
    s.runs.push_back(std::move(run));
  }
  return s;
}

std::vector<std::string> builtin_scenario_names() {
  std::vector<std::string> names;
  for (const auto& [stem, text] : embedded_scenario_files()) names.emplace_back(stem);
  return names;
}

std::string builtin_scenario_json(const std::string& name) {
  for (const auto& [stem, text] : embedded_scenario_files()) {
    if (stem == name) return std::string(text);
  }
  throw InputError(fmt::format("unknown built-in scenario '{}'; built-in: {}", name,
                               fmt::join(builtin_scenario_names(), ", ")));
}

std::string default_scenario_name() {
  return "gpt3-175b-1024-h100";
}

Scenario load_scenario(const std::string& name_or_path) {
  const auto names = builtin_scenario_names();
  if (std::find(names.begin(), names.end(), name_or_path) != names.end()) {
    const std::string where = fmt::format("built-in scenario {}", name_or_path);
    return parse_scenario(workloads::parse_json_text(builtin_scenario_json(name_or_path), where), where);
  }
  std::error_code ec;  // a name the file system refuses (too long) is no file
  if (!std::filesystem::exists(name_or_path, ec)) {
    throw InputError(fmt::format("scenario '{}': neither a built-in scenario ({}) nor an existing file",
                                 name_or_path, fmt::join(names, ", ")));
  }
  // A replay job's trace path is relative to the scenario file (it ships next to its traces).
  return parse_scenario(workloads::read_json_file(name_or_path, "scenario"), name_or_path,
                        std::filesystem::path(name_or_path).parent_path().string());
}

}  // namespace commstack::sim::scenario
