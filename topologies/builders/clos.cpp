#include "topologies/builders/clos.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "common/error.hpp"
#include "topologies/builders/intra_node.hpp"

namespace commstack::topologies::builders {
namespace {

// Row-major index i * n + j into a flat table, computed in size_t so that the product cannot
// overflow int before the widening (clang-tidy bugprone-misplaced-widening-cast).
std::size_t flat(std::size_t i, int n, int j) {
  return i * static_cast<std::size_t>(n) + static_cast<std::size_t>(j);
}
std::size_t flat(int i, int n, int j) {
  return flat(static_cast<std::size_t>(i), n, j);
}

struct ClosShape {
  bool rail = true;
  int nics = 0;             // per node (= rails when rail-optimized)
  int nodes_per_unit = 1;
  int units = 0;
  int leaves_per_unit = 0;  // rails, or 1 ToR
  int leaves = 0;
  int down_ports = 0;       // per leaf
  int tiers = 2;
  int units_per_pod = 0;
  int pods = 1;
  int spines_per_pod = 0;
  int cores_per_group = 0;  // cores attached to spine j of every pod (3 tiers)
};

// d-mod-k over spines and cores; see docs/topologies.md "Routing".
class ClosRouter final : public Router {
public:
  ClosRouter(IntraNode intra, ClosShape shape, std::vector<int> nic_leaf, std::vector<int> leaf_spine,
             std::vector<int> spine_core)
      : in_(std::move(intra)), s_(shape), nic_leaf_(std::move(nic_leaf)), leaf_spine_(std::move(leaf_spine)),
        spine_core_(std::move(spine_core)) {}

  Path route(const Topology& /*topo*/, int src, int dst) const override {
    Path path;
    if (in_.route_inside(src, dst, path)) return path;
    path.reserve(12);
    const int src_node = in_.node_of_gpu(src);
    const int dst_node = in_.node_of_gpu(dst);
    const int kd = in_.nic_index_of_gpu(dst);
    // On rails, a GPU sends to another rail through the NIC of the destination's rail, relayed
    // over NVLink by the GPU that NIC hangs off (NCCL's PXN, NCCL_PXN_DISABLE=0: a ring channel
    // leaves a node through the NIC it entered the next one by, src/graph/search.cc). The bytes
    // stay on one rail instead of climbing to the spines. On a plain fat tree every NIC of a node
    // hangs off the same ToR, so each GPU keeps its own.
    const int ks = s_.rail ? kd : in_.nic_index_of_gpu(src);
    const int ls = leaf_of(src_node, ks);
    const int ld = leaf_of(dst_node, kd);
    in_.append_gpu_to_nic(src, path, ks);
    path.push_back(Hop{nic_leaf_[flat(src_node, s_.nics, ks)], true});
    if (ls != ld) {
      // d = the destination's global down-port number (leaf-major); spine = d mod k, core = (d / k) mod k'.
      const long long d = static_cast<long long>(ld) * s_.down_ports + position(dst_node, kd);
      const int j = static_cast<int>(d % s_.spines_per_pod);
      path.push_back(Hop{leaf_spine_[flat(ls, s_.spines_per_pod, j)], true});
      const int ps = pod_of_leaf(ls);
      const int pd = pod_of_leaf(ld);
      if (ps != pd) {
        const int c = static_cast<int>((d / s_.spines_per_pod) % s_.cores_per_group);
        path.push_back(Hop{spine_core_[flat(flat(ps, s_.spines_per_pod, j), s_.cores_per_group, c)], true});
        path.push_back(Hop{spine_core_[flat(flat(pd, s_.spines_per_pod, j), s_.cores_per_group, c)], false});
      }
      path.push_back(Hop{leaf_spine_[flat(ld, s_.spines_per_pod, j)], false});
    }
    path.push_back(Hop{nic_leaf_[flat(dst_node, s_.nics, kd)], false});
    in_.append_nic_to_gpu(dst, path);
    return path;
  }

private:
  int leaf_of(int node, int k) const {
    const int unit = node / s_.nodes_per_unit;
    return s_.rail ? unit * s_.leaves_per_unit + k : unit;
  }
  int position(int node, int k) const {
    const int in_unit = node % s_.nodes_per_unit;
    return s_.rail ? in_unit : in_unit * s_.nics + k;
  }
  int pod_of_leaf(int leaf) const { return (leaf / s_.leaves_per_unit) / s_.units_per_pod; }

