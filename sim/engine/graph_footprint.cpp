#include "sim/engine/graph_footprint.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <utility>

namespace commstack::sim {

namespace {

std::int64_t bits(double v) {
  return std::bit_cast<std::int64_t>(v);
}

}  // namespace

GraphFootprint footprint(const topologies::Topology& topo, const FlowGraph& graph) {
  GraphFootprint fp;
  std::map<std::pair<int, int>, topologies::Path> routes;  // a collective repeats few endpoint pairs
  std::map<int, std::int64_t> canonical;                   // link direction -> order of first use
  std::vector<std::int64_t>& sig = fp.signature;
  sig.push_back(graph.size());
  for (const Flow& f : graph.flows()) {
    sig.push_back(bits(f.bytes));
    sig.push_back(bits(f.extra_latency_s));
    sig.push_back(bits(f.delay_s));
    sig.push_back(f.add_route_latency ? 1 : 0);
    if (f.src == f.dst) {  // a local no-op: no route
      sig.push_back(-1);
      continue;
    }
    auto it = routes.find({f.src, f.dst});
    if (it == routes.end())
      it = routes.emplace(std::make_pair(f.src, f.dst), topo.endpoint_route(f.src, f.dst)).first;
    const topologies::Path& path = it->second;
    sig.push_back(static_cast<std::int64_t>(path.size()));
    for (const topologies::Hop& hop : path) {
      const int direction = 2 * hop.link + (hop.forward ? 0 : 1);
      const auto [c, added] = canonical.emplace(direction, static_cast<std::int64_t>(canonical.size()));
      if (added) fp.link_directions.push_back(direction);
      const topologies::Link& link = topo.link(hop.link);
      sig.push_back(c->second);
      sig.push_back(bits(link.bandwidth_Bps));
      sig.push_back(bits(link.latency_s));
    }
  }
  const FlowGraph::Adjacency adj = graph.adjacency();
  sig.insert(sig.end(), adj.offsets.begin(), adj.offsets.end());
  sig.insert(sig.end(), adj.successors.begin(), adj.successors.end());
  std::sort(fp.link_directions.begin(), fp.link_directions.end());
  return fp;
}

bool disjoint(const std::vector<GraphFootprint>& footprints, int link_count) {
  std::vector<bool> used(2 * static_cast<std::size_t>(link_count), false);
  for (const GraphFootprint& fp : footprints) {
    for (int d : fp.link_directions) {
      if (used[static_cast<std::size_t>(d)]) return false;
      used[static_cast<std::size_t>(d)] = true;
    }
  }
  return true;
}

}  // namespace commstack::sim
