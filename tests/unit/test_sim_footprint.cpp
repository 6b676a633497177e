// Sibling collectives that share no link run independently, and identical ones take the same
// time, so CommCosts simulates one of them (sim/engine/graph_footprint.hpp). This checks the two
// facts it relies on against the joint SimGrid run.
#include <vector>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/algorithms/collective.hpp"
#include "sim/engine/graph_footprint.hpp"
#include "sim/engine/simulator.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;

namespace {

sim::CollectiveSpec ring(std::vector<int> ranks, int group) {
  sim::CollectiveSpec coll;
  coll.op = sim::CollectiveOp::allreduce;
  coll.ranks = std::move(ranks);
  coll.bytes = 64.0 * 1024 * 1024;
  coll.channels = 4;
  coll.chunk_bytes = 2.0 * 1024 * 1024;
  coll.fidelity = sim::Fidelity::step;
  coll.group = group;
  return coll;
}

}  // namespace

TEST_CASE("sim: disjoint identical sibling collectives have equal signatures and time like one alone") {
  const auto spec = topologies::load_cluster("dgx-h100");
  const auto topo = topologies::build_topology(spec, 4);
  sim::Simulator simulator(topo);

  // TP-like groups: the 8 GPUs of node 0 and of node 3. NVLink only, nothing shared.
  sim::FlowGraph a, b, joint;
  const auto ga = ring({0, 1, 2, 3, 4, 5, 6, 7}, 0);
  const auto gb = ring({24, 25, 26, 27, 28, 29, 30, 31}, 1);
  sim::add_collective(a, topo, ga);
  sim::add_collective(b, topo, gb);
  sim::add_collective(joint, topo, ga);
  sim::add_collective(joint, topo, gb);
  const auto fa = sim::footprint(topo, a);
  const auto fb = sim::footprint(topo, b);
  CHECK(fa.signature == fb.signature);
  CHECK(fa.link_directions != fb.link_directions);
  CHECK(sim::disjoint({fa, fb}, topo.link_count()));
  const double alone = simulator.run(a).duration_s;
  CHECK(alone > 0);
  CHECK(simulator.run(joint).duration_s == approx(alone).epsilon(1e-12));

  // DP-like groups: one GPU per node, GPU 0s and GPU 1s of the four nodes. On a rail-optimized
  // fabric they stay on their own rail (its leaf switch), so they are independent too; two rings
  // through the same node's NIC are not.
  sim::FlowGraph c, d, e0;
  sim::add_collective(c, topo, ring({0, 8, 16, 24}, 0));
  sim::add_collective(d, topo, ring({1, 9, 17, 25}, 1));
  sim::add_collective(e0, topo, ring({0, 9}, 1));
  const auto fc = sim::footprint(topo, c);
  CHECK(sim::disjoint({fc, sim::footprint(topo, d)}, topo.link_count()));
  CHECK_FALSE(sim::disjoint({fc, sim::footprint(topo, e0)}, topo.link_count()));

  // A different size or a different shape changes the signature.
  sim::FlowGraph e, f;
  auto bigger = ga;
  bigger.bytes *= 2;
  sim::add_collective(e, topo, bigger);
  sim::add_collective(f, topo, ring({0, 1, 2, 3}, 0));
  CHECK(sim::footprint(topo, e).signature != fa.signature);
  CHECK(sim::footprint(topo, f).signature != fa.signature);
}
