// Bench sweep planning: NCCL's algorithm x protocol legality, size ladders, presets, cost.
#include <algorithm>
#include <string>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/bench/sweep_plan.hpp"
#include "common/error.hpp"

using namespace commstack::bench;

namespace {
Machine h100_node() { return Machine{1, 8, 90, true, false}; }
Machine two_h100_nodes() { return Machine{2, 8, 90, true, false}; }
Machine one_gpu_per_node() { return Machine{4, 1, 90, false, false}; }
}  // namespace

TEST_CASE("bench: NCCL legality of forced algorithm x protocol per collective") {
  const Machine m = h100_node();
  // Ring: every protocol, every non-p2p collective.
  for (Proto p : kForcedProtos)
    for (Op op : {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::broadcast, Op::reduce})
      CHECK(combination_legal(op, Algo::ring, p, m));
  // Tree: all_reduce only, all protocols.
  CHECK(combination_legal(Op::all_reduce, Algo::tree, Proto::ll, m));
  CHECK(combination_legal(Op::all_reduce, Algo::tree, Proto::ll128, m));
  CHECK_FALSE(combination_legal(Op::all_gather, Algo::tree, Proto::simple, m));
  CHECK_FALSE(combination_legal(Op::broadcast, Algo::tree, Proto::simple, m));
  // NVLS: Simple only, AR/AG/RS, needs NVSwitch and sm_90.
  std::string why;
  CHECK(combination_legal(Op::all_reduce, Algo::nvls, Proto::simple, m));
  CHECK(combination_legal(Op::reduce_scatter, Algo::nvls, Proto::simple, m));
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::nvls, Proto::ll, m, &why));
  CHECK(why.find("Simple") != std::string::npos);
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::nvls, Proto::simple, Machine{1, 8, 80, true, false}));
  CHECK_FALSE(combination_legal(Op::broadcast, Algo::nvls, Proto::simple, m));
  // NVLSTree: multi-node all_reduce only.
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::nvls_tree, Proto::simple, m));
  CHECK(combination_legal(Op::all_reduce, Algo::nvls_tree, Proto::simple, two_h100_nodes()));
  CHECK_FALSE(combination_legal(Op::all_gather, Algo::nvls_tree, Proto::simple, two_h100_nodes()));
  // PAT: AG/RS, Simple, one GPU per node.
  CHECK_FALSE(combination_legal(Op::all_gather, Algo::pat, Proto::simple, m, &why));
  CHECK(why.find("one GPU per node") != std::string::npos);
  CHECK(combination_legal(Op::all_gather, Algo::pat, Proto::simple, one_gpu_per_node()));
  CHECK(combination_legal(Op::reduce_scatter, Algo::pat, Proto::simple, one_gpu_per_node()));
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::pat, Proto::simple, one_gpu_per_node()));
  CHECK_FALSE(combination_legal(Op::all_gather, Algo::pat, Proto::ll128, one_gpu_per_node()));
  // CollNet needs SHARP.
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::collnet_direct, Proto::simple, m));
  Machine sharp = two_h100_nodes();
  sharp.collnet = true;
  CHECK(combination_legal(Op::all_reduce, Algo::collnet_direct, Proto::simple, sharp));
  CHECK(combination_legal(Op::all_reduce, Algo::collnet_chain, Proto::simple, sharp));
  CHECK_FALSE(combination_legal(Op::all_gather, Algo::collnet_chain, Proto::simple, sharp));
  CHECK_FALSE(combination_legal(Op::all_reduce, Algo::collnet_chain, Proto::ll, sharp));
  // Point-to-point ops: default only.
  CHECK(combination_legal(Op::alltoall, Algo::default_choice, Proto::default_choice, m));
  CHECK_FALSE(combination_legal(Op::sendrecv, Algo::ring, Proto::simple, m));
}

TEST_CASE("bench: size ladder, element counts and bus factors follow nccl-tests") {
  const auto sizes = size_ladder(8, 1ull << 30, 2);
  CHECK(sizes.size() == 28);  // 2^3 .. 2^30
  CHECK(sizes.front() == 8);
  CHECK(sizes.back() == (1ull << 30));
  CHECK(size_ladder(8, 100, 4) == std::vector<std::uint64_t>{8, 32});
  CHECK_THROWS_AS(size_ladder(0, 8, 2), commstack::InputError);
  CHECK_THROWS_AS(size_ladder(16, 8, 2), commstack::InputError);
  CHECK_THROWS_AS(size_ladder(8, 16, 1), commstack::InputError);
  CHECK(element_count(Op::all_reduce, 1024, 8, 4) == 256);
  CHECK(element_count(Op::all_gather, 1024, 8, 4) == 32);  // per rank
  CHECK(element_count(Op::all_gather, 16, 8, 4) == 0);     // too small for 8 ranks of floats
  CHECK(bus_factor(Op::all_reduce, 8) == approx(1.75));
  CHECK(bus_factor(Op::reduce_scatter, 8) == approx(0.875));
  CHECK(bus_factor(Op::broadcast, 8) == 1.0);
}

