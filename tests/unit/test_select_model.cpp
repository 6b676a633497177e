// NCCL tuning model checks: closed forms from tuning.cc, NCCL's own printed model times and
// tables from published logs, and the algorithm/protocol choices in those logs.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "sim/select/nccl_trees.hpp"
#include "sim/select/nccl_tuner.hpp"

using namespace commstack::select;

namespace {

// nccl#1453: 3 nodes x 8 H100, Intel host, 200 Gb/s NICs. The log has no GRAPH lines; the tree
// graph's 16 channels x 12 GB/s is what NCCL's printed model times imply (see docs/nccl-selection.md),
// and the TREE pattern (3 nodes) gives the 0.85 factor.
CommShape h100_3node() {
  CommShape s;
  s.n_ranks = 24;
  s.n_nodes = 3;
  s.min_sm = s.max_sm = 90;
  s.cpu_vendor = CpuVendor::intel;
  s.ring = {16, 40.0, 12.0, PathType::nvl, PathType::pix, 0, true, 4};
  s.tree = {16, 40.0, 12.0, PathType::nvl, PathType::pix, 0, true, 3};
  s.nvls = {16, 40.0, 12.0, PathType::nvl, PathType::pix, 0, true, 5};
  s.nvls_support = true;
  return s;
}

// One B200 node (8 GPUs on NVSwitch), Ring and Tree graphs of `channels` x `bw` GB/s.
CommShape b200_node(int channels, double bw) {
  CommShape s;
  s.n_ranks = 8;
  s.n_nodes = 1;
  s.min_sm = s.max_sm = 100;
  s.ring = {channels, bw, bw, PathType::nvl, PathType::loc, 0, true, 4};
  s.tree = s.ring;
  return s;
}

}  // namespace

TEST_CASE("select: 1453 model times of Tree LL / LL128 AllReduce match NCCL's printed times") {
  CommShape s = h100_3node();
  TuneTables t = tune_model(s);
  // Tree LL: lat 6.8 + 2*(7*0.6 + log2(3)*5.0) = 25.2 us; bw = min(192/3.8, 20.4)*0.85*0.5 GB/s.
  CHECK(t.latency_us[idx(Func::all_reduce)][idx(Algo::tree)][idx(Proto::ll)] == approx(25.2).epsilon(1e-6));
  CHECK(t.bandwidth_GBps[idx(Func::all_reduce)][idx(Algo::tree)][idx(Proto::ll)] ==
        approx(20.4 * 0.85 * 0.5).epsilon(1e-6));
  const struct {
    std::uint64_t bytes;
    Algo algo;
    Proto proto;
    double time;
  } log[] = {{128, Algo::tree, Proto::ll, 25.214764},
             {256, Algo::tree, Proto::ll, 25.229528},
             {512, Algo::tree, Proto::ll, 25.259054},
             {262144, Algo::tree, Proto::ll128, 54.707825}};
  for (const auto& e : log) {
    Selection sel = select_algorithm(t, s, Func::all_reduce, e.bytes);
    CAPTURE(e.bytes);
    CHECK(sel.time_us[idx(e.algo)][idx(e.proto)] == approx(e.time).epsilon(1e-6));
    CHECK(sel.algo == e.algo);
    CHECK(sel.proto == e.proto);
  }
}

TEST_CASE("select: ring latency closed form and the multi-node ring plateau factor") {
  CommShape s = h100_3node();
  TuneTables t = tune_model(s);
  // Ring AllReduce Simple, 24 ranks on 3 nodes: 8.4 + (46-4)*max(3.4, 3*1.0) + 4*14.0.
  double lat = 8.4 + 42 * 3.4 + 4 * 14.0;
  CHECK(t.latency_us[idx(Func::all_reduce)][idx(Algo::ring)][idx(Proto::simple)] ==
        approx(lat).epsilon(1e-6));
  // Ring Simple bus bw 16*12 = 192 GB/s -> algo bw 192*24/46.
  double bw = 192.0 * 24 / 46;
  CHECK(t.bandwidth_GBps[idx(Func::all_reduce)][idx(Algo::ring)][idx(Proto::simple)] ==
        approx(bw).epsilon(1e-6));
  std::uint64_t big = 1ull << 30;  // >= 64 B per channel per rank: latency x1.4 on SM90
  Selection sel = select_algorithm(t, s, Func::all_reduce, big);
  CHECK(sel.time_us[idx(Algo::ring)][idx(Proto::simple)] ==
        approx(lat * 1.4 + big / (1000 * bw)).epsilon(1e-5));
}

