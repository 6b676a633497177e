// OSU output as a measured run: OSU's NCCL collectives are validated, timed call by call; its MPI
// and point-to-point benchmarks are refused with the reason.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include <fmt/format.h>

#include "calibration/fit/measured_run.hpp"
#include "calibration/fit/osu.hpp"
#include "calibration/fit/osu_run.hpp"
#include "common/error.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::fit;

namespace {
std::string osu(const std::string& title, const std::string& rows) {
  return "#Using NCCL\n\n# " + title + "\n# Size       Avg Latency(us)\n" + rows;
}
}  // namespace

TEST_CASE("osu: NCCL collectives become nccl-tests runs, sizes in nccl-tests' convention") {
  const OsuResult ar =
      parse_osu(osu("OSU NCCL-CUDA Allreduce Latency Test v7.5", "1024  30.5\n2048  31.0\n"), "ar.txt");
  CHECK(ar.library == "NCCL");
  CHECK(ar.device_build);
  CHECK(ar.benchmark == "Allreduce Latency");
  const NcclTestsResult r = nccl_tests_result_from_osu(ar, 8, NcclTestsOp::unknown);
  CHECK(r.op == NcclTestsOp::all_reduce);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[1].size_bytes == 2048);
  CHECK(r.rows[1].out_of_place->time_us == approx(31.0));
  // osu_xccl_alltoall sends `size` bytes to each of the ranks: nccl-tests' size is ranks x that.
  const OsuResult a2a = parse_osu(
      osu("OSU NCCL-CUDA All-to-All Personalized Exchange Latency Test v7.5", "1024  40.0\n"), "a.txt");
  const NcclTestsResult t = nccl_tests_result_from_osu(a2a, 16, NcclTestsOp::unknown);
  CHECK(t.op == NcclTestsOp::alltoall);
  CHECK(t.rows[0].size_bytes == 16 * 1024);
  CHECK(t.notes[0].find("bytes per peer, x 16 ranks") != std::string::npos);
  CHECK(nccl_tests_result_from_osu(
            parse_osu(osu("OSU NCCL-CUDA Reduce_scatter Latency Test v7.5", "4096 9.0\n"), "rs"), 8,
            NcclTestsOp::unknown)
            .rows[0]
            .size_bytes == 4096);  // the whole send buffer, as nccl-tests prints it
  // QA: a size > 0 timed at 0, or at a time no call can take, is refused naming the line.
  for (const char* time : {"0.00", "1e-300", "1e300"}) {
    CAPTURE(time);
    const OsuResult bad = parse_osu(
        osu("OSU NCCL-CUDA Allreduce Latency Test v7.5", fmt::format("0  0.00\n1024  {}\n", time)), "b.txt");
    CHECK_THROWS_WITH_AS(
        nccl_tests_result_from_osu(bad, 8, NcclTestsOp::unknown),
        doctest::Contains("b.txt:6: column 'Avg Latency(us)' (the time): expected a time per call "
                          "of 0.001 us to 1e+12 us"),
        InputError);
  }
  CHECK_THROWS_WITH_AS(nccl_tests_result_from_osu(ar, 8, NcclTestsOp::all_gather),
                       doctest::Contains("op all_gather contradicts the log"), InputError);
}

TEST_CASE("osu: MPI benchmarks and point-to-point tests are refused with the reason") {
  CHECK(looks_like_osu("# OSU MPI-CUDA Bandwidth Test v7.2\n# Size  Bandwidth (MB/s)\n1 0.5\n"));
  CHECK_FALSE(looks_like_osu("#  size count type redop root time algbw busbw #wrong\n"));
  CHECK_THROWS_WITH_AS(
      refuse_mpi_osu("# OSU MPI-CUDA Allreduce Latency Test v7.3\n# Size  Avg Latency(us)\n", "m.txt"),
      doctest::Contains("m.txt: 'OSU MPI-CUDA Allreduce Latency Test v7.3' measures the MPI library"),
      InputError);
  CHECK_THROWS_WITH_AS(refuse_mpi_osu("# OSU MPI Latency Test v5.0\n", "old.txt"),
                       doctest::Contains("measures the MPI library"), InputError);
  CHECK_NOTHROW(refuse_mpi_osu("# OSU NCCL-CUDA Latency Test v7.5\n", "x.txt"));
  const OsuResult lat =
      parse_osu("# OSU NCCL-CUDA Latency Test v7.5\n# Size  Latency (us)\n8  12.0\n", "lat.txt");
  CHECK_THROWS_WITH_AS(nccl_tests_result_from_osu(lat, 2, NcclTestsOp::unknown),
                       doctest::Contains("is a point-to-point test"), InputError);
}

TEST_CASE("osu: a call timed on its own pays its launch on top of the device time") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const auto profile = sim::stack::default_profile(90);
  sim::stack::Knobs overlapped, alone;
  alone.synchronized_calls = true;
  for (std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{1} << 30}) {
    const auto a = sim::stack::predict(spec, 1, 8, sim::CollectiveOp::allreduce, bytes, profile, overlapped);
    const auto b = sim::stack::predict(spec, 1, 8, sim::CollectiveOp::allreduce, bytes, profile, alone);
    const double launch = profile[sim::stack::Param::launch_us] * 1e-6;
    const double device = a.time_s - a.breakdown.launch_s + profile[sim::stack::Param::kernel_us] * 1e-6;
    // Overlapped: the host launch shows only where it exceeds the device time; alone: always, in full.
    CHECK(b.time_s == approx(device + launch).epsilon(1e-12));
    CHECK(b.breakdown.total_s() == approx(b.time_s).epsilon(1e-12));
    CHECK(b.time_s - a.time_s == approx(launch - std::max(0.0, launch - device)).epsilon(1e-9));
  }
  // The reader sets it for OSU output, and needs the ranks (OSU prints no rank lines).
  const std::string file = std::string(COMMSTACK_SOURCE_DIR) + "/tests/cli/osu-xccl-allreduce-synthetic.txt";
  const auto run = load_measured_run(parse_run_spec(file + "@nodes=1,gpus_per_node=8", "--input"),
                                     std::string("dgx-h100"));
  CHECK(run.knobs.synchronized_calls);
  CHECK(run.op == sim::CollectiveOp::allreduce);
  CHECK(run.bytes == std::vector<std::uint64_t>{4, 1048576, 16777216});
  CHECK_THROWS_WITH_AS(
      load_measured_run(parse_run_spec(file, "--input"), std::string("dgx-h100")),
      doctest::Contains("OSU output names no hosts or ranks: pass --nodes and --gpus-per-node"), InputError);
}
