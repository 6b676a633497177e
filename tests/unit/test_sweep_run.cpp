// Whole sweeps with a closed-form evaluator (no simulation): the merged results do not depend on
// the number of processes, a resumed sweep computes only the missing points and ends with the
// same bytes, and results of another base job are refused.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "sim/sweep/run.hpp"
#include "sim/sweep/store.hpp"

using namespace commstack;
using namespace commstack::sim::sweep;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("commstack-test-sweep-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SweepSpec spec_with(const std::string& base, const std::string& grid) {
  return parse_sweep(ojson::parse(R"({"base": )" + base + R"(, "grid": )" + grid + "}"), "sweep.json", ".");
}

const std::string kBase = R"({"parallel": {"tp": 1}, "nodes": 1, "scale": 2.5})";
const std::string kGrid = R"({"parallel.tp": [1, 2, 3, 4], "nodes": [1, 2, 4]})";

// time = scale * nodes / tp; tp 3 is an impossible configuration.
ojson closed_form(const SweepSpec& spec, const Point& p) {
  const auto job = apply_point(spec, p);
  const int tp = job["parallel"]["tp"].get<int>();
  if (tp == 3) throw InputError("parallel.tp: 3 does not divide the 8 GPUs of a node");
  ojson r;
  r["time_s"] = job["scale"].get<double>() * job["nodes"].get<int>() / tp;
  r["gpus"] = 8 * job["nodes"].get<int>();
  r["breakdown"] = ojson::array({1, 2});  // arrays stay out of the CSV
  r["memory"] = {{"weights", 10}, {"activations", 20}};
  return r;
}

SweepSummary run(const SweepSpec& spec, const fs::path& out, int jobs, bool restart = false) {
  SweepOptions o;
  o.output = out;
  o.jobs = jobs;
  o.quiet = true;
  o.restart = restart;
  auto ranks = single_process();
  return run_sweep(spec, o, closed_form, *ranks);
}

}  // namespace

