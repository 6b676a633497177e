#include "topologies/topology.hpp"

#include <algorithm>
#include <limits>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <boost/property_map/property_map.hpp>
#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::topologies {

std::string to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::nic: return "nic";
    case VertexKind::pcie_switch: return "pcie_switch";
    case VertexKind::fabric_switch: return "switch";
    case VertexKind::router: return "router";
  }
  return "?";
}

std::string to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::pcie: return "pcie";
    case LinkKind::network: return "network";
  }
  return "?";
}

Topology::~Topology() = default;

int Topology::add_vertex(Vertex v) {
  const int id = static_cast<int>(vertices_.size());
  const auto gv = boost::add_vertex(graph_);
  (void)gv;
  gpu_rank_.push_back(v.kind == VertexKind::gpu ? gpu_count() : -1);
  if (v.kind == VertexKind::gpu) {
    gpus_.push_back(id);
    nvswitch_link_.push_back(-1);
    nvswitch_index_.push_back(-1);
  }
  if (v.kind == VertexKind::nvswitch) nvswitches_.push_back(id);
  fabric_index_.push_back(v.kind == VertexKind::fabric_switch ? fabric_switch_count() : -1);
  if (v.kind == VertexKind::fabric_switch) fabric_switches_.push_back(id);
  vertices_.push_back(std::move(v));
  incident_.emplace_back();
  return id;
}

int Topology::add_link(int a, int b, double bandwidth_Bps, double latency_s, LinkKind kind) {
  if (a < 0 || b < 0 || a >= vertex_count() || b >= vertex_count() || a == b) {
    throw std::logic_error(fmt::format("add_link: bad endpoints {} - {}", a, b));
  }
  if (!(bandwidth_Bps > 0) || latency_s < 0) {
    throw InputError(fmt::format("link {} - {}: bandwidth must be > 0 and latency >= 0 (got {} B/s, {} s)",
                                 vertices_[static_cast<std::size_t>(a)].name,
                                 vertices_[static_cast<std::size_t>(b)].name, bandwidth_Bps, latency_s));
  }
  const int id = static_cast<int>(links_.size());
  links_.push_back(Link{a, b, bandwidth_Bps, latency_s, kind});
  boost::add_edge(static_cast<std::size_t>(a), static_cast<std::size_t>(b), id, graph_);
  incident_[static_cast<std::size_t>(a)].push_back(id);
  incident_[static_cast<std::size_t>(b)].push_back(id);
  // A GPU's first link to an NVSwitch is the one its NVLS flows use.
  for (const auto& [gpu, other] : {std::pair{a, b}, std::pair{b, a}}) {
    const int rank = gpu_rank_[static_cast<std::size_t>(gpu)];
    if (rank < 0 || vertices_[static_cast<std::size_t>(other)].kind != VertexKind::nvswitch ||
        nvswitch_link_[static_cast<std::size_t>(rank)] >= 0)
      continue;
    nvswitch_link_[static_cast<std::size_t>(rank)] = id;
    const auto at = std::find(nvswitches_.begin(), nvswitches_.end(), other);
    nvswitch_index_[static_cast<std::size_t>(rank)] = static_cast<int>(at - nvswitches_.begin());
  }
  return id;
}

const Vertex& Topology::endpoint_vertex(int endpoint) const {
  if (endpoint >= 0 && endpoint < gpu_count()) return vertex(gpu_vertex(endpoint));
  const int nv = endpoint - gpu_count();
  if (nv < nvswitch_count()) return vertex(nvswitches_.at(static_cast<std::size_t>(nv)));
  return vertex(fabric_switches_.at(static_cast<std::size_t>(nv - nvswitch_count())));
}

int Topology::fabric_switch_endpoint(int vertex) const {
  const int index = fabric_index_.at(static_cast<std::size_t>(vertex));
  return index < 0 ? -1 : gpu_count() + nvswitch_count() + index;
}

namespace {

// The lowest-id link between vertices a and b, -1 when they are not adjacent.
int link_between(const Topology& topo, int a, int b) {
  for (const int l : topo.incident_links(a)) {
    const Link& lk = topo.link(l);
    if (lk.a == b || lk.b == b) return l;
  }
  return -1;
}

Path reversed(Path path) {
  std::reverse(path.begin(), path.end());
  for (Hop& h : path) h.forward = !h.forward;
  return path;
}

}  // namespace

Path Topology::switch_uplink(int gpu_rank, int sw) const {
  const int gpu = gpu_vertex(gpu_rank);
  if (const int direct = link_between(*this, gpu, sw); direct >= 0)
    return {Hop{direct, is_forward(direct, gpu)}};
  for (const int l : incident_links(gpu)) {
    const Link& lk = link(l);
    const int nic = lk.a == gpu ? lk.b : lk.a;
    if (vertex(nic).kind != VertexKind::nic) continue;
    if (const int cable = link_between(*this, nic, sw); cable >= 0)
      return {Hop{l, is_forward(l, gpu)}, Hop{cable, is_forward(cable, nic)}};
  }
  return {};
}

