// CollNet all-reduce on the fabric, as NCCL runs it with a SHARP plugin (src/device/all_reduce.h,
// CollNetDirect and CollNetChain; src/graph/connect.cc): the InfiniBand switches reduce and
// multicast. A node's heads are its GPUs with a network port (a NIC, or a cable to a switch), one
// per port; head k of every node uses the port on rail k. Each rail has one aggregation tree: the
// union of the routes from every node's head k to node 0's head k, up to the last switch before
// it (the root), which is a tree because the routers send every flow to one destination through
// the same switch from a given switch (d-mod-k). A switch forwards one stream up once it has every
// child's, the root sends the sum back down, and every switch copies it to its children.
//
// Direct: every GPU sends the 1/h of its data that head k owns to head k over NVLink (NCCL's
// scatter), the head sends the node's sum of it into the tree, gets the total back and writes it
// to every GPU of its node (gather). Chain: channel c runs on rail c mod h; inside a node a chain
// from the last GPU to the head reduces, the head sends it into the tree, and the total goes back
// down the chain. NCCL's chunk sizes (src/enqueue.cc, calcCollChunking): Direct moves one Simple
// slot a head and channel per step, Chain at most 256 KiB a channel.
//
// Every hop carries one chunk, so both are dags of equal chunks like NVLS's (dag.cpp).
#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/algorithms/detail.hpp"

