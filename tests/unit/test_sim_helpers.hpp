#pragma once
// Hand-built topologies for the sim tests (no dependency on the cluster builders).
#include <fmt/format.h>

#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim::testing {

// n GPUs on one crossbar switch: GPU i -- switch with `port_Bps` per direction and `hop_latency_s`
// one way, so every GPU pair's route is 2 hops with latency 2 * hop_latency_s and bandwidth port_Bps.
inline topologies::Topology star(int n, double port_Bps, double hop_latency_s) {
  using namespace commstack::topologies;
  Topology t;
  t.name = fmt::format("star{}", n);
  t.nodes = n;
  t.gpus_per_node = 1;
  std::vector<int> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back(t.add_vertex(Vertex{VertexKind::gpu, fmt::format("g{}", i), i, 0, 0}));
  const int sw = t.add_vertex(Vertex{VertexKind::fabric_switch, "sw", -1, 0, 1});
  for (int g : gpus) t.add_link(g, sw, port_Bps, hop_latency_s, LinkKind::network);
  return t;
}

// `leaves` leaf switches with `per_leaf` GPUs each (GPU port `port_Bps`, latency `hop_latency_s`),
// every leaf joined to one spine by an uplink of `uplink_Bps` (latency `hop_latency_s`).
// GPU rank = leaf * per_leaf + i; each leaf is a "node" for channel_ring purposes.
inline topologies::Topology two_level(int leaves, int per_leaf, double port_Bps, double uplink_Bps,
                                      double hop_latency_s) {
  using namespace commstack::topologies;
  Topology t;
  t.name = fmt::format("leafspine{}x{}", leaves, per_leaf);
  t.nodes = leaves;
  t.gpus_per_node = per_leaf;
  std::vector<int> gpus;
  for (int l = 0; l < leaves; ++l)
    for (int i = 0; i < per_leaf; ++i)
      gpus.push_back(t.add_vertex(Vertex{VertexKind::gpu, fmt::format("l{}g{}", l, i), l, i, 0}));
  const int spine = t.add_vertex(Vertex{VertexKind::fabric_switch, "spine", -1, 0, 2});
  for (int l = 0; l < leaves; ++l) {
    const int leaf = t.add_vertex(Vertex{VertexKind::fabric_switch, fmt::format("leaf{}", l), -1, l, 1});
    for (int i = 0; i < per_leaf; ++i) t.add_link(gpus[static_cast<std::size_t>(l * per_leaf + i)], leaf, port_Bps, hop_latency_s, LinkKind::network);
    t.add_link(leaf, spine, uplink_Bps, hop_latency_s, LinkKind::network);
  }
  return t;
}

// A collective over `ranks` with the given algorithm, size, channels, chunk and fidelity.
inline CollectiveSpec collective_spec(CollectiveOp op, Algorithm algorithm, std::vector<int> ranks, double bytes,
                                      int channels, double chunk, Fidelity f) {
  CollectiveSpec spec;
  spec.op = op;
  spec.algorithm = algorithm;
  spec.ranks = std::move(ranks);
  spec.bytes = bytes;
  spec.channels = channels;
  spec.chunk_bytes = chunk;
  spec.fidelity = f;
  return spec;
}

// The simulated duration of one collective alone.
inline double run_alone(Simulator& sim, const CollectiveSpec& spec) {
  FlowGraph g;
  add_collective(g, sim.topology(), spec);
  return sim.run(g).duration_s;
}

inline std::vector<int> iota_ranks(int n) {
  std::vector<int> r;
  for (int i = 0; i < n; ++i) r.push_back(i);
  return r;
}

}  // namespace commstack::sim::testing
