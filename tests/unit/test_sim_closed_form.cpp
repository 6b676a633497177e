// Ring-family collectives on a uniform crossbar against their alpha-beta closed forms.
// Star of 512 GPUs, port bandwidth B, hop latency h: every GPU pair is 2 hops, alpha = 2h.
// One Simulator per process, so every communicator size is a prefix of the same 512 GPUs.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <fmt/format.h>

#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "test_sim_helpers.hpp"

using namespace commstack::sim;

namespace {

constexpr double B = 50e9;
constexpr double h = 1e-6;
constexpr double alpha = 2 * h;
constexpr double GiB = 1024.0 * 1024 * 1024;

double simulate(Simulator& sim, CollectiveOp op, int n, double bytes, Fidelity level, int root = 0) {
  CollectiveSpec spec;
  spec.op = op;
  spec.ranks = testing::iota_ranks(n);
  spec.bytes = bytes;
  spec.root = root;
  spec.fidelity = level;
  FlowGraph g;
  add_collective(g, sim.topology(), spec);
  return sim.run(g).duration_s;
}

// Flows carry whole bytes (docs/simulator.md): a chunk of S / n bytes rounds by up to one byte, so
// the simulated time may differ from the closed form by one byte's time on each flow of the critical
// path (20 ps at 50 GB/s), more than 1e-6 of the time when S is a few bytes.
double byte_rounding(int flows_in_series) {
  return flows_in_series * 1.0 / B;
}

}  // namespace

TEST_CASE("sim: ring allreduce equals 2(n-1)/n S/B + 2(n-1) alpha for n from 2 to 512 and S from 8 B to 16 GiB") {
  auto topo = testing::star(512, B, h);
  Simulator sim(topo);
  for (int n : {2, 3, 8, 64, 512}) {
    for (double S : {8.0, 4096.0, 1048576.0, GiB, 16 * GiB}) {
      const double expect = 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
      // Chunk fidelity is the reference up to n = 64; step (== chunk without pipelining: the full
      // dataflow, 2n(n-1) flows) at n = 512 only for the extreme sizes, to keep the test short
      // under sanitizers; edge everywhere.
      std::vector<Fidelity> levels{Fidelity::edge};
      if (n <= 64) levels.insert(levels.end(), {Fidelity::chunk, Fidelity::step});
      if (n == 512 && (S == 8.0 || S == 16 * GiB)) levels.push_back(Fidelity::step);
      for (Fidelity f : levels) {
        CAPTURE(n);
        CAPTURE(S);
        CAPTURE(to_string(f));
        CHECK(simulate(sim, CollectiveOp::allreduce, n, S, f) ==
              approx(expect, 1e-6, byte_rounding(2 * (n - 1))));
      }
    }
  }
}

TEST_CASE("sim: allgather and reducescatter equal (n-1)/n S/B + (n-1) alpha") {
  auto topo = testing::star(512, B, h);
  Simulator sim(topo);
  for (int n : {2, 3, 8, 64, 512}) {
    for (double S : {8.0, 1048576.0, 16 * GiB}) {
      const double expect = (n - 1.0) / n * S / B + (n - 1.0) * alpha;
      for (auto op : {CollectiveOp::allgather, CollectiveOp::reducescatter}) {
        CAPTURE(n);
        CAPTURE(S);
        // The full dataflow at n = 512 once per op (n(n-1) flows), edge everywhere.
        if (n < 512 || (op == CollectiveOp::allgather) == (S == 8.0)) {
          CHECK(simulate(sim, op, n, S, Fidelity::step) == approx(expect, 1e-6, byte_rounding(n - 1)));
        }
        CHECK(simulate(sim, op, n, S, Fidelity::edge) == approx(expect, 1e-6, byte_rounding(n - 1)));
      }
    }
  }
}