namespace commstack::sim::detail {

namespace {

using topologies::VertexKind;

constexpr std::size_t kCollNetMaxLocalRanks = 8;

// The fabric switches a GPU-to-GPU route crosses, in order.
std::vector<int> route_switches(const topologies::Topology& topo, int src, int dst) {
  std::vector<int> out;
  for (const auto& hop : topo.route(src, dst)) {
    const auto& link = topo.link(hop.link);
    const int to = hop.forward ? link.b : link.a;
    if (topo.vertex(to).kind == VertexKind::fabric_switch) out.push_back(to);
  }
  return out;
}

// The network ports of GPU rank g: a cable to a fabric switch, then each NIC's cable, in link order.
void add_ports(const topologies::Topology& topo, int g, std::vector<CollNetPort>& ports) {
  const int gv = topo.gpu_vertex(g);
  for (const int l : topo.incident_links(gv)) {
    const auto& link = topo.link(l);
    const int other = link.a == gv ? link.b : link.a;
    const VertexKind kind = topo.vertex(other).kind;
    if (kind == VertexKind::fabric_switch) ports.push_back({g, other});
    if (kind != VertexKind::nic) continue;
    for (const int c : topo.incident_links(other)) {
      const auto& cable = topo.link(c);
      const int sw = cable.a == other ? cable.b : cable.a;
      if (topo.vertex(sw).kind == VertexKind::fabric_switch) ports.push_back({g, sw});
    }
  }
}

// Rail k's tree: the parent of every switch on the routes from the heads to node 0's head.
void build_rail_tree(const topologies::Topology& topo, const std::vector<std::vector<CollNetPort>>& ports,
                     int k, CollNetTree& tree) {
  const CollNetPort& root_head = ports.front()[static_cast<std::size_t>(k)];
  for (std::size_t n = 1; n < ports.size(); ++n) {
    const CollNetPort& head = ports[n][static_cast<std::size_t>(k)];
    const std::vector<int> sws = route_switches(topo, head.gpu, root_head.gpu);
    if (sws.empty()) {
      throw InputError(fmt::format(
          "collective: the collnet algorithms reduce in the switches of a fat tree (InfiniBand SHARP), but "
          "the "
          "route from GPU {} to GPU {} of topology '{}' crosses no switch (its routers do not reduce)",
          head.gpu, root_head.gpu, topo.name));
    }
    const auto first = std::find(sws.begin(), sws.end(), head.sw);
    if (first == sws.end()) {
      throw InputError(
          fmt::format("collective: the collnet algorithms need each head's route to leave through its own "
                      "port, but the route "
                      "from GPU {} to GPU {} of topology '{}' does not cross switch {}",
                      head.gpu, root_head.gpu, topo.name, topo.vertex(head.sw).name));
    }
    if (tree.root < 0) tree.root = sws.back();
    if (sws.back() != tree.root) {
      throw InputError(
          fmt::format("collective: the collnet algorithms need one aggregation tree per rail, but routes "
                      "toward GPU {} of topology '{}' reach it through different switches",
                      root_head.gpu, topo.name));
    }
    for (auto it = first; it + 1 != sws.end(); ++it) {
      const auto [at, inserted] = tree.parent.emplace(*it, *(it + 1));
      if (!inserted && at->second != *(it + 1)) {
        throw InputError(
            fmt::format("collective: the collnet algorithms need one aggregation tree per rail, but routes "
                        "toward GPU {} of "
                        "topology '{}' leave switch {} through different switches",
                        root_head.gpu, topo.name, topo.vertex(*it).name));
      }
    }
  }
  if (root_head.sw != tree.root && tree.parent.count(root_head.sw) == 0) {
    throw InputError(
        fmt::format("collective: the collnet algorithms need GPU {}'s switch {} on rail {}'s aggregation "
                    "tree of topology '{}'",
                    root_head.gpu, topo.vertex(root_head.sw).name, k, topo.name));
  }
}

// The hops of one rail's tree for `heads` (one per node, with their ports): up from every head and
// switch to its parent, down the same edges. Returns, per head, its up and down hop; `sum_ready`
// lists the hops whose arrival completes a head's node sum (they feed the head's up hop).
struct RailHops {
  std::vector<int> head_up, head_down;
};
RailHops add_rail_tree(const topologies::Topology& topo, const CollNetTree& tree,
                       const std::vector<CollNetPort>& heads, ChannelDag& d) {
  auto ep = [&topo](int sw) { return topo.fabric_switch_endpoint(sw); };
  std::map<int, std::vector<int>> switch_children;  // switch vertex -> child switch vertices
  for (const auto& [child, parent] : tree.parent) switch_children[parent].push_back(child);
  std::map<int, std::vector<int>> head_children;  // switch vertex -> indices into heads
  for (std::size_t i = 0; i < heads.size(); ++i) head_children[heads[i].sw].push_back(static_cast<int>(i));
  RailHops out;
  for (const CollNetPort& h : heads) {
    out.head_up.push_back(d.add(h.gpu, ep(h.sw)));
    out.head_down.push_back(d.add(ep(h.sw), h.gpu));
  }
  std::map<int, int> up, down;  // switch vertex -> its hop to / from its parent
  for (const auto& [child, parent] : tree.parent) {
    up[child] = d.add(ep(child), ep(parent));
    down[child] = d.add(ep(parent), ep(child));
  }
  auto feed = [&d](int from, int to) { d.feeds[static_cast<std::size_t>(from)].push_back(to); };
  // What a switch receives from below, and what it sends down.
  auto below = [&](int sw) {
    std::vector<int> in;
    for (const int c : switch_children[sw]) in.push_back(up[c]);
    for (const int i : head_children[sw]) in.push_back(out.head_up[static_cast<std::size_t>(i)]);
    return in;
  };
  auto downward = [&](int sw) {
    std::vector<int> hops;
    for (const int c : switch_children[sw]) hops.push_back(down[c]);
    for (const int i : head_children[sw]) hops.push_back(out.head_down[static_cast<std::size_t>(i)]);
    return hops;
  };
  for (const auto& [child, parent] : tree.parent) {
    for (const int in : below(child)) feed(in, up[child]);
    for (const int next : downward(child)) feed(down[child], next);
  }
  for (const int in : below(tree.root))
    for (const int next : downward(tree.root)) feed(in, next);
  return out;
}

// The NICs of GPU rank g, and whether one of them is cabled to a router (torus, dragonfly).
struct NicCables {
  int nics = 0;
  bool to_router = false;
  bool dragonfly = false;
};
NicCables nic_cables(const topologies::Topology& topo, int g) {
  NicCables out;
  const int gv = topo.gpu_vertex(g);
  for (const int l : topo.incident_links(gv)) {
    const auto& link = topo.link(l);
    const int other = link.a == gv ? link.b : link.a;
    if (topo.vertex(other).kind != VertexKind::nic) continue;
    ++out.nics;
    for (const int c : topo.incident_links(other)) {
      const auto& cable = topo.link(c);
      const auto& v = topo.vertex(cable.a == other ? cable.b : cable.a);
      if (v.kind != VertexKind::router) continue;
      out.to_router = true;
      out.dragonfly = out.dragonfly || v.group >= 0;
    }
  }
  return out;
}

}  // namespace

CollNetLayout collnet_layout(const topologies::Topology& topo, const std::vector<int>& ranks) {
  CollNetLayout layout;
  // NCCL's node: the GPU's node, or its NVLink domain when one spans nodes (MNNVL: one clique).
  auto nccl_node = [&topo](int r) {
    const int sw = topo.nvswitch_endpoint(r);
    if (sw >= 0 && topo.endpoint_vertex(sw).node < 0) return -1 - sw;
    return topo.vertex(topo.gpu_vertex(r)).node;
  };
  std::map<int, std::size_t> node_index;
  for (const int r : ranks) {
    const auto [at, inserted] = node_index.emplace(nccl_node(r), layout.nodes.size());
    if (inserted) layout.nodes.emplace_back();
    layout.nodes[at->second].push_back(r);
  }
  if (layout.nodes.size() < 2) {
    throw InputError(
        fmt::format("collective: the collnet algorithms join nodes through the network's switches, but all "
                    "{} ranks are on one "
                    "node (NCCL runs NVLS or ring there)",
                    ranks.size()));
  }
  if (layout.nodes.front().size() > kCollNetMaxLocalRanks) {
    throw InputError(
        fmt::format("collective: NCCL runs CollNet with at most {} ranks per node (NCCL_MAX_DIRECT_ARITY + "
                    "1, src/enqueue.cc), "
                    "but GPU {}'s node{} has {} of them{}",
                    kCollNetMaxLocalRanks, layout.nodes.front().front(),
                    nccl_node(layout.nodes.front().front()) < 0 ? " (its NVLink domain)" : "",
                    layout.nodes.front().size(),
                    nccl_node(layout.nodes.front().front()) < 0
                        ? "; --mnnvl off makes each node of the domain a node of its own"
                        : ""));
  }
  for (const auto& members : layout.nodes) {
    if (members.size() != layout.nodes.front().size()) {
      throw InputError(
          fmt::format("collective: the collnet algorithms need the same number of ranks on every node "
                      "(got {} and {})",
                      layout.nodes.front().size(), members.size()));
    }
    auto& ports = layout.ports.emplace_back();
    for (const int g : members) add_ports(topo, g, ports);
    if (ports.empty()) {
      // A node whose NICs reach routers only: the fabric cannot reduce (what NCCL's CollNet plugin,
      // SHARP, needs of the switches).
      NicCables cables;
      for (const int g : members) {
        const NicCables c = nic_cables(topo, g);
        cables.nics += c.nics;
        cables.to_router = cables.to_router || c.to_router;
        cables.dragonfly = cables.dragonfly || c.dragonfly;
      }
      if (cables.to_router) {
        throw InputError(fmt::format(
            "collective: the collnet algorithms reduce in the fabric's switches (InfiniBand SHARP-capable "
            "switches, as in a fat tree), but the {} NIC(s) of node {} of topology '{}' are cabled to {} "
            "routers, which do not reduce",
            cables.nics, topo.vertex(topo.gpu_vertex(members.front())).node, topo.name,
            cables.dragonfly ? "dragonfly" : "torus"));
      }
    }
    if (ports.empty() || ports.size() != layout.ports.front().size()) {
      throw InputError(
          fmt::format("collective: the collnet algorithms need every node's ranks to have the same number of "
                      "network ports "
                      "(NICs cabled to a fabric switch), at least one; node {} of topology '{}' has {}",
                      topo.vertex(topo.gpu_vertex(members.front())).node, topo.name, ports.size()));
    }
  }
  const auto rails = static_cast<int>(layout.ports.front().size());
  for (int k = 0; k < rails; ++k) build_rail_tree(topo, layout.ports, k, layout.trees.emplace_back());
  return layout;
}

ChannelDag collnet_dag(const topologies::Topology& topo, const CollNetLayout& layout, Algorithm algorithm,
                       int channels) {
  ChannelDag d;
  const auto rails = static_cast<int>(layout.trees.size());
  auto heads_of_rail = [&layout](int k) {
    std::vector<CollNetPort> heads;
    for (const auto& ports : layout.ports) heads.push_back(ports[static_cast<std::size_t>(k)]);
    return heads;
  };
  auto feed = [&d](int from, int to) { d.feeds[static_cast<std::size_t>(from)].push_back(to); };
  if (algorithm == Algorithm::collnet_direct) {
    // One channel's dag (every channel runs the same): every rail's head owns 1/h of the bytes.
    for (int k = 0; k < rails; ++k) {
      const auto heads = heads_of_rail(k);
      const RailHops tree = add_rail_tree(topo, layout.trees[static_cast<std::size_t>(k)], heads, d);
      for (std::size_t n = 0; n < heads.size(); ++n) {
        const int head = heads[n].gpu;
        for (const int r : layout.nodes[n]) {
          if (r == head) continue;
          feed(d.add(r, head), tree.head_up[n]);  // scatter: r's part reaches the head
          const int gather = d.add(head, r);      // before indexing feeds: add() grows it
          feed(tree.head_down[n], gather);
        }
      }
    }
    return d;
  }
  // Chain: every channel's hops, channel c on rail c mod h, the whole channel's bytes on it.
  for (int c = 0; c < channels; ++c) {
    const int k = c % rails;
    const auto heads = heads_of_rail(k);
    const RailHops tree = add_rail_tree(topo, layout.trees[static_cast<std::size_t>(k)], heads, d);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      const auto& members = layout.nodes[n];
      const auto at =
          static_cast<std::size_t>(std::find(members.begin(), members.end(), heads[n].gpu) - members.begin());
      std::vector<int> chain;  // the head first, then the node's other ranks in order after it
      for (std::size_t i = 0; i < members.size(); ++i) chain.push_back(members[(at + i) % members.size()]);
      int next_up = tree.head_up[n];
      int prev_down = tree.head_down[n];
      for (std::size_t i = 1; i < chain.size(); ++i) {
        const int up = d.add(chain[i], chain[i - 1]);
        feed(up, next_up);
        next_up = up;
        const int down = d.add(chain[i - 1], chain[i]);
        feed(prev_down, down);
        prev_down = down;
      }
    }
  }
  return d;
}