int Topology::nvswitch_endpoint(int gpu_rank) const {
  const int index = nvswitch_index_.at(static_cast<std::size_t>(gpu_rank));
  return index < 0 ? -1 : gpu_count() + index;
}

Path Topology::endpoint_route(int src, int dst) const {
  const int gpus = gpu_count();
  if (src < gpus && dst < gpus) return route(src, dst);
  const int first_fabric = gpus + nvswitch_count();
  if (src >= first_fabric || dst >= first_fabric) {
    auto fabric_vertex = [&](int e) {
      return fabric_switches_.at(static_cast<std::size_t>(e - first_fabric));
    };
    Path path;
    if (src >= first_fabric && dst >= first_fabric) {
      const int from = fabric_vertex(src);
      if (const int l = link_between(*this, from, fabric_vertex(dst)); l >= 0)
        path = {Hop{l, is_forward(l, from)}};
    } else if (src < gpus) {
      path = switch_uplink(src, fabric_vertex(dst));
    } else if (dst < gpus) {
      path = reversed(switch_uplink(dst, fabric_vertex(src)));
    }
    if (path.empty())
      throw std::logic_error(
          fmt::format("endpoint_route: no direct path between endpoints {} and {}", src, dst));
    return path;
  }
  const bool up = src < gpus;  // GPU -> its NVSwitch, else NVSwitch -> GPU
  const int gpu = up ? src : dst;
  if (gpu < 0 || nvswitch_endpoint(gpu) != (up ? dst : src)) {
    throw std::logic_error(
        fmt::format("endpoint_route: no direct link between endpoints {} and {}", src, dst));
  }
  const int l = nvswitch_link_[static_cast<std::size_t>(gpu)];
  const int from = up ? gpu_vertex(gpu) : nvswitches_[static_cast<std::size_t>(src - gpus)];
  return {Hop{l, is_forward(l, from)}};
}

Path Topology::route(int src_gpu, int dst_gpu) const {
  if (src_gpu == dst_gpu) return {};
  if (router_) return router_->route(*this, src_gpu, dst_gpu);
  static const ShortestPathRouter fallback;
  return fallback.route(*this, src_gpu, dst_gpu);
}

double Topology::path_latency(const Path& path) const {
  double lat = 0;
  for (const Hop& h : path) lat += link(h.link).latency_s;
  return lat;
}

double Topology::path_bandwidth(const Path& path) const {
  double bw = std::numeric_limits<double>::infinity();
  for (const Hop& h : path) bw = std::min(bw, link(h.link).bandwidth_Bps);
  return bw;
}

Path ShortestPathRouter::route(const Topology& topo, int src_gpu, int dst_gpu) const {
  const int src = topo.gpu_vertex(src_gpu);
  const int dst = topo.gpu_vertex(dst_gpu);
  if (src == dst) return {};  // the predecessor map has no entry for the source itself
  const auto& g = topo.graph();
  const auto n = static_cast<std::size_t>(topo.vertex_count());
  // Boost BFS records the tree edge that discovered each vertex. Out-edges are visited in
  // insertion order (vecS), so the result is deterministic: among shortest paths, each vertex is
  // reached from the earliest-dequeued neighbour, over its lowest-id link to that neighbour.
  using Edge = Topology::Graph::edge_descriptor;
  std::vector<Edge> via_edge(n);
  auto recorder = boost::make_bfs_visitor(boost::record_edge_predecessors(
      boost::make_iterator_property_map(via_edge.begin(), boost::identity_property_map()), boost::on_tree_edge()));
  boost::breadth_first_search(g, static_cast<std::size_t>(src), boost::visitor(recorder));
  // record_edge_predecessors leaves unreached vertices with a default edge; mark reached ones.
  std::vector<int> via_link(n, -1);
  for (std::size_t v = 0; v < n; ++v) {
    if (v != static_cast<std::size_t>(src) && via_edge[v] != Edge()) via_link[v] = boost::get(boost::edge_index, g, via_edge[v]);
  }
  if (via_link[static_cast<std::size_t>(dst)] < 0) {
    throw InputError(fmt::format("topology '{}': no path from GPU {} to GPU {} (the topology is disconnected)",
                                 topo.name, src_gpu, dst_gpu));
  }
  Path path;
  for (int v = dst; v != src;) {
    const int l = via_link[static_cast<std::size_t>(v)];
    const Link& lk = topo.link(l);
    const int from = lk.a == v ? lk.b : lk.a;
    path.push_back(Hop{l, topo.is_forward(l, from)});
    v = from;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace commstack::topologies
