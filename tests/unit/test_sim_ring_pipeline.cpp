// The edge level's ring timing (sim/algorithms/ring.cpp, ring_pipeline): the steps' pipeline run
// outside SimGrid, and for rings too long to run it, the steady state of a sub-ring of the first
// nodes. No Simulator here: these are the analytic ends the edge flows are given.
#include <algorithm>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/algorithms/detail.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;

namespace {

sim::CollectiveSpec all_reduce(const topologies::Topology& topo, double bytes) {
  sim::CollectiveSpec coll;
  coll.op = sim::CollectiveOp::allreduce;
  for (int r = 0; r < topo.gpu_count(); ++r) coll.ranks.push_back(r);
  coll.bytes = bytes;
  coll.channels = 8;
  return coll;
}

}  // namespace

TEST_CASE("ring pipeline: a sub-ring of 16 nodes stands for a 32-node DGX H100 ring within 0.5%") {
  // 256 GPUs, 8 channels, 510 steps: the pipeline itself runs (1e6 edge-steps), and so does the
  // sub-ring estimate when the budget is 0. At 64 MiB (32 KiB blocks) a NIC hop and an NVLink hop
  // shared by 7 channels take about as long, the hardest case for a steady state.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 32);
  for (const double mib : {4.0, 64.0, 1024.0}) {
    const auto spec = all_reduce(topo, mib * 1024 * 1024);
    const int n = topo.gpu_count(), steps = 2 * (n - 1);
    const double block = spec.bytes / (n * spec.channels);
    const auto full = sim::detail::ring_pipeline(topo, spec, block, 1, steps);
    const auto sub = sim::detail::ring_pipeline(topo, spec, block, 1, steps, 0);
    CHECK(full.method == "pipeline");
    CHECK(sub.method == "sub-ring");
    REQUIRE(full.end.size() == 8);
    REQUIRE(sub.end.size() == 8);
    CAPTURE(mib);
    for (std::size_t c = 0; c < 8; ++c) CHECK(sub.end[c] == approx(full.end[c]).epsilon(0.005));
  }
}

TEST_CASE("ring pipeline: a ring of equal hops is in lock-step, steps x (share x t0 + latency)") {
  // One DGX H100: 8 GPUs on the NVSwitch, 8 channels, so each GPU's NVLink port carries 8 ring
  // edges per direction, all starting every step together: the pipeline's end is the closed form.
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 1);
  const auto spec = all_reduce(topo, 64.0 * 1024 * 1024);
  const int n = 8, steps = 2 * (n - 1);
  const double block = spec.bytes / (n * spec.channels);
  const auto path = topo.route(0, 1);
  double bw = 1e30;
  for (const auto& h : path) bw = std::min(bw, topo.link(h.link).bandwidth_Bps);
  const double expected = steps * (8 * block / bw + topo.path_latency(path));
  const auto pipe = sim::detail::ring_pipeline(topo, spec, block, 1, steps);
  CHECK(pipe.method == "lock-step");
  REQUIRE(pipe.end.size() == 8);
  for (std::size_t c = 0; c < 8; ++c) CHECK(pipe.end[c] == approx(expected).epsilon(1e-9));
}
