// NCCL's topology search on NVSwitch nodes (sim/select/nccl_search): the graphs and channel counts
// src/graph/search.cc and connect.cc give, worked out by hand from their rules (docs/nccl-selection.md
// "Channels"), and the one count a shared log prints (nccl-tests#319: 16 coll channels on 2 x 8 H100).
#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "sim/select/nccl_search.hpp"

using namespace commstack::select;

namespace {

SearchNode one_node(int sm, int links) {
  SearchNode n;
  n.sm = sm;
  n.gpus = 8;
  n.nvlink_GBps = links * nccl_nvlink_link_GBps(sm);
  return n;
}

SearchNode with_nics(SearchNode n, int nets, double path_GBps) {
  n.nets = nets;
  n.net_path_GBps = path_GBps;
  return n;
}

struct OneNodeExpect {
  int ring_channels;
  double ring_bw;
  int comm_channels;
  int nvls_heads;
  double nvls_bw;
};

void check_one_node(const SearchedGraphs& g, const OneNodeExpect& e) {
  CHECK(g.ring.n_channels == e.ring_channels);
  CHECK(g.ring.bw_intra == approx(e.ring_bw));
  CHECK(g.comm_channels == e.comm_channels);
  CHECK(g.nvls.n_channels == e.nvls_heads);
  CHECK(g.nvls.bw_intra == approx(e.nvls_bw));
}

}  // namespace

TEST_CASE("search: one DGX A100 node gives 12 ring channels of 20 GB/s, 24 for the communicator") {
  // 12 NVLinks x 20 GB/s = 240: six channels at 40 GB/s fill it, duplicated to 12 x 20
  // (ncclTopoDupChannels: sm80 at >= 25 GB/s), doubled again by ncclTopoPostset.
  const SearchedGraphs g = search_nvswitch_node(one_node(80, 12));
  CHECK(g.ring.n_channels == 12);
  CHECK(g.ring.bw_intra == approx(20.0));
  CHECK(g.tree.n_channels == 12);
  CHECK(g.comm_channels == 24);
}

TEST_CASE("search: one H100 node gives 12 x 30 GB/s ring channels and an NVLS graph of 8 heads at 40") {
  // 18 x 20.6 = 370.8 GB/s: 6 x 60 is the best product (7 x 50 and 9 x 40 are not better), and
  // Hopper duplicates at >= 50 GB/s. NVLS: every GPU is a head, a GPU's links carry 8 + 1 channels:
  // 9 x 40 <= 370.8 < 9 x 50.
  check_one_node(search_nvswitch_node(one_node(90, 18)), {12, 30.0, 24, 8, 40.0});
}

TEST_CASE("search: one B200 node gives 16 x 45 GB/s ring channels (32 for the communicator), NVLS 8 x 80") {
  // 18 x 40.1 = 721.8 GB/s: 8 x 90, duplicated to 16 x 45; NVLS 9 x 80 <= 721.8 < 9 x 90.
  check_one_node(search_nvswitch_node(one_node(100, 18)), {16, 45.0, 32, 8, 80.0});
}

TEST_CASE(
    "search: two DGX H100 nodes give 8 ring channels at 48 GB/s, 16 coll channels as nccl-tests#319 prints") {
  // 8 NICs of 400 Gb/s behind PCIe Gen5 (NCCL: 48 GB/s): one channel per NIC at 48; 8 x 48 = 384
  // covers the GPU's 370.8 GB/s, no duplication below 50 GB/s on Hopper.
  const SearchedGraphs g = search_nvswitch_node(with_nics(one_node(90, 18), 8, 48.0));
  CHECK(g.ring.n_channels == 8);
  CHECK(g.ring.bw_intra == approx(48.0));
  CHECK(g.ring.bw_inter == approx(48.0));
  CHECK(g.tree.n_channels == 8);
  CHECK(g.comm_channels == 16);
  // NVLS across nodes: 8 heads at 40 GB/s of NVLink, the network speed raised to the NIC's 48.
  CHECK(g.nvls.n_channels == 8);
  CHECK(g.nvls.bw_intra == approx(40.0));
  CHECK(g.nvls.bw_inter == approx(48.0));
}

