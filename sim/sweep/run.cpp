#include "sim/sweep/run.hpp"

#include <unistd.h>

#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/sweep/progress.hpp"
#include "sim/sweep/store.hpp"
#include "sim/sweep/worker_pool.hpp"

namespace commstack::sim::sweep {
namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

// Rank 0 opens the output directory and tells every rank which points are left (or the error).
std::vector<std::size_t> agree_on_todo(const SweepSpec& spec, const SweepOptions& options,
                                       const std::vector<Point>& points, Ranks& ranks, StoredRows& stored) {
  ojson message;
  if (ranks.rank() == 0) {
    try {
      stored = open_output(options.output, spec, points, options.restart);
      message["todo"] = ojson::array();
      for (const auto& p : points) {
        if (!stored.by_index.contains(p.index)) message["todo"].push_back(p.index);
      }
    } catch (const InputError& e) {
      message["error"] = e.what();
    }
  }
  message = ojson::parse(ranks.broadcast(ranks.rank() == 0 ? message.dump() : std::string()));
  if (message.contains("error")) {
    // Only rank 0 says it (the others end with the same status, quietly: see the sweep verb).
    throw InputError(message["error"].get<std::string>());
  }
  return message["todo"].get<std::vector<std::size_t>>();
}

}  // namespace

std::vector<std::size_t> share_of_rank(const std::vector<std::size_t>& todo, int rank, int ranks) {
  std::vector<std::size_t> mine;
  for (std::size_t j = static_cast<std::size_t>(rank); j < todo.size(); j += static_cast<std::size_t>(ranks)) {
    mine.push_back(todo[j]);
  }
  return mine;
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options, const PointEvaluator& evaluate,
                       Ranks& ranks) {
  const std::vector<Point> points = expand(spec);
  StoredRows stored;
  const std::vector<std::size_t> todo = agree_on_todo(spec, options, points, ranks, stored);
  const std::vector<std::size_t> mine = share_of_rank(todo, ranks.rank(), ranks.size());
  const int K = ranks.size();

  // Each rank keeps its own journal, so that a killed MPI sweep keeps what every rank finished
  // (when the output directory is on a file system that all ranks share).
  std::unique_ptr<Journal> journal;
  if (ranks.rank() == 0) {
    journal = std::make_unique<Journal>(options.output / "points.jsonl");
  } else if (!mine.empty()) {
    std::error_code ec;
    fs::create_directories(options.output / "parts", ec);
    if (!ec) journal = std::make_unique<Journal>(options.output / "parts" / fmt::format("rank-{}.jsonl", ranks.rank()));
  }

  const bool show = ranks.rank() == 0 && !options.quiet && (options.progress || ::isatty(STDERR_FILENO) != 0);
  const std::string label = K == 1 ? "sweep" : fmt::format("sweep rank 0 of {}", K);
  ProgressBar bar(label, K == 1 ? points.size() : mine.size(), K == 1 ? stored.by_index.size() : 0, show);

  std::string new_rows;  // this rank's rows as JSONL, for the gather
  std::map<std::size_t, Row> computed;
  try {
    run_in_processes(
        mine, options.jobs, [&](std::size_t i) { return evaluate(spec, points[i]).dump(); },
        [&](std::size_t i, const PointOutcome& outcome) {
          Row row = make_row(points[i], outcome);
          if (journal) journal->append(row);
          new_rows += row.dump() + "\n";
          computed.emplace(i, std::move(row));
          bar.point_done();
        },
        [&] { bar.refresh(); });
  } catch (const std::exception& e) {
    if (K == 1) throw;
    fmt::print(stderr, "commstack: error: sweep rank {}: {}\n", ranks.rank(), e.what());
    ranks.abort(3);  // the other ranks wait in the gather
  }
  bar.finish();

  const std::vector<std::string> gathered = ranks.gather(new_rows);
  SweepSummary summary;
  summary.ranks = K;
  if (ranks.rank() != 0) return summary;

  // Rank 0: the other ranks' rows go into points.jsonl too (their parts files are then redundant).
  for (int r = 1; r < K; ++r) {
    const std::string& text = gathered[static_cast<std::size_t>(r)];
    StoredRows theirs;
    read_rows(text, fmt::format("rows gathered from rank {}", r), points, theirs);
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t nl = text.find('\n', start);
      Row row = ojson::parse(text.substr(start, nl - start));
      start = nl + 1;
      journal->append(row);
      const std::size_t i = row["index"].get<std::size_t>();
      computed.emplace(i, std::move(row));
    }
  }
  std::error_code ec;
  fs::remove_all(options.output / "parts", ec);

  std::vector<Row> rows;
  rows.reserve(points.size());
  summary.points = points.size();
  summary.reused = stored.by_index.size();
  summary.computed = computed.size();
  summary.dropped = stored.dropped;
  for (const auto& p : points) {
    auto it = stored.by_index.find(p.index);
    const Row& row = it != stored.by_index.end() ? it->second : computed.at(p.index);
    const std::string status = row["status"].get<std::string>();
    if (status == "ok") ++summary.ok;
    else if (status == "invalid") ++summary.invalid;
    else ++summary.failed;
    rows.push_back(row);
  }
  write_results(options.output, spec, rows);
  return summary;
}

}  // namespace commstack::sim::sweep
