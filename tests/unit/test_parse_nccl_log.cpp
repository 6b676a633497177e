// NCCL_DEBUG=INFO log parser on the published excerpts and on malformed input.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <string>

#include "calibration/fit/nccl_log.hpp"
#include "common/error.hpp"

using namespace commstack::fit;

namespace {
std::string logs_dir() { return std::string(COMMSTACK_SOURCE_DIR) + "/calibration/data/nccl-logs/"; }
}  // namespace

TEST_CASE("parse: nccl#1453 excerpt: old-form TUNING lines, comm shape, rings, partial tuning table") {
  NcclLog log = parse_nccl_log_file(logs_dir() + "nccl-1453-h100-3node-tuning-selection-excerpts.log", {true});
  REQUIRE(log.choices.size() == 11);
  CHECK(log.choices[0].bytes == 128);
  CHECK(log.choices[0].algo == "tree");
  CHECK(log.choices[0].proto == "ll");
  CHECK(*log.choices[0].model_time_us == approx(25.214764));
  CHECK(log.choices.back().bytes == 262144);
  CHECK(log.choices.back().proto == "ll128");
  REQUIRE(log.comms.size() == 1);
  CHECK(log.comms[0].n_ranks == 24);
  CHECK(*log.comms[0].n_nodes == 3);
  CHECK(*log.comms[0].local_ranks == 8);
  CHECK(log.nvls_multicast);
  CHECK(log.env.at("NCCL_CROSS_NIC") == "2");
  CHECK(log.rings.front().n_channels == 16);
  CHECK(log.rings.front().ranks[1] == 7);
  CHECK(log.trees.size() == 1);
  CHECK(log.trees[0].entries.size() == 16);
  CHECK(log.trees[0].entries[3].down[0] == 1);
  CHECK(log.trees[0].entries[3].up == 7);
  const NcclTuningCell* c = log.cell("AllGather", "ring", "simple");
  REQUIRE(c);
  CHECK(c->latency_us == approx(70.0));
  CHECK(c->bw_GBps == approx(21.3));
  CHECK(log.max_nthreads.at("ring/ll128") == 640);
  CHECK(log.warnings.size() == 1);  // the AllReduce row is cut mid-line in the excerpt
  // Strict mode: the cut row is an error naming its line.
  CHECK_THROWS_WITH_AS(parse_nccl_log_file(logs_dir() + "nccl-1453-h100-3node-tuning-selection-excerpts.log"),
                       doctest::Contains("-excerpts.log:91: tuning table row 'AllReduce'"), commstack::InputError);
}

TEST_CASE("parse: nccl#1752 and nccl-tests#319 logs") {
  NcclLog a = parse_nccl_log_file(logs_dir() + "nccl-1752-h200-64node-ethernet-algo-selection.log");
  REQUIRE(a.choices.size() == 2);
  CHECK(a.choices[1].func == "AllReduce");
  CHECK(a.choices[1].bytes == 33554432);
  CHECK(a.choices[1].algo == "nvls_tree");
  CHECK(a.choices[1].proto == "simple");
  CHECK(*a.choices[1].channel_lo == 0);
  CHECK(*a.choices[1].channel_hi == 15);
  NcclLog b = parse_nccl_log_file(logs_dir() + "nccl-tests-319-hgx-h100-2node-ib-nccl2.26.2.log");
  CHECK(*b.nccl_version == "2.26.2");
  CHECK(b.env.at("NCCL_ALGO") == "RING");
  CHECK(*b.coll_channels == 16);
  CHECK(*b.nvls_channels == 16);
  REQUIRE(b.comms.size() == 2);
  CHECK(b.comms[1].rank == 8);
  CHECK(b.rings.size() == 16);
  CHECK(b.trees.size() == 2);
  CHECK(b.trees[0].entries[0].down[1] == 8);
  NcclLog c = parse_nccl_log_file(logs_dir() + "nccl-1154-h800-8xndr-tuning-table-header.log", {true});
  CHECK(c.env.at("NCCL_ALGO") == "Tree");
  CHECK(c.max_nthreads.at("collnet_direct/simple") == 640);
  CHECK_THROWS_AS(parse_nccl_log_file(logs_dir() + "nccl-1154-h800-8xndr-tuning-table-header.log"), commstack::InputError);
}

TEST_CASE("parse: GRAPH and COLL lines") {
  const char* text =
      "h:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40.000000/24.000000, type NVL/PIX, sameChannels 1\n"
      "h:1:2 [0] NCCL INFO Pattern 3, crossNic 0, nChannels 2, speed 1.200000/1.200000, type SYS/SYS, sameChannels 0\n"
      "h:1:2 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f00 recvbuff 0x7f80 count 262144 datatype 7 op 0 root 0 comm "
      "0x55 [nranks=16] stream 0x56\n";
  NcclLog log = parse_nccl_log(text, "g.log");
  REQUIRE(log.graphs.size() == 2);
  CHECK(log.graphs[0].n_channels == 16);
  CHECK(log.graphs[0].bw_intra_GBps == approx(40.0));
  CHECK(log.graphs[0].bw_inter_GBps == approx(24.0));
  CHECK(log.graphs[0].type_inter == "PIX");
  CHECK(log.graphs[1].pattern == 3);
  REQUIRE(log.colls.size() == 1);
  CHECK(log.colls[0].op_count == 0x1f);
  CHECK(log.colls[0].count == 262144);
  CHECK(*log.colls[0].nranks == 16);
}

