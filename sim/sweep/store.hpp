#pragma once
// The output directory of a sweep (docs/sweep.md), what makes a sweep resumable:
//   manifest.json        the fingerprint of the base job; results of another base are refused
//   points.jsonl         one line per finished point, appended as points finish (completion order)
//   parts/rank-R.jsonl   the same for MPI rank R > 0, folded into points.jsonl by rank 0 at the end
//   results.jsonl/.csv   the merged results, one row per point sorted by point index
// Rows are matched to grid points by id (a hash of the point's overrides), so points of an edited
// grid that were already computed are kept.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/spec.hpp"
#include "sim/sweep/worker_pool.hpp"

namespace commstack::sim::sweep {

using Row = nlohmann::ordered_json;

// {"index", "id", "point", "status", "result" | "error", "stderr" (if any)}.
Row make_row(const Point& point, const PointOutcome& outcome);

// Finished rows found in an output directory, matched to the current points.
struct StoredRows {
  std::map<std::size_t, Row> by_index;  // ok and invalid rows (failed ones are retried)
  std::size_t retried = 0;              // failed rows found (computed again)
  std::size_t dropped = 0;              // rows of points that are no longer in the grid
};

// Creates `dir` (and its manifest) or checks that the results there belong to this sweep's base
// job; `restart` discards earlier results instead. Reads points.jsonl and parts/*.jsonl.
StoredRows open_output(const std::filesystem::path& dir, const SweepSpec& spec, const std::vector<Point>& points,
                       bool restart);

// Parses journal lines (JSONL) and matches them to points (by id, overrides checked). `origin`
// names the text in messages. A last line without its newline (a run killed while writing) is ignored.
void read_rows(const std::string& text, const std::string& origin, const std::vector<Point>& points, StoredRows& into);

// Appends rows to a JSONL file, one write() per row so that a killed run leaves whole lines.
class Journal {
public:
  explicit Journal(const std::filesystem::path& file);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  void append(const Row& row);

private:
  std::filesystem::path file_;
  int fd_ = -1;
};

// The merged outputs for a complete set of rows (one per point, sorted by index).
std::string results_jsonl(const std::vector<Row>& rows);
std::string results_csv(const SweepSpec& spec, const std::vector<Row>& rows);
// Writes results.jsonl and results.csv atomically (temporary file + rename).
void write_results(const std::filesystem::path& dir, const SweepSpec& spec, const std::vector<Row>& rows);

}  // namespace commstack::sim::sweep
