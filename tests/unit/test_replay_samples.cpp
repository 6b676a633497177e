// Replays of the published sample traces on the built-in dgx-a100 preset. The acceptance figure:
// replaying a trace on the cluster it was recorded on reproduces the traced iteration time
// within 5 % (docs/replay.md reports the numbers).
#include <doctest/doctest.h>

#include "approx.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/replay/replay.hpp"
#include "topologies/cluster.hpp"
#include "workloads/importers/load_trace.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {
const std::string kSamples = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples/";
}

TEST_CASE("replay: HTA 2-rank A100 trace on dgx-a100 within 5 % of the traced iteration") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-nccl-2gpu");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  const auto r = sim::replay::replay(t, s, {});
  CHECK(r.resimulated_ops == 7);  // 5 all-reduces and 2 broadcasts
  CHECK(r.kept_comm_ops == 0);
  CHECK(r.traced_s == approx(0.224936243).epsilon(1e-6));
  CHECK(std::abs(r.replayed_s - r.traced_s) / r.traced_s < 0.05);
  // Each re-simulated all-reduce or broadcast moves at least its buffer once over one GPU's NVLink
  // (a 2-rank ring sends B per GPU; a ring broadcast sends B from the root to the other rank);
  // 600 GB/s is above any A100 NVLink direction, so this is a lower bound.
  for (const Op& op : r.graph.ops) {
    if (op.kind != OpKind::collective) continue;
    CHECK(r.duration[static_cast<std::size_t>(op.id)] >= static_cast<double>(op.bytes) / 600e9);
    CHECK(r.duration[static_cast<std::size_t>(op.id)] < 1e-3);
  }
  // The compute kernels keep their traced durations.
  CHECK(r.replayed.compute_s == approx(r.traced.compute_s).epsilon(1e-9));
}

TEST_CASE("replay: scale-dp 2 widens the world process group to 4 ranks") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-nccl-2gpu");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  sim::replay::ReplayOptions o;
  o.scale_dp = 2;
  const auto r = sim::replay::replay(t, s, o);
  CHECK(r.world == 4);
  for (const auto& c : r.graph.communicators) CHECK(c.ranks == std::vector<int>{0, 1, 2, 3});
  bool stated = false;
  for (const auto& a : r.assumptions) stated = stated || a.find("scale-dp 2: the traced job is replica 0 of 2") != std::string::npos;
  CHECK(stated);
}

TEST_CASE("replay: NCCL log of three all-reduces runs them back to back on one stream") {
  const auto t = importers::load_trace(kSamples + "nccl-log-203");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  const auto r = sim::replay::replay(t, s, {});
  double sum = 0;
  for (const Op& op : r.graph.ops) {
    if (op.rank == 0) sum += r.duration[static_cast<std::size_t>(op.id)];
  }
  CHECK(r.replayed_s == approx(sum).epsilon(1e-12));
  CHECK(r.replayed_s > 386560.0 * 4 / 600e9);
  CHECK(r.traced_s == 0);  // the log has no timestamps
}

TEST_CASE("replay: Chakra graph without modelled communication replays as traced") {
  const auto t = importers::load_trace(kSamples + "chakra-feeder/chakra.0.json.gz");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  const auto r = sim::replay::replay(t, s, {});
  CHECK(r.resimulated_ops == 0);
  CHECK(r.traced_s > 0);
  CHECK(r.replayed_s == approx(r.traced_s).epsilon(1e-12));
}

TEST_CASE("replay: a cluster with too few GPUs is an input error") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-sampled-128gpu");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  CHECK_THROWS_WITH_AS(sim::replay::replay(t, s, {}), doctest::Contains("needs 128 GPUs"), InputError);
}

namespace {
// Two processes, one GPU each, one 64 MiB all-reduce (written for these tests); the second process
// on `host1`.
std::string write_two_rank_log(const std::string& path, const std::string& host1) {
  std::ofstream out(path);
  out << "hostA:100:100 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 - Init "
         "COMPLETE\n"
      << host1
      << ":200:200 [0] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 - Init COMPLETE\n"
      << "hostA:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 16777216 datatype "
         "7 op 0 "
         "root 0 comm 0xa [nranks=2] stream 0x3\n"
      << host1
      << ":200:200 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 16777216 datatype 7 "
      << "op 0 root 0 comm 0xb [nranks=2] stream 0x3\n";
  return path;
}
bool assumed(const sim::replay::ReplayResult& r, const std::string& text) {
  for (const auto& a : r.assumptions)
    if (a.find(text) != std::string::npos) return true;
  return false;
}
constexpr double kAllReduceBytes = 16777216.0 * 4;
}  // namespace

// The two-rank log replayed on `nodes` dgx-a100 nodes (one Simulator per test process).
static sim::replay::ReplayResult replay_two_rank_log(const std::string& host1, int nodes) {
  const auto path = write_two_rank_log("test_replay_" + host1 + "_" + std::to_string(nodes) + ".log", host1);
  const auto t = importers::load_trace(path);
  std::remove(path.c_str());
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), nodes);
  sim::Simulator s(topo);
  return sim::replay::replay(t, s, {});
}