TEST_CASE("parse: malformed NCCL log lines are InputErrors naming the line") {
  CHECK_THROWS_WITH_AS(parse_nccl_log("", "e.log"), doctest::Contains("empty"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_log("just text\n", "g.log"), doctest::Contains("no 'NCCL INFO' lines"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_log("x\nh [0] NCCL INFO AllReduce: 16777216 Bytes -> Algo TREE proto LL1\n", "t.log"),
                       doctest::Contains("t.log:2: TUNING line: unknown protocol 'LL1'"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_log("h [0] NCCL INFO AllReduce: 16777216 Bytes -> Algo TREE proto LL\n", "c.log"),
                       doctest::Contains("c.log:1:"), commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_log("h [0] NCCL INFO Pattern 4, crossNic 0, nChannels x, bw 1/1, type NVL/PIX, sameChannels 0\n", "p.log"),
                  commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_log("h [0] NCCL INFO comm 0x1 rank 5 nRanks 4 nNodes 1\n", "r.log"), commstack::InputError);
  NcclLog ok = parse_nccl_log("h [0] NCCL INFO AllReduce: 16777216 Bytes -> Algo TREE proto LL1\n", "x.log", {true});
  CHECK(ok.choices.empty());
  CHECK(ok.warnings.size() == 1);
}

#include "calibration/fit/nccl_log_shape.hpp"

TEST_CASE("parse: communicator shape for the selection model from comm and GRAPH lines") {
  const char* text =
      "h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
      "h:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 16, bw 40.000000/24.000000, type NVL/PIX, sameChannels 1\n"
      "h:1:2 [0] NCCL INFO Pattern 1, crossNic 0, nChannels 16, bw 40.000000/24.000000, type NVL/PIX, sameChannels 1\n"
      "h:1:2 [0] NCCL INFO Pattern 5, crossNic 0, nChannels 16, bw 30.000000/48.000000, type NVL/PIX, sameChannels 1\n"
      "h:1:2 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
      "h:1:2 [0] NCCL INFO 16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer\n";
  NcclLog log = parse_nccl_log(text, "s.log");
  auto s = comm_shape_from_log(log, 90, commstack::select::CpuVendor::intel);
  CHECK(s.n_ranks == 16);
  CHECK(s.n_nodes == 2);
  CHECK(s.local_ranks == 8);
  CHECK(s.ring.bw_inter == approx(24.0));
  CHECK(s.ring.type_inter == commstack::select::PathType::pix);
  CHECK(s.tree.pattern == 1);
  CHECK(s.nvls.bw_inter == approx(48.0));
  CHECK(s.nvls_support);
  CHECK(s.nvls_channels == 16);
  auto t = commstack::select::tune_model(s);
  auto sel = commstack::select::select_algorithm(t, s, commstack::select::Func::all_reduce, 1 << 30);
  CHECK(sel.best_time_us > 0);
  NcclLog no_graph = parse_nccl_log("h [0] NCCL INFO comm 0x5 rank 0 nRanks 2 nNodes 1\n", "n.log");
  CHECK_THROWS_WITH_AS(comm_shape_from_log(no_graph, 90, commstack::select::CpuVendor::intel), doctest::Contains("n.log: no ring GRAPH"),
                       commstack::InputError);
}

TEST_CASE("parse: channel counts NCCL cannot print (0 or above MAXCHANNELS 64) are refused naming the line") {
  const std::string ok_line =
      "h [0] NCCL INFO 16 coll channels, 0 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p "
      "channels per peer\n";
  const NcclLog ok = parse_nccl_log(ok_line, "ok.log");
  CHECK(*ok.coll_channels == 16);
  CHECK(*ok.nvls_channels == 0);  // NCCL without NVLS
  CHECK(*ok.p2p_channels == 16);
  for (const char* count : {"0", "999", "-5", "65"}) {
    const std::string text =
        "x\nh [0] NCCL INFO " + std::string(count) +
        " coll channels, 0 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels "
        "per peer\n";
    CHECK_THROWS_WITH_AS(
        parse_nccl_log(text, "c.log"),
        doctest::Contains((std::string("c.log:2: NCCL's channel line: '") + count +
                           " coll channels' is not a channel count NCCL prints; expected 1-64")
                              .c_str()),
        commstack::InputError);
    // Excerpt mode: a warning naming the line, and none of the line's counts kept.
    const NcclLog skipped = parse_nccl_log(text, "c.log", {true});
    CHECK_FALSE(skipped.coll_channels);
    CHECK_FALSE(skipped.p2p_channels);
    REQUIRE(skipped.warnings.size() == 1);
    CHECK(skipped.warnings[0].starts_with("c.log:2: NCCL's channel line: "));
    CHECK(skipped.warnings[0].ends_with("(line skipped)"));
  }
  const NcclLog nvls = parse_nccl_log(
      "h [0] NCCL INFO 16 coll channels, 0 collnet channels, 99 nvls channels, 16 p2p channels\n", "n.log",
      {true});
  CHECK_FALSE(nvls.coll_channels);  // the line is refused whole
  CHECK(nvls.warnings.at(0).find("'99 nvls channels' is not a channel count NCCL prints; expected 0-64") !=
        std::string::npos);
  // The ring lines' "Channel NN/MM": MM in 1..64, NN below it.
  for (const char* id : {"00/0", "00/999", "16/16"}) {
    CHECK_THROWS_WITH_AS(
        parse_nccl_log("h [0] NCCL INFO Channel " + std::string(id) + " :    0   1\n", "r.log"),
        doctest::Contains((std::string("r.log:1: Channel line: 'Channel ") + id +
                           "' is not a channel NCCL prints; expected NN/MM with 1 <= MM <= 64")
                              .c_str()),
        commstack::InputError);
  }
  CHECK(parse_nccl_log("h [0] NCCL INFO Channel 15/16 :    0   1\n", "r.log").rings.at(0).n_channels == 16);
}
