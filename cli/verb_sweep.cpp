// `commstack sweep SWEEP.json`: a grid of training jobs (docs/sweep-format.md), each point
// simulated in its own process, --jobs at a time, resumable from the output directory, and split
// over MPI ranks when launched by mpirun or srun (docs/sweep.md). Rank 0 gathers and writes the
// merged results, byte for byte the same as a single-process run.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "sim/sweep/ranks.hpp"
#include "sim/sweep/run.hpp"
#include "sim/sweep/store.hpp"
#include "sim/sweep/training_jobs.hpp"
#include "sim/sweep/worker_pool.hpp"

namespace commstack::cli {
namespace {

namespace sw = commstack::sim::sweep;
using ojson = nlohmann::ordered_json;

struct SweepOptions {
  std::string file, output;
  int jobs = 0;            // 0: not given (its usable CPUs)
  bool jobs_given = false;  // -j/--jobs on the command line (then 0 is an error, not the default)
  bool progress = false, quiet = false, restart = false, dry_run = false;
};

// A cell of the summary table: the point's value of one axis.
std::string cell(const ojson& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void print_points(const sw::SweepSpec& spec, const std::vector<sw::Point>& points) {
  fmt::print("{} points of {} (base: {})\n", points.size(), spec.origin, spec.base_origin);
  for (const auto& p : points) fmt::print("{:>5}  {}  {}\n", p.index, p.id, p.overrides.dump());
}

// People's view of the merged results; the CSV and JSONL hold everything.
void print_summary(const sw::SweepSpec& spec, const SweepOptions& o, const sw::SweepSummary& s) {
  std::ifstream in(std::filesystem::path(o.output) / "results.jsonl");
  std::string line;
  std::vector<std::string> axes;
  for (const auto& g : spec.groups) {
    for (const auto& a : g.axes) axes.push_back(a.path);
  }
  fmt::print("{:>5}", "point");
  for (const auto& a : axes) fmt::print("  {:>12}", a);
  fmt::print("  {:>8}  {:>12}  {:>8}\n", "status", "iteration_s", "MFU");
  while (std::getline(in, line)) {
    const ojson row = ojson::parse(line);
    fmt::print("{:>5}", row["index"].get<std::size_t>());
    for (const auto& a : axes) fmt::print("  {:>12}", cell(row["point"][a]));
    fmt::print("  {:>8}", row["status"].get<std::string>());
    // A training result has both; a replay result (a base with "replay") has no MFU.
    const auto number = [&](const char* key) -> const ojson* {
      if (!row.contains("result") || !row["result"].contains(key) || !row["result"][key].is_number()) return nullptr;
      return &row["result"][key];
    };
    const ojson* iteration = number("iteration_s");
    const ojson* mfu = number("mfu");
    if (iteration != nullptr) {
      fmt::print("  {:>12.4f}", iteration->get<double>());
      if (mfu != nullptr) fmt::print("  {:>7.1f}%\n", 100.0 * mfu->get<double>());
      else fmt::print("  {:>8}\n", "-");
    } else {
      std::string error = row.value("error", "");
      if (error.size() > 100) error = error.substr(0, 97) + "...";
      fmt::print("  {}\n", error);
    }
  }
  fmt::print("{} points: {} ok, {} invalid, {} failed; {} from an earlier run, {} computed now ({} rank{} x {} "
             "process{})\n",
             s.points, s.ok, s.invalid, s.failed, s.reused, s.computed, s.ranks, s.ranks == 1 ? "" : "s", o.jobs,
             o.jobs == 1 ? "" : "es");
  if (s.dropped > 0) fmt::print("{} stored points are not in the grid any more and were left out\n", s.dropped);
  fmt::print("results: {}/results.csv, {}/results.jsonl\n", o.output, o.output);
}

void run(SweepOptions o) {
  // MPI first: before the sweep forks its worker processes or anything creates a SimGrid engine.
  std::unique_ptr<sw::Ranks> ranks = sw::launch_ranks();
  try {
    const sw::SweepSpec spec = sw::load_training_sweep(o.file);
    if (o.dry_run) {
      if (ranks->rank() == 0) print_points(spec, sw::expand(spec));
      return;
    }
    if (o.output.empty()) o.output = std::filesystem::path(o.file).stem().string() + "-results";
    if (!o.jobs_given && o.jobs == 0) o.jobs = sw::usable_cpus();
    if (o.jobs < 1 || o.jobs > 4096) throw InputError(fmt::format("--jobs: expected 1 to 4096, got {}", o.jobs));
    sw::SweepOptions run_options;
    run_options.output = o.output;
    run_options.jobs = o.jobs;
    run_options.progress = o.progress;
    run_options.quiet = o.quiet;
    run_options.restart = o.restart;
    const sw::SweepSummary summary = sw::run_sweep(spec, run_options, sw::evaluate_training_point, *ranks);
    if (ranks->rank() != 0) return;
    print_summary(spec, o, summary);
    if (summary.failed > 0) {
      throw std::runtime_error(fmt::format("{} of {} points failed (see {}/results.csv); run the same command again to "
                                           "retry them",
                                           summary.failed, summary.points, o.output));
    }
  } catch (const InputError&) {
    if (ranks->rank() == 0) throw;
    // Every rank reads the same files and agrees on the output directory (run_sweep broadcasts
    // rank 0's verdict), so every rank fails alike; only rank 0 says why.
    ranks.reset();  // MPI_Finalize
    std::exit(2);
  }
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Simulate a grid of training jobs (docs/sweep-format.md) in parallel processes, resumable, MPI-capable");
  sub->add_option("sweep", opts->file, "Sweep file: a base job and a grid of field values")->required();
  sub->add_option("-o,--output", opts->output,
                  "Results directory (default: <sweep file name>-results); rerun to resume, finished points are kept");
  CLI::Option* jobs =
      sub->add_option("-j,--jobs", opts->jobs, "Points simulated at once per process/rank (default: its usable CPUs)");
  sub->add_flag("--progress", opts->progress, "Show the progress bar on stderr even when it is not a terminal");
  sub->add_flag("-q,--quiet", opts->quiet, "No progress bar");
  sub->add_flag("--restart", opts->restart, "Discard the results already in the output directory");
  sub->add_flag("--dry-run", opts->dry_run, "List the points (index, id, values) without running them");
  sub->footer(fmt::format("MPI: {}. {}", sw::mpi_description(),
                          sw::mpi_built()
                              ? "Under mpirun/mpiexec/srun with K ranks, each rank runs every K-th point and rank 0 "
                                "writes the merged results (docs/sweep.md)."
                              : "This build has no MPI: sweeps run on one machine only (install libopenmpi-dev and "
                                "rebuild for mpirun/srun)."));
  on_selected(sub, [opts, jobs] {
    opts->jobs_given = jobs->count() > 0;
    run(*opts);
  });
}

}  // namespace commstack::cli
