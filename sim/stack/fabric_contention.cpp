#include "sim/stack/fabric_contention.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "sim/select/nccl_trees.hpp"

namespace commstack::sim::stack {
namespace {

using topologies::LinkKind;
using topologies::Topology;
using topologies::VertexKind;

// Flows routed so far, counted per resource of the fabric: each direction of a NIC's link to its
// switch, and pools of switch-to-switch links. The route fixes which switches a flow crosses; the
// pools let the fabric spread what a switch forwards over its equal-cost links, as adaptive routing
// and ECMP do, instead of the single path the router function gives SimGrid:
// * between tiers (fat trees), a switch's links up (or down) form one pool for what it sends and
//   one for what it receives: a leaf's uplinks to all its spines, the downlinks into a leaf;
// * inside a dragonfly group, a router's local links form one pool each way; between groups, all
//   global links of a group form one pool each way (minimal routes spread over the group's globals);
// * other links between switches of one tier (tori) count alone: dimension-order routes as routed.
// An oversubscribed leaf's uplinks or a group's global links still limit the pattern. With
// Routing::minimal, dragonfly links count alone too: each flow loads the links of its own route.
class LinkLoads {
 public:
  explicit LinkLoads(const Topology& topo, Routing routing = Routing::adaptive)
      : topo_(topo), out_(2 * static_cast<std::size_t>(topo.link_count()), {-1, -1}) {
    const auto is_switch = [&](int v) {
      const auto kind = topo.vertex(v).kind;
      return kind == VertexKind::fabric_switch || kind == VertexKind::router;
    };
    // Pool keys: (what, vertex or group, direction code).
    std::map<std::tuple<int, int, int>, int> pools;
    const auto pool = [&](int what, int id, int code) {
      auto [it, fresh] = pools.try_emplace({what, id, code}, -1);
      if (fresh) it->second = new_resource(false);
      return it->second;
    };
    enum { kSwitchSends, kSwitchReceives, kGroupSends, kGroupReceives };
    for (int l = 0; l < topo.link_count(); ++l) {
      const auto& link = topo.link(l);
      if (link.kind != LinkKind::network) continue;
      for (int dir = 0; dir < 2; ++dir) {  // 0: a -> b
        const int from = dir == 0 ? link.a : link.b;
        const int to = dir == 0 ? link.b : link.a;
        const auto& vf = topo.vertex(from);
        const auto& vt = topo.vertex(to);
        auto& slots = out_[2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(dir)];
        if (!is_switch(from) || !is_switch(to)) {
          slots = {new_resource(vf.kind == VertexKind::nic || vt.kind == VertexKind::nic), -1};
        } else if (vf.tier != vt.tier) {
          const int up = vt.tier > vf.tier ? 1 : 0;
          slots = {pool(kSwitchSends, from, up), pool(kSwitchReceives, to, up)};
        } else if (routing == Routing::adaptive && vf.group >= 0 && vt.group >= 0 && vf.group != vt.group) {
          slots = {pool(kGroupSends, vf.group, 2), pool(kGroupReceives, vt.group, 2)};
        } else if (routing == Routing::adaptive && vf.group >= 0 && vf.group == vt.group) {
          slots = {pool(kSwitchSends, from, 2), pool(kSwitchReceives, to, 2)};
        } else {  // torus links, and every dragonfly link under minimal routing: each link alone
          slots = {new_resource(false), -1};
        }
        for (int r : slots)
          if (r >= 0) capacity_[static_cast<std::size_t>(r)] += link.bandwidth_Bps;
      }
    }
    load_.assign(capacity_.size(), 0.0);
  }

  void add(int src_rank, int dst_rank, double weight) {
    if (src_rank >= topo_.gpu_count() || dst_rank >= topo_.gpu_count()) return;  // a partial last domain
    for (const auto& hop : topo_.route(src_rank, dst_rank)) {
      for (int r : out_[2 * static_cast<std::size_t>(hop.link) + (hop.forward ? 0 : 1)])
        if (r >= 0) load_[static_cast<std::size_t>(r)] += weight;
    }
  }

  // max k/cap over all resources divided by max k/cap over the NIC links; 1 with no NIC load.
  double factor() const {
    double worst_all = 0, worst_nic = 0;
    for (std::size_t r = 0; r < load_.size(); ++r) {
      if (!(capacity_[r] > 0)) continue;
      const double per_byte = load_[r] / capacity_[r];
      worst_all = std::max(worst_all, per_byte);
      if (nic_[r]) worst_nic = std::max(worst_nic, per_byte);
    }
    return worst_nic > 0 ? std::max(1.0, worst_all / worst_nic) : 1.0;
  }

 private:
  int new_resource(bool nic) {
    capacity_.push_back(0.0);
    nic_.push_back(nic ? 1 : 0);
    return static_cast<int>(capacity_.size()) - 1;
  }

