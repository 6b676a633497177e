#pragma once
// Runs a sweep: skips the points already in the output directory, splits the rest over the MPI
// ranks (if any), runs each rank's share in a pool of forked processes, gathers the rows on rank 0
// and writes the merged results, identical whatever the number of ranks and processes.
#include <cstddef>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "sim/sweep/ranks.hpp"
#include "sim/sweep/spec.hpp"

namespace commstack::sim::sweep {

struct SweepOptions {
  std::filesystem::path output;  // the results directory
  int jobs = 1;                  // processes per rank running points at once
  bool progress = false;         // draw the progress bar even when stderr is not a terminal
  bool quiet = false;            // no progress bar at all
  bool restart = false;          // discard earlier results in `output`
};

struct SweepSummary {
  std::size_t points = 0;    // in the grid
  std::size_t reused = 0;    // finished in an earlier run
  std::size_t computed = 0;  // run now (all ranks)
  std::size_t ok = 0, invalid = 0, failed = 0;
  std::size_t dropped = 0;   // stored rows of points no longer in the grid
  int ranks = 1;
};

// Evaluates one point; runs in a forked child process (one SimGrid engine per process). Throws
// InputError when the point's configuration is impossible (recorded as an invalid point).
using PointEvaluator = std::function<nlohmann::ordered_json(const SweepSpec& spec, const Point& point)>;

// On rank 0 the returned summary covers the whole sweep; other ranks return theirs with points = 0.
// InputError (an unusable output directory) is raised on every rank.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options, const PointEvaluator& evaluate, Ranks& ranks);

// Rank r's share of the points still to compute: every K-th, starting at r (a round robin over the
// grid order, so that an axis whose cost grows along the grid is spread over all ranks).
std::vector<std::size_t> share_of_rank(const std::vector<std::size_t>& todo, int rank, int ranks);

}  // namespace commstack::sim::sweep