TEST_CASE("sim: broadcast and reduce chains equal (n-1) alpha + (n-2+K) S/(K B)") {
  auto topo = testing::star(64, B, h);
  Simulator sim(topo);
  for (int n : {2, 3, 8, 64}) {
    for (double S : {8.0, 1048576.0, GiB}) {
      for (int K : {1, 4, 32}) {
        for (auto op : {CollectiveOp::broadcast, CollectiveOp::reduce}) {
          for (Fidelity f : {Fidelity::chunk, Fidelity::edge}) {
            CollectiveSpec spec;
            spec.op = op;
            spec.ranks = testing::iota_ranks(n);
            spec.bytes = S;
            spec.root = n / 2;  // any root: the crossbar is symmetric
            spec.chunk_bytes = S / K;
            spec.fidelity = f;
            FlowGraph g;
            const CollectivePlan plan = add_collective(g, topo, spec);
            const int k = plan.chunks;
            // Pipelined chain: chunk latencies overlap, the link is busy K chunk times after the fill.
            const double expect = (n - 1.0) * alpha + (n - 2.0 + k) * S / k / B;
            CAPTURE(n);
            CAPTURE(S);
            CAPTURE(K);
            CAPTURE(to_string(f));
            CHECK(k == K);
            CHECK(sim.run(g).duration_s == approx(expect, 1e-6, byte_rounding(n - 2 + k)));
          }
        }
      }
    }
  }
}

TEST_CASE("sim: alltoall equals (n-1)/n S/B + alpha and sendrecv equals S/B + alpha") {
  auto topo = testing::star(64, B, h);
  Simulator sim(topo);
  for (int n : {2, 3, 8, 64}) {
    for (double S : {64.0 * n, 1048576.0 * n, GiB}) {
      CAPTURE(n);
      CAPTURE(S);
      CHECK(simulate(sim, CollectiveOp::alltoall, n, S, Fidelity::automatic) ==
            approx((n - 1.0) / n * S / B + alpha).epsilon(1e-6));
      CHECK(simulate(sim, CollectiveOp::sendrecv, n, S, Fidelity::chunk) ==
            approx(S / B + alpha).epsilon(1e-6));
    }
  }
  // Alltoall with at most P peers at a time: n-1 peers in ceil((n-1)/P) waves of P flows per port.
  CollectiveSpec spec;
  spec.op = CollectiveOp::alltoall;
  spec.ranks = testing::iota_ranks(9);
  spec.bytes = 9.0 * 1048576;
  spec.max_concurrent_peers = 2;
  FlowGraph g;
  add_collective(g, topo, spec);
  CHECK(sim.run(g).duration_s == approx(4 * (alpha + 2 * 1048576.0 / B)).epsilon(1e-6));
}

TEST_CASE("sim: channels split the bytes and per-step overhead adds per step") {
  auto topo = testing::star(16, B, h);
  Simulator sim(topo);
  CollectiveSpec spec;
  spec.op = CollectiveOp::allreduce;
  spec.ranks = testing::iota_ranks(16);
  spec.bytes = GiB;
  spec.channels = 4;  // on a crossbar 4 rings share every port: same bandwidth term
  spec.step_overhead_s = 3e-6;
  spec.fidelity = Fidelity::chunk;
  FlowGraph g;
  add_collective(g, topo, spec);
  CHECK(sim.run(g).duration_s == approx(30.0 / 16 * GiB / B + 30 * (alpha + 3e-6)).epsilon(1e-6));
  // Pipelining on a uniform ring (K chunk loops): every step waits for upstream data, so each loop
  // pays 2n-3 latencies; a loop's first step only waits for the edge, the last arrival adds one:
  // 2(n-1)/n S/B + (K(2n-3) + 1) alpha.
  spec.channels = 1;
  spec.step_overhead_s = 0;
  spec.chunk_bytes = GiB / 16 / 8;
  FlowGraph g2;
  CHECK(add_collective(g2, topo, spec).chunks == 8);
  CHECK(sim.run(g2).duration_s == approx(30.0 / 16 * GiB / B + (8 * 29 + 1) * alpha).epsilon(1e-6));
  // The step and edge levels fold the 8 loops of a step into one flow and scale its latency to the
  // chunk level's chain, so they end there too (with each step's 8 latencies in series: 8 x 30 alpha).
  for (Fidelity level : {Fidelity::step, Fidelity::edge}) {
    spec.fidelity = level;
    FlowGraph g3;
    add_collective(g3, topo, spec);
    CAPTURE(to_string(level));
    CHECK(sim.run(g3).duration_s == approx(30.0 / 16 * GiB / B + (8 * 29 + 1) * alpha).epsilon(1e-6));
  }
}
