// Profile JSON (round trip, validation) and the fit: recovers a known profile from synthetic
// measurements, is deterministic, flags a run far below its hardware.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "calibration/fit/profile_fit.hpp"
#include "calibration/fit/validate_run.hpp"
#include "calibration/fit/validation_plot.hpp"
#include "common/error.hpp"
#include "sim/stack/embedded_profiles.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"

using namespace commstack;
using sim::stack::Param;
using sim::stack::Profile;

namespace {
std::string data(const std::string& name) {
  return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-tests/" + name;
}
// The head of a two-rank H100 all-reduce log written by a test: test-start line, rank lines, columns.
const char* const kTwoRankAllReduceHead =
    "# Collective test starting: all_reduce_perf\n"
    "#  Rank  0 Group  0 Pid 1 on a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid 1 on a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
    "busbw "
    "#wrong\n";
}  // namespace

TEST_CASE("stack: profile JSON round trip keeps every parameter") {
  Profile p = sim::stack::prior_profile(90);
  p.at(Param::eta_nic) = 0.93;
  const auto j = sim::stack::profile_to_json(p);
  const Profile q = sim::stack::profile_from_json(j, "test");
  for (int i = 0; i < sim::stack::kNumParams; ++i)
    CHECK(q.params[static_cast<std::size_t>(i)].value == p.params[static_cast<std::size_t>(i)].value);
  CHECK(q.sm == 90);
  CHECK(sim::stack::profile_to_json(q).dump() == j.dump());
  // A profile written before inputs and residuals named the run's settings still loads.
  auto old = j;
  old["inputs"] = nlohmann::json::parse(
      R"([{"file":"a.txt","cluster":"dgx-h100","op":"allreduce","nodes":1,"gpus_per_node":8,"points":3}])");
  old["fit"]["residuals"] = nlohmann::json::parse(
      R"([{"file":"a.txt","bytes":8,"measured_us":10,"predicted_us":11,"error_percent":10}])");
  const Profile o = sim::stack::profile_from_json(old, "old");
  REQUIRE(o.inputs.size() == 1);
  CHECK(o.inputs[0].settings.empty());
  CHECK(o.residuals.at(0).settings.empty());
}