  IntraNode in_;
  ClosShape s_;
  std::vector<int> nic_leaf_;
  std::vector<int> leaf_spine_;
  std::vector<int> spine_core_;
};

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// The design capacity of a leaf's and a spine's uplinks (bytes/s), for the links' bandwidths.
struct ClosCapacity {
  double leaf_up_bw = 0;
  double spine_up_bw = 0;
};

// The switches, tiers and pods the spec asks for (fills `s` past rail / nics / nodes_per_unit);
// InputError where the radix, the ratios or the size cannot be built.
ClosCapacity size_clos(const BuildInputs& in, ClosShape& s) {
  const FabricSpec& f = in.spec.fabric;
  s.units = ceil_div(in.nodes, s.nodes_per_unit);
  s.leaves_per_unit = s.rail ? s.nics : 1;
  s.leaves = s.units * s.leaves_per_unit;
  s.down_ports = s.rail ? s.nodes_per_unit : s.nodes_per_unit * s.nics;

  const int radix = f.switch_radix;
  const double nic_bw = in.nics.front().bandwidth_Bps;
  // Specs built in code (not parsed) may leave the ratios empty: non-blocking then.
  const double o_leaf = f.oversubscription.size() > 0 ? f.oversubscription[0] : 1.0;
  const double o_spine = f.oversubscription.size() > 1 ? f.oversubscription[1] : 1.0;
  if (!(o_leaf >= 1) || !(o_spine >= 1) || !(f.link_bandwidth_Bps > 0) || radix < 4) {
    throw InputError(fmt::format("{}: /fabric: expected oversubscription >= 1, link_bandwidth > 0 and switch_radix >= 4",
                                 in.origin));
  }
  // Design capacity of a leaf's uplinks: its down capacity divided by the ratio (exact), and the
  // number of switch-to-switch cables that carries it (for port and switch counts).
  ClosCapacity cap;
  cap.leaf_up_bw = s.down_ports * nic_bw / o_leaf;
  const int leaf_up_ports =
      std::max(1, static_cast<int>(std::ceil(cap.leaf_up_bw / f.link_bandwidth_Bps - 1e-9)));
  if (s.down_ports + leaf_up_ports > radix) {
    throw InputError(fmt::format(
        "{}: /fabric/nodes_per_unit: a leaf needs {} ports to nodes + {} uplinks, more than /fabric/switch_radix = {}; "
        "expected fewer nodes per unit, a larger radix or more oversubscription",
        in.origin, s.down_ports, leaf_up_ports, radix));
  }
  s.tiers = f.tiers == 0 ? (s.leaves <= radix ? 2 : 3) : f.tiers;
  if (s.tiers == 2) {
    if (s.leaves > radix) {
      throw InputError(fmt::format("{}: /fabric/tiers: 2 tiers connect at most /fabric/switch_radix = {} leaves, "
                                   "this size needs {}; expected 3 or \"auto\"", in.origin, radix, s.leaves));
    }
    s.units_per_pod = s.units;
    s.pods = 1;
    s.spines_per_pod = std::max(1, ceil_div(static_cast<long long>(s.leaves) * leaf_up_ports, radix));
  } else {
    // A spine splits its ports down:up by the spine ratio; a pod is as many whole units as one
    // spine can reach with a port per leaf, so leaves and spines in a pod are fully meshed.
    const int spine_down_ports = static_cast<int>(std::floor(radix * o_spine / (o_spine + 1)));
    s.units_per_pod = spine_down_ports / s.leaves_per_unit;
    if (s.units_per_pod < 1) {
      throw InputError(fmt::format("{}: /fabric/switch_radix: a 3-tier spine has {} down ports, fewer than the {} leaves "
                                   "of one unit; expected a larger radix", in.origin, spine_down_ports, s.leaves_per_unit));
    }
    s.units_per_pod = std::min(s.units_per_pod, s.units);
    s.pods = ceil_div(s.units, s.units_per_pod);
    if (s.pods > radix) {
      throw InputError(fmt::format("{}: /nodes: {} nodes need {} pods, more than a core switch of radix {} can reach",
                                   in.origin, in.nodes, s.pods, radix));
    }
    const int pod_leaves = s.units_per_pod * s.leaves_per_unit;
    s.spines_per_pod = std::max(1, ceil_div(static_cast<long long>(pod_leaves) * leaf_up_ports, spine_down_ports));
    const double spine_down_bw = pod_leaves * cap.leaf_up_bw / s.spines_per_pod;
    cap.spine_up_bw = spine_down_bw / o_spine;
    const int spine_up_ports =
        std::max(1, static_cast<int>(std::ceil(cap.spine_up_bw / f.link_bandwidth_Bps - 1e-9)));
    s.cores_per_group = std::max(1, ceil_div(static_cast<long long>(spine_up_ports) * s.pods, radix));
  }
  check_link_budget(static_cast<long long>(s.leaves) * s.spines_per_pod +
                        static_cast<long long>(std::max(1, s.pods)) * s.spines_per_pod * std::max(1, s.cores_per_group),
                    in, "/fabric/switch_radix");
  return cap;
}

// Leaves and NIC cables; returns the leaves' vertices, fills the NIC -> leaf links.
std::vector<int> add_leaves(Topology& topo, const BuildInputs& in, const ClosShape& s, const IntraNode& intra,
                            std::vector<int>& nic_leaf) {
  std::vector<int> leaf_v;
  for (int u = 0; u < s.units; ++u) {
    for (int r = 0; r < s.leaves_per_unit; ++r) {
      const std::string name = s.rail ? fmt::format("leaf.su{}.r{}", u, r) : fmt::format("tor{}", u);
      leaf_v.push_back(topo.add_vertex(Vertex{VertexKind::fabric_switch, name, -1, u * s.leaves_per_unit + r, 1}));
    }
  }
  for (int n = 0; n < in.nodes; ++n) {
    for (int k = 0; k < s.nics; ++k) {
      const int leaf = s.rail ? (n / s.nodes_per_unit) * s.leaves_per_unit + k : n / s.nodes_per_unit;
      const auto& nic = in.nics[static_cast<std::size_t>(k)];
      nic_leaf.push_back(topo.add_link(intra.nic_vertex[flat(n, s.nics, k)],
                                       leaf_v[static_cast<std::size_t>(leaf)], nic.bandwidth_Bps,
                                       nic.latency_s, LinkKind::network));
    }
  }
  return leaf_v;
}

// Spines (per pod) meshed with their pod's leaves; a leaf's uplink capacity is spread evenly.
// Returns the spines' vertices, fills the leaf -> spine links.
std::vector<int> add_spines(Topology& topo, const BuildInputs& in, const ClosShape& s,
                            const std::vector<int>& leaf_v, double leaf_up_bw, std::vector<int>& leaf_spine) {
  std::vector<int> spine_v;
  for (int p = 0; p < s.pods; ++p) {
    for (int j = 0; j < s.spines_per_pod; ++j) {
      const std::string name = s.pods > 1 ? fmt::format("spine.pod{}.{}", p, j) : fmt::format("spine{}", j);
      spine_v.push_back(topo.add_vertex(Vertex{VertexKind::fabric_switch, name, -1, p * s.spines_per_pod + j, 2}));
    }
  }
  leaf_spine.resize(static_cast<std::size_t>(s.leaves) * static_cast<std::size_t>(s.spines_per_pod));
  for (int l = 0; l < s.leaves; ++l) {
    const int p = (l / s.leaves_per_unit) / s.units_per_pod;
    for (int j = 0; j < s.spines_per_pod; ++j) {
      leaf_spine[flat(l, s.spines_per_pod, j)] =
          topo.add_link(leaf_v[static_cast<std::size_t>(l)], spine_v[flat(p, s.spines_per_pod, j)],
                        leaf_up_bw / s.spines_per_pod, in.spec.fabric.link_latency_s, LinkKind::network);
    }
  }
  return spine_v;
}

// Core group j serves spine j of every pod (classic folded Clos): cores_per_group cores each.
// Returns the spine -> core links.
std::vector<int> add_cores(Topology& topo, const BuildInputs& in, const ClosShape& s,
                           const std::vector<int>& spine_v, double spine_up_bw) {
  std::vector<int> core_v;
  for (int j = 0; j < s.spines_per_pod; ++j) {
    for (int c = 0; c < s.cores_per_group; ++c) {
      core_v.push_back(topo.add_vertex(Vertex{VertexKind::fabric_switch, fmt::format("core{}.{}", j, c), -1,
                                              j * s.cores_per_group + c, 3}));
    }
  }
  std::vector<int> spine_core(static_cast<std::size_t>(s.pods) * static_cast<std::size_t>(s.spines_per_pod) *
                              static_cast<std::size_t>(s.cores_per_group));
  for (int p = 0; p < s.pods; ++p) {
    for (int j = 0; j < s.spines_per_pod; ++j) {
      for (int c = 0; c < s.cores_per_group; ++c) {
        spine_core[flat(flat(p, s.spines_per_pod, j), s.cores_per_group, c)] =
            topo.add_link(spine_v[flat(p, s.spines_per_pod, j)], core_v[flat(j, s.cores_per_group, c)],
                          spine_up_bw / s.cores_per_group, in.spec.fabric.link_latency_s, LinkKind::network);
      }
    }
  }
  return spine_core;
}

// Representative nodes: first node of each (domain size, unit size, pod size) class.
void set_representative_nodes(Topology& topo, const BuildInputs& in, const ClosShape& s, int domain) {
  std::map<std::tuple<int, int, int>, int> classes;
  for (int n = 0; n < in.nodes; ++n) {
    const int d = n / domain;
    const int dsize = std::min(in.nodes, (d + 1) * domain) - d * domain;
    const int u = n / s.nodes_per_unit;
    const int usize = std::min(in.nodes, (u + 1) * s.nodes_per_unit) - u * s.nodes_per_unit;
    const int pod_nodes = s.units_per_pod * s.nodes_per_unit;
    const int p = n / pod_nodes;
    const int psize = std::min(in.nodes, (p + 1) * pod_nodes) - p * pod_nodes;
    classes.emplace(std::make_tuple(dsize, usize, psize), n);
  }
  for (const auto& [key, n] : classes) topo.representative_nodes.push_back(n);
  std::sort(topo.representative_nodes.begin(), topo.representative_nodes.end());
}

}  // namespace

void build_clos(Topology& topo, const BuildInputs& in, bool rail_optimized) {
  const FabricSpec& f = in.spec.fabric;
  if (f.nodes_per_unit < 1) {
    throw InputError(
        fmt::format("{}: /fabric/nodes_per_unit: expected >= 1, got {}", in.origin, f.nodes_per_unit));
  }
  ClosShape s;
  s.rail = rail_optimized;
  s.nics = static_cast<int>(in.nics.size());
  s.nodes_per_unit = f.nodes_per_unit;
  if (s.nics == 0) {  // nothing to plug in: validation reports the disconnected nodes
    build_intra_node(topo, in.spec.node, in.nics, in.nodes, in.gpus);
    return;
  }
  const ClosCapacity cap = size_clos(in, s);

  // The shape is valid: now build (node devices first, so GPU ranks come first in vertex order).
  IntraNode intra = build_intra_node(topo, in.spec.node, in.nics, in.nodes, in.gpus);
  std::vector<int> nic_leaf, leaf_spine, spine_core;
  const std::vector<int> leaf_v = add_leaves(topo, in, s, intra, nic_leaf);
  // A single leaf (one ToR, or one rail in one unit) needs no spines: they would be dead ends.
  std::vector<int> spine_v;
  if (s.leaves > 1) spine_v = add_spines(topo, in, s, leaf_v, cap.leaf_up_bw, leaf_spine);
  if (s.tiers == 3 && s.pods > 1 && s.leaves > 1)
    spine_core = add_cores(topo, in, s, spine_v, cap.spine_up_bw);
  else if (s.tiers == 3)
    s.cores_per_group = 1;  // one pod: traffic turns at the spines, no core switches are needed
  set_representative_nodes(topo, in, s, intra.domain_nodes);
  topo.set_router(std::make_shared<ClosRouter>(std::move(intra), s, std::move(nic_leaf), std::move(leaf_spine),
                                               std::move(spine_core)));
}

}  // namespace commstack::topologies::builders
