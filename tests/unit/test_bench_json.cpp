// calibration/fit/bench_json: a bench report becomes nccl-tests-style rows for the fitting code.
#include <cstdio>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/fit/bench_json.hpp"
#include "calibration/fit/measured_run.hpp"
#include "common/error.hpp"

using namespace commstack;

namespace {

bench::BenchReport two_node_report() {
  bench::BenchReport r;
  r.machine.gpu_model = "NVIDIA H100 80GB HBM3";
  r.machine.sm = 90;
  r.machine.driver_version = "13.0";
  r.machine.cuda_runtime = "13.0";
  r.machine.nccl_version = "2.28.9";
  r.machine.nodes = 2;
  r.machine.gpus_per_node = 2;
  r.machine.nranks = 4;
  r.machine.hostnames = {"a", "a", "b", "b"};
  r.machine.launcher = "mpi";
  r.settings = {"standard", 5, 20, 5, "float", ""};
  auto point = [](std::uint64_t bytes, double us, int n) {
    bench::CollectivePoint p;
    p.bytes = bytes;
    p.count = bytes / 4;
    p.time_us = bench::summarize(std::vector<double>{us * 0.99, us, us * 1.05});
    p.algbw_GBps = static_cast<double>(bytes) / (us * 1e3);
    p.busbw_GBps = p.algbw_GBps * bench::bus_factor(bench::Op::all_reduce, n);
    return p;
  };
  bench::CollectiveSeries def;
  def.points = {point(1024, 20.0, 4), point(1 << 20, 60.0, 4)};
  bench::CollectiveSeries tree = def;
  tree.algo = bench::Algo::tree;
  tree.proto = bench::Proto::ll128;
  tree.points[0].time_us = bench::summarize(std::vector<double>{15.0});
  bench::CollectiveSeries failed;
  failed.algo = bench::Algo::nvls_tree;
  failed.proto = bench::Proto::simple;
  failed.status = "ncclInvalidUsage";
  r.collectives = {def, tree, failed};
  return r;
}

}  // namespace

TEST_CASE("bench: bench JSON converts to nccl-tests rows with rank layout") {
  const auto series = fit::bench_series(two_node_report(), "b.json");
  REQUIRE(series.size() == 2);  // the failed series is left out
  const auto& r = series[0].result;
  CHECK(r.op == fit::NcclTestsOp::all_reduce);
  CHECK(r.n_ranks == 4);
  CHECK(r.n_hosts == 2);
  CHECK(r.gpus_per_node == 2);
  CHECK(r.ranks_complete);
  CHECK(r.ranks.at(3).device == 1);
  CHECK(r.ranks.at(2).host == "b");
  CHECK(r.nccl_version == "2.28.9");
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[1].size_bytes == (1u << 20));
  CHECK(r.rows[1].out_of_place->time_us == 60.0);
  CHECK(r.rows[1].out_of_place->busbw_GBps.value() == approx((1 << 20) / 60e3 * 1.5));
  CHECK(r.rows[0].redop == "sum");
  CHECK(series[1].algo == "tree");
  CHECK(series[1].proto == "ll128");
  CHECK(series[1].result.rows[0].out_of_place->time_us == 15.0);
}

TEST_CASE("bench: select a bench series by op, algorithm, protocol and channels") {
  const std::string path = "test_bench_json_select.json";
  {
    std::ofstream out(path);
    out << bench::dump_report(two_node_report());
  }
  CHECK(fit::is_bench_json(path));
  CHECK_FALSE(fit::is_bench_json(std::string(COMMSTACK_SOURCE_DIR) + "/CMakeLists.txt"));
  CHECK_FALSE(fit::is_bench_json("/nonexistent.json"));
  const auto s = fit::select_bench_series(path, fit::NcclTestsOp::all_reduce, "Tree", "LL128");
  CHECK(s.result.rows[0].out_of_place->time_us == 15.0);
  CHECK_THROWS_WITH_AS(fit::select_bench_series(path, fit::NcclTestsOp::all_gather), doctest::Contains("all_reduce/tree/ll128/0"),
                       InputError);
  CHECK_THROWS_AS(fit::select_bench_series(path, fit::NcclTestsOp::all_reduce, "nvls_tree", "simple"), InputError);
  CHECK_THROWS_AS(fit::select_bench_series(path, fit::NcclTestsOp::all_reduce, "warp", "simple"), InputError);
  std::remove(path.c_str());
}

TEST_CASE("bench: calibrate's run loader reads a bench series picked by op, algo and proto") {
  const std::string path = "test_bench_json_calibrate.json";
  {
    std::ofstream out(path);
    out << bench::dump_report(two_node_report());
  }
  const auto spec = fit::parse_run_spec(path + "@op=all_reduce,algo=tree,proto=ll128,cluster=dgx-h100", "--input");
  const auto run = fit::load_measured_run(spec, std::nullopt);
  CHECK(run.nodes == 2);
  CHECK(run.gpus_per_node == 2);
  REQUIRE(run.bytes.size() == 2);
  CHECK(run.bytes[0] == 1024);
  CHECK(run.measured_us[0] == 15.0);  // the tree/LL128 series, not the default one (20 us)
  // Without an op the file is ambiguous: a clear refusal naming the key to add.
  const auto no_op = fit::parse_run_spec(path + "@cluster=dgx-h100", "--input");
  CHECK_THROWS_WITH_AS(fit::load_measured_run(no_op, std::nullopt), doctest::Contains("@op="), InputError);
  std::remove(path.c_str());
}
