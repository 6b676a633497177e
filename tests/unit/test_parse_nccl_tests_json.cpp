// nccl-tests -J JSON output: the same result as the text output of the same run, the run's NCCL
// settings and version, and one clear error per malformed field.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/nccl_tests_json.hpp"
#include "calibration/fit/text_lines.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"

using namespace commstack::fit;

namespace {
std::string source(const std::string& rel) {
  return std::string(COMMSTACK_SOURCE_DIR) + "/" + rel;
}

// A small -J file in nccl-tests' layout (src/util.cu), with `row` as its one result.
std::string small_json(const std::string& row) {
  return R"({"version":1,"args":["/opt/nccl-tests/build/all_gather_perf_mpi","-b","1M"],
    "env":["HOME=/root","NCCL_ALGO=Ring","NCCL_MIN_NCHANNELS=24"],"nccl_version":22807,
    "config":{"nthreads":1,"ngpus":8,"minimum_bytes":1048576,"maximum_bytes":1048576,"step_factor":2,
              "warmup_iters":5,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0},
    "devices":[{"rank":0,"group":0,"pid":7,"hostname":"node-a","device":0,"device_hex":"0000:19:00",
                "device_info":"NVIDIA H100 80GB HBM3"}],
    "results":[)" +
         row +
         R"(],"out_of_bounds":{"count":0,"okay":true},"average_bus_bandwidth":{"bandwidth":45.88,"okay":"unchecked"}})";
}
const char* kRow =
    R"({"size":1048576,"count":32768,"type":"float","redop":"none","root":"    -1",
        "out_of_place":{"time":20.0,"alg_bw":52.43,"bus_bw":45.88,"nwrong":0},"in_place":null,
        "actual_iterations":20,"experiment_name":""})";
}  // namespace

TEST_CASE("parse: nccl-tests JSON gives the same run as the text output it mirrors") {
  // tests/cli/nccl-tests-json-dgxc-h100.json holds the dgxc H100 sweep of
  // calibration/data/nccl-tests (rank lines and rows) in the -J layout.
  const std::string json_text =
      commstack::read_input_file(source("tests/cli/nccl-tests-json-dgxc-h100.json"));
  REQUIRE(looks_like_nccl_tests_json(json_text));
  const NcclTestsResult j = parse_nccl_tests_json(json_text, "dgxc.json");
  const NcclTestsResult t = parse_nccl_tests_file(
      source("calibration/data/nccl-tests/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt"));
  CHECK(j.op == NcclTestsOp::all_reduce);
  CHECK(j.op_source == "command line");
  CHECK(j.n_ranks == t.n_ranks);
  CHECK(j.n_hosts == t.n_hosts);
  CHECK(j.gpus_per_node == t.gpus_per_node);
  CHECK(j.ranks_complete);
  CHECK(j.gpu_model == t.gpu_model);
  CHECK(*j.run.n_gpus == 1);
  REQUIRE(j.rows.size() == t.rows.size());
  for (std::size_t i = 0; i < j.rows.size(); ++i) {
    const auto& a = j.rows[i];
    const auto& b = t.rows[i];
    CAPTURE(a.size_bytes);
    CHECK(a.size_bytes == b.size_bytes);
    CHECK(a.count == b.count);
    CHECK(a.root == b.root);
    CHECK(a.out_of_place->time_us == b.out_of_place->time_us);
    CHECK(*a.out_of_place->busbw_GBps == *b.out_of_place->busbw_GBps);
    CHECK(a.in_place->time_us == b.in_place->time_us);
    CHECK(*a.in_place->wrong == *b.in_place->wrong);
  }
  // The text log is not JSON.
  CHECK_FALSE(looks_like_nccl_tests_json(commstack::read_input_file(
      source("calibration/data/nccl-tests/nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt"))));
}

