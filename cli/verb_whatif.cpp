// `commstack whatif [SCENARIO]`: "how much faster would we train if ...?" A scenario (a baseline
// training job and named variants, docs/scenario-format.md) is simulated run by run, each in its
// own process (sim/scenario/isolated_run.hpp), and every variant is compared with the baseline:
// iteration time, speedup, MFU, and which part of the iteration moved (docs/whatif.md).
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "sim/scenario/isolated_run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/whatif.hpp"
#include "sim/scenario/whatif_report.hpp"

namespace commstack::cli {
namespace {

struct WhatifOptions {
  std::string scenario;
  std::string format = "text";
  std::string plot;
  std::string output;
  std::string save_csv, save_json;
  std::optional<int> jobs;  // not given: the CPUs available, at most one per run
  bool list = false;
  bool progress = false;
  bool check = false;
};

// --output, --save-csv, --save-json and --plot must not replace the scenario file.
void refuse_outputs_over_inputs(const WhatifOptions& o) {
  const std::vector<InputArg> inputs{{"scenario", o.scenario, true}};
  refuse_overwriting_inputs("--output", o.output, inputs);
  refuse_overwriting_inputs("--save-csv", o.save_csv, inputs);
  refuse_overwriting_inputs("--save-json", o.save_json, inputs);
  refuse_overwriting_inputs("--plot", o.plot, plot_written_paths(o.plot), inputs);
}

void run(const WhatifOptions& o) {
  namespace sc = sim::scenario;
  refuse_outputs_over_inputs(o);
  if (o.list) {
    for (const auto& name : sc::builtin_scenario_names()) {
      const sc::Scenario s = sc::load_scenario(name);
      fmt::print("{}{}: {}\n", name, name == sc::default_scenario_name() ? " (default)" : "", s.description);
    }
    return;
  }
  if (o.format != "text" && o.format != "csv" && o.format != "json") {
    throw InputError(fmt::format("--format: unknown format '{}'; expected text, csv or json", o.format));
  }
  if (o.check) {
    // --check simulates nothing, so there is no table, CSV, JSON or chart to write: an output flag
    // with it would be silently ignored (a CI job would wait for a file that never comes).
    std::vector<std::string> outputs;
    if (o.format != "text") outputs.push_back("--format " + o.format);
    if (!o.output.empty()) outputs.push_back("--output " + o.output);
    if (!o.save_csv.empty()) outputs.push_back("--save-csv " + o.save_csv);
    if (!o.save_json.empty()) outputs.push_back("--save-json " + o.save_json);
    if (!o.plot.empty()) outputs.push_back("--plot " + o.plot);
    if (!outputs.empty())
      throw InputError(fmt::format(
          "--check with {}: --check only checks the scenario and simulates nothing, so there is no result "
          "to format or write; expected --check alone (its one line on stdout), or the output flags without "
          "--check",
          fmt::join(outputs, ", ")));
  }
  if (o.jobs && (*o.jobs < 1 || *o.jobs > 4096))
    throw InputError(fmt::format("--jobs: expected 1 to 4096, got {}", *o.jobs));
  const sc::Scenario scenario =
      sc::load_scenario(o.scenario.empty() ? sc::default_scenario_name() : o.scenario);
  if (o.check) {
    // Every input check, no simulation: the scenario is usable as written.
    (void)sc::prepare_runs(scenario);
    fmt::print("{}: {} runs (baseline + {} variants), all valid\n", scenario.origin, scenario.runs.size(),
               scenario.runs.size() - 1);
    return;
  }
  const int jobs =
      o.jobs ? *o.jobs : std::min<int>(sc::available_cpus(), static_cast<int>(scenario.runs.size()));
  const bool show_progress = o.progress || ::isatty(STDERR_FILENO) != 0;
  const auto result = sc::run_whatif(scenario, jobs, [&](std::size_t done, std::size_t total) {
    if (show_progress)
      fmt::print(stderr, "\rwhatif: {}/{} runs simulated{}", done, total, done == total ? "\n" : "");
  });
  std::string text;
  if (o.format == "json")
    text = sc::whatif_json(result).dump(2) + "\n";
  else if (o.format == "csv")
    text = sc::whatif_csv(result);
  else
    text = sc::whatif_text(result);
  auto save = [](const std::string& path, const std::string& content, const char* flag) {
    std::ofstream out(path);
    if (!out) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
    out << content;
    if (!out) throw InputError(fmt::format("{}: writing '{}' failed", flag, path));
  };
  if (o.output.empty())
    fmt::print("{}", text);
  else
    save(o.output, text, "--output");
  if (!o.save_csv.empty()) save(o.save_csv, sc::whatif_csv(result), "--save-csv");
  if (!o.save_json.empty()) save(o.save_json, sc::whatif_json(result).dump(2) + "\n", "--save-json");
  if (!o.plot.empty()) sc::whatif_plot(result, o.plot);
}

}  // namespace

void register_whatif(CLI::App& app) {
  auto opts = std::make_shared<WhatifOptions>();
  CLI::App* sub = app.add_subcommand(
      "whatif",
      "How much faster would training be if ...? Simulate a baseline job and its variants, compare them");
  sub->add_option(
      "scenario", opts->scenario,
      "Scenario JSON file or built-in scenario name (default: the built-in gpt3-175b-1024-h100; see --list)");
  sub->add_option("--format", opts->format, "text, csv or json");
  sub->add_option("--output,-o", opts->output, "Write the table/CSV/JSON to this file instead of stdout");
  sub->add_option("--save-csv", opts->save_csv,
                  "Also write the CSV to this file (one simulation, several outputs)");
  sub->add_option("--save-json", opts->save_json, "Also write the JSON to this file");
  sub->add_option(
      "--plot", opts->plot,
      "Write a PNG bar chart (speedups, stacked breakdown) here, with its .dat and .gp next to it (gnuplot)");
  sub->add_option("--jobs,-j", opts->jobs,
                  "Runs simulated at once, one process each (default: CPUs available)");
  sub->add_flag("--progress", opts->progress, "Report progress on stderr even when it is not a terminal");
  sub->add_flag(
      "--check", opts->check,
      "Only check the scenario (every variant parsed, built and validated); nothing is simulated, so "
      "--format, --output, --save-csv, --save-json and --plot are refused with it");
  sub->add_flag("--list", opts->list, "List the built-in scenarios");
  on_selected(sub, [opts] { run(*opts); });
}

}  // namespace commstack::cli
