// OSU micro-benchmark and ReproMPI parsers.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include "calibration/fit/osu.hpp"
#include "calibration/fit/repro_mpi.hpp"
#include "common/error.hpp"

using namespace commstack::fit;

TEST_CASE("parse: osu_latency with CUDA buffers") {
  const char* text =
      "# OSU MPI-CUDA Latency Test v7.3\n"
      "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)\n"
      "# Size          Latency (us)\n"
      "# Datatype: MPI_CHAR.\n"
      "1                       2.12\n"
      "2                       2.10\n"
      "4194304               221.45\n";
  OsuResult r = parse_osu(text, "lat.txt");
  CHECK(r.benchmark == "Latency");
  CHECK(r.version == "7.3");
  CHECK(r.device_build);
  CHECK(r.send_buffer == "device");
  CHECK(r.recv_buffer == "device");
  REQUIRE(r.columns.size() == 1);
  CHECK(r.column(OsuColumn::latency_us) == 0);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[2].size_bytes == 4194304);
  CHECK(r.rows[2].values[0] == approx(221.45));
}

TEST_CASE("parse: osu_bibw host buffers and osu_allreduce with -f columns") {
  const char* bw =
      "# OSU MPI Bi-Directional Bandwidth Test v5.8\n"
      "# Size      Bandwidth (MB/s)\n"
      "1                       3.41\n"
      "1048576             24100.55\n";
  OsuResult b = parse_osu(bw, "bibw.txt");
  CHECK(b.benchmark == "Bi-Directional Bandwidth");
  CHECK_FALSE(b.device_build);
  CHECK(b.column(OsuColumn::bandwidth_MBps) == 0);
  CHECK(b.rows[1].values[0] == approx(24100.55));
  const char* ar =
      "# OSU MPI Allreduce Latency Test v7.3\n"
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "4                       1.85              1.60              2.10        1000\n"
      "8                       1.87              1.61              2.13        1000\n";
  OsuResult a = parse_osu(ar, "ar.txt");
  CHECK(a.benchmark == "Allreduce Latency");
  CHECK(a.column(OsuColumn::latency_us) == 0);
  CHECK(a.column(OsuColumn::min_latency_us) == 1);
  CHECK(a.column(OsuColumn::max_latency_us) == 2);
  CHECK(a.column(OsuColumn::iterations) == 3);
  CHECK(a.rows[1].values[2] == approx(2.13));
}

TEST_CASE("parse: OSU bad input is an InputError naming file and line") {
  CHECK_THROWS_WITH_AS(parse_osu("", "e.txt"), doctest::Contains("empty"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_osu("garbage\n", "g.txt"), doctest::Contains("no OSU table header"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_osu("# Size   Latency (us)\n", "h.txt"), doctest::Contains("no data rows"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_osu("# Size   Latency (us)\n1  2.0\n2\n", "t.txt"), doctest::Contains("t.txt:3:"),
                       commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_osu("# Size   Latency (us)\n1  abc\n", "n.txt"), doctest::Contains("n.txt:2: column 'Latency (us)'"),
                       commstack::InputError);
}

TEST_CASE("parse: ReproMPI per-repetition output and summary") {
  const char* text =
      "#MPI calls:\n"
      "#    MPI_Allreduce\n"
      "#@datatype_size_bytes=1\n"
      "#@nprocs=4\n"
      "#@nrep=3\n"
      "                 test       nrep        count    runtime_sec\n"
      "        MPI_Allreduce          0            1   0.0000109819\n"
      "        MPI_Allreduce          1            1   0.0000030911\n"
      "        MPI_Allreduce          2            1   0.0000029809\n"
      "        MPI_Allreduce          0           10   0.0000040000\n";
  ReproMpiResult r = parse_repro_mpi(text, "rep.txt");
  CHECK(r.nprocs == 4);
  CHECK(r.datatype_size_bytes == 1);
  REQUIRE(r.samples.size() == 4);
  auto s = r.summarize();
  REQUIRE(s.size() == 2);
  CHECK(s[0].n == 3);
  CHECK(s[0].median_s == approx(0.0000030911));
  CHECK(s[0].min_s == approx(0.0000029809));
  CHECK(s[1].bytes == 10);
  CHECK_THROWS_AS(parse_repro_mpi("", "e.txt"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_repro_mpi("test nrep count runtime_sec\nMPI_Bcast 0 x 1.0\n", "b.txt"),
                       doctest::Contains("b.txt:2: column 'count'"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_repro_mpi("test total_nrep mean_sec\n", "s.txt"), doctest::Contains("summary output"),
                       commstack::InputError);
}
