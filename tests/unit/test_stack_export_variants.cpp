// The export variants' presets (hgx-h800, hgx-a800): the H100 / A100 node with 8 NVLinks per GPU.
// Their NVLink bounds every one-node collective, and the shipped profile of the die predicts them.
#include <tuple>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/algorithms/collective.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::CollectiveOp;
using sim::stack::Predictor;

TEST_CASE("export variants: H800 and A800 nodes are bounded by 8 NVLinks, 200 GB/s per direction") {
  const double bytes = 8.0 * (1u << 30);
  for (const auto& row :
       {std::tuple{"hgx-h800", "dgx-h100", "h100"}, std::tuple{"hgx-a800", "dgx-a100", "a100"}}) {
    // std::get rather than a structured binding: CAPTURE's lambda cannot capture one before clang 16.
    const char* preset = std::get<0>(row);
    const char* die = std::get<1>(row);
    const char* profile = std::get<2>(row);
    CAPTURE(preset);
    const auto spec = topologies::load_cluster(preset);
    const auto prof = sim::stack::default_profile_for_gpu(spec.node.gpu_model);
    CHECK(prof.name == profile);
    const Predictor pr(spec, 1, 8);
    const auto ag = pr.predict(CollectiveOp::allgather, static_cast<std::uint64_t>(bytes), prof);
    CHECK(ag.busbw_line_GBps == approx(200.0));
    // The same profile on the full-NVLink node of the same die: the ring's rate scales with the line.
    const auto full = Predictor(topologies::load_cluster(die), 1, 8)
                          .predict(CollectiveOp::allgather, static_cast<std::uint64_t>(bytes), prof);
    const double ratio = full.time_s / ag.time_s;
    CHECK(ratio == approx(200.0 / full.busbw_line_GBps).epsilon(0.03));
  }
  // DeepEP (deepseek-ai/DeepEP README) measures "~160 GB/s NVLink maximum bandwidth" on its H800
  // nodes: the ring all-gather's bus bandwidth is that within 10%.
  const auto h800 = topologies::load_cluster("hgx-h800");
  const auto t = Predictor(h800, 1, 8)
                     .predict(CollectiveOp::allgather, static_cast<std::uint64_t>(bytes),
                              sim::stack::load_profile("h100"))
                     .time_s;
  const double busbw = bytes / t * sim::bus_bandwidth_factor(CollectiveOp::allgather, 8) / 1e9;
  CHECK(busbw > 160 * 0.9);
  CHECK(busbw < 160 * 1.1);
}
