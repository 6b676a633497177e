// Bench JSON report: round trip, determinism, and named errors for bad input.
#include <string>

#include <doctest/doctest.h>

#include "calibration/bench/report.hpp"
#include "common/error.hpp"

using namespace commstack::bench;

namespace {

Summary summary_of(double median) {
  Summary s;
  s.n = 3;
  s.median = median;
  s.p10 = median * 0.99;
  s.p90 = median * 1.02;
  s.min = median * 0.98;
  s.max = median * 1.03;
  s.mean = median * 1.001;
  s.stddev = median * 0.02;
  s.cv = 0.02;
  return s;
}

BenchReport sample_report() {
  BenchReport r;
  r.machine.gpu_model = "NVIDIA H100 80GB HBM3";
  r.machine.sm = 90;
  r.machine.driver_version = "13.0";
  r.machine.cuda_runtime = "13.0";
  r.machine.nccl_version = "2.28.9";
  r.machine.nodes = 1;
  r.machine.gpus_per_node = 2;
  r.machine.nranks = 2;
  r.machine.hostnames = {"node0", "node0"};
  r.machine.launcher = "single-process";
  r.machine.topo_dump_path = "/tmp/topo.xml";
  r.machine.topo_dump_xml = "<system version=\"1\"></system>\n";
  r.machine.nccl_env = {"NCCL_IB_HCA=mlx5"};
  r.settings.preset = "smoke";
  r.settings.warmup = 2;
  r.settings.iters = 5;
  r.settings.reps = 3;
  CollectiveSeries c;
  c.op = Op::all_reduce;
  c.algo = Algo::ring;
  c.proto = Proto::ll128;
  c.points.push_back({1048576, 262144, summary_of(25.5), 41.12, 41.12});
  c.points.push_back({8, 2, summary_of(9.25), 0.000865, 0.000865});
  r.collectives.push_back(c);
  CollectiveSeries refused;
  refused.op = Op::all_gather;
  refused.algo = Algo::nvls;
  refused.proto = Proto::simple;
  refused.status = "ncclInvalidUsage: no algorithm/protocol available";
  r.collectives.push_back(refused);
  P2pSeries p;
  p.kind = "memcpy_peer";
  p.src_rank = 0;
  p.dst_rank = 1;
  p.src_host = p.dst_host = "node0";
  p.dst_device = 1;
  p.points.push_back({1 << 20, summary_of(5.0), 209.7152});
  r.p2p.push_back(p);
  r.kernels.push_back({"launch", 0, 0, summary_of(2.1), 0});
  r.kernels.push_back({"copy", 0, 1 << 30, summary_of(700.0), 3067.4});
  GemmPoint g;
  g.dtype = "bf16";
  g.m = 4096;
  g.n = 12288;
  g.k = 4096;
  g.time_us = summary_of(600.0);
  g.tflops = 687.2;
  r.gemm.push_back(g);
  r.skipped = {"all_gather pat/simple: PAT runs only with one GPU per node"};
  return r;
}

}  // namespace

TEST_CASE("bench: report JSON round trip is lossless and byte-stable") {
  const BenchReport r = sample_report();
  const std::string text = dump_report(r);
  const BenchReport back = report_from_json(nlohmann::json::parse(text), "mem");
  CHECK(dump_report(back) == text);
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives[0].proto == Proto::ll128);
  CHECK(back.collectives[0].points[0].time_us.median == 25.5);
  CHECK(back.collectives[1].points.empty());
  CHECK(back.machine.topo_dump_xml == r.machine.topo_dump_xml);
  CHECK(back.p2p.at(0).points.at(0).bw_GBps == 209.7152);
  CHECK(back.gemm.at(0).k == 4096);
  CHECK(text.back() == '\n');
}

TEST_CASE("bench: report reader names the JSON path of a bad field") {
  nlohmann::json j = to_json(sample_report());
  auto expect_error = [](const nlohmann::json& bad, const std::string& fragment) {
    CHECK_THROWS_WITH_AS(report_from_json(bad, "bench.json"), doctest::Contains(fragment.c_str()), commstack::InputError);
  };
  {
    auto bad = j;
    bad["schema"] = "nccl-tests";
    expect_error(bad, "$.schema");
  }
  {
    auto bad = j;
    bad["collectives"][0]["points"][1]["time_us"]["median"] = -1;
    expect_error(bad, "$.collectives[0].points[1].time_us.median");
  }
  {
    auto bad = j;
    bad["collectives"][0]["algo"] = "hypercube";
    expect_error(bad, "$.collectives[0].algo");
  }
  {
    auto bad = j;
    bad["machine"]["nranks"] = 3;  // 1 node x 2 GPUs
    expect_error(bad, "$.machine.nranks");
  }
  {
    auto bad = j;
    bad["machine"].erase("gpu_model");
    expect_error(bad, "$.machine.gpu_model");
  }
  {
    auto bad = j;
    bad["p2p"][0]["kind"] = "carrier pigeon";
    expect_error(bad, "$.p2p[0].kind");
  }
  {
    auto bad = j;
    bad["collectives"][0]["points"][0]["bytes"] = -8;
    expect_error(bad, "$.collectives[0].points[0].bytes");
  }
  expect_error(nlohmann::json::array(), "$");
  CHECK_THROWS_WITH_AS(load_report("/nonexistent/bench.json"), doctest::Contains("/nonexistent/bench.json"),
                       commstack::InputError);
}

TEST_CASE("bench: transformer GEMM shapes from hidden sizes") {
  const auto shapes = transformer_gemm_shapes({4096, 8192}, 2048);
  REQUIRE(shapes.size() == 8);
  CHECK(shapes[0].m == 2048);
  CHECK(shapes[0].n == 3 * 4096);
  CHECK(shapes[0].k == 4096);
  CHECK(shapes[3].n == 4096);
  CHECK(shapes[3].k == 4 * 4096);
  CHECK(shapes[6].n == 4 * 8192);
}
