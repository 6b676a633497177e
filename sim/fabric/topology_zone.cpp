#include "sim/fabric/topology_zone.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Link.hpp>

namespace commstack::sim {

namespace sgr = simgrid::kernel::routing;

TopologyZone::TopologyZone(const std::string& name, const topologies::Topology& topo)
    : NetZoneImpl(name), topo_(topo) {
  // Hosts: one per flow endpoint (each GPU, then each NVSwitch and fabric switch for in-switch
  // reduction), named after the topology vertex. Compute speed is irrelevant (no Exec).
  hosts_.reserve(static_cast<std::size_t>(topo.endpoint_count()));
  for (int r = 0; r < topo.endpoint_count(); ++r) {
    simgrid::s4u::Host* h = create_host(topo.endpoint_vertex(r).name, {1e9});
    h->seal();
    const auto id = static_cast<std::size_t>(h->get_netpoint()->id());
    if (rank_of_netpoint_.size() <= id) rank_of_netpoint_.resize(id + 1, -1);
    rank_of_netpoint_[id] = r;
    hosts_.push_back(h);
  }
  // Two independent SimGrid links per full-duplex topology link: each direction has its own
  // bandwidth. No latency on links (see the header).
  forward_.reserve(static_cast<std::size_t>(topo.link_count()));
  backward_.reserve(static_cast<std::size_t>(topo.link_count()));
  for (int l = 0; l < topo.link_count(); ++l) {
    const auto& lk = topo.link(l);
    auto* up = create_link(fmt::format("l{}+", l), {lk.bandwidth_Bps});
    up->set_latency(0);
    up->seal();
    auto* down = create_link(fmt::format("l{}-", l), {lk.bandwidth_Bps});
    down->set_latency(0);
    down->seal();
    forward_.push_back(up->get_impl());
    backward_.push_back(down->get_impl());
  }
}

const TopologyZone::CachedRoute& TopologyZone::lookup(int src, int dst) {
  const auto key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | static_cast<std::uint32_t>(dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  CachedRoute cr;
  const topologies::Path path = topo_.endpoint_route(src, dst);
  cr.links.reserve(path.size());
  for (const auto& hop : path) {
    const auto l = static_cast<std::size_t>(hop.link);
    cr.links.push_back(hop.forward ? forward_.at(l) : backward_.at(l));
  }
  cr.latency_s = topo_.path_latency(path);
  return cache_.emplace(key, std::move(cr)).first->second;
}

double TopologyZone::route_latency(int src, int dst) {
  if (src == dst) return 0;
  return lookup(src, dst).latency_s;
}

void TopologyZone::get_local_route(const sgr::NetPoint* src, const sgr::NetPoint* dst, sgr::Route* into,
                                   double* latency) {
  const auto s = static_cast<std::size_t>(src->id());
  const auto d = static_cast<std::size_t>(dst->id());
  if (s >= rank_of_netpoint_.size() || d >= rank_of_netpoint_.size() || rank_of_netpoint_[s] < 0 ||
      rank_of_netpoint_[d] < 0) {
    throw std::logic_error("TopologyZone: route asked for a netpoint that is not an endpoint host");
  }
  const CachedRoute& cr = lookup(rank_of_netpoint_[s], rank_of_netpoint_[d]);
  into->link_list_.insert(into->link_list_.end(), cr.links.begin(), cr.links.end());
  (void)latency;  // links have zero SimGrid latency; the Simulator adds route latency itself
}

}  // namespace commstack::sim
