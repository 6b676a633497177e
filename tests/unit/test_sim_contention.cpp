// Contention, fidelity agreement and determinism on hand-built two-level topologies.
#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "test_sim_helpers.hpp"

using namespace commstack::sim;

namespace {
constexpr double MiB = 1024.0 * 1024;
constexpr double h = 1e-6;

CollectiveSpec ring_spec(CollectiveOp op, std::vector<int> ranks, double bytes, int group = 0) {
  CollectiveSpec s;
  s.op = op;
  s.ranks = std::move(ranks);
  s.bytes = bytes;
  s.group = group;
  s.fidelity = Fidelity::chunk;
  return s;
}
}  // namespace

TEST_CASE("sim: two allreduces sharing an oversubscribed uplink take the closed-form longer time") {
  // 2 leaves x 4 GPUs, GPU ports B, one uplink per leaf of B/4. Each allreduce has two GPUs per
  // leaf, so its ring crosses each uplink direction once; two of them share every uplink direction.
  constexpr double B = 100e9;
  constexpr double U = B / 4;
  auto topo = testing::two_level(2, 4, B, U, h);
  Simulator sim(topo);
  const double S = 1024 * MiB;
  const double alpha_inter = 4 * h;  // GPU-leaf, leaf-spine, spine-leaf, leaf-GPU
  const int n = 4;
  const double block = S / n;

  FlowGraph alone;
  add_collective(alone, topo, ring_spec(CollectiveOp::allreduce, {0, 1, 4, 5}, S));
  const double t_alone = sim.run(alone).duration_s;
  // The inter-leaf edges are the bottleneck; their upstream (intra-leaf) data always arrives in
  // time, so they stream back to back and only the last arrival pays latency: 2(n-1) block/U + alpha.
  CHECK(t_alone == approx(2 * (n - 1) * block / U + alpha_inter).epsilon(1e-6));

  FlowGraph both;
  add_collective(both, topo, ring_spec(CollectiveOp::allreduce, {0, 1, 4, 5}, S, 0));
  add_collective(both, topo, ring_spec(CollectiveOp::allreduce, {2, 3, 6, 7}, S, 1));
  const RunResult r = sim.run(both);
  const double expect = 2 * (n - 1) * block / (U / 2) + alpha_inter;
  REQUIRE(r.group_duration_s.size() == 2);
  CHECK(r.group_duration_s[0] == approx(expect).epsilon(1e-6));
  CHECK(r.group_duration_s[1] == approx(expect).epsilon(1e-6));
  CHECK(r.duration_s > 1.9 * t_alone);

  // Placed inside one leaf each, the two allreduces do not touch the uplinks and do not interfere.
  FlowGraph apart;
  add_collective(apart, topo, ring_spec(CollectiveOp::allreduce, {0, 1, 2, 3}, S, 0));
  add_collective(apart, topo, ring_spec(CollectiveOp::allreduce, {4, 5, 6, 7}, S, 1));
  CHECK(sim.run(apart).duration_s == approx(2 * (n - 1) * (2 * h + block / B)).epsilon(1e-6));
}

TEST_CASE("sim: chunk step and edge fidelity agree within 1 percent on a heterogeneous fabric") {
  // Fast links inside a leaf (NVLink-like), a slower uplink, 2 channels, pipelined chunks.
  auto topo = testing::two_level(2, 4, 400e9, 100e9, h);
  Simulator sim(topo);
  for (auto op : {CollectiveOp::allreduce, CollectiveOp::allgather, CollectiveOp::reducescatter,
                  CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::sendrecv}) {
    for (double S : {64 * 1024.0, 256 * MiB}) {
      double t[3] = {0, 0, 0};
      int i = 0;
      for (Fidelity f : {Fidelity::chunk, Fidelity::step, Fidelity::edge}) {
        CollectiveSpec spec = ring_spec(op, testing::iota_ranks(8), S);
        spec.channels = 2;
        spec.chunk_bytes = S / 64;
        spec.root = 3;
        spec.fidelity = f;
        FlowGraph g;
        add_collective(g, topo, spec);
        t[i++] = sim.run(g).duration_s;
      }
      CAPTURE(to_string(op));
      CAPTURE(S);
      // At 64 KiB a ring step holds 4 chunk loops of 1 KiB and the time is latency: the coarse
      // levels end where the loops' own pipeline ends (step_latency_scales, ring_pipeline), the
      // chunk level's longest chain of latencies; with K latencies a step, in series, 7.5-12.5% slow.
      CHECK(t[1] == approx(t[0]).epsilon(0.01));
      CHECK(t[2] == approx(t[0]).epsilon(0.01));
    }
  }
}

