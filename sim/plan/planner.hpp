#pragma once
// `commstack plan`: search the parallel configurations of one model on one cluster and rank them
// by simulated iteration time (docs/plan.md). Steps:
//   1. enumerate (search_space.hpp) and drop what breaks a rule or does not fit in GPU memory;
//   2. a lower bound per configuration (lower_bound.hpp), sorted ascending;
//   3. simulate in that order with sim::train::simulate_training, stopping as soon as the next
//      bound is no better than the K-th best simulated time: every configuration left is then
//      proven slower than the K reported ones (branch and bound).
// Configurations with the same rank layout share one CommCosts, so a collective simulated for one
// of them is reused by the others.
#include <functional>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/plan/lower_bound.hpp"
#include "sim/plan/search_space.hpp"
#include "sim/train/train.hpp"

namespace commstack::sim::plan {

struct PlanOptions {
  SearchSpace space;
  int top = 10;  // K: configurations ranked (and proven to be the K fastest)
  train::CommSettings comm;
  // Called after each full simulation with (simulated so far, upper estimate of the total).
  std::function<void(long long, long long)> progress;
  // Asked before each simulation; true stops the search there (Ctrl-C in the CLI): the ranking then
  // holds the configurations simulated so far and PlanResult::unsimulated counts the rest.
  std::function<bool()> stop_requested;
};

struct PlanEntry {
  Candidate candidate;
  IterationBound bound;
  train::TrainResult result;  // graph and schedule dropped (memory); everything reported is kept
};

struct PlanResult {
  std::vector<PlanEntry> ranked;  // the `top` fastest simulated configurations, fastest first
  Enumeration space;              // counts (its `fits` list is moved out)
  long long feasible = 0;         // valid and within memory
  long long simulated = 0;
  long long pruned = 0;           // feasible, never simulated: bound >= the K-th best time
  long long unsimulated = 0;      // stopped early (stop_requested): feasible, neither simulated nor pruned
  long long simgrid_runs = 0;     // distinct collectives / messages simulated, all configurations
  double best_bound_pruned_s = 0; // the smallest bound among the pruned (0 if none)
  double gpu_egress_Bps = 0;
  // Wall-clock seconds per phase (reported on stderr only: outputs stay byte-identical).
  double enumerate_wall_s = 0, bound_wall_s = 0, simulate_wall_s = 0;
};

// Throws InputError when nothing is valid or nothing fits (with the smallest memory needed).
PlanResult plan(Simulator& sim, const workloads::ModelSpec& model, const workloads::ComputeProfile& compute,
                const PlanOptions& options);

}  // namespace commstack::sim::plan
