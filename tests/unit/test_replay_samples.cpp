// Replays of the published sample traces on the built-in dgx-a100 preset. The acceptance figure:
// replaying a trace on the cluster it was recorded on reproduces the traced iteration time
// within 5 % (docs/replay.md reports the numbers).
#include <doctest/doctest.h>

#include <cmath>
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
  CHECK(r.traced_s == doctest::Approx(0.224936243).epsilon(1e-6));
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
  CHECK(r.replayed.compute_s == doctest::Approx(r.traced.compute_s).epsilon(1e-9));
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
  CHECK(r.replayed_s == doctest::Approx(sum).epsilon(1e-12));
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
  CHECK(r.replayed_s == doctest::Approx(r.traced_s).epsilon(1e-12));
}

TEST_CASE("replay: a cluster with too few GPUs is an input error") {
  const auto t = importers::load_trace(kSamples + "kineto-hta-sampled-128gpu");
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator s(topo);
  CHECK_THROWS_WITH_AS(sim::replay::replay(t, s, {}), doctest::Contains("needs 128 GPUs"), InputError);
}