TEST_CASE("stack: profile JSON errors name the field") {
  auto j = sim::stack::profile_to_json(sim::stack::prior_profile(80));
  auto bad = j;
  bad["parameters"]["eta_nic"]["value"] = 1.5;
  CHECK_THROWS_WITH_AS(
      sim::stack::profile_from_json(bad, "p.json"),
      doctest::Contains("p.json: $.parameters.eta_nic.value: expected fraction in [0.01, 1]"), InputError);
  bad = j;
  bad["parameters"]["warp_speed"] = 1;
  CHECK_THROWS_WITH_AS(sim::stack::profile_from_json(bad, "p.json"),
                       doctest::Contains("$.parameters.warp_speed: unknown"), InputError);
  bad = j;
  bad["parameters"].erase("launch_us");
  CHECK_THROWS_WITH_AS(sim::stack::profile_from_json(bad, "p.json"),
                       doctest::Contains("$.parameters.launch_us: missing"), InputError);
  bad = j;
  bad["sm"] = 75;
  CHECK_THROWS_AS(sim::stack::profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["format"] = "other";
  CHECK_THROWS_WITH_AS(sim::stack::profile_from_json(bad, "p.json"), doctest::Contains("$.format"),
                       InputError);
}

TEST_CASE("stack: run spec parsing and refusals") {
  auto s = fit::parse_run_spec("x.txt@nodes=2,gpus_per_node=8,algo=ring,min_ctas=24,max_bytes=1M", "--input");
  CHECK(s.file == "x.txt");
  CHECK(*s.nodes == 2);
  CHECK(*s.gpus_per_node == 8);
  CHECK(*s.knobs.env.algo == "ring");
  CHECK(s.knobs.env.min_ctas == 24);
  CHECK(s.max_bytes == 1u << 20);
  CHECK_THROWS_WITH_AS(fit::parse_run_spec("x.txt@colour=red", "--input"),
                       doctest::Contains("unknown key \"colour\""), InputError);
  CHECK_THROWS_WITH_AS(fit::parse_run_spec("x.txt@nodes=two", "--input"),
                       doctest::Contains("expected an integer"), InputError);
  CHECK_THROWS_WITH_AS(fit::parse_run_spec("x.txt@min_ctas=99", "--input"),
                       doctest::Contains("NCCL_MIN_CTAS"), InputError);
  // No rank lines and no flags: the node count is unknown, the run is refused with the reason.
  fit::RunSpec r;
  r.file = data("nccl-tests_all_reduce_h100_1n8g_nccl-tests-issue290.txt");
  CHECK_THROWS_WITH_AS(fit::load_measured_run(r, std::string("dgx-h100")), doctest::Contains("node count"),
                       InputError);
  r.nodes = 1;
  r.gpus_per_node = 8;
  CHECK_THROWS_WITH_AS(fit::load_measured_run(r, std::nullopt), doctest::Contains("no cluster given"),
                       InputError);
}

TEST_CASE("stack: in_place=1 reads the in-place time column") {
  // dranet B200 2 x 1 GPU all-gather, 1 GiB row: out-of-place 14640 us, in-place 11892 us.
  fit::RunSpec s = fit::parse_run_spec(
      data("nccl-tests_all_gather_b200_2n1g_google-dranet-nvidia-dra.txt") + "@nodes=2,gpus_per_node=1",
      "--input");
  const auto out = fit::load_measured_run(s, std::string("hgx-b200"));
  s.in_place = true;
  const auto in = fit::load_measured_run(s, std::string("hgx-b200"));
  REQUIRE(out.bytes == in.bytes);
  REQUIRE(out.bytes.back() == 1ull << 30);
  CHECK_FALSE(out.in_place);
  CHECK(in.in_place);
  CHECK(out.measured_us.back() == approx(14640));
  CHECK(in.measured_us.back() == approx(11892));
  CHECK(fit::parse_run_spec("x.txt@in_place=1", "--input").in_place);
  CHECK_THROWS_WITH_AS(fit::parse_run_spec("x.txt@in_place=yes", "--input"), doctest::Contains("in_place"),
                       InputError);
}

TEST_CASE("stack: the fit recovers a known profile from its own predictions") {
  // Synthetic runs predicted by a known profile; the fit starts from the NCCL prior and must
  // reproduce the times (the parameters themselves need not be unique).
  Profile truth = sim::stack::prior_profile(90);
  truth.at(Param::launch_us) = 6.0;
  truth.at(Param::eta_nvlink) = 0.8;
  truth.at(Param::eta_nvls) = 0.62;
  truth.at(Param::eta_nic) = 0.9;
  truth.at(Param::nvls_latency_us) = 12;
  std::vector<fit::MeasuredRun> runs;
  for (int nodes : {1, 2}) {
    fit::MeasuredRun run;
    run.file = nodes == 1 ? "synthetic-1n8g" : "synthetic-2n8g";
    run.knob_text = fmt::format("nodes={},gpus_per_node=8", nodes);
    run.cluster_name = "dgx-h100";
    run.cluster = topologies::load_cluster("dgx-h100");
    run.nodes = nodes;
    run.gpus_per_node = 8;
    sim::stack::Predictor pr(run.cluster, nodes, 8);
    for (std::uint64_t b = 1024; b <= (8ull << 30); b *= 4) {
      run.bytes.push_back(b);
      run.measured_us.push_back(pr.predict(sim::CollectiveOp::allreduce, b, truth).time_s * 1e6);
    }
    runs.push_back(run);
  }
  fit::FitOptions weak;  // the prior would pull towards NCCL's values; recovery is about the data
  weak.prior_weight = 1e-6;
  const Profile fitted = fit::fit_profile(runs, sim::stack::prior_profile(90), weak);
  CHECK(fitted.fit_mape_percent < 1.0);
  // NVLS binds on one node: its efficiency is identified by the data.
  CHECK(fitted[Param::eta_nvls] == approx(0.62).epsilon(0.03));
  CHECK(fitted.residuals.size() == runs[0].bytes.size() + runs[1].bytes.size());
  // Provenance names the runs that move a parameter: the NIC's efficiency only the 2-node run's.
  const std::string nic = fitted.params[static_cast<std::size_t>(Param::eta_nic)].provenance;
  CHECK(nic.starts_with("fitted on synthetic-2n8g@nodes=2,gpus_per_node=8 (prior "));
  CHECK(nic.find("synthetic-1n8g") == std::string::npos);
  REQUIRE(fitted.inputs.size() == 2);
  CHECK(fitted.inputs[1].settings == "nodes=2,gpus_per_node=8");
  CHECK(fitted.residuals.back().settings == "nodes=2,gpus_per_node=8");
  const Profile reread = sim::stack::profile_from_json(sim::stack::profile_to_json(fitted), "test");
  CHECK(reread.inputs[1].settings == "nodes=2,gpus_per_node=8");
  CHECK(reread.residuals.back().settings == "nodes=2,gpus_per_node=8");
  // Deterministic: a second fit gives the same numbers bit for bit.
  const Profile again = fit::fit_profile(runs, sim::stack::prior_profile(90), weak);
  CHECK(sim::stack::profile_to_json(again).dump() == sim::stack::profile_to_json(fitted).dump());
  // The soft-L1 loss recovers the same times; an unknown loss is an input error.
  fit::FitOptions soft = weak;
  soft.loss = "soft_l1";
  CHECK(fit::fit_profile(runs, sim::stack::prior_profile(90), soft).fit_mape_percent < 1.0);
  soft.loss = "l2";
  CHECK_THROWS_AS(fit::fit_profile(runs, sim::stack::prior_profile(90), soft), InputError);
}

TEST_CASE("stack: validate flags the nccl-tests#290 two-node run as far below the hardware") {
  const Profile h100 = sim::stack::prior_profile(90);
  fit::RunSpec bad;
  bad.file = data("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue290-default.txt");
  bad.nodes = 2;
  bad.gpus_per_node = 8;
  const auto vb = fit::validate_run(fit::load_measured_run(bad, std::string("dgx-h100")), h100);
  CHECK(vb.below_hardware);
  CHECK(vb.measured_busbw_GBps == approx(155.57).epsilon(0.001));  // the file's busbw column at 8 GiB
  fit::RunSpec good = bad;
  good.file = data("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt");
  const auto vg = fit::validate_run(fit::load_measured_run(good, std::string("dgx-h100")), h100);
  CHECK_FALSE(vg.below_hardware);
  CHECK(vg.n_large == 15);
  CHECK(vg.n_small == 17);
}

TEST_CASE("stack: validate splits the error into the latency-bound and the bandwidth-bound sizes") {
  // A synthetic 2 x 8 H100 sweep built from the model's own breakdown: latency-bound sizes measured
  // 3 us slower than predicted, bandwidth-bound ones at 0.8 of the modeled rate (their byte-moving
  // layers 1.25x as long); sizes in between as predicted.
  const Profile h100 = sim::stack::prior_profile(90);
  fit::MeasuredRun run;
  run.file = "synthetic-2n8g";
  run.cluster_name = "dgx-h100";
  run.cluster = topologies::load_cluster("dgx-h100");
  run.nodes = 2;
  run.gpus_per_node = 8;
  sim::stack::Predictor pr(run.cluster, 2, 8);
  int n_lat = 0, n_bw = 0;
  for (std::uint64_t b = 8; b <= (8ull << 30); b *= 2) {
    const auto p = pr.predict(sim::CollectiveOp::allreduce, b, h100);
    const auto& k = p.breakdown;
    const double total = p.time_s * 1e6;
    const double fixed = (k.launch_s + k.algorithm_latency_s + k.fabric_latency_s) * 1e6;
    double measured = total;
    if (total - fixed < fit::kRegimeShare * total) {
      measured = total + 3.0;
      ++n_lat;
    } else if (fixed < fit::kRegimeShare * total) {
      measured = fixed + (total - fixed) * 1.25;
      ++n_bw;
    }
    run.bytes.push_back(b);
    run.measured_us.push_back(measured);
  }
  REQUIRE(n_lat >= 3);
  REQUIRE(n_bw >= 3);
  const auto v = fit::validate_run(run, h100);
  CHECK(v.split.n_latency == n_lat);
  CHECK(v.split.n_bandwidth == n_bw);
  CHECK(v.split.latency_excess_us == approx(3.0).epsilon(1e-9));
  CHECK(v.split.bandwidth_rate_ratio == approx(0.8).epsilon(1e-9));
  CHECK(v.split.latency_max_bytes < v.split.bandwidth_min_bytes);
  CHECK(v.split.latency_layers_us > 0);
  // One wild latency-bound size does not move the median.
  run.measured_us.front() += 500;
  CHECK(fit::validate_run(run, h100).split.latency_excess_us == approx(3.0).epsilon(1e-9));
}

TEST_CASE("stack: validate marks a size slower than the next, larger one as disturbed") {
  const Profile h100 = sim::stack::prior_profile(90);
  auto disturbed = [&](const std::string& file, int nodes) {
    fit::RunSpec spec;
    spec.file = data(file);
    spec.nodes = nodes;
    spec.gpus_per_node = 8;
    const auto v = fit::validate_run(fit::load_measured_run(spec, std::string("dgx-h100")), h100);
    std::vector<std::uint64_t> sizes;
    for (const auto& r : v.rows)
      if (r.disturbed) {
        CHECK(r.next_bytes == 2 * r.bytes);
        CHECK(r.measured_us > fit::kDisturbedRatio * r.next_measured_us);
        sizes.push_back(r.bytes);
      }
    return sizes;
  };
  // dgxc 1 node: 32 B takes 68.14 us where 64 B takes 14.92; 4 KiB 23.59 where 8 KiB takes 17.40.
  CHECK(disturbed("nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt", 1) ==
        std::vector<std::uint64_t>{32, 4096});
  // qoofyk 2 nodes: 8 B 68.52 us (16 B: 24.96), 256 B 94.40 us (512 B: 32.35).
  CHECK(disturbed("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt", 2) ==
        std::vector<std::uint64_t>{8, 256});
  // A clean sweep has none.
  CHECK(disturbed("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-gjaion-default.txt", 2).empty());
}

TEST_CASE("stack: NCCL settings the log shows are applied like the keys, unless a key sets them") {
  // The qoofyk 2-node H100 sweep with NCCL_DEBUG=INFO lines in front, e.g. NCCL_ALGO=Ring and
  // NCCL_MAX_CTAS=8.
  const std::string src = data("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt");
  std::ifstream in(src);
  std::stringstream body;
  body << in.rdbuf();
  const std::string path = "test_logged_env.txt";
  // Writes the sweep behind one "VAR set by environment to VALUE" line per setting and loads it.
  const auto load_with = [&](std::initializer_list<std::pair<const char*, const char*>> settings,
                             const std::string& keys = "") {
    {
      std::ofstream out(path);
      for (const auto& [var, value] : settings)
        out << "node1:7:7 [0] NCCL INFO " << var << " set by environment to " << value << "\n";
      out << body.str();
    }
    return fit::load_measured_run(
        fit::parse_run_spec(path + "@op=all_reduce,nodes=2,gpus_per_node=8" + keys, "--input"),
        std::string("dgx-h100"));
  };
  const auto run = load_with({{"NCCL_ALGO", "Ring"}, {"NCCL_MAX_CTAS", "8"}});
  CHECK(run.knobs.env.algo.value_or("") == "Ring");
  CHECK(run.knobs.env.max_ctas == 8);
  // The two settings; the NCCL version the log printed (2.26.2) has its own rules: no note.
  REQUIRE(run.notes.size() == 2);
  CHECK(run.notes[0].find("NCCL_ALGO=Ring (line 1 of the log)") != std::string::npos);
  CHECK(run.knobs.nccl_version == select::NcclVersion::v2_26_2);
  const auto v = fit::validate_run(run, sim::stack::default_profile(90));
  for (const auto& row : v.rows) {
    CHECK(row.prediction.algorithm == "Ring");
    CHECK(row.prediction.channels <= 8);
  }
  // A key wins over the log.
  const auto keyed = load_with({{"NCCL_ALGO", "Ring"}, {"NCCL_MAX_CTAS", "8"}}, ",algo=tree");
  CHECK(keyed.knobs.env.algo.value_or("") == "tree");
  CHECK(keyed.knobs.env.max_ctas == 8);
  // NVLS chunk knobs are read the same way.
  const auto chunked =
      load_with({{"NCCL_NVLS_CHUNKSIZE", "65536"}, {"NCCL_NVLSTREE_MAX_CHUNKSIZE", "32768"}});
  CHECK(chunked.knobs.env.nvls_chunksize == 65536);
  CHECK(chunked.knobs.env.nvlstree_max_chunksize == 32768);
  // The knobs that give send/receive over the network LL buffers (src/init.cc: only "1" turns
  // NCCL_ALLOC_P2P_NET_LL_BUFFERS on; src/transport/net.cc: NCCL_NET_SHARED_BUFFERS=0).
  CHECK_FALSE(run.knobs.env.alloc_p2p_net_ll_buffers);
  CHECK(load_with({{"NCCL_ALLOC_P2P_NET_LL_BUFFERS", "1"}}).knobs.env.alloc_p2p_net_ll_buffers);
  CHECK_FALSE(load_with({{"NCCL_ALLOC_P2P_NET_LL_BUFFERS", "2"}}).knobs.env.alloc_p2p_net_ll_buffers);
  CHECK(load_with({{"NCCL_NET_SHARED_BUFFERS", "0"}}).knobs.env.net_shared_buffers == 0);
  // CTA counts NCCL takes in its own way (src/init.cc): above 64 capped, <= 0 ignored, a minimum
  // above the maximum sets both to the maximum; each says so.
  const auto has_note = [](const fit::MeasuredRun& r, const std::string& what) {
    return std::any_of(r.notes.begin(), r.notes.end(),
                       [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  const auto capped = load_with({{"NCCL_MAX_CTAS", "99"}});
  CHECK(capped.knobs.env.max_ctas == 64);
  CHECK(has_note(capped, "NCCL_MAX_CTAS=99: NCCL caps it to 64 channels"));
  const auto ignored = load_with({{"NCCL_MIN_CTAS", "0"}});
  CHECK(ignored.knobs.env.min_ctas == select::NcclEnv{}.min_ctas);
  CHECK(has_note(ignored, "NCCL ignores a CTA count <= 0"));
  const auto crossed = load_with({{"NCCL_MIN_CTAS", "32"}, {"NCCL_MAX_CTAS", "16"}});
  CHECK(crossed.knobs.env.min_ctas == 16);
  CHECK(crossed.knobs.env.max_ctas == 16);
  CHECK(has_note(crossed, "NCCL_MIN_CTAS 32 is larger than NCCL_MAX_CTAS 16: NCCL sets both to 16"));
  // A value NCCL would refuse is an error naming the file, the line and the variable.
  CHECK_THROWS_WITH_AS(load_with({{"NCCL_NVLS_ENABLE", "7"}}),
                       doctest::Contains("test_logged_env.txt:1: NCCL_NVLS_ENABLE=7"), InputError);
  std::remove(path.c_str());
}

TEST_CASE("stack: the NCCL version the log printed picks the tuning model, a key overrides it") {
  using select::NcclVersion;
  // Modal A100 sweep: "nccl-tests version 2.17.9 nccl-headers=22903 nccl-library=22903" = NCCL 2.29.3,
  // a release with its own table: used, nothing to note.
  const auto modal = fit::load_measured_run(
      fit::parse_run_spec(
          data("nccl-tests_all_reduce_a100-40gb_1n8g_cs244c-modal.txt") + "@nodes=1,gpus_per_node=8",
          "--input"),
      std::string("dgx-a100"));
  CHECK(modal.knobs.nccl_version == NcclVersion::v2_29_3);
  CHECK(modal.notes.empty());
  // qoofyk's H100 sweep quotes "NCCL version 2.26.2+cuda12.8": 2.26's rules, nothing to note.
  const std::string qoofyk = data("nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue309-qoofyk.txt");
  const auto v226 = fit::load_measured_run(
      fit::parse_run_spec(qoofyk + "@nodes=2,gpus_per_node=8", "--input"), std::string("dgx-h100"));
  CHECK(v226.knobs.nccl_version == NcclVersion::v2_26_2);
  CHECK(v226.notes.empty());
  // The same sweep as if NCCL 2.25.1 had printed it: no table; the oldest (2.26.2) is used and noted.
  const std::string path = "test_all_reduce_nccl_2_25.txt";
  {
    std::ifstream in(qoofyk);
    std::stringstream body;
    body << in.rdbuf();
    std::string text = body.str();
    const auto at = text.find("2.26.2+cuda12.8");
    REQUIRE(at != std::string::npos);
    text.replace(at, 6, "2.25.1");
    std::ofstream(path) << text;
  }
  const auto old = fit::load_measured_run(fit::parse_run_spec(path + "@nodes=2,gpus_per_node=8", "--input"),
                                          std::string("dgx-h100"));
  std::remove(path.c_str());
  CHECK(old.knobs.nccl_version == NcclVersion::v2_26_2);
  REQUIRE(old.notes.size() == 1);
  CHECK(old.notes[0].find("produced by NCCL 2.25.1") != std::string::npos);
  CHECK(old.notes[0].find("NCCL 2.26.2's tuning model") != std::string::npos);
  // nccl_version= wins, silently.
  const auto keyed = fit::load_measured_run(
      fit::parse_run_spec(qoofyk + "@nodes=2,gpus_per_node=8,nccl_version=2.30.7", "--input"),
      std::string("dgx-h100"));
  CHECK(keyed.knobs.nccl_version == NcclVersion::v2_30_7);
  CHECK(keyed.notes.empty());
  CHECK_THROWS_WITH_AS(fit::parse_run_spec("x.txt@nccl_version=2.18.5", "--input"),
                       doctest::Contains("nccl_version: NCCL version '2.18.5' has no tuning table"),
                       InputError);
}

TEST_CASE("stack: cluster auto takes the preset of the GPU the rank lines name, and says so") {
  const auto run = fit::load_measured_run(
      fit::parse_run_spec(data("nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt"), "--input"),
      std::string("auto"));
  CHECK(run.cluster_name == "dgx-h100");
  CHECK(run.nodes == 1);
  CHECK(run.gpus_per_node == 8);
  REQUIRE_FALSE(run.notes.empty());
  CHECK(run.notes.front().find("cluster auto: preset dgx-h100") != std::string::npos);
  // No rank lines: nothing to go on, a clear refusal.
  CHECK_THROWS_WITH_AS(fit::load_measured_run(
                           fit::parse_run_spec(data("nccl-tests_all_reduce_gb200_18n4g_coreweave-nvl72.txt") +
                                                   "@nodes=18,gpus_per_node=4",
                                               "--input"),
                           std::string("auto")),
                       doctest::Contains("cluster auto needs the log's rank lines"), InputError);
}

TEST_CASE("stack: validate reports NCCL's own model on the same sizes, whatever the profile") {
  fit::RunSpec spec;
  spec.file = data("nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt");
  spec.nodes = 1;
  spec.gpus_per_node = 8;
  const auto run = fit::load_measured_run(spec, std::string("dgx-h100"));
  const auto v = fit::validate_run(run, sim::stack::prior_profile(90));
  Profile slow = sim::stack::prior_profile(90);
  slow.at(Param::eta_nvls) *= 0.5;
  const auto w = fit::validate_run(run, slow);
  const sim::stack::Predictor predictor(run.cluster, run.nodes, run.gpus_per_node, run.knobs);
  double large = 0, small = 0;
  int n_large = 0, n_small = 0;
  REQUIRE(v.rows.size() == w.rows.size());
  for (std::size_t i = 0; i < v.rows.size(); ++i) {
    const auto& r = v.rows[i];
    // NCCL's estimate for the call it makes, the same with any profile (it is not fitted).
    CHECK(r.nccl_model_us == approx(predictor.choose(run.op, r.bytes).nccl_model_us));
    CHECK(w.rows[i].nccl_model_us == r.nccl_model_us);
    REQUIRE(r.nccl_model_us > 0);
    const double ape = 100 * std::fabs(r.nccl_model_us - r.measured_us) / r.measured_us;
    (r.bytes >= (1u << 20) ? large : small) += ape;
    ++(r.bytes >= (1u << 20) ? n_large : n_small);
  }
  CHECK(v.nccl_model_n_large == n_large);
  CHECK(v.nccl_model_n_small == n_small);
  CHECK(v.nccl_model_mape_large_percent == approx(large / n_large));
  CHECK(v.nccl_model_mape_small_percent == approx(small / n_small));
  CHECK(w.nccl_model_mape_large_percent == v.nccl_model_mape_large_percent);
  // NCCL's model of this run is 12 / 17% off at >= 1 MiB / below (../shared/research/peer-fidelity.md
  // measured it independently with NCCL 2.30.7's constants: 12 / 17).
  CHECK(v.nccl_model_mape_large_percent == approx(12.4).epsilon(0.05));
  CHECK(v.nccl_model_mape_small_percent == approx(16.8).epsilon(0.05));

  // NCCL has no model of alltoall: no row carries one, and no MAPE is made up.
  fit::RunSpec a2a;
  a2a.file = data("nccl-tests_alltoall_b200_1n8g_vultr-poc.txt");
  a2a.nodes = 1;
  a2a.gpus_per_node = 8;
  const auto va =
      fit::validate_run(fit::load_measured_run(a2a, std::string("hgx-b200")), sim::stack::prior_profile(100));
  for (const auto& r : va.rows) CHECK(r.nccl_model_us < 0);
  CHECK(va.nccl_model_n_large + va.nccl_model_n_small == 0);
}

TEST_CASE("stack: a run's loader says what it assumed: another GPU than the cluster's, 0-byte rows") {
  const auto has = [](const fit::MeasuredRun& run, const std::string& text) {
    for (const auto& n : run.notes)
      if (n.find(text) != std::string::npos) return true;
    return false;
  };
  // The dgxc H100 sweep validated on the B200 preset: predicted for the preset, and said so.
  const std::string h100 = data("nccl-tests_all_reduce_h100_1n8g_nvidia-dgxc-benchmarking.txt");
  const auto other = fit::load_measured_run(fit::parse_run_spec(h100, "--input"), std::string("hgx-b200"));
  CHECK(has(other,
            "the rank lines name a 'NVIDIA H100 80GB HBM3' but cluster hgx-b200 is built around the B200"));
  // On its own generation's preset: no GPU note.
  const auto own = fit::load_measured_run(fit::parse_run_spec(h100, "--input"), std::string("dgx-h100"));
  CHECK_FALSE(has(own, "the rank lines name"));
  // nccl-tests prints 0-byte rows below one element per rank; they are left out, and counted.
  const std::string ag = data("nccl-tests_all_gather_b200_1n8g_vultr-poc.txt");
  const auto zeros = fit::load_measured_run(fit::parse_run_spec(ag + "@nodes=1,gpus_per_node=8", "--input"),
                                            std::string("hgx-b200"));
  CHECK(has(zeros, "4 row(s) of 0 bytes not used"));
  CHECK(zeros.bytes.front() > 0);
  // nccl-tests -N 2: the sweep's rows twice in one table; every row is used, and that is said.
  const std::string path = "test_run_cycles.txt";
  {
    std::ofstream out(path);
    out << kTwoRankAllReduceHead;
    for (int cycle = 0; cycle < 2; ++cycle)
      out << "     1048576        262144     float     sum      -1    20.51   51.12   51.12      0    18.02  "
             " 58.19   "
             "58.19      0\n"
             "     2097152        524288     float     sum      -1    30.51   68.74   68.74      0    30.02  "
             " 69.86   "
             "69.86      0\n";
  }
  const auto cycles = fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("dgx-h100"));
  CHECK(cycles.bytes.size() == 4);
  CHECK(has(cycles, "2 of the table's 4 rows repeat a size"));
  std::remove(path.c_str());
}

TEST_CASE(
    "stack: an explicit op the table's columns rule out is refused, an unreadable run does not block "
    "another") {
  // An all_gather table: --op all_reduce contradicts its columns (redop none, count = size / (ranks x
  // type size)) even though they cannot tell all_gather from alltoall.
  const std::string ag = data("nccl-tests_all_gather_b200_1n2g_google-dranet-nvidia-dra.txt");
  CHECK_THROWS_WITH_AS(
      fit::load_measured_run(fit::parse_run_spec(ag + "@op=all_reduce", "--input"), std::string("hgx-b200")),
      doctest::Contains("op all_reduce contradicts the log: its table's columns rule it out"), InputError);
  // Two runs in one log, the second one broken: listed as unreadable, and --op still finds the first.
  const std::string path = "test_two_runs_one_broken.txt";
  {
    std::ofstream out(path);
    out << kTwoRankAllReduceHead
        << "     1048576        262144     float     sum      -1    20.51   51.12   51.12      0    18.02   "
           "58.19   58.19      0\n"
           "# Avg bus bandwidth    : 51.1\n"
           "# Collective test starting: all_gather_perf\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
           "algbw   busbw #wrong\n"
           "     1048576        131072     float    none      -1    20.51   51.12   25.56   oops    18.02   "
           "58.19   29.09      0\n"
           "# Avg bus bandwidth    : 25.5\n";
  }
  const auto first = fit::load_measured_run(fit::parse_run_spec(path + "@op=all_reduce", "--input"),
                                            std::string("dgx-h100"));
  CHECK(first.bytes.size() == 1);
  CHECK_THROWS_WITH_AS(fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("dgx-h100")),
                       doctest::Contains("2: unreadable ("), InputError);
  std::remove(path.c_str());
}

TEST_CASE("stack: validate's plot data are the table's numbers as bus bandwidth") {
  const auto run = fit::load_measured_run(
      fit::parse_run_spec(data("nccl-tests_alltoall_b200_2n8g_vultr-poc.txt") + "@nodes=2,gpus_per_node=8",
                          "--input"),
      std::string("hgx-b200"));
  const auto v = fit::validate_run(run, sim::stack::default_profile(100));
  const auto files = fit::write_validation_plot_files(run, v, "test_validate_plot.png");
  std::ifstream dat(files.dat);
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(dat, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    rows.push_back(cells);
  }
  REQUIRE(rows.size() == v.rows.size());
  const double bf = 15.0 / 16.0;  // alltoall on 16 ranks: (n-1)/n
  for (std::size_t i = 0; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == 9);
    CHECK(std::stoull(rows[i][0]) == v.rows[i].bytes);
    CHECK(std::stod(rows[i][1]) ==
          approx(v.rows[i].bytes * bf / (v.rows[i].measured_us * 1e3)).epsilon(1e-5));
    CHECK(std::stod(rows[i][2]) ==
          approx(v.rows[i].bytes * bf / (v.rows[i].predicted_us * 1e3)).epsilon(1e-5));
    CHECK(rows[i][3] == "-");  // NCCL has no model of alltoall
    CHECK(std::stod(rows[i][6]) == approx(v.rows[i].error_percent).epsilon(1e-4));
  }
  std::ifstream gp(files.gp);
  const std::string script((std::istreambuf_iterator<char>(gp)), std::istreambuf_iterator<char>());
  CHECK(script.find("set output 'test_validate_plot.png'") != std::string::npos);
  CHECK(script.find("NCCL's own model") == std::string::npos);  // no curve where NCCL has no model
  std::remove(files.dat.string().c_str());
  std::remove(files.gp.string().c_str());
}

TEST_CASE("stack: NCCL's TUNING lines of a broadcast are used, lines outside the table are said unused") {
  // Written for this test: a broadcast table (its nBytes is the size column, as all-reduce's) with
  // NCCL's per-call lines, then the same lines printed before the table only.
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
      "  "
      "busbw #wrong\n";
  const std::string tuning =
      "node:1:1 [0] NCCL INFO Broadcast: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..1}\n";
  const std::string row =
      "     1048576        262144     float    none       0    30.00   34.95   34.95      0    30.00   34.95 "
      "  34.95      0\n";
  const std::string path = "test_broadcast_tuning.txt";
  const auto load = [&](const std::string& text) {
    std::ofstream(path) << "# Collective test starting: broadcast_perf\n" << text;
    return fit::load_measured_run(fit::parse_run_spec(path + "@nodes=1,gpus_per_node=8", "--input"),
                                  std::string("dgx-h100"));
  };
  const auto inside = load(table + tuning + row);
  REQUIRE(inside.logged_choices.count(1048576) == 1);
  CHECK(inside.logged_choices.at(1048576).algo == select::Algo::ring);
  CHECK(inside.logged_choices.at(1048576).proto == select::Proto::simple);
  const auto before = load(tuning + table + row);
  CHECK(before.logged_choices.empty());
  bool said = false;
  for (const auto& n : before.notes)
    said = said || n.find("NCCL's TUNING lines not used (1 lie outside") != std::string::npos;
  CHECK(said);
  std::remove(path.c_str());
}

TEST_CASE("stack: a cluster's default profile is its system's where one is shipped, else its generation's") {
  CHECK(sim::stack::default_profile_for_gpu("GB200").name == "gb200");
  CHECK(sim::stack::default_profile_for_gpu("GB300").name == "gb200");  // the nearest NVL72 rack fitted
  CHECK(sim::stack::default_profile_for_gpu("GH200").name == "gh200");
  CHECK(sim::stack::default_profile_for_gpu("H100-SXM5-80GB").name == "h100");
  CHECK(sim::stack::default_profile_for_gpu("B300-SXM6").name == "b200");
  CHECK(sim::stack::default_profile_for_gpu("A100-SXM4-80GB").name == "a100");
  // Each one predicts its cluster's generation.
  CHECK(sim::stack::default_profile_for_gpu("GB200").sm == 100);
  CHECK(sim::stack::default_profile_for_gpu("GH200").sm == 90);
}

TEST_CASE("stack: the profiles compiled into the binary are calibration/profiles/*.json byte for byte") {
  // cmake/embed_json_files.cmake cuts each file into string literals of at most 30000 characters
  // (the 60 KB profiles need two or three) and joins them again: nothing may be lost or added.
  std::vector<std::string> names;
  for (const auto& entry : sim::stack::embedded_profile_files()) {
    const std::string name(entry.first);
    CAPTURE(name);
    names.push_back(name);
    std::ifstream in(std::string(COMMSTACK_SOURCE_DIR) + "/calibration/profiles/" + name + ".json",
                     std::ios::binary);
    REQUIRE(in);
    const std::string disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(entry.second.size() == disk.size());
    CHECK(entry.second == disk);
  }
  CHECK(names == std::vector<std::string>{"a100", "b200", "gb200", "gh200", "h100"});
}

TEST_CASE(
    "stack: rank lines the shape given cannot hold, or a node the cluster has no room for, are refused") {
  const std::string path = "test_rank_shape.txt";
  // algbw below 1 GB/s: printed too coarsely for the bus factor to give a rank count, so the table
  // leaves every shape below to the rank lines and the flags.
  const auto write = [&](const std::string& rank_lines) {
    std::ofstream(path)
        << "# Collective test starting: all_reduce_perf\n"
        << rank_lines
        << "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
           "time   algbw   busbw #wrong\n"
           "     1048576        262144     float     sum      -1   1200.0    0.87    1.72      0   "
           "1200.0    0.87    1.72      0\n";
  };
  // Only the last rank line kept (large jobs' logs): rank 127 does not fit 16 x 4.
  write("#  Rank 127 Group  0 Pid 1 on node31 device  3 [0x1b] NVIDIA GB200\n");
  CHECK_THROWS_WITH_AS(
      fit::load_measured_run(fit::parse_run_spec(path + "@nodes=16,gpus_per_node=4", "--input"),
                             std::string("gb200-nvl72")),
      doctest::Contains("the log's rank lines name rank 127, but nodes x GPUs per node = 16 x 4 gives "
                        "ranks 0-63"),
      InputError);
  // Neither count known: both asked for at once.
  CHECK_THROWS_WITH_AS(
      fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72")),
      doctest::Contains("do not give the node count or GPUs per node (pass --nodes N --gpus-per-node G"),
      InputError);
  // Eight ranks on one host against a 4-GPU tray: the log's shape is said, not a flag never given.
  std::string eight;
  for (int r = 0; r < 8; ++r)
    eight += fmt::format("#  Rank {} Group  0 Pid 1 on node0 device  {} [0x{}] NVIDIA GB200\n", r, r, 10 + r);
  write(eight);
  CHECK_THROWS_WITH_AS(
      fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72")),
      doctest::Contains("the log's rank lines show 8 GPUs per host, but cluster gb200-nvl72's nodes "
                        "have 4"),
      InputError);
  // Rank lines without "Pid p on host" (published excerpts): read, but they give no node count.
  write(
      "#  Rank  0 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 0)\n"
      "#  Rank  1 Group  0 device  0 [0000:8f:00] NVIDIA B200 (node 1)\n");
  const auto no_host = fit::load_measured_run(
      fit::parse_run_spec(path + "@nodes=2,gpus_per_node=1", "--input"), std::string("hgx-b200"));
  CHECK(no_host.nodes == 2);
  for (const auto& n : no_host.notes) CHECK(n.find("shared one GPU") == std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE(
    "stack: a GPU of the preset's generation but another part is noted, auto names the nearest preset") {
  auto write_log = [](const std::string& path, const std::string& gpu) {
    std::ofstream(path)
        << "# Collective test starting: all_reduce_perf\n"
           "#  Rank  0 Group  0 Pid 1 on a device  0 [0x18] NVIDIA "
        << gpu << "\n#  Rank  1 Group  0 Pid 1 on a device  1 [0x2a] NVIDIA " << gpu
        << "\n#       size         count      type   redop    root     time   algbw   busbw #wrong     "
           "time   algbw   busbw #wrong\n"
           "     1048576        262144     float     sum      -1    30.00   34.95   34.95      0    "
           "30.00   34.95   34.95      0\n";
  };
  auto noted = [](const fit::MeasuredRun& run, const std::string& gpu) {
    bool said = false;
    for (const auto& n : run.notes)
      said = said || n.find("'NVIDIA " + gpu +
                            "' but cluster dgx-h100 is built around the H100-SXM5-80GB (the same generation, "
                            "another part") != std::string::npos;
    return said;
  };
  // The export part (other NVLink count) and the PCIe and NVL boards of the same die.
  for (const std::string gpu : {"H800", "H100 PCIe", "H100 NVL"}) {
    CAPTURE(gpu);
    const std::string path = "test_other_part.txt";
    write_log(path, gpu);
    CHECK(noted(fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("dgx-h100")), gpu));
    std::remove(path.c_str());
  }
  // The SXM part the preset describes is not noted.
  const std::string sxm = "test_sxm_part.txt";
  write_log(sxm, "H100 80GB HBM3");
  CHECK(fit::load_measured_run(fit::parse_run_spec(sxm, "--input"), std::string("dgx-h100")).notes.empty());
  std::remove(sxm.c_str());
  // No preset is built around a PCIe board: auto names the generation's nearest (the H800 has its own,
  // hgx-h800, see "cluster auto takes the preset of the GPU the rank lines name").
  const std::string pcie = "test_pcie_part.txt";
  write_log(pcie, "H100 PCIe");
  CHECK_THROWS_WITH_AS(fit::load_measured_run(fit::parse_run_spec(pcie, "--input"), std::string("auto")),
                       doctest::Contains("its generation's nearest is dgx-h100"), InputError);
  std::remove(pcie.c_str());
}
