// Stack model, contention layer: the fabric's share of a collective's network flows against the NICs
// alone (sim/stack/fabric_contention), in closed forms of oversubscribed fat trees and dragonfly
// groups, and its place in the breakdown.
#include <string>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "sim/stack/fabric_contention.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::CollectiveOp;
using sim::stack::contention_factor;
using sim::stack::DomainLayout;
using sim::stack::NetPattern;

namespace {

constexpr NetPattern kPatterns[] = {NetPattern::ring, NetPattern::tree, NetPattern::pat, NetPattern::alltoall,
                                    NetPattern::boundary};

// DGX H100 nodes (8 x 400 Gb/s NICs, one per GPU) on a fat tree of `kind` with `per_unit` nodes per
// leaf (ToR) and the given leaf oversubscription.
topologies::ClusterSpec h100_fabric(topologies::FabricKind kind, int per_unit, double oversubscription) {
  auto spec = topologies::load_cluster("dgx-h100");
  spec.fabric.kind = kind;
  spec.fabric.tiers = 2;
  spec.fabric.nodes_per_unit = per_unit;
  spec.fabric.oversubscription = {oversubscription, 1.0};
  return spec;
}

}  // namespace

TEST_CASE("contention: a non-blocking fabric carries every pattern at the NICs' rate (factor exactly 1)") {
  for (const int nodes : {2, 16, 64}) {
    const auto spec = topologies::load_cluster("dgx-h100");
    const auto topo = topologies::build_topology(spec, nodes, 8);
    for (const auto pattern : kPatterns) {
      CAPTURE(nodes);
      CAPTURE(static_cast<int>(pattern));
      CHECK(contention_factor(topo, DomainLayout{nodes, 8}, pattern) == 1.0);
    }
  }
  // One NVL72 rack is one NVLink domain: no network flows at all.
  const auto nvl72 = topologies::load_cluster("gb200-nvl72");
  const auto rack = topologies::build_topology(nvl72, 18, 4);
  CHECK(contention_factor(rack, DomainLayout{1, 72}, NetPattern::alltoall) == 1.0);
}

TEST_CASE("contention: 4:1 ToR uplinks slow an alltoall by 4 x (N - U) / (N - 1), not a ring") {
  // 16 nodes, 4 per ToR. Alltoall (GPU i to GPU i of every other node, PXN): a NIC sends 15 flows;
  // a ToR sends 4 nodes x 8 GPUs x 12 remote nodes = 384 flows over 4 x 8 x 400 Gb/s / 4 of uplinks.
  // (384 / 32) / 15 x 4 = 3.2. A ring leaves each ToR once per GPU position: 8 flows over a quarter
  // of 32 NICs' rate, exactly the NICs' own load.
  const auto spec = h100_fabric(topologies::FabricKind::fat_tree, 4, 4.0);
  const auto topo = topologies::build_topology(spec, 16, 8);
  const DomainLayout layout{16, 8};
  CHECK(contention_factor(topo, layout, NetPattern::alltoall) == approx(4.0 * 12 / 15));
  CHECK(contention_factor(topo, layout, NetPattern::ring) == 1.0);
  CHECK(contention_factor(topo, layout, NetPattern::boundary) == 1.0);
  // NCCL's two trees over 16 nodes: the ToRs of nodes 4-7 and 8-11 each carry 6 tree edges out (and
  // in), one flow per GPU position each, over a quarter of their 32 NICs' rate; the busiest node
  // has 4 edges on its NIC: 6 / 4.
  CHECK(contention_factor(topo, layout, NetPattern::tree) == approx(1.5));
  // The same on a rail-optimized fabric (one leaf per rail per 4 nodes): per rail the same counts.
  const auto rail =
      topologies::build_topology(h100_fabric(topologies::FabricKind::rail_fat_tree, 4, 4.0), 16, 8);
  CHECK(contention_factor(rail, layout, NetPattern::alltoall) == approx(4.0 * 12 / 15));
  CHECK(contention_factor(rail, layout, NetPattern::ring) == 1.0);
}