double collnet_chunk(const CollNetLayout& layout, const CollectiveSpec& spec, int chunks) {
  const double heads =
      spec.algorithm == Algorithm::collnet_direct ? static_cast<double>(layout.trees.size()) : 1.0;
  return spec.bytes / heads / spec.channels / chunks;
}

void add_collnet(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                 Fidelity level, int chunks) {
  const CollNetLayout layout = collnet_layout(topo, spec.ranks);
  const ChannelDag dag = collnet_dag(topo, layout, spec.algorithm, spec.channels);
  const double chunk = collnet_chunk(layout, spec, chunks);
  if (spec.algorithm == Algorithm::collnet_direct) {
    add_dag(graph, topo, spec, dag, level, chunk, chunks);
    return;
  }
  // The chain's dag already holds every channel.
  CollectiveSpec one = spec;
  one.channels = 1;
  add_dag(graph, topo, one, dag, level, chunk, chunks);
}

}  // namespace commstack::sim::detail

namespace commstack::sim {

int collnet_ports(const topologies::Topology& topo, int gpu) {
  std::vector<detail::CollNetPort> ports;
  detail::add_ports(topo, gpu, ports);
  return static_cast<int>(ports.size());
}

double collnet_nccl_chunk(const topologies::Topology& topo, const CollectiveSpec& spec) {
  const detail::CollNetLayout layout = detail::collnet_layout(topo, spec.ranks);
  const bool direct = spec.algorithm == Algorithm::collnet_direct;
  // Integer arithmetic as NCCL's: bytes / (channels * heads * chunk) against depth * k.
  const auto bytes = static_cast<unsigned long long>(spec.bytes);
  const auto per = static_cast<unsigned long long>(spec.channels) * (direct ? layout.trees.size() : 1);
  const unsigned long long depth = direct ? 2 : layout.nodes.front().size();
  unsigned long long chunk = direct ? 512 * 1024 : 256 * 1024;
  auto halve_while = [&](unsigned long long times, unsigned long long floor) {
    while (bytes / (per * chunk) < depth * times && chunk > floor) chunk /= 2;
  };
  halve_while(64, 131072);
  halve_while(8, 65536);
  halve_while(direct ? 8 : 1, 32768);
  return static_cast<double>(chunk);
}

}  // namespace commstack::sim
