// PAT on the SimGrid fabric (sim/algorithms/pat.cpp): NCCL's all-gather and reduce-scatter over
// binomial trees at one GPU per node. The schedule's invariants (n - 1 chunks in ceil(log2 n)
// steps, every rank reached once per tree), closed forms on a crossbar, the log-depth latency
// against the ring's n - 1 steps, and the errors for what NCCL does not run as PAT.
#include <set>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/algorithms/detail.hpp"
#include "sim/engine/simulator.hpp"
#include "test_sim_helpers.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using namespace commstack::sim;

namespace {

CollectiveSpec pat(CollectiveOp op, int n, double bytes) {
  return testing::collective_spec(op, Algorithm::pat, testing::iota_ranks(n), bytes, 1, 0,
                                  Fidelity::automatic);
}

}  // namespace

TEST_CASE("sim pat: the schedule moves n - 1 chunks in ceil(log2 n) steps and reaches every rank once") {
  const auto s8 = detail::pat_schedule(8);
  REQUIRE(s8.steps.size() == 3);
  CHECK(s8.steps[0].distance == 4);  // far peer first, one chunk
  CHECK(s8.steps[0].chunks == 1);
  CHECK(s8.steps[1].distance == 2);
  CHECK(s8.steps[1].chunks == 2);
  CHECK(s8.steps[2].distance == 1);  // nearest peer last, half of the data
  CHECK(s8.steps[2].chunks == 4);
  for (int n = 2; n <= 300; ++n) {
    CAPTURE(n);
    const auto s = detail::pat_schedule(n);
    int steps = 0;
    while ((1 << steps) < n) ++steps;
    CHECK(static_cast<int>(s.steps.size()) == steps);
    // One tree, rooted at offset 0: each step every holder at a multiple of 2d passes the chunk d on.
    std::set<int> holders{0};
    int total = 0;
    for (const auto& st : s.steps) {
      int sent = 0;
      for (const int o : std::set<int>(holders))
        if (o + st.distance < n && o % (2 * st.distance) == 0) {
          CHECK(holders.insert(o + st.distance).second);  // nobody gets the chunk twice
          ++sent;
        }
      CHECK(sent == st.chunks);  // the aggregated transfer carries one chunk per tree it serves
      total += st.chunks;
    }
    CHECK(static_cast<int>(holders.size()) == n);
    CHECK(total == n - 1);
  }
}

TEST_CASE("sim pat: on a crossbar, (n - 1)/n S/B + ceil(log2 n) alpha for all-gather and reduce-scatter") {
  constexpr double B = 50e9, h = 1e-6, alpha = 2 * h;
  const auto topo = testing::star(8, B, h);
  Simulator sim(topo);
  constexpr int steps = 3;  // ceil(log2 n) for 5, 6 and 8 ranks
  for (const int n : {8, 6, 5}) {
    for (const double S : {8.0 * 120, 1048576.0 * 120, 1073741824.0 * 15 / 16}) {
      for (const CollectiveOp op : {CollectiveOp::allgather, CollectiveOp::reducescatter}) {
        CAPTURE(n);
        CAPTURE(S);
        CAPTURE(to_string(op));
        CHECK(testing::run_alone(sim, pat(op, n, S)) ==
              approx((n - 1.0) / n * S / B + steps * alpha).epsilon(1e-9));
      }
    }
  }
}

TEST_CASE("sim pat: small all-gathers take log2 n steps where the ring takes n - 1") {
  constexpr double B = 50e9, h = 1e-6, alpha = 2 * h;
  const auto topo = testing::star(16, B, h);
  Simulator sim(topo);
  const double S = 16 * 64.0;  // 64 B a rank: latency-bound
  const double t_pat = testing::run_alone(sim, pat(CollectiveOp::allgather, 16, S));
  CollectiveSpec ring = pat(CollectiveOp::allgather, 16, S);
  ring.algorithm = Algorithm::ring;
  const double t_ring = testing::run_alone(sim, ring);
  CHECK(t_pat == approx(4 * alpha + 15.0 / 16 * S / B).epsilon(1e-9));
  CHECK(t_ring == approx(15 * alpha + 15.0 / 16 * S / B).epsilon(1e-9));
}

TEST_CASE("sim pat: what NCCL does not run as PAT is refused with the reason") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2);
  CHECK_THROWS_WITH_AS(plan_collective(topo, pat(CollectiveOp::allgather, 16, 1e6)),
                       doctest::Contains("needs one GPU per node"), InputError);
  const auto star = testing::star(4, 50e9, 1e-6);
  CHECK_THROWS_WITH_AS(plan_collective(star, pat(CollectiveOp::allreduce, 4, 1e6)),
                       doctest::Contains("runs allgather and reducescatter"), InputError);
  CollectiveSpec chunked = pat(CollectiveOp::allgather, 4, 1e6);
  chunked.chunk_bytes = 65536;
  CHECK_THROWS_WITH_AS(plan_collective(star, chunked), doctest::Contains("one transfer"), InputError);
  const CollectivePlan plan = plan_collective(star, pat(CollectiveOp::reducescatter, 4, 1e6));
  CHECK(plan.flows == 4 * 2);  // a flow per rank and step
  CHECK(algorithm_from_string("PAT", "--algo") == Algorithm::pat);
}
