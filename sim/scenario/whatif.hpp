#pragma once
// `commstack whatif`: every run of a scenario simulated (each in its own process, see
// isolated_run.hpp), then compared with the baseline: speedup = baseline iteration time / variant
// iteration time, and the difference of the time breakdown (compute, exposed TP/CP/EP/DP/PP
// communication, tail) says which part of the iteration the change moved.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario.hpp"

namespace commstack::sim::scenario {

// The breakdown components, in report order (sim/train/train.hpp Breakdown).
inline const std::vector<std::string>& breakdown_parts() {
  static const std::vector<std::string> p = {"compute", "tp", "cp", "ep", "dp", "pp", "tail"};
  return p;
}

// A replay scenario's parts (sim/replay/replay.hpp Breakdown of the critical rank): GPU compute,
// communication not overlapped by compute, and GPU idle (launch gaps, CPU-bound stretches, waits).
inline const std::vector<std::string>& replay_breakdown_parts() {
  static const std::vector<std::string> p = {"compute", "exposed_comm", "idle"};
  return p;
}

// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct WhatifRow {
  std::string name, description;
  nlohmann::json overrides;       // as written in the scenario
  nlohmann::ordered_json result;  // the train report of the run (sim/train/report.hpp to_json)
  double iteration_s = 0;
  // Baseline time per iteration / this one; per token (the ratio of the throughputs) when the run
  // processes a different number of tokens per iteration than the baseline (per_token).
  double speedup = 1;
  bool per_token = false;
  double mfu = 0;           // 0 for replays (a trace has no model FLOPs)
  double tokens_per_s = 0;  // 0 for replays
  std::vector<double> breakdown_s;  // per WhatifResult::parts
  std::vector<double> delta_s;      // this minus the baseline, per WhatifResult::parts
  std::string moved;                // the part with the largest |delta| ("" when nothing moved)
  double moved_s = 0;               // its delta (signed)
};

struct WhatifResult {
  std::string scenario, description, origin;
  bool replay = false;             // the runs are trace replays (replay_job.hpp), not training jobs
  std::vector<std::string> parts;  // breakdown_parts() or, for replays, replay_breakdown_parts()
  std::vector<WhatifRow> rows;     // rows[0]: the baseline
};

// Parses and checks every run of the scenario (cluster, topology, model, parallelism, memory) in
// this process, so that all input errors are reported before anything is simulated.
std::vector<PreparedJob> prepare_runs(const Scenario& s);

// Simulates every run, at most `jobs` at a time, and compares them with the baseline. The result
// does not depend on `jobs`. `on_done(done, total)` reports progress.
WhatifResult run_whatif(const Scenario& s, int jobs,
                        const std::function<void(std::size_t, std::size_t)>& on_done = {});

}  // namespace commstack::sim::scenario
