// NCCL_MNNVL_ENABLE=0 (--mnnvl off, mnnvl=0, "MNNVL 0" in NCCL's log): the nodes of a multi-node
// NVLink domain keep NVLink inside each node and talk over their NICs, each node one NCCL node.
#include <cstdio>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include "approx.hpp"

#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/validate_run.hpp"
#include "common/error.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::CollectiveOp;
using sim::stack::Knobs;
using sim::stack::Predictor;

namespace {
Knobs mnnvl_off() {
  Knobs k;
  k.env.mnnvl_enable = 0;
  return k;
}

bool has_note(const fit::MeasuredRun& run, const std::string& text) {
  for (const auto& n : run.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// A two-host GB200 all-gather log (4 ranks per host) with NCCL's communicator line `comm_line` and
// rows whose times are what 4 x 400 Gb/s NICs per node carry, not the NVLink domain.
std::string write_gb200_log(const std::string& path, const std::string& comm_line) {
  std::ofstream out(path);
  out << "# Collective test starting: all_gather_perf\n";
  for (int r = 0; r < 8; ++r)
    out << "#  Rank  " << r << " Group  0 Pid 1 on " << (r < 4 ? "tray-a" : "tray-b") << " device  " << r % 4
        << " [0x0" << r % 4 << "] NVIDIA GB200\n";
  out << comm_line
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
         "algbw   "
         "busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
         "(GB/s)  "
         "(GB/s)\n";
  // busbw 180 GB/s (7/8 of algbw): 0.9 of the node's 200 GB/s of NICs.
  for (const double mib : {256.0, 512.0, 1024.0, 2048.0}) {
    const double bytes = mib * 1024 * 1024;
    const double algbw = 180.0 * 8 / 7;
    const double us = bytes / (algbw * 1e3);
    out << fmt::format(
        "{:>12.0f} {:>13.0f}     float    none      -1 {:>8.1f} {:>7.2f} {:>7.2f}      0 {:>8.1f} "
        "{:>7.2f} {:>7.2f}      0\n",
        bytes, bytes / 32, us, algbw, 180.0, us, algbw, 180.0);
  }
  return path;
}
}  // namespace

TEST_CASE("mnnvl: off makes each node of an NVL72 domain its own NCCL node, over its NICs") {
  const auto spec = topologies::load_cluster("gb200-nvl72");
  const auto prof = sim::stack::load_profile("gb200");
  const double bytes = 4.0 * (1u << 30);
  const Predictor on(spec, 2, 4);
  const Predictor off(spec, 2, 4, mnnvl_off());
  CHECK(on.geometry().nccl_nodes == 1);
  CHECK(on.geometry().local_ranks == 8);
  CHECK(off.geometry().nccl_nodes == 2);
  CHECK(off.geometry().local_ranks == 4);
  // A ring all-gather over two NCCL nodes carries its bus bytes through each node's NICs: the line
  // rate is the node's 4 x 400 Gb/s = 200 GB/s, where one NVLink domain allows the GPU's 900 GB/s.
  const auto p_off = off.predict(CollectiveOp::allgather, static_cast<std::uint64_t>(bytes), prof);
  const auto p_on = on.predict(CollectiveOp::allgather, static_cast<std::uint64_t>(bytes), prof);
  CHECK(p_off.busbw_line_GBps == approx(200.0));
  CHECK(p_on.busbw_line_GBps == approx(900.0));
  CHECK(p_off.time_s > 3 * p_on.time_s);
  // Inside one node the setting changes nothing, and neither does it on a cluster without a
  // multi-node NVLink domain.
  CHECK(Predictor(spec, 1, 4, mnnvl_off()).predict(CollectiveOp::allgather, 1u << 30, prof).time_s ==
        Predictor(spec, 1, 4).predict(CollectiveOp::allgather, 1u << 30, prof).time_s);
  const auto h100 = topologies::load_cluster("dgx-h100");
  const auto hp = sim::stack::load_profile("h100");
  CHECK(Predictor(h100, 2, 8, mnnvl_off()).predict(CollectiveOp::allreduce, 1u << 30, hp).time_s ==
        Predictor(h100, 2, 8).predict(CollectiveOp::allreduce, 1u << 30, hp).time_s);
  // NCCL_MNNVL_ENABLE takes 0, 1 or 2.
  Knobs bad;
  bad.env.mnnvl_enable = 3;
  CHECK_THROWS_WITH_AS(select::validate(bad.env), doctest::Contains("NCCL_MNNVL_ENABLE: expected 0, 1 or 2"),
                       InputError);
}

TEST_CASE("mnnvl: the log's 'MNNVL 0' communicator line and NCCL_MNNVL_ENABLE are applied, a key wins") {
  const std::string path = write_gb200_log(
      "test_mnnvl0.txt",
      "tray-a:1:2 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n");
  const auto table = fit::parse_nccl_tests_file(path);
  REQUIRE(table.comm_mnnvl.has_value());
  CHECK(*table.comm_mnnvl == 0);
  CHECK(table.comm_nodes == 2);
  CHECK(table.comm_line == 10);
  const auto run = fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72"));
  CHECK(run.knobs.env.mnnvl_enable == 0);
  CHECK(has_note(run,
                 "test_mnnvl0.txt:10: NCCL printed MNNVL 0 with nNodes 2: it did not use cluster "
                 "gb200-nvl72's multi-node NVLink domain"));
  // Predicted over the NICs the run is within 10% of its 0.9-of-the-NICs times, where the NVLink
  // domain would be 4x fast; nothing is flagged.
  const auto v = fit::validate_run(run, sim::stack::load_profile("gb200"));
  CHECK(v.mape_percent < 10);
  CHECK_FALSE(v.below_hardware);
  // A spec key says otherwise: the key wins, no note.
  const auto keyed =
      fit::load_measured_run(fit::parse_run_spec(path + "@mnnvl=1", "--input"), std::string("gb200-nvl72"));
  CHECK(keyed.knobs.env.mnnvl_enable == 1);
  CHECK_FALSE(has_note(keyed, "NCCL printed MNNVL 0"));
  CHECK_THROWS_WITH_AS(fit::parse_run_spec(path + "@mnnvl=2", "--input"),
                       doctest::Contains("mnnvl: expected 0 or 1 (NCCL_MNNVL_ENABLE)"), InputError);
  std::remove(path.c_str());

  // NCCL used the fabric: nothing changes.
  write_gb200_log(path,
                  "tray-a:1:2 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 "
                  "MNNVL 1\n");
  const auto used = fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72"));
  CHECK(used.knobs.env.mnnvl_enable == 2);
  std::remove(path.c_str());

  // The environment line of NCCL_DEBUG=INFO.
  write_gb200_log(path, "tray-a:1:2 [0] NCCL INFO NCCL_MNNVL_ENABLE set by environment to 0.\n");
  const auto env = fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72"));
  CHECK(env.knobs.env.mnnvl_enable == 0);
  CHECK(has_note(env, "NCCL_MNNVL_ENABLE=0 (line 10 of the log) applied"));
  std::remove(path.c_str());
}

TEST_CASE("mnnvl: a run far below an NVL72 domain's NVLink is also predicted over the NICs") {
  // The same NIC-speed log without a communicator line: on the domain's NVLink it is flagged, and
  // the result carries the prediction with NCCL_MNNVL_ENABLE=0, which fits it (NVLS off or CollNet on
  // do not help an all-gather over one NVLink domain).
  const std::string path = write_gb200_log("test_mnnvl_unknown.txt", "");
  const auto run = fit::load_measured_run(fit::parse_run_spec(path, "--input"), std::string("gb200-nvl72"));
  const auto v = fit::validate_run(run, sim::stack::load_profile("gb200"));
  CHECK(v.below_hardware);
  REQUIRE(v.alternatives.size() == 1);
  CHECK(v.alternatives[0].setting == fit::ValidationResult::Alternative::Setting::mnnvl_off);
  CHECK(v.alternatives[0].flag == "--mnnvl off");
  CHECK(v.alternatives[0].mape_percent < 10);
  CHECK(v.alternatives[0].mape_percent < v.mape_percent / 3);
  CHECK(v.alternatives[0].predicted_busbw_GBps < 200);
  std::remove(path.c_str());
  // nccl-tests#290's 2-node H100 run at a third of its NICs: no setting explains it (it is the system).
  const auto h100 = fit::load_measured_run(
      fit::parse_run_spec(
          std::string(COMMSTACK_SOURCE_DIR) +
              "/calibration/data/nccl-tests/nccl-tests_all_reduce_h100_2n8g_nccl-tests-issue290-default.txt@"
              "nodes=2,gpus_per_node=8",
          "--input"),
      std::string("dgx-h100"));
  const auto vh = fit::validate_run(h100, sim::stack::load_profile("h100"));
  CHECK(vh.below_hardware);
  CHECK(vh.alternatives.empty());
}