TEST_CASE("sweep: merged results are sorted by point and identical for 1 and 3 processes") {
  const auto spec = spec_with(kBase, kGrid);
  const fs::path a = fresh_dir("a"), b = fresh_dir("b");
  const auto sa = run(spec, a, 1);
  const auto sb = run(spec, b, 3);
  CHECK(sa.points == 12);
  CHECK(sa.computed == 12);
  CHECK(sa.ok == 9);
  CHECK(sa.invalid == 3);
  CHECK(sa.failed == 0);
  CHECK(sb.ok == 9);
  CHECK(slurp(a / "results.jsonl") == slurp(b / "results.jsonl"));
  CHECK(slurp(a / "results.csv") == slurp(b / "results.csv"));

  const std::string csv = slurp(a / "results.csv");
  std::istringstream lines(csv);
  std::string header, row0, row1;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  CHECK(header == "index,id,parallel.tp,nodes,status,time_s,gpus,memory.weights,memory.activations,error");
  CHECK(row1.substr(row1.find(",1,2,")) == ",1,2,ok,5.0,16,10,20,");  // 2.5 * 2 / 1
  // Point 6 is tp 3, nodes 1: invalid, with its message.
  const auto points = expand(spec);
  std::string row6;
  for (int i = 0; i < 5; ++i) std::getline(lines, row6);
  CHECK(row6 == "6," + points[6].id + ",3,1,invalid,,,,,parallel.tp: 3 does not divide the 8 GPUs of a node");
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("sweep: a resumed sweep computes only the missing points and ends with the same bytes") {
  const auto spec = spec_with(kBase, kGrid);
  const fs::path full = fresh_dir("full"), cut = fresh_dir("cut");
  run(spec, full, 2);
  run(spec, cut, 2);
  // A run killed after 5 points, in the middle of writing the 6th line.
  const std::string journal = slurp(cut / "points.jsonl");
  std::size_t pos = 0;
  for (int i = 0; i < 5; ++i) pos = journal.find('\n', pos) + 1;
  {
    std::ofstream out(cut / "points.jsonl", std::ios::binary | std::ios::trunc);
    out << journal.substr(0, pos) << journal.substr(pos, 20);
  }
  fs::remove(cut / "results.jsonl");
  fs::remove(cut / "results.csv");
  const auto s = run(spec, cut, 2);
  CHECK(s.reused == 5);
  CHECK(s.computed == 7);
  CHECK(slurp(cut / "results.jsonl") == slurp(full / "results.jsonl"));
  CHECK(slurp(cut / "results.csv") == slurp(full / "results.csv"));
  // The journal now has 12 whole lines (the unfinished one was cut off).
  const std::string j = slurp(cut / "points.jsonl");
  CHECK(std::count(j.begin(), j.end(), '\n') == 12);
  CHECK(j.back() == '\n');
  // A second rerun has nothing left to do.
  CHECK(run(spec, cut, 2).computed == 0);
  fs::remove_all(full);
  fs::remove_all(cut);
}

TEST_CASE("sweep: a grid edit keeps the finished points, another base job is refused unless --restart") {
  const fs::path dir = fresh_dir("edit");
  run(spec_with(kBase, kGrid), dir, 2);
  // Two more tp values and one node count less: 6 x 2 = 12 points, 8 of them computed before.
  const auto wider = spec_with(kBase, R"({"parallel.tp": [1, 2, 3, 4, 8, 16], "nodes": [1, 2]})");
  const auto s = run(wider, dir, 2);
  CHECK(s.points == 12);
  CHECK(s.reused == 8);
  CHECK(s.computed == 4);
  CHECK(s.dropped == 4);  // the nodes = 4 points
  const fs::path fresh = fresh_dir("edit-fresh");
  run(wider, fresh, 1);
  CHECK(slurp(dir / "results.csv") == slurp(fresh / "results.csv"));

  const auto other_base = spec_with(R"({"parallel": {"tp": 1}, "nodes": 1, "scale": 3.0})", kGrid);
  std::string message;
  try {
    run(other_base, dir, 2);
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message.find("manifest.json: the results there were computed from another base job") != std::string::npos);
  CHECK(message.find("--restart to discard the results in " + dir.string()) != std::string::npos);
  const auto r = run(other_base, dir, 2, true);
  CHECK(r.reused == 0);
  CHECK(r.computed == 12);
  fs::remove_all(dir);
  fs::remove_all(fresh);
}

TEST_CASE("sweep: damaged journals and foreign directories are refused with the line") {
  const auto spec = spec_with(kBase, kGrid);
  const auto points = expand(spec);
  StoredRows rows;
  CHECK_THROWS_WITH_AS(read_rows("{\"id\": 3}\n", "points.jsonl", points, rows),
                       "points.jsonl line 1: expected a sweep result row with id, point and status", InputError);
  const std::string forged = R"({"index":0,"id":")" + points[0].id + R"(","point":{"parallel.tp":2,"nodes":1},"status":"ok"})";
  CHECK_THROWS_WITH_AS(read_rows("\n" + forged + "\n", "points.jsonl", points, rows),
                       doctest::Contains("points.jsonl line 2: /point: {\"parallel.tp\":2,\"nodes\":1} has the id of grid "
                                         "point 0"),
                       InputError);
  const fs::path dir = fresh_dir("foreign");
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "mine\n";
  CHECK_THROWS_WITH_AS(run(spec, dir, 1), doctest::Contains("a directory with other files and no sweep results"),
                       InputError);
  fs::remove_all(dir);
}

TEST_CASE("sweep: ranks share the points round robin") {
  const std::vector<std::size_t> todo = {0, 2, 3, 5, 7, 8, 9};
  CHECK(share_of_rank(todo, 0, 3) == std::vector<std::size_t>{0, 5, 9});
  CHECK(share_of_rank(todo, 1, 3) == std::vector<std::size_t>{2, 7});
  CHECK(share_of_rank(todo, 2, 3) == std::vector<std::size_t>{3, 8});
  CHECK(share_of_rank(todo, 0, 1) == todo);
}