TEST_CASE("search: A100 nodes with HDR NICs give 8 x 24 GB/s rings, the tree raises its NVLink speed to 30") {
  // HDR 200 Gb/s (25 GB/s) behind PCIe Gen4 (24): 8 channels at 24 GB/s (16 x 12 is no better).
  // Pass 2 of the tree search raises bwIntra while the NVLinks allow 8 channels: 28, then 30.
  const SearchedGraphs g = search_nvswitch_node(with_nics(one_node(80, 12), 8, 24.0));
  CHECK(g.ring.n_channels == 8);
  CHECK(g.ring.bw_intra == approx(24.0));
  CHECK(g.tree.n_channels == 8);
  CHECK(g.tree.bw_intra == approx(30.0));
  CHECK(g.tree.bw_inter == approx(24.0));
  CHECK(g.comm_channels == 16);
}

TEST_CASE("search: B200 nodes with 400 Gb/s NICs give 16 coll channels, not Blackwell's one-node 32") {
  const SearchedGraphs g = search_nvswitch_node(with_nics(one_node(100, 18), 8, 48.0));
  CHECK(g.ring.n_channels == 8);
  CHECK(g.ring.bw_inter == approx(48.0));
  CHECK(g.comm_channels == 16);
  CHECK(g.tree.bw_intra == approx(96.0));  // pass 2: up to twice the network speed
  CHECK(g.nvls.n_channels == 8);
  CHECK(g.nvls.bw_inter == approx(48.0));
}

TEST_CASE("search: bad inputs") {
  CHECK_THROWS_AS(search_nvswitch_node(one_node(90, 0)), commstack::InputError);
  CHECK_THROWS_AS(search_nvswitch_node(with_nics(one_node(90, 18), 8, 0.0)), commstack::InputError);
}

TEST_CASE("search: more NVLink never gives fewer channels x speed") {
  // Invariant of the search: the ring graph's total bandwidth grows with the GPU's NVLink.
  double last = 0;
  for (int links = 2; links <= 18; ++links) {
    const SearchedGraphs g = search_nvswitch_node(one_node(90, links));
    const double total = g.ring.n_channels * g.ring.bw_intra;
    CHECK(total >= last);
    CHECK(total <= links * nccl_nvlink_link_GBps(90) + 1e-9);
    last = total;
  }
}

TEST_CASE("search: NCCL 2.30's Blackwell speeds let a 90 GB/s NIC path carry 86 GB/s channels") {
  // 2.28.9's sm100 inter speeds jump from 96 to 48: on a path of 90 GB/s (an 800 Gb/s NIC behind a
  // PCIe link NCCL rates at 90) one channel of 48 fits per NIC, and the search goes on down to 30,
  // where 3 per NIC give the best product, 24 x 30 = 720 (below 50: not duplicated). 2.30.7 adds 86
  // and 80: 8 channels of 86 (688) stop the search at 42 (42 / 86 < .49), duplicated (>= 50 GB/s)
  // to 16 of 43, and the communicator doubles them.
  SearchNode node = with_nics(one_node(100, 18), 8, 90.0);
  const SearchedGraphs old_speeds = search_nvswitch_node(node);
  CHECK(old_speeds.ring.n_channels == 24);
  CHECK(old_speeds.ring.bw_inter == approx(30.0));
  // 2.29.7 adds 80 only: 8 x 80 (640) lets the search go on to 42 (16 x 42) and 30 (24 x 30) again.
  node.version = NcclVersion::v2_29_7;
  const SearchedGraphs speeds_2_29 = search_nvswitch_node(node);
  CHECK(speeds_2_29.ring.n_channels == 24);
  CHECK(speeds_2_29.ring.bw_inter == approx(30.0));
  node.version = NcclVersion::v2_30_7;
  const SearchedGraphs new_speeds = search_nvswitch_node(node);
  CHECK(new_speeds.ring.n_channels == 16);
  CHECK(new_speeds.ring.bw_inter == approx(43.0));
  CHECK(new_speeds.comm_channels == 32);
}

