#include "sim/algorithms/pxn.hpp"

namespace commstack::sim::detail {
namespace {

using topologies::LinkKind;
using topologies::Topology;
using topologies::VertexKind;

// The NIC vertex the route from src to dst leaves by, -1 when it crosses no network link.
int nic_on_route(const Topology& topo, int src, int dst) {
  for (const auto& hop : topo.route(src, dst)) {
    const auto& link = topo.link(hop.link);
    if (link.kind != LinkKind::network) continue;
    const int from = hop.forward ? link.a : link.b;
    return topo.vertex(from).kind == VertexKind::nic ? from : -1;
  }
  return -1;
}

}  // namespace

PxnRelays::PxnRelays(const Topology& topo, const std::vector<int>& ranks)
    : member_(static_cast<std::size_t>(topo.gpu_count()), 0), gpus_(topo.gpu_count()) {
  for (int r : ranks)
    if (r >= 0 && r < gpus_) member_[static_cast<std::size_t>(r)] = 1;
  const int gpn = topo.gpus_per_node;
  if (topo.nodes < 2 || gpn < 1) return;
  // An NVLink domain ends at the first node that GPU 0 reaches through a NIC.
  for (int node = 1; node < topo.nodes; ++node) {
    if (nic_on_route(topo, 0, node * gpn) >= 0) {
      domain_ranks_ = node * gpn;
      break;
    }
  }
  if (domain_ranks_ == 0 || domain_ranks_ >= gpus_) {
    domain_ranks_ = 0;
    return;
  }
  nic_.resize(static_cast<std::size_t>(domain_ranks_));
  for (int p = 0; p < domain_ranks_; ++p)
    nic_[static_cast<std::size_t>(p)] = nic_on_route(topo, p, p + domain_ranks_);
}

int PxnRelays::relay(int src, int dst) const {
  if (domain_ranks_ == 0 || src / domain_ranks_ == dst / domain_ranks_) return -1;
  const int ps = src % domain_ranks_;
  const int pd = dst % domain_ranks_;
  if (ps == pd || nic_[static_cast<std::size_t>(ps)] == nic_[static_cast<std::size_t>(pd)]) return -1;
  const int r = src - ps + pd;
  return r < gpus_ && member_[static_cast<std::size_t>(r)] ? r : -1;
}

}  // namespace commstack::sim::detail
