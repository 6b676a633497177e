// All-reduce as NCCL's Tree runs it (src/graph/connect.cc, src/device/all_reduce.h): every
// channel's data is reduced up a tree to its root and broadcast back down, chunk by chunk, the two
// directions pipelined together (NCCL's Simple tree kernel splits its warps between them). Across
// nodes the tree is NCCL's double binary tree (select/nccl_trees.hpp). NCCL runs each channel of
// its tree graph twice, once on each of the two trees (channels c and c + nChannels, connect.cc),
// so here a channel carries half its bytes on each tree, and every node is an inner node of at most
// one of them. Inside a node the GPUs form a chain in the channel's order; all of a channel's
// network traffic on a node goes through one NIC, the one its first GPU hangs off: NCCL's tree
// search gives both network ends of a channel the same NIC (ncclTopoSearchCheckNet; its balanced
// pattern lets a second GPU drive one child, through that same NIC), so on rail-optimized fabrics
// a channel's tree stays on one rail, and consecutive channels (rotated orders) use different NICs.
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/algorithms/pipeline.hpp"
#include "sim/select/nccl_trees.hpp"

namespace commstack::sim::detail {

namespace {

// One channel's tree: the hops (sender, receiver) of the reduction (every rank but the root to its
// parent) then of the broadcast (each parent back to the rank), and which hops each one feeds.
struct ChannelTree {
  std::vector<std::pair<int, int>> hops;
  std::vector<std::vector<int>> feeds;
};

ChannelTree channel_tree(const topologies::Topology& topo, const std::vector<int>& ranks, int channel,
                         int tree) {
  // The channel's order (channel_ring: nodes in order of first appearance, each node's GPUs
  // rotated by the channel), cut into nodes: consecutive channels put their network ends on
  // different GPUs, so the channels spread over every NIC, as NCCL's tree graph spreads its
  // channels.
  const std::vector<int> order = channel_ring(topo, ranks, channel);
  std::vector<int> first;  // position in `order` of each node's first GPU
  int last_node = -1;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const int node = topo.vertex(topo.gpu_vertex(order[p])).node;
    if (first.empty() || node != last_node) first.push_back(static_cast<int>(p));
    last_node = node;
  }
  const int N = static_cast<int>(first.size());
  first.push_back(static_cast<int>(order.size()));
  std::vector<int> parent(order.size(), -1);  // by position in `order`
  for (int v = 0; v < N; ++v) {
    const int at = first[static_cast<std::size_t>(v)];
    for (int p = at + 1; p < first[static_cast<std::size_t>(v) + 1]; ++p)
      parent[static_cast<std::size_t>(p)] = p - 1;
    const select::TreeLinks links = select::nccl_dtree(N, v)[static_cast<std::size_t>(tree)];
    if (links.up >= 0) parent[static_cast<std::size_t>(at)] = first[static_cast<std::size_t>(links.up)];
  }
  // Hop numbering: reduction hop of position p at up[p], broadcast hop at down[p].
  const int n = static_cast<int>(order.size());
  std::vector<int> up(static_cast<std::size_t>(n), -1), down(static_cast<std::size_t>(n), -1);
  ChannelTree t;
  for (int p = 0; p < n; ++p)
    if (parent[static_cast<std::size_t>(p)] >= 0) {
      up[static_cast<std::size_t>(p)] = static_cast<int>(t.hops.size());
      t.hops.emplace_back(order[static_cast<std::size_t>(p)],
                          order[static_cast<std::size_t>(parent[static_cast<std::size_t>(p)])]);
    }
  for (int p = 0; p < n; ++p)
    if (parent[static_cast<std::size_t>(p)] >= 0) {
      down[static_cast<std::size_t>(p)] = static_cast<int>(t.hops.size());
      t.hops.emplace_back(order[static_cast<std::size_t>(parent[static_cast<std::size_t>(p)])],
                          order[static_cast<std::size_t>(p)]);
    }
  t.feeds.resize(t.hops.size());
  // Each position's children, in order (one pass: at 16384 GPUs a scan per rank is 10^9 steps).
  std::vector<std::vector<int>> children(static_cast<std::size_t>(n));
  int root = -1;
  for (int p = 0; p < n; ++p) {
    const int q = parent[static_cast<std::size_t>(p)];
    if (q < 0)
      root = p;
    else
      children[static_cast<std::size_t>(q)].push_back(p);
  }
  for (int p = 0; p < n; ++p) {
    const int q = parent[static_cast<std::size_t>(p)];
    if (q < 0) continue;
    auto& from_up = t.feeds[static_cast<std::size_t>(up[static_cast<std::size_t>(p)])];
    if (q != root) {
      // A chunk goes on up once every child's part of it has arrived.
      from_up.push_back(up[static_cast<std::size_t>(q)]);
    } else {
      // At the root the chunk is fully reduced once every child's part arrived: it goes down to all.
      for (const int r : children[static_cast<std::size_t>(root)])
        from_up.push_back(down[static_cast<std::size_t>(r)]);
    }
    // A rank forwards each chunk it receives from its parent to its children.
    for (const int r : children[static_cast<std::size_t>(p)])
      t.feeds[static_cast<std::size_t>(down[static_cast<std::size_t>(p)])].push_back(
          down[static_cast<std::size_t>(r)]);
  }
  return t;
}

// Step and edge levels: one flow per hop carrying all K chunks, timed like the chains'
// (chain.cpp): the chunk level's pipeline run outside SimGrid, or beyond its budget each hop's
// longest path of uncontended chunk times plus K - 1 of the channel's slowest shared chunk time.
void add_coarse_tree(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                     const std::vector<ChannelTree>& trees, int per_channel, double chunk, int K) {
  std::vector<std::vector<topologies::Path>> paths;
  for (const auto& t : trees) {
    auto& mine = paths.emplace_back();
    for (const auto& [src, dst] : t.hops) mine.push_back(topo.route(src, dst));
  }
  PipeHops ph = pipeline_hops(topo, paths, chunk, spec.step_overhead_s);
  for (const auto& t : trees) ph.feeds.push_back(t.feeds);
  const std::size_t hops = trees.front().hops.size();
  struct PendingFlow {
    int src, dst;
    double bytes, after_bytes_s;
  };
  std::vector<PendingFlow> pending;
  pending.reserve(trees.size() * hops);
  std::unordered_map<std::uint64_t, std::size_t> merged;  // (src, dst) -> pending flow, within a channel
  const bool run = static_cast<double>(hops) * K * static_cast<double>(trees.size()) <= kPipelineBudget;
  const auto ends = run ? pipeline_hop_ends(ph, PipeShape::dag, K) : std::vector<std::vector<double>>{};
  for (std::size_t c = 0; c < trees.size(); ++c) {
    const std::vector<double> end = run ? ends[c] : dag_hop_ends_estimate(ph, c, K);
    // A channel's two trees chain the same GPUs inside each node: those hops of both go as one flow
    // of both trees' bytes (SimGrid gives it what it gives the two together; it arrives when the
    // later one would), which halves the flows inside nodes at 16384 GPUs.
    if (c % static_cast<std::size_t>(per_channel) == 0) merged.clear();
    for (std::size_t i = 0; i < hops; ++i) {
      const PipeHop& h = ph.hops[c][i];
      const auto [src, dst] = trees[c].hops[i];
      const double after_bytes = std::max(0.0, end[i] - K * h.t0 * h.share);
      const auto key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32U) |
                       static_cast<std::uint32_t>(dst);
      const bool chain_hop = topo.vertex(topo.gpu_vertex(src)).node == topo.vertex(topo.gpu_vertex(dst)).node;
      const auto [it, fresh] =
          chain_hop ? merged.try_emplace(key, pending.size()) : std::pair{merged.end(), true};
      if (fresh) {
        pending.push_back(PendingFlow{src, dst, chunk * K, after_bytes});
      } else {
        PendingFlow& p = pending[it->second];
        p.bytes += chunk * K;
        p.after_bytes_s = std::max(p.after_bytes_s, after_bytes);
      }
    }
  }
  for (const PendingFlow& p : pending)
    add_pipelined_flow(graph, spec, p.src, p.dst, p.bytes, p.after_bytes_s, 0.0);
}

}  // namespace

