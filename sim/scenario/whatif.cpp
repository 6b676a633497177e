// What-if runs and their comparison with the baseline (whatif.hpp).
#include "sim/scenario/whatif.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/scenario/isolated_run.hpp"

namespace commstack::sim::scenario {

std::vector<PreparedJob> prepare_runs(const Scenario& s) {
  std::vector<PreparedJob> out;
  out.reserve(s.runs.size());
  for (const auto& run : s.runs) {
    const JsonPlace at = run.name == "baseline"
                             ? run.place
                             : JsonPlace{run.place.where, fmt::format("{} ('{}', baseline + overrides)",
                                                                      run.place.path, run.name)};
    out.push_back(prepare_job(run.job, at));
  }
  return out;
}

WhatifResult run_whatif(const Scenario& s, int jobs,
                        const std::function<void(std::size_t, std::size_t)>& on_done) {
  const std::vector<PreparedJob> prepared = prepare_runs(s);
  std::vector<IsolatedTask> tasks;
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    // The child is a fork of this process: it reads prepared[i] from its copy of our memory.
    tasks.push_back(
        {fmt::format("{}: {}", s.origin,
                     i == 0 ? std::string("baseline") : fmt::format("variant '{}'", s.runs[i].name)),
         [&prepared, i] { return run_job(prepared[i]); }});
  }
  std::size_t done = 0;
  const auto results = run_isolated_all(tasks, jobs, [&](std::size_t) {
    ++done;
    if (on_done) on_done(done, tasks.size());
  });

  WhatifResult w;
  w.scenario = s.name;
  w.description = s.description;
  w.origin = s.origin;
  w.replay = is_replay_job(s.runs.front().job);
  w.parts = w.replay ? replay_breakdown_parts() : breakdown_parts();
  for (std::size_t i = 0; i < results.size(); ++i) {
    WhatifRow row;
    row.name = s.runs[i].name;
    row.description = s.runs[i].description;
    row.overrides = s.runs[i].overrides;
    row.result = results[i];
    row.iteration_s = row.result.at("iteration_s").get<double>();
    row.mfu = row.result.value("mfu", 0.0);
    row.tokens_per_s = row.result.value("tokens_per_s", 0.0);
    for (const auto& part : w.parts)
      row.breakdown_s.push_back(row.result.at("breakdown_s").at(part).get<double>());
    w.rows.push_back(std::move(row));
  }
  const WhatifRow& base = w.rows.front();
  for (auto& row : w.rows) {
    // Identical jobs simulate to bitwise-identical times, so an unchanged variant is exactly 1. A
    // variant with another global batch or sequence length does other work per iteration: its
    // iteration time says nothing about speed, so it is compared per token (time per token of the
    // baseline over its own, the ratio of tokens/s).
    const double base_tokens = base.result.value("tokens_per_iteration", 0.0);
    const double tokens = row.result.value("tokens_per_iteration", 0.0);
    row.per_token = !w.replay && base_tokens > 0 && tokens > 0 && tokens != base_tokens;
    row.speedup = row.per_token ? (base.iteration_s / base_tokens) / (row.iteration_s / tokens)
                                : base.iteration_s / row.iteration_s;
    row.delta_s.clear();
    row.moved.clear();
    row.moved_s = 0;
    for (std::size_t k = 0; k < w.parts.size(); ++k) {
      const double d = row.breakdown_s[k] - base.breakdown_s[k];
      row.delta_s.push_back(d);
      // Ties keep the first part in report order, so the choice is deterministic.
      if (std::abs(d) > std::abs(row.moved_s)) {
        row.moved_s = d;
        row.moved = w.parts[k];
      }
    }
  }
  return w;
}

}  // namespace commstack::sim::scenario