TEST_CASE("contention: a node alone under its leaf pays the full oversubscription on every pattern") {
  // One node per leaf: every network flow of the node crosses its leaf's uplinks, which carry a
  // quarter of the NICs' rate.
  const auto topo =
      topologies::build_topology(h100_fabric(topologies::FabricKind::rail_fat_tree, 1, 4.0), 8, 8);
  for (const auto pattern : kPatterns) {
    CAPTURE(static_cast<int>(pattern));
    CHECK(contention_factor(topo, DomainLayout{8, 8}, pattern) == approx(4.0));
  }
}

TEST_CASE("contention: a dragonfly's groups exchange an alltoall over their global links") {
  // 1024 GH200 nodes of 4 GPUs: 8 groups of 32 routers x 4 nodes, 8 global links per router (the
  // preset). A group sends 128 nodes x 4 GPUs x 896 remote nodes of flows over 256 x 200 Gb/s of
  // global links (the wiring uses 7 x floor(256 / 7) = 252 of them); a NIC sends 1023 flows at
  // 200 Gb/s. (128 x 4 x 896 / 252) / 1023 = 1.779 (the pattern is sampled beyond 2e6 flows).
  const auto spec = topologies::load_cluster("gh200-slingshot");
  const auto topo = topologies::build_topology(spec, 1024, 4);
  const double f = contention_factor(topo, DomainLayout{1024, 4}, NetPattern::alltoall);
  CHECK(f == approx(128.0 * 4 * 896 / 252 / 1023).epsilon(0.01));
  // Rings stay inside a group but at its boundary: a router spreads them over its local links.
  CHECK(contention_factor(topo, DomainLayout{1024, 4}, NetPattern::ring) == 1.0);
}

TEST_CASE("contention: the layer adds (factor - 1) x the network stage, and nothing else moves") {
  // 1 GiB alltoall on the 4:1 ToR fabric against the same nodes non-blocking: the network is the
  // binding stage, so contention = 2.2 x (fabric bandwidth + transport); every other layer is equal.
  const auto tapered = h100_fabric(topologies::FabricKind::fat_tree, 4, 4.0);
  const auto flat = h100_fabric(topologies::FabricKind::fat_tree, 4, 1.0);
  const auto profile = sim::stack::load_profile("h100");
  const auto a = sim::stack::Predictor(tapered, 16, 8).predict(CollectiveOp::alltoall, 1ULL << 30, profile);
  const auto b = sim::stack::Predictor(flat, 16, 8).predict(CollectiveOp::alltoall, 1ULL << 30, profile);
  CHECK(b.breakdown.contention_s == 0.0);
  CHECK(b.contention_factor == 1.0);
  CHECK(a.contention_factor == approx(3.2));
  CHECK(a.breakdown.fabric_bandwidth_s == b.breakdown.fabric_bandwidth_s);
  CHECK(a.breakdown.transport_s == b.breakdown.transport_s);
  CHECK(a.breakdown.protocol_s == b.breakdown.protocol_s);
  CHECK(a.breakdown.algorithm_latency_s == b.breakdown.algorithm_latency_s);
  CHECK(a.breakdown.contention_s ==
        approx(2.2 * (a.breakdown.fabric_bandwidth_s + a.breakdown.transport_s)).epsilon(1e-9));
  CHECK(a.time_s == a.breakdown.total_s());
  CHECK(a.time_s - b.time_s == approx(a.breakdown.contention_s).epsilon(1e-9));
  // A ring all-gather on the same fabric is not slowed (it leaves each ToR once per GPU position).
  const auto ring =
      sim::stack::Predictor(tapered, 16, 8).predict(CollectiveOp::allgather, 1ULL << 30, profile);
  CHECK(ring.breakdown.contention_s == 0.0);
}
