// Dragonfly (Cray/HPE Slingshot style): groups of all-to-all connected routers, every pair of
// groups joined by global links, minimal local-global-local routing.
#include <memory>

#include <fmt/format.h>

#include "common/error.hpp"
#include "topologies/builders/builders.hpp"
#include "topologies/builders/intra_node.hpp"

namespace commstack::topologies::builders {
namespace {

struct DragonflyShape {
  int groups = 1;
  int routers = 1;        // per group
  int nodes_per_router = 1;
  int parallel = 0;       // global links per pair of groups
};

class DragonflyRouter final : public Router {
public:
  DragonflyRouter(IntraNode intra, DragonflyShape shape, std::vector<int> router_v, std::vector<int> nic_router,
                  std::vector<int> local, std::vector<int> global)
      : in_(std::move(intra)), s_(shape), router_v_(std::move(router_v)), nic_router_(std::move(nic_router)),
        local_(std::move(local)), global_(std::move(global)) {}

  Path route(const Topology& topo, int src, int dst) const override {
    Path path;
    if (in_.route_inside(src, dst, path)) return path;
    const int sn = in_.node_of_gpu(src);
    const int dn = in_.node_of_gpu(dst);
    const int rs = sn / s_.nodes_per_router;  // global router ids
    const int rd = dn / s_.nodes_per_router;
    in_.append_gpu_to_nic(src, path);
    path.push_back(Hop{nic_router_[static_cast<std::size_t>(sn * in_.nics + in_.nic_index_of_gpu(src))], true});
    const int gs = rs / s_.routers;
    const int gd = rd / s_.routers;
    if (gs == gd) {
      add_local(topo, rs, rd, path);
    } else {
      // Minimal: to the router holding the global link to the destination group, across, then local.
      const int c = dn % s_.parallel;  // destination-based choice among parallel global links
      const int link = global_[static_cast<std::size_t>((gs * s_.groups + gd) * s_.parallel + c)];
      const Link& lk = topo.link(link);
      const int ra = router_id(lk.a, gs) >= 0 ? router_id(lk.a, gs) : router_id(lk.b, gs);
      const int rb = router_id(lk.a, gd) >= 0 ? router_id(lk.a, gd) : router_id(lk.b, gd);
      add_local(topo, rs, ra, path);
      path.push_back(Hop{link, topo.is_forward(link, router_v_[static_cast<std::size_t>(ra)])});
      add_local(topo, rb, rd, path);
    }
    path.push_back(Hop{nic_router_[static_cast<std::size_t>(dn * in_.nics + in_.nic_index_of_gpu(dst))], false});
    in_.append_nic_to_gpu(dst, path);
    return path;
  }

private:
  // Global router id of vertex v if it is a router of group g, else -1 (vertex.local = router id).
  int router_id(int v, int g) const {
    const int first = router_v_[static_cast<std::size_t>(g * s_.routers)];
    return v >= first && v < first + s_.routers ? g * s_.routers + (v - first) : -1;
  }
  void add_local(const Topology& topo, int from, int to, Path& path) const {
    if (from == to) return;
    const int g = from / s_.routers;
    const int link = local_[static_cast<std::size_t>((g * s_.routers + from % s_.routers) * s_.routers + to % s_.routers)];
    path.push_back(Hop{link, topo.is_forward(link, router_v_[static_cast<std::size_t>(from)])});
  }