int tree_nodes(const topologies::Topology& topo, const std::vector<int>& ranks) {
  std::vector<char> seen(static_cast<std::size_t>(topo.nodes), 0);
  int count = 0;
  for (const int g : ranks) {
    char& s = seen[static_cast<std::size_t>(topo.vertex(topo.gpu_vertex(g)).node)];
    count += s == 0;
    s = 1;
  }
  return count;
}

int trees_per_channel(const topologies::Topology& topo, const std::vector<int>& ranks) {
  return tree_nodes(topo, ranks) > 1 ? 2 : 1;
}

void add_tree(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec, Fidelity level,
              int chunks) {
  if (spec.ranks.size() < 2) return;
  const int K = chunks;
  const int per_channel = trees_per_channel(topo, spec.ranks);
  const double chunk = spec.bytes / spec.channels / per_channel / K;
  std::vector<ChannelTree> trees;
  trees.reserve(static_cast<std::size_t>(spec.channels) * static_cast<std::size_t>(per_channel));
  for (int c = 0; c < spec.channels; ++c)
    for (int t = 0; t < per_channel; ++t) trees.push_back(channel_tree(topo, spec.ranks, c, t));
  if (level != Fidelity::chunk) {
    add_coarse_tree(graph, topo, spec, trees, per_channel, chunk, K);
    return;
  }
  for (const auto& t : trees) add_dag_chunks(graph, spec, t.hops, t.feeds, chunk, K);
}

}  // namespace commstack::sim::detail