TEST_CASE("bench: names round-trip and NCCL env spellings") {
  for (Op op : kAllOps) CHECK(op_from_name(to_string(op), "t") == op);
  for (Algo a : kForcedAlgos) {
    CHECK(algo_from_name(to_string(a), "t") == a);
    CHECK(algo_from_name(nccl_env_value(a), "t") == a);
  }
  for (Proto p : kForcedProtos) CHECK(proto_from_name(nccl_env_value(p), "t") == p);
  CHECK(nccl_env_value(Algo::nvls_tree) == "NVLSTree");
  CHECK(nccl_env_value(Algo::default_choice).empty());
  CHECK_THROWS_WITH_AS(op_from_name("allgatherv", "--ops"), doctest::Contains("--ops"), commstack::InputError);
  CHECK_THROWS_AS(algo_from_name("ringg", "x"), commstack::InputError);
  CHECK_THROWS_AS(preset_by_name("huge", "--preset"), commstack::InputError);
}

TEST_CASE("bench: standard plan on one 8-GPU H100 node") {
  const SweepPlan plan = plan_sweep(preset_by_name("standard", "t"), h100_node());
  auto has = [&](Op op, Algo a, Proto p, int ctas = 0) {
    return std::find(plan.cases.begin(), plan.cases.end(), SweepCase{op, a, p, ctas}) != plan.cases.end();
  };
  CHECK(has(Op::all_reduce, Algo::default_choice, Proto::default_choice));
  CHECK(has(Op::alltoall, Algo::default_choice, Proto::default_choice));
  CHECK(has(Op::all_reduce, Algo::tree, Proto::ll128));
  CHECK(has(Op::all_gather, Algo::nvls, Proto::simple));
  CHECK_FALSE(has(Op::all_gather, Algo::pat, Proto::simple));
  CHECK_FALSE(has(Op::all_reduce, Algo::nvls_tree, Proto::simple));
  CHECK(has(Op::all_reduce, Algo::default_choice, Proto::default_choice, 4));
  CHECK_FALSE(has(Op::all_gather, Algo::default_choice, Proto::default_choice, 4));  // channel sweep: AR only
  // Count: default 7 ops; ring 3 protos x 5 ops = 15; tree 3; nvls simple x 3 ops = 3; 6 CTA settings x AR.
  CHECK(plan.cases.size() == 7 + 15 + 3 + 3 + 6);
  // One communicator per distinct setting: default, ring x3, tree x3, nvls/simple, 6 CTA counts.
  CHECK(plan.comm_settings().size() == 1 + 3 + 3 + 1 + 6);
  CHECK_FALSE(plan.skipped.empty());
  CHECK(std::any_of(plan.skipped.begin(), plan.skipped.end(),
                    [](const std::string& s) { return s.rfind("all_gather pat/simple:", 0) == 0; }));
}

TEST_CASE("bench: GPU-minutes estimate equals the closed form of the cost model") {
  Preset p = preset_by_name("smoke", "t");
  p.ops = {Op::all_reduce};
  p.min_bytes = 1 << 20;
  p.max_bytes = 1 << 20;
  p.warmup = 1;
  p.iters = 10;
  p.reps = 2;
  const SweepPlan plan = plan_sweep(p, h100_node());
  REQUIRE(plan.cases.size() == 1);
  CostModel model;
  model.latency_us = 10;
  model.busbw_GBps = 100;
  model.comm_init_s = 2;
  model.init_per_node_s = 1;
  model.fixed_s = 30;
  const double call_us = 10 + (1 << 20) * 1.75 / 1e5;
  CHECK(modeled_call_us(Op::all_reduce, 1 << 20, 8, model) == approx(call_us));
  const CostEstimate e = estimate_cost(plan, model);
  CHECK(e.calls == 21);
  CHECK(e.communicators == 1);
  CHECK(e.collective_s == approx(21 * call_us * 1e-6));
  CHECK(e.init_s == approx(3.0));
  CHECK(e.gpu_minutes == approx((21 * call_us * 1e-6 + 3 + 30) * 8 / 60));
  // Presets grow in cost: smoke < standard < full.
  const double smoke = estimate_cost(plan_sweep(preset_by_name("smoke", "t"), two_h100_nodes())).gpu_minutes;
  const double standard = estimate_cost(plan_sweep(preset_by_name("standard", "t"), two_h100_nodes())).gpu_minutes;
  const double full = estimate_cost(plan_sweep(preset_by_name("full", "t"), two_h100_nodes())).gpu_minutes;
  CHECK(smoke < standard);
  CHECK(standard < full);
}