  IntraNode in_;
  DragonflyShape s_;
  std::vector<int> router_v_;
  std::vector<int> nic_router_;
  std::vector<int> local_;   // [(group * a + r1) * a + r2]
  std::vector<int> global_;  // [(g1 * groups + g2) * parallel + copy]
};

}  // namespace

void build_dragonfly(Topology& topo, const BuildInputs& in) {
  const FabricSpec& f = in.spec.fabric;
  if (f.routers_per_group < 1 || f.nodes_per_router < 1 || f.global_links_per_router < 0) {
    throw InputError(fmt::format("{}: /fabric: expected routers_per_group >= 1, nodes_per_router >= 1 and "
                                 "global_links_per_router >= 0", in.origin));
  }
  DragonflyShape s;
  s.routers = f.routers_per_group;
  s.nodes_per_router = f.nodes_per_router;
  const long long per_group = static_cast<long long>(s.routers) * s.nodes_per_router;
  s.groups = static_cast<int>((in.nodes + per_group - 1) / per_group);
  const int h = f.global_links_per_router;
  if (s.groups > 1 && static_cast<long long>(s.routers) * h < s.groups - 1) {
    throw InputError(fmt::format("{}: /fabric/global_links_per_router: {} nodes need {} groups; {} routers x {} global "
                                 "links cannot reach the other {} groups; expected at least {}",
                                 in.origin, in.nodes, s.groups, s.routers, h, s.groups - 1,
                                 (s.groups - 1 + s.routers - 1) / s.routers));
  }
  s.parallel = s.groups > 1 ? static_cast<int>(static_cast<long long>(s.routers) * h / (s.groups - 1)) : 1;
  check_link_budget(static_cast<long long>(s.groups) * s.routers * (s.routers - 1) / 2 +
                        static_cast<long long>(s.groups) * (s.groups - 1) / 2 * s.parallel,
                    in, "/fabric");
  IntraNode intra = build_intra_node(topo, in.spec.node, in.nics, in.nodes, in.gpus);
  // Every group gets all its routers (a partially filled last group keeps its shape).
  std::vector<int> router_v;
  for (int g = 0; g < s.groups; ++g) {
    for (int r = 0; r < s.routers; ++r) {
      router_v.push_back(topo.add_vertex(
          Vertex{VertexKind::router, fmt::format("g{}.r{}", g, r), -1, g * s.routers + r, 1, g}));
    }
  }
  std::vector<int> nic_router;
  for (int n = 0; n < in.nodes; ++n) {
    for (int k = 0; k < intra.nics; ++k) {
      const auto& nic = in.nics[static_cast<std::size_t>(k)];
      nic_router.push_back(topo.add_link(intra.nic_vertex[static_cast<std::size_t>(n * intra.nics + k)],
                                         router_v[static_cast<std::size_t>(n / s.nodes_per_router)], nic.bandwidth_Bps,
                                         nic.latency_s, LinkKind::network));
    }
  }
  std::vector<int> local(static_cast<std::size_t>(s.groups) * s.routers * s.routers, -1);
  for (int g = 0; g < s.groups; ++g) {
    for (int r1 = 0; r1 < s.routers; ++r1) {
      for (int r2 = r1 + 1; r2 < s.routers; ++r2) {
        const int l = topo.add_link(router_v[static_cast<std::size_t>(g * s.routers + r1)],
                                    router_v[static_cast<std::size_t>(g * s.routers + r2)], f.link_bandwidth_Bps,
                                    f.link_latency_s, LinkKind::network);
        local[static_cast<std::size_t>((g * s.routers + r1) * s.routers + r2)] = l;
        local[static_cast<std::size_t>((g * s.routers + r2) * s.routers + r1)] = l;
      }
    }
  }
  // Circulant wiring: in group i, global port q = copy * (groups - 1) + offset, offset = (j - i - 1) mod groups,
  // sits on router q / h. Rotating all group indices by one maps the wiring onto itself.
  std::vector<int> global;
  if (s.groups > 1) {
    global.assign(static_cast<std::size_t>(s.groups) * s.groups * s.parallel, -1);
    for (int i = 0; i < s.groups; ++i) {
      for (int j = i + 1; j < s.groups; ++j) {
        for (int c = 0; c < s.parallel; ++c) {
          const int oi = ((j - i - 1) % s.groups + s.groups) % s.groups;
          const int oj = ((i - j - 1) % s.groups + s.groups) % s.groups;
          const int ri = (c * (s.groups - 1) + oi) / h;
          const int rj = (c * (s.groups - 1) + oj) / h;
          const int l = topo.add_link(router_v[static_cast<std::size_t>(i * s.routers + ri)],
                                      router_v[static_cast<std::size_t>(j * s.routers + rj)], f.link_bandwidth_Bps,
                                      f.link_latency_s, LinkKind::network);
          global[static_cast<std::size_t>((i * s.groups + j) * s.parallel + c)] = l;
          global[static_cast<std::size_t>((j * s.groups + i) * s.parallel + c)] = l;
        }
      }
    }
  }
  // Representatives: with every group full, group rotation and node swaps under one router are
  // automorphisms, so one node per router of group 0 covers all distances; otherwise all nodes.
  if (in.nodes % per_group == 0) {
    for (int r = 0; r < s.routers; ++r) topo.representative_nodes.push_back(r * s.nodes_per_router);
  }
  topo.set_router(std::make_shared<DragonflyRouter>(std::move(intra), s, std::move(router_v), std::move(nic_router),
                                                    std::move(local), std::move(global)));
}

}  // namespace commstack::topologies::builders