TEST_CASE("search: NCCL 2.26's Blackwell speeds have 45 where later releases have 45.1") {
  // A NIC path of 45.05 GB/s: 2.26.2's sm100 inter speeds (48, 45, 42, ...) fit one 45 GB/s channel
  // per NIC, 8 x 45 = 360, which no slower speed beats. From 2.27 the list reads 48, 45.1, 42: one of
  // 42 per NIC (336), then two of 22 (352), then three of 15 per NIC, 24 x 15 = 360. Neither is
  // duplicated (Blackwell below 50 GB/s with more than 4 channels).
  SearchNode node = with_nics(one_node(100, 18), 8, 45.05);
  node.version = NcclVersion::v2_26_2;
  const SearchedGraphs v226 = search_nvswitch_node(node);
  CHECK(v226.ring.n_channels == 8);
  CHECK(v226.ring.bw_inter == approx(45.0));
  node.version = NcclVersion::v2_28_9;
  const SearchedGraphs v228 = search_nvswitch_node(node);
  CHECK(v228.ring.n_channels == 24);
  CHECK(v228.ring.bw_inter == approx(15.0));
}

TEST_CASE("search: one GPU per node takes its NIC path alone: 2 coll channels on A100 + HDR, 4 on B200") {
  // A100 with one HDR NIC behind PCIe Gen4 (path 24 GB/s): the first speed that fits is 24, one
  // channel; 12 (two) is no better and 10 / 24 < .49 stops the search; 24 < 25 is not duplicated.
  // The tree raises its intra speed to 48 (pass 2, below twice 24); the communicator doubles 1 -> 2.
  SearchNode a100 = with_nics(one_node(80, 12), 1, 24.0);
  a100.gpus = 1;
  const SearchedGraphs ga = search_nvswitch_node(a100);
  CHECK(ga.ring.n_channels == 1);
  CHECK(ga.ring.bw_inter == approx(24.0));
  CHECK(ga.tree.bw_intra == approx(48.0));
  CHECK(ga.comm_channels == 2);
  CHECK(ga.tree.pattern == 3);  // NCCL_TOPO_PATTERN_TREE for one GPU (the tuner's 0.85)
  // B200 with a 400 Gb/s NIC behind PCIe Gen5 (48): one channel of 48, duplicated to 2 x 24, and the
  // communicator's 4 (not doubled again: 24 <= 45 GB/s).
  SearchNode b200 = with_nics(one_node(100, 18), 1, 48.0);
  b200.gpus = 1;
  const SearchedGraphs gb = search_nvswitch_node(b200);
  CHECK(gb.ring.n_channels == 2);
  CHECK(gb.ring.bw_intra == approx(24.0));
  CHECK(gb.comm_channels == 4);
}

TEST_CASE("search: the communicator line prints the coll channels after NCCL_MIN/MAX_CTAS") {
  CommShape s;
  s.n_channels = 16;
  s.ring.n_channels = 8;
  s.ring.bw_intra = 48;
  s.nvls_support = true;
  s.nvls_channels = 16;
  CHECK(describe_comm(s) == "16 coll channels (ring graph 8 x 48 GB/s), 16 nvls channels");
  NcclEnv env;
  env.max_ctas = 32;  // no effect: nothing said
  CHECK(describe_comm(s, env) == "16 coll channels (ring graph 8 x 48 GB/s), 16 nvls channels");
  env.max_ctas = 1;
  s.nvls_channels = 1;  // clamped by the NVLS tuning (nvls_tuning.cpp)
  CHECK(describe_comm(s, env) ==
        "1 coll channels (ring graph 8 x 48 GB/s; 16 before NCCL_MAX_CTAS=1), 1 nvls channels");
  env.max_ctas = 0;
  env.min_ctas = 32;
  s.nvls_support = false;
  CHECK(describe_comm(s, env) == "32 coll channels (ring graph 8 x 48 GB/s; 16 before NCCL_MIN_CTAS=32)");
}
