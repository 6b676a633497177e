// Bisection bandwidth by Boost's Boykov-Kolmogorov max-flow.
//
// GCC 12 reports -Wmaybe-uninitialized inside Boost 1.74's adj_list_edge_iterator (an optional it
// fills before use) when instantiated for the flow graph; a false positive in a system header that
// -isystem does not silence because the instantiation is ours. Scoped to this file only.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning (and warns about the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include "topologies/analysis.hpp"

namespace commstack::topologies {

double bisection_bandwidth(const Topology& topo) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS,
      boost::property<boost::vertex_index_t, long,
                      boost::property<boost::vertex_color_t, boost::default_color_type,
                                      boost::property<boost::vertex_distance_t, long,
                                                      boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>>,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const int n = topo.gpu_count();
  if (n < 2) return 0;
  const auto vcount = static_cast<std::size_t>(topo.vertex_count());
  FlowGraph fg(vcount + 2);
  const auto source = vcount;
  const auto sink = vcount + 1;
  auto cap = boost::get(boost::edge_capacity, fg);
  auto rev = boost::get(boost::edge_reverse, fg);
  // An undirected link is two arcs, each the other's reverse: each direction has its own capacity.
  auto add_pair = [&](std::size_t a, std::size_t b, double ab, double ba) {
    const auto e1 = boost::add_edge(a, b, fg).first;
    const auto e2 = boost::add_edge(b, a, fg).first;
    cap[e1] = ab;
    cap[e2] = ba;
    rev[e1] = e2;
    rev[e2] = e1;
  };
  double total = 0;
  for (const Link& l : topo.links()) {
    add_pair(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), l.bandwidth_Bps, l.bandwidth_Bps);
    total += l.bandwidth_Bps;
  }
  const double unlimited = 2 * total + 1;  // more than any cut
  for (int r = 0; r < n; ++r) {
    const auto v = static_cast<std::size_t>(topo.gpu_vertex(r));
    if (r < n / 2) add_pair(source, v, unlimited, 0);
    else add_pair(v, sink, unlimited, 0);
  }
  return boost::boykov_kolmogorov_max_flow(fg, source, sink);
}

}  // namespace commstack::topologies
