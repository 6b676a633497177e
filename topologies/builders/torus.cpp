// k-ary n-dimensional torus (Angara, Tofu-like): one router per node, wrap-around links in every
// dimension, dimension-order routing along the shorter way round each ring.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "topologies/builders/builders.hpp"
#include "topologies/builders/intra_node.hpp"

namespace commstack::topologies::builders {
namespace {

class TorusRouter final : public Router {
public:
  TorusRouter(IntraNode intra, std::vector<int> dims, std::vector<int> router_v, std::vector<int> nic_router,
              std::vector<int> plus_link)
      : in_(std::move(intra)), dims_(std::move(dims)), router_v_(std::move(router_v)),
        nic_router_(std::move(nic_router)), plus_link_(std::move(plus_link)) {}

  Path route(const Topology& topo, int src, int dst) const override {
    Path path;
    if (in_.route_inside(src, dst, path)) return path;
    const int sn = in_.node_of_gpu(src);
    const int dn = in_.node_of_gpu(dst);
    in_.append_gpu_to_nic(src, path);
    path.push_back(Hop{nic_router_[static_cast<std::size_t>(sn * in_.nics + in_.nic_index_of_gpu(src))], true});
    // Dimension order: finish dimension 0, then 1, ...; in each ring the shorter direction, + on a tie.
    int cur = sn;
    int stride = 1;
    const int dcount = static_cast<int>(dims_.size());
    for (int i = 0; i < dcount; ++i) {
      const int k = dims_[static_cast<std::size_t>(i)];
      const int c = (cur / stride) % k;
      const int t = (dn / stride) % k;
      const int delta = ((t - c) % k + k) % k;
      const bool plus = delta <= k - delta;
      const int steps = plus ? delta : k - delta;
      for (int s = 0; s < steps; ++s) {
        const int x = (cur / stride) % k;
        const int next = plus ? cur + ((x + 1) % k - x) * stride : cur + ((x + k - 1) % k - x) * stride;
        const int link = plus ? plus_link_[static_cast<std::size_t>(cur * dcount + i)]
                              : plus_link_[static_cast<std::size_t>(next * dcount + i)];
        path.push_back(Hop{link, topo.is_forward(link, router_v_[static_cast<std::size_t>(cur)])});
        cur = next;
      }
      stride *= k;
    }
    path.push_back(Hop{nic_router_[static_cast<std::size_t>(dn * in_.nics + in_.nic_index_of_gpu(dst))], false});
    in_.append_nic_to_gpu(dst, path);
    return path;
  }

private:
  IntraNode in_;
  std::vector<int> dims_;
  std::vector<int> router_v_;
  std::vector<int> nic_router_;
  std::vector<int> plus_link_;  // [node * D + i]: link to the +1 neighbour in dimension i, -1 if none
};

std::optional<std::vector<int>> factor(int n, int count, int cap) {
  if (count == 1) return n <= cap ? std::optional<std::vector<int>>(std::vector<int>{n}) : std::nullopt;
  const int low = std::max(1, static_cast<int>(std::floor(std::pow(n, 1.0 / count) + 1e-9)));
  for (int a = low; a <= std::min(n, cap); ++a) {
    if (n % a != 0) continue;
    if (static_cast<double>(a) * std::pow(a, count - 1) < n) continue;  // the rest could not fit under a
    if (auto rest = factor(n / a, count - 1, a)) {
      rest->insert(rest->begin(), a);
      return rest;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> balanced_dims(int nodes, int count) {
  // factor() picks the smallest feasible first (largest) ring, then recurses: the result sorted
  // descending is the lexicographically smallest, i.e. the most balanced shape.
  auto dims = factor(nodes, count, nodes);
  return dims.value_or(std::vector<int>{});  // never empty for nodes >= 1: [nodes, 1, 1, ...] fits
}

void build_torus(Topology& topo, const BuildInputs& in, const std::vector<int>& dims) {
  IntraNode intra = build_intra_node(topo, in.spec.node, in.nics, in.nodes, in.gpus);
  const int dcount = static_cast<int>(dims.size());
  std::vector<int> router_v;
  std::vector<int> nic_router;
  for (int n = 0; n < in.nodes; ++n) {
    std::vector<int> coord;
    for (int i = 0, stride = 1; i < dcount; stride *= dims[static_cast<std::size_t>(i)], ++i) {
      coord.push_back((n / stride) % dims[static_cast<std::size_t>(i)]);
    }
    router_v.push_back(topo.add_vertex(
        Vertex{VertexKind::router, fmt::format("router({})", fmt::join(coord, ",")), -1, n, 1}));
    for (int k = 0; k < intra.nics; ++k) {
      const auto& nic = in.nics[static_cast<std::size_t>(k)];
      nic_router.push_back(topo.add_link(intra.nic_vertex[static_cast<std::size_t>(n * intra.nics + k)], router_v.back(),
                                         nic.bandwidth_Bps, nic.latency_s, LinkKind::network));
    }
  }
  const FabricSpec& f = in.spec.fabric;
  std::vector<int> plus_link(static_cast<std::size_t>(in.nodes) * static_cast<std::size_t>(dcount), -1);
  for (int i = 0, stride = 1; i < dcount; stride *= dims[static_cast<std::size_t>(i)], ++i) {
    const int k = dims[static_cast<std::size_t>(i)];
    for (int n = 0; n < in.nodes; ++n) {
      const int x = (n / stride) % k;
      if (k == 1) continue;
      const int next = n + ((x + 1) % k - x) * stride;
      if (k == 2 && x == 1) continue;  // a 2-ring has one cable: its +1 and -1 neighbours coincide
      plus_link[static_cast<std::size_t>(n * dcount + i)] =
          topo.add_link(router_v[static_cast<std::size_t>(n)], router_v[static_cast<std::size_t>(next)],
                        f.link_bandwidth_Bps, f.link_latency_s, LinkKind::network);
    }
    if (k == 2) {
      for (int n = 0; n < in.nodes; ++n) {
        if ((n / stride) % 2 == 1) {
          plus_link[static_cast<std::size_t>(n * dcount + i)] = plus_link[static_cast<std::size_t>((n - stride) * dcount + i)];
        }
      }
    }
  }
  // Translations are automorphisms of a torus: every node sees the same distances as node 0.
  topo.representative_nodes = {0};
  topo.set_router(std::make_shared<TorusRouter>(std::move(intra), dims, std::move(router_v), std::move(nic_router),
                                                std::move(plus_link)));
}

}  // namespace commstack::topologies::builders