TEST_CASE("replay: an NCCL log's hosts are nodes: ranks on two hosts cross the network") {
  const auto r = replay_two_rank_log("hostB", 2);
  CHECK(assumed(r, "the trace's hosts (hostA, hostB) run 1 rank(s) each in rank order"));
  // A 2-rank ring all-reduce sends the whole buffer out of each GPU, here through one 25 GB/s HDR NIC.
  CHECK(r.replayed_s > kAllReduceBytes / 25e9);
}

TEST_CASE("replay: an NCCL log on more hosts than the cluster's nodes asks for --nodes") {
  CHECK_THROWS_WITH_AS(
      replay_two_rank_log("hostB", 1),
      doctest::Contains("the trace's ranks run on 2 hosts but the cluster has 1 nodes; pass --nodes 2"),
      InputError);
}

TEST_CASE("replay: an NCCL log's ranks on one host share a node's NVLink") {
  const auto r = replay_two_rank_log("hostA", 2);
  CHECK(assumed(r, "fill nodes in order, as the trace's 1 host(s) do"));
  // Over NVLink (A100: 300 GB/s per direction) the same call is many times faster than one NIC allows.
  CHECK(r.replayed_s < kAllReduceBytes / 25e9 / 3);
}

TEST_CASE("replay: the nodes a placement needs: one per host, at least enough for the world") {
  const auto path = write_two_rank_log("test_replay_placement.log", "hostB");
  const auto t = importers::load_trace(path);
  std::remove(path.c_str());
  CHECK(sim::replay::place_ranks(t, 1, 8).nodes == 2);  // two hosts: two nodes, though 2 ranks fit one
  CHECK(sim::replay::place_ranks(t, 3, 8).nodes == 6);  // scale-dp 3: each replica on its own hosts
  CHECK(sim::replay::place_ranks(t, 1, 8).gpu_of == std::vector<int>{0, 8});
  auto one_host = t;
  one_host.rank_host = {{0, "h"}, {1, "h"}};
  CHECK(sim::replay::place_ranks(one_host, 1, 8).gpu_of.empty());  // rank r on GPU r
  CHECK(sim::replay::place_ranks(one_host, 1, 8).nodes == 1);
  CHECK_THROWS_WITH_AS(
      sim::replay::place_ranks(one_host, 1, 1),
      doctest::Contains("host h of the trace runs 2 ranks, but the cluster's nodes have 1 GPUs"), InputError);
}

namespace {
// Two GB200 trays' ranks whose NCCL (2.19+) printed its communicator line with `mnnvl`.
std::string write_two_tray_log(const std::string& path, int mnnvl) {
  std::ofstream out(path);
  for (int r = 0; r < 2; ++r)
    out << (r == 0 ? "trayA" : "trayB") << ":" << 100 + r << ":" << 100 + r << " [0] NCCL INFO comm 0x" << r
        << " rank " << r << " nRanks 2 nNodes " << (mnnvl ? 1 : 2) << " localRanks " << (mnnvl ? 2 : 1)
        << " localRank " << (mnnvl ? r : 0) << " MNNVL " << mnnvl << "\n";
  for (int r = 0; r < 2; ++r)
    out << (r == 0 ? "trayA" : "trayB") << ":" << 100 + r << ":" << 100 + r
        << " [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 count 16777216 datatype 7 op 0 "
           "root 0 "
           "comm 0x"
        << r << " [nranks=2] stream 0x3\n";
  return path;
}
}  // namespace

TEST_CASE("replay: an NCCL log that says MNNVL 0 runs between NVL72 trays over their NICs") {
  const auto path = write_two_tray_log("test_replay_mnnvl0.log", 0);
  const auto t = importers::load_trace(path);
  std::remove(path.c_str());
  REQUIRE(t.multi_node_nvlink.has_value());
  CHECK_FALSE(*t.multi_node_nvlink);
  // The global ranks come from the 2.19+ "nRanks" init lines: no guess is reported.
  for (const auto& w : t.warnings) CHECK(w.find("init lines") == std::string::npos);
  auto spec = topologies::load_cluster("gb200-nvl72");
  const std::string rule = sim::replay::apply_traced_mnnvl(t, spec);
  CHECK(spec.node.nvlink_domain_nodes == 1);
  CHECK(rule.find("the NCCL log says MNNVL 0: NCCL did not use gb200-nvl72's multi-node NVLink domains (18 "
                  "nodes each)") == 0);
  // Nothing to change on a cluster without such domains, or when NCCL used the fabric.
  auto a100 = topologies::load_cluster("dgx-a100");
  CHECK(sim::replay::apply_traced_mnnvl(t, a100).empty());
  const auto used_path = write_two_tray_log("test_replay_mnnvl1.log", 1);
  const auto used = importers::load_trace(used_path);
  std::remove(used_path.c_str());
  CHECK(used.multi_node_nvlink == std::optional<bool>(true));
  auto gb = topologies::load_cluster("gb200-nvl72");
  CHECK(sim::replay::apply_traced_mnnvl(used, gb).empty());
  CHECK(gb.node.nvlink_domain_nodes == 18);
  // Replayed as NCCL ran it: the 64 MiB all-reduce between the two trays leaves through one
  // 400 Gb/s NIC per GPU (a 2-rank ring sends the whole buffer), where NVLink moves 900 GB/s.
  const auto topo = topologies::build_topology(spec, 2);
  sim::Simulator s(topo);
  const auto r = sim::replay::replay(t, s, {});
  CHECK(r.replayed_s > kAllReduceBytes / 50e9);
}