  const Topology& topo_;
  std::vector<std::array<int, 2>> out_;  // per link and direction (2 l + 0: a -> b): its resources, -1 none
  std::vector<double> capacity_, load_;
  std::vector<char> nic_;
};

int rank_of(const DomainLayout& l, int domain, int position) {
  return domain * l.ranks_per_domain + position;
}

double shift_factor(const Topology& topo, const DomainLayout& l, int shift, Routing routing) {
  LinkLoads loads(topo, routing);
  for (int d = 0; d < l.domains; ++d)
    for (int p = 0; p < l.ranks_per_domain; ++p)
      loads.add(rank_of(l, d, p), rank_of(l, (d + shift) % l.domains, p), 1.0);
  return loads.factor();
}

double tree_factor(const Topology& topo, const DomainLayout& l, Routing routing) {
  LinkLoads loads(topo, routing);
  for (int d = 0; d < l.domains; ++d) {
    for (const auto& tree : select::nccl_dtree(l.domains, d)) {
      if (tree.up < 0) continue;
      for (int p = 0; p < l.ranks_per_domain; ++p) {
        loads.add(rank_of(l, d, p), rank_of(l, tree.up, p), 1.0);  // reduce: child to parent
        loads.add(rank_of(l, tree.up, p), rank_of(l, d, p), 1.0);  // broadcast: parent to child
      }
    }
  }
  return loads.factor();
}

double pat_factor(const Topology& topo, const DomainLayout& l, Routing routing) {
  // Recursive doubling: phase k exchanges with the domain 2^k away and moves 2^k blocks.
  double weighted = 0, weights = 0;
  for (int shift = 1; shift < l.domains; shift *= 2) {
    weighted += shift * shift_factor(topo, l, shift, routing);
    weights += shift;
  }
  return weights > 0 ? weighted / weights : 1.0;
}

double alltoall_factor(const Topology& topo, const DomainLayout& l, Routing routing) {
  // Beyond the budget each source routes every stride-th shift, offset by its own index, with weight
  // stride: every NIC still sends and receives about domains - 1 flows' worth, and the shifts a
  // switch sees are spread as in the full pattern.
  const long long flows = static_cast<long long>(l.domains) * (l.domains - 1) * l.ranks_per_domain;
  const int stride =
      static_cast<int>(std::max(1LL, (flows + kAlltoallRouteBudget - 1) / kAlltoallRouteBudget));
  LinkLoads loads(topo, routing);
  for (int a = 0; a < l.domains; ++a)
    for (int shift = 1 + a % stride; shift < l.domains; shift += stride)
      for (int p = 0; p < l.ranks_per_domain; ++p)
        loads.add(rank_of(l, a, p), rank_of(l, (a + shift) % l.domains, p), stride);
  return loads.factor();
}

double boundary_factor(const Topology& topo, const DomainLayout& l, Routing routing) {
  LinkLoads loads(topo, routing);
  for (int d = 0; d < l.domains; ++d) loads.add(rank_of(l, d, 0), rank_of(l, (d + 1) % l.domains, 0), 1.0);
  return loads.factor();
}

}  // namespace

DomainLayout domain_layout(const topologies::ClusterSpec& spec, int nodes, int gpus_per_node) {
  DomainLayout l;
  l.nodes_per_domain = std::max(1, std::min(spec.node.nvlink_domain_nodes, nodes));
  l.domains = (nodes + l.nodes_per_domain - 1) / l.nodes_per_domain;
  l.ranks_per_domain = gpus_per_node * l.nodes_per_domain;
  return l;
}

double contention_factor(const Topology& topo, const DomainLayout& layout, NetPattern pattern,
                         Routing routing) {
  if (layout.domains < 1 || layout.ranks_per_domain < 1)
    throw std::invalid_argument("contention_factor: expected >= 1 domain and >= 1 rank per domain");
  if (layout.domains == 1) return 1.0;  // no network traffic
  switch (pattern) {
    case NetPattern::ring: return shift_factor(topo, layout, 1, routing);
    case NetPattern::tree: return tree_factor(topo, layout, routing);
    case NetPattern::pat: return pat_factor(topo, layout, routing);
    case NetPattern::alltoall: return alltoall_factor(topo, layout, routing);
    case NetPattern::boundary: return boundary_factor(topo, layout, routing);
  }
  return 1.0;
}

ContentionCache::ContentionCache(std::shared_ptr<const Topology> topo, DomainLayout layout)
    : topo_(std::move(topo)), layout_(layout), state_(std::make_shared<State>()) {}

double ContentionCache::factor(NetPattern pattern) const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  auto& slot = state_->factors[static_cast<std::size_t>(pattern)];
  if (!slot) slot = contention_factor(*topo_, layout_, pattern);
  return *slot;
}

}  // namespace commstack::sim::stack
