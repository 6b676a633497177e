#pragma once
// The SimGrid side of a Topology: one host per flow endpoint (GPU, or NVSwitch / fabric switch for
// in-switch reduction: Topology::endpoint_route), one SimGrid link per link direction, and a
// routing zone that answers SimGrid's route queries by asking Topology::route. A custom
// NetZoneImpl is the fastest and smallest option in SimGrid 3.32 (no O(V^2) route tables, no
// per-query graph search) and keeps routing (ECMP, rails, PXN) in one place: the topology's router.
//
// Links carry bandwidth only (zero SimGrid latency): the Simulator adds each flow's route latency
// itself, so that SimGrid's CM02 sharing is plain max-min fair instead of weighted by RTT.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Host.hpp>

#include "topologies/topology.hpp"

namespace commstack::sim {

class TopologyZone final : public simgrid::kernel::routing::NetZoneImpl {
public:
  // Creates the zone, its hosts and links. Must be the first zone of the process (it becomes the
  // SimGrid root zone). `topo` must outlive the SimGrid engine.
  TopologyZone(const std::string& name, const topologies::Topology& topo);
  ~TopologyZone() override = default;

  // Endpoints are numbered as Topology's: GPU ranks, NVSwitches, fabric switches.
  simgrid::s4u::Host* host(int endpoint) const { return hosts_[static_cast<std::size_t>(endpoint)]; }
  // One-way latency of the route src -> dst (sum of link latencies), cached.
  double route_latency(int src, int dst);
  // The SimGrid links of the route src -> dst (src != dst), in order, cached.
  const std::vector<simgrid::kernel::resource::StandardLinkImpl*>& route_links(int src, int dst) {
    return lookup(src, dst).links;
  }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

private:
  struct CachedRoute {
    std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
    double latency_s = 0;
  };
  const CachedRoute& lookup(int src, int dst);

  const topologies::Topology& topo_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<int> rank_of_netpoint_;                                   // NetPoint::id() -> endpoint
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> forward_;   // per topology link, a -> b
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> backward_;  // b -> a
  std::unordered_map<std::uint64_t, CachedRoute> cache_;
};

}  // namespace commstack::sim