TEST_CASE("parse: nccl-tests JSON carries the run's NCCL settings, version and -g") {
  const NcclTestsResult r = parse_nccl_tests_json(small_json(kRow), "ag.json");
  CHECK(r.op == NcclTestsOp::all_gather);  // from args[0], the _mpi binary
  CHECK(*r.nccl_version == "2.28.7");
  CHECK(*r.run.n_gpus == 8);
  CHECK(r.env.at("NCCL_ALGO").value == "Ring");
  CHECK(r.env.at("NCCL_MIN_NCHANNELS").value == "24");
  CHECK(r.env.count("HOME") == 0);  // only NCCL settings
  REQUIRE(r.rows.size() == 1);
  CHECK(*r.rows[0].root == -1);
  CHECK_FALSE(r.rows[0].in_place.has_value());
  CHECK(*r.avg_busbw_GBps == approx(45.88));
}

TEST_CASE("parse: malformed nccl-tests JSON names the field and what was expected") {
  using commstack::InputError;
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"results\": [", "x.json"),
                       doctest::Contains("x.json: malformed JSON"), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"config\": {}}", "x.json"),
                       doctest::Contains("x.json: results: expected the list of result rows"), InputError);
  // kRow with one field changed, and the error it must give.
  const struct {
    const char *from, *to, *error;
  } cases[] = {
      {"\"time\":20.0", "\"time\":\"nan\"", "x.json: results[0].out_of_place.time: expected a finite number"},
      {"\"size\":1048576", "\"size\":-1048576", "results[0].size: expected bytes >= 0"},
      {"\"out_of_place\"", "\"other\"", "results[0]: expected an out_of_place or in_place timing"},
      // QA: 0 was dropped unseen, 1e-300 and 1e300 taken as measured (errors of 1e304 %).
      {"\"time\":20.0", "\"time\":0",
       "results[0].out_of_place.time: expected a time per call of 0.001 us to 1e+12 us (the row has a size > "
       "0), "
       "got 0"},
      {"\"time\":20.0", "\"time\":1e-300",
       "results[0].out_of_place.time: expected a time per call of 0.001 us"},
      {"\"time\":20.0", "\"time\":1e300",
       "results[0].out_of_place.time: expected a time per call of 0.001 us"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.to);
    std::string row = kRow;
    row.replace(row.find(c.from), std::string(c.from).size(), c.to);
    CHECK_THROWS_WITH_AS(parse_nccl_tests_json(small_json(row), "x.json"), doctest::Contains(c.error),
                         InputError);
  }
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json(small_json(""), "x.json"), doctest::Contains("results: no rows"),
                       InputError);
}

// QA: devices[3].rank = 2^40 was narrowed to int (0) before any check, and the error said "rank 0
// is listed twice". Every integer narrowed to int is range-checked first, as in the text log.
TEST_CASE("parse: nccl-tests JSON integers beyond an int are refused before they are narrowed") {
  using commstack::InputError;
  const struct {
    const char *from, *to, *error;
  } cases[] = {
      {"\"rank\":0", "\"rank\":1099511627776",
       "x.json: devices[0].rank: expected an integer from 0 to 10000000, got 1099511627776"},
      {"\"rank\":0", "\"rank\":-1", "devices[0].rank: expected an integer from 0 to 10000000, got -1"},
      {"\"group\":0", "\"group\":4294967296", "devices[0].group: expected an integer from 0 to 10000000"},
      {"\"device\":0", "\"device\":4294967296", "devices[0].device: expected an integer from 0 to 1000000"},
      {"\"ngpus\":8", "\"ngpus\":4294967304", "config.ngpus: expected an integer from 0 to 1000000000"},
      {"\"minimum_bytes\":1048576", "\"minimum_bytes\":-1",
       "config.minimum_bytes: expected a byte count >= 0"},
      {"\"rank\":0", "\"rank\":18446744073709551615", "devices[0].rank: expected an integer below 2^63"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.to);
    std::string doc = small_json(kRow);
    doc.replace(doc.find(c.from), std::string(c.from).size(), c.to);
    CHECK_THROWS_WITH_AS(parse_nccl_tests_json(doc, "x.json"), doctest::Contains(c.error), InputError);
  }
}