TEST_CASE("sim: automatic fidelity picks the finest level within the flow budget") {
  auto topo = testing::star(8, 50e9, h);
  CollectiveSpec spec = ring_spec(CollectiveOp::allreduce, testing::iota_ranks(8), 1024 * MiB);
  spec.fidelity = Fidelity::automatic;
  CHECK(plan_collective(topo, spec).fidelity == Fidelity::chunk);
  CHECK(plan_collective(topo, spec).flows == 8 * 14);
  spec.chunk_bytes = 1;  // absurdly small chunks: 2^27 chunk loops
  CHECK(plan_collective(topo, spec).fidelity == Fidelity::step);
  spec.channels = 64;
  spec.ranks = testing::iota_ranks(8);
  CHECK(plan_collective(topo, spec).flows == 64 * 8 * 14);
}

TEST_CASE("sim: two runs of the same collective record identical flows") {
  auto topo = testing::two_level(2, 4, 400e9, 100e9, h);
  Simulator sim(topo);
  CollectiveSpec spec = ring_spec(CollectiveOp::allreduce, testing::iota_ranks(8), 16 * MiB);
  spec.channels = 2;
  spec.chunk_bytes = MiB;
  FlowGraph g1, g2;
  add_collective(g1, topo, spec);
  add_collective(g2, topo, spec);
  const RunResult a = sim.run(g1, true);
  const RunResult b = sim.run(g2, true);
  REQUIRE(a.flows.size() == static_cast<std::size_t>(g1.size()));
  REQUIRE(a.flows.size() == b.flows.size());
  for (std::size_t i = 0; i < a.flows.size(); ++i) {
    CHECK(a.flows[i].id == b.flows[i].id);
    CHECK(a.flows[i].src == b.flows[i].src);
    CHECK(a.flows[i].dst == b.flows[i].dst);
    // Times are relative to each run's start on one ever-advancing clock: equal up to rounding.
    CHECK(a.flows[i].end_s == approx(b.flows[i].end_s).epsilon(1e-12));
  }
  CHECK(a.duration_s == approx(b.duration_s).epsilon(1e-12));
}

TEST_CASE("sim: bad collective specs are input errors") {
  auto topo = testing::star(4, 50e9, h);
  FlowGraph g;
  auto bad = [&](auto mutate) {
    CollectiveSpec s = ring_spec(CollectiveOp::allreduce, testing::iota_ranks(4), 1024);
    mutate(s);
    CHECK_THROWS_AS(add_collective(g, topo, s), commstack::InputError);
  };
  bad([](CollectiveSpec& s) { s.ranks = {}; });
  bad([](CollectiveSpec& s) { s.ranks = {0, 4}; });
  bad([](CollectiveSpec& s) { s.ranks = {1, 1}; });
  bad([](CollectiveSpec& s) { s.bytes = -1; });
  bad([](CollectiveSpec& s) { s.channels = 0; });
  bad([](CollectiveSpec& s) { s.root = 4; });
  bad([](CollectiveSpec& s) { s.chunk_bytes = -5; });
  CHECK(g.size() == 0);
  CHECK_THROWS_AS(collective_op_from_string("allreduse"), commstack::InputError);
  CHECK(collective_op_from_string("reducescatter") == CollectiveOp::reducescatter);
  // nccl-tests' binary names and the words spelled apart with '_' or '-', nothing looser.
  CHECK(collective_op_from_string("all_reduce") == CollectiveOp::allreduce);
  CHECK(collective_op_from_string("reduce_scatter_perf") == CollectiveOp::reducescatter);
  CHECK(collective_op_from_string("all-gather") == CollectiveOp::allgather);
  CHECK(collective_op_from_string("sendrecv_perf") == CollectiveOp::sendrecv);
  CHECK(collective_op_from_string("alltoall_perf") == CollectiveOp::alltoall);
  CHECK(collective_op_from_string("all_to_all") == CollectiveOp::alltoall);
  for (const char* name : {"perf", "_perf", "", "all_reduce_perf_perf", "AllReduce", "a_l_l_r_e_d_u_c_e",
                          "_allreduce_", "all__reduce", "allreduceperf", "-allreduce", "gather_perf"})
    CHECK_THROWS_AS(collective_op_from_string(name), commstack::InputError);
}