TEST_CASE("select: NCCL_ALGO / NCCL_PROTO forcing, exclusion and per-function lists") {
  CommShape s = h100_3node();
  NcclEnv env;
  env.algo = "ring";
  Selection a = select_algorithm(tune_model(s, env), s, Func::all_reduce, 128);
  CHECK(a.algo == Algo::ring);
  CHECK(a.allowed[idx(Algo::tree)][idx(Proto::ll)] == false);
  env.algo = "^tree";
  CHECK(select_algorithm(tune_model(s, env), s, Func::all_reduce, 128).algo == Algo::ring);
  env.algo = "allreduce:tree;broadcast:ring";
  env.proto = "^LL";
  Selection c = select_algorithm(tune_model(s, env), s, Func::all_reduce, 128);
  CHECK(c.algo == Algo::tree);
  CHECK(c.proto != Proto::ll);
  env.algo = "tree";  // Broadcast only supports Ring: nothing left -> InputError saying why
  env.proto.reset();
  CHECK_THROWS_WITH_AS(select_algorithm(tune_model(s, env), s, Func::broadcast, 1024),
                       doctest::Contains("for Broadcast on 24 ranks in 3 NVLink domains: Tree: broadcast and "
                                         "reduce run Ring only"),
                       commstack::InputError);
  // Each algorithm the user left on gets its reason: NVLS needs one domain (or CollNet), NVLSTree is
  // fine across domains but runs Simple only, which NCCL_PROTO=LL excludes.
  env.algo = "nvls,nvlstree";
  env.proto = "LL";
  const std::string both = [&] {
    try {
      select_algorithm(tune_model(s, env), s, Func::all_reduce, 1 << 20);
    } catch (const commstack::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(both.find("NVLS: spans one NVLink domain") != std::string::npos);
  CHECK(both.find("NVLSTree: runs Simple only") != std::string::npos);
  CHECK(both.find("--algo / --proto") != std::string::npos);
  env.proto.reset();
  env.algo = "tree,bogus";
  CHECK_THROWS_WITH_AS(tune_model(s, env), doctest::Contains("NCCL_ALGO"), commstack::InputError);
  env.algo = "ring;tree";  // second entry without prefix
  CHECK_THROWS_AS(tune_model(s, env), commstack::InputError);
  env.algo = "allgathr:ring";
  CHECK_THROWS_WITH_AS(tune_model(s, env), doctest::Contains("prefix"), commstack::InputError);
}

TEST_CASE("select: channel reduction for small messages and NCCL_MIN/MAX_CTAS") {
  CommShape s = h100_3node();
  NcclEnv env;
  env.algo = "ring";
  env.proto = "simple";
  TuneTables t = tune_model(s, env);
  CHECK(t.comm_channels == 16);
  // Ring Simple: nt 512, threshold 64: nc-- while bytes < nc*512*64 -> 1 MiB keeps 32 KiB*... = 32 -> 16 channels? 1 MiB / (512*64) = 32 >= 16.
  CHECK(select_algorithm(t, s, Func::all_reduce, 1 << 20).n_channels == 16);
  // 64 KiB: 65536 < nc*32768 for nc >= 3 -> 2 channels, then threads halve while 65536 < 2*nt*64 -> nt 512 stays (65536 == 2*512*64).
  Selection small = select_algorithm(t, s, Func::all_reduce, 65536);
  CHECK(small.n_channels == 2);
  CHECK(small.n_threads == 512 + 32);
  env.max_ctas = 4;
  CHECK(tune_model(s, env).comm_channels == 4);
  env.max_ctas = 0;
  env.min_ctas = 24;
  CHECK(tune_model(s, env).comm_channels == 24);
  env.min_ctas = 65;
  CHECK_THROWS_AS(tune_model(s, env), commstack::InputError);
}

TEST_CASE("select: Blackwell constants differ between NCCL 2.28.9, 2.29.3, 2.29.7 and 2.30.7") {
  const TunerConstants& a = tuner_constants(NcclVersion::v2_28_9);
  const TunerConstants& b = tuner_constants(NcclVersion::v2_30_7);
  const TunerConstants& c = tuner_constants(NcclVersion::v2_29_3);
  const TunerConstants& d = tuner_constants(NcclVersion::v2_29_7);
  CHECK(a.per_ch_max_ring_ll128_bw[3][0] == approx(73.4));
  CHECK(b.per_ch_max_ring_ll128_bw[3][0] == approx(40.0));
  // tag v2.29.3-1: {34.5, 34.6, 34.5}; v2.29.7-1: 40.0 everywhere; the NVLSTree tree correction on
  // Blackwell x86 from 2.29 on; LL128 across mixed SMs and the 80 GB/s NVLSTree cap only in 2.30.
  CHECK(c.per_ch_max_ring_ll128_bw[3][0] == approx(34.5));
  CHECK(c.per_ch_max_ring_ll128_bw[3][1] == approx(34.6));
  CHECK(d.per_ch_max_ring_ll128_bw[3][2] == approx(40.0));
  CHECK(!a.nvls_tree_correction_blackwell_x86);
  CHECK(c.nvls_tree_correction_blackwell_x86);
  CHECK(d.per_ch_max_nvls_tree_bw[3][2] == approx(43.8));
  CHECK(!d.ll128_mixed_sm90);
  CHECK(b.ll128_mixed_sm90);
  // Hopper and older are the same in all four.
  for (const auto* k : {&b, &c, &d}) {
    CHECK(k->per_ch_max_ring_ll128_bw[2][0] == a.per_ch_max_ring_ll128_bw[2][0]);
    CHECK(k->hw_latency_us[2][5][2] == a.hw_latency_us[2][5][2]);  // NET NVLSTree Simple 20.9
  }
  CHECK(a.per_ch_max_nvls_tree_bw[3][2] == approx(43.8));
  CHECK(b.per_ch_max_nvls_tree_bw[3][2] == approx(80.0));
  CHECK(default_nccl_version() == NcclVersion::v2_28_9);
  CHECK(parse_nccl_version("v2.30.7-1", "x") == NcclVersion::v2_30_7);
  CHECK(parse_nccl_version("2.29.2", "x") == NcclVersion::v2_29_3);  // same tuning.cc as 2.29.3
  CHECK(parse_nccl_version("2.29", "x") == NcclVersion::v2_29_7);
  CHECK(parse_nccl_version("2.26", "x") == NcclVersion::v2_26_2);
  CHECK(parse_nccl_version("2.26.5", "x") == NcclVersion::v2_26_2);
  CHECK(parse_nccl_version("2.27", "x") == NcclVersion::v2_27_7);
  CHECK_THROWS_AS(parse_nccl_version("2.27.3", "--nccl-version"), commstack::InputError);
  CHECK(parse_nccl_version("head", "x") == NcclVersion::v2_30_7);
  CHECK_THROWS_AS(parse_nccl_version("2.18", "--nccl-version"), commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_version("2.29.5", "--nccl-version"), commstack::InputError);
  CHECK_THROWS_AS(parse_nccl_version("2.29.3.1", "--nccl-version"), commstack::InputError);
  // Single-node B200 Ring LL128 bus bw is capped by nCh x per-channel cap.
  const CommShape s = b200_node(16, 80.0);
  NcclEnv env;
  double r28 = tune_model(s, env, NcclVersion::v2_28_9).bandwidth_GBps[idx(Func::all_gather)][idx(Algo::ring)][idx(Proto::ll128)];
  double r30 = tune_model(s, env, NcclVersion::v2_30_7).bandwidth_GBps[idx(Func::all_gather)][idx(Algo::ring)][idx(Proto::ll128)];
  CHECK(r28 == approx(std::min(16 * 80.0 * 0.92, 16 * 73.4) * 8 / 7).epsilon(1e-5));
  CHECK(r30 == approx(16 * 40.0 * 8 / 7).epsilon(1e-5));
}

TEST_CASE("select: NCCL 2.26 and 2.27 price NVLS at the graph's speeds and raise the channels to NVLS's") {
  // One H100 node: rings of 12 x 30 GB/s (24 coll channels after duplication, here 12 to see the
  // raise), an NVLS graph of 8 heads at 40 GB/s, 16 NVLS channels.
  CommShape s;
  s.n_ranks = 8;
  s.n_nodes = 1;
  s.min_sm = s.max_sm = 90;
  s.ring = {12, 30.0, 30.0, PathType::nvl, PathType::loc, 0, true, 4};
  s.tree = s.ring;
  s.nvls = {8, 40.0, 40.0, PathType::nvl, PathType::loc, 0, true, 5};
  s.nvls_support = true;
  s.nvls_channels = 16;
  s.n_channels = 12;
  const int ar = idx(Func::all_reduce), ag = idx(Func::all_gather), nvls = idx(Algo::nvls),
            simple = idx(Proto::simple);
  const TuneTables v226 = tune_model(s, {}, NcclVersion::v2_26_2);
  const TuneTables v227 = tune_model(s, {}, NcclVersion::v2_27_7);
  const TuneTables v228 = tune_model(s, {}, NcclVersion::v2_28_9);
  // 2.26 / 2.27 all-reduce: 8 x min(40, 40) x 5/6. 2.28: min(40 x 0.85 x 7/8 x 2, 40) x 8 x 8/14.
  CHECK(v226.bandwidth_GBps[ar][nvls][simple] == approx(8 * 40.0 * 5 / 6).epsilon(1e-6));
  CHECK(v227.bandwidth_GBps[ar][nvls][simple] == approx(8 * 40.0 * 5 / 6).epsilon(1e-6));
  CHECK(v228.bandwidth_GBps[ar][nvls][simple] == approx(8 * 40.0 * 8 / 14).epsilon(1e-6));
  // All-gather: 2.26 the graph's 40; 2.27 min(40 x 7/8, 0.9 x 40); 2.28 min(40 x 0.85 x 7/8 x 7/8, 40).
  CHECK(v226.bandwidth_GBps[ag][nvls][simple] == approx(8 * 40.0).epsilon(1e-6));
  CHECK(v227.bandwidth_GBps[ag][nvls][simple] == approx(8 * 35.0).epsilon(1e-6));
  CHECK(v228.bandwidth_GBps[ag][nvls][simple] == approx(8 * 40.0 * 0.85 * 7 / 8 * 7 / 8).epsilon(1e-5));
  // 2.26 / 2.27 raise the communicator's 12 channels to the 16 NVLS ones (connect.cc); 2.28 does not.
  CHECK(v226.comm_channels == 16);
  CHECK(v227.comm_channels == 16);
  CHECK(v228.comm_channels == 12);
  s.nvls_support = false;
  CHECK(tune_model(s, {}, NcclVersion::v2_26_2).comm_channels == 12);
  // NVLSTree's network latency was 14 us before 2.28's 20.9.
  CHECK(tuner_constants(NcclVersion::v2_26_2).hw_latency_us[2][5][2] == approx(14.0));
  CHECK(tuner_constants(NcclVersion::v2_27_7).hw_latency_us[2][5][2] == approx(14.0));
}

TEST_CASE("select: NCCL 2.26 enables LL128 only on the SMs it lists, 2.27 on every SM from 70") {
  // B300 (SM 103) on NVLink: 2.26's switch (70, 80, 90, 100, 120) leaves it out.
  CommShape s = b200_node(16, 45.0);
  s.min_sm = s.max_sm = 103;
  const int ag = idx(Func::all_gather), ring = idx(Algo::ring), ll128 = idx(Proto::ll128);
  CHECK(tune_model(s, {}, NcclVersion::v2_26_2).bandwidth_GBps[ag][ring][ll128] == 0);
  CHECK(tune_model(s, {}, NcclVersion::v2_27_7).bandwidth_GBps[ag][ring][ll128] > 0);
  s.min_sm = s.max_sm = 100;
  CHECK(tune_model(s, {}, NcclVersion::v2_26_2).bandwidth_GBps[ag][ring][ll128] > 0);
  // 2.26's Blackwell caps were Hopper's doubled: 16 x 73.4 would not bind, 16 x 45 x 0.92 does.
  CHECK(tuner_constants(NcclVersion::v2_26_2).per_ch_max_ring_ll128_bw[3][1] == approx(73.4));
  CHECK(tuner_constants(NcclVersion::v2_26_2).per_ch_max_tree_bw[3][2] == approx(72.0));
}

TEST_CASE("select: the NCCL version a log printed picks the nearest modeled tuning model") {
  auto match = [](const char* printed) {
    const auto m = match_printed_version(printed);
    REQUIRE(m);
    return std::pair{m->version, m->exact};
  };
  CHECK(match("2.28.9") == std::pair{NcclVersion::v2_28_9, true});
  CHECK(match("2.29.3+cuda12.8") == std::pair{NcclVersion::v2_29_3, true});
  CHECK(match("2.29.2") == std::pair{NcclVersion::v2_29_3, true});
  CHECK(match("v2.29.7-1") == std::pair{NcclVersion::v2_29_7, true});
  CHECK(match("2.30.7") == std::pair{NcclVersion::v2_30_7, true});
  CHECK(match("2.29.5") ==
        std::pair{NcclVersion::v2_29_3, false});  // same line, nearest patch (older on a tie)
  CHECK(match("2.29.6") == std::pair{NcclVersion::v2_29_7, false});
  CHECK(match("2.30.3") == std::pair{NcclVersion::v2_30_7, false});  // same line, although newer
  CHECK(match("2.28.3") == std::pair{NcclVersion::v2_28_9, false});
  CHECK(match("2.26.2+cuda12.8") == std::pair{NcclVersion::v2_26_2, true});
  CHECK(match("2.26.6") == std::pair{NcclVersion::v2_26_2, true});  // same rules 2.26.2 - 2.26.6
  CHECK(match("2.27.6") == std::pair{NcclVersion::v2_27_7, true});
  CHECK(match("2.27.3") == std::pair{NcclVersion::v2_27_7, false});  // same line
  CHECK(match("2.18.5") == std::pair{NcclVersion::v2_26_2, false});  // older than every table: the oldest
  CHECK(match("2.31.1") == std::pair{NcclVersion::v2_30_7, false});  // newer: the newest older one
  CHECK_FALSE(match_printed_version("not"));
  CHECK_FALSE(match_printed_version("2.29"));
  CHECK_FALSE(match_printed_version(""));
}

TEST_CASE("select: NCCL 2.29.3 moves a 64 MiB all-gather on one B200 node from LL128 to Simple") {
  // 2.29.3 cut Blackwell's Ring LL128 per-channel cap from 73.4 to 34.5 GB/s, so 32 channels give
  // 1104 GB/s bus bandwidth where NCCL's model gives Simple more; 2.29.7 raised it to 40.0 (1280).
  const CommShape s = b200_node(32, 40.0);
  const NcclEnv env;
  auto pick = [&](NcclVersion v, std::uint64_t bytes) {
    const Selection sel = select_algorithm(tune_model(s, env, v), s, Func::all_gather, bytes);
    return std::pair{sel.algo, sel.proto};
  };
  const std::uint64_t mib64 = 64ull << 20;
  CHECK(pick(NcclVersion::v2_28_9, mib64) == std::pair{Algo::ring, Proto::ll128});
  CHECK(pick(NcclVersion::v2_29_3, mib64) == std::pair{Algo::ring, Proto::simple});
  CHECK(pick(NcclVersion::v2_29_7, mib64) == std::pair{Algo::ring, Proto::ll128});
  // Where LL128's cap does not bind, the versions agree.
  CHECK(pick(NcclVersion::v2_28_9, 8ull << 20) == pick(NcclVersion::v2_29_3, 8ull << 20));
}

TEST_CASE("select: bad communicator shapes are InputErrors") {
  CommShape s = h100_3node();
  s.n_nodes = 0;
  CHECK_THROWS_AS(tune_model(s), commstack::InputError);
  s = h100_3node();
  s.ring.n_channels = 0;
  CHECK_THROWS_AS(tune_model(s), commstack::InputError);
  s = h100_3node();
  s.tree.bw_inter = -1;
  CHECK_THROWS_AS(tune_model(s), commstack::InputError);
}

TEST_CASE("select: NCCL's double binary tree (trees.cc) and its busiest node") {
  // The 12-node drawing in NCCL's src/graph/trees.cc: first tree 0-8, 8 -> 4 10, 4 -> 2 6,
  // 2 -> 1 3, 6 -> 5 7, 10 -> 9 11; the mirror tree 11-3, 3 -> 1 7, 1 -> 0 2, 7 -> 5 9, 5 -> 4 6,
  // 9 -> 8 10.
  using commstack::select::nccl_dtree;
  auto children = [](const commstack::select::TreeLinks& t) { return std::array<int, 2>{t.down[0], t.down[1]}; };
  CHECK(nccl_dtree(12, 0)[0].up == -1);
  CHECK(children(nccl_dtree(12, 0)[0]) == std::array<int, 2>{-1, 8});
  CHECK(children(nccl_dtree(12, 8)[0]) == std::array<int, 2>{4, 10});
  CHECK(children(nccl_dtree(12, 4)[0]) == std::array<int, 2>{2, 6});
  CHECK(children(nccl_dtree(12, 10)[0]) == std::array<int, 2>{9, 11});
  CHECK(nccl_dtree(12, 11)[1].up == -1);
  CHECK(children(nccl_dtree(12, 11)[1]) == std::array<int, 2>{-1, 3});
  CHECK(children(nccl_dtree(12, 3)[1]) == std::array<int, 2>{7, 1});  // mirrored: child 0 is 11-4
  CHECK(children(nccl_dtree(12, 1)[1]) == std::array<int, 2>{2, 0});
  CHECK(nccl_dtree(12, 5)[1].up == 7);
  // 3 nodes (odd: shifted second tree): 0 -> 2 -> 1 and 1 -> 0 -> 2. Nodes 0 and 2 are inner once
  // and an end once: 3 links of S/2. 2 nodes: one link per tree. 4 and more: inner + leaf = 4 links.
  CHECK(children(nccl_dtree(3, 2)[0]) == std::array<int, 2>{1, -1});
  CHECK(nccl_dtree(3, 0)[1].up == 1);
  CHECK(commstack::select::nccl_dtree_max_egress(1) == 0.0);
  CHECK(commstack::select::nccl_dtree_max_egress(2) == 1.0);
  CHECK(commstack::select::nccl_dtree_max_egress(3) == 1.5);
  for (int n = 4; n <= 1024; ++n) {
    CAPTURE(n);
    CHECK(commstack::select::nccl_dtree_max_egress(n) == 2.0);
  }
  CHECK_THROWS_AS(commstack::select::nccl_dtree_max_egress(0), std::invalid_argument);
}
