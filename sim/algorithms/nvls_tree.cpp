// NVLSTree across NVLink domains, as NCCL runs its all-reduce on multi-node NVSwitch systems
// (src/device/all_reduce.h, runTreeUpDown for NVLS_TREE; src/graph/connect.cc): inside each domain
// NVLS, between domains NCCL's double binary tree (select/nccl_trees.hpp). Every GPU of a domain is a
// head owning 1/g of each channel's bytes (NCCL's NVLS heads, one per GPU with a NIC on DGX-class
// nodes), and its shard runs on both trees, half each, as NCCL runs a tree channel on both trees.
// For its half-shard a head's multimem load-reduce sums its domain's g copies in the NVSwitch (g
// reads, one result), the partial sums go up the tree between the heads of the same index in each
// domain, the root's full sum comes back down, and each head stores it with a multimem store that
// the switch writes to every GPU of its domain. A head forwards up once its own result and every
// child's part have arrived; the root, or a head that got the sum from its parent, sends it down to
// its children and stores it.
//
// The hops all carry one chunk of the half-shard, so the pipeline is a dag of equal chunks like
// NVLS's (dag.cpp): the chunk level's flows, or the coarse levels timed by its pipeline.
#include <vector>

#include "sim/algorithms/detail.hpp"
#include "sim/select/nccl_trees.hpp"

namespace commstack::sim::detail {

std::vector<std::vector<int>> nvls_domains(const topologies::Topology& topo, const std::vector<int>& ranks) {
  std::vector<int> switches;
  std::vector<std::vector<int>> domains;
  for (const int r : ranks) {
    const int sw = topo.nvswitch_endpoint(r);
    std::size_t k = 0;
    while (k < switches.size() && switches[k] != sw) ++k;
    if (k == switches.size()) {
      switches.push_back(sw);
      domains.emplace_back();
    }
    domains[k].push_back(r);
  }
  return domains;
}

ChannelDag nvls_tree_dag(const topologies::Topology& topo, const std::vector<int>& ranks) {
  const auto domains = nvls_domains(topo, ranks);
  const auto G = static_cast<int>(domains.size());
  const auto g = static_cast<int>(domains.front().size());
  ChannelDag d;
  for (int j = 0; j < g; ++j) {
    for (int tree = 0; tree < 2; ++tree) {
      std::vector<int> parent(static_cast<std::size_t>(G)), result(parent.size()), store(parent.size()),
          up(parent.size(), -1), down(parent.size(), -1);
      std::vector<std::vector<int>> children(parent.size());
      auto head = [&](int k) { return domains[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)]; };
      for (int k = 0; k < G; ++k) {
        const auto ks = static_cast<std::size_t>(k);
        parent[ks] = select::nccl_dtree(G, k)[static_cast<std::size_t>(tree)].up;
        if (parent[ks] >= 0) children[static_cast<std::size_t>(parent[ks])].push_back(k);
        const int sw = topo.nvswitch_endpoint(head(k));
        // The domain's reduction into the switch and the sum down to the head; the full sum stored
        // once and written by the switch to every GPU of the domain.
        result[ks] = add_switch_reduce(d, domains[ks], sw, head(k));
        store[ks] = add_switch_multicast(d, domains[ks], sw, head(k));
      }
      for (int k = 0; k < G; ++k) {
        const auto ks = static_cast<std::size_t>(k);
        if (parent[ks] < 0) continue;
        up[ks] = d.add(head(k), head(parent[ks]));
        down[ks] = d.add(head(parent[ks]), head(k));
      }
      for (int k = 0; k < G; ++k) {
        const auto ks = static_cast<std::size_t>(k);
        // What completes a domain's partial sum: its own result and every child's part.
        std::vector<int> partial{result[ks]};
        for (const int c : children[ks]) partial.push_back(up[static_cast<std::size_t>(c)]);
        // What the full sum then feeds: up to the parent, or at the root down to the children and the store.
        std::vector<int> then;
        if (parent[ks] >= 0) {
          then.push_back(up[ks]);
        } else {
          for (const int c : children[ks]) then.push_back(down[static_cast<std::size_t>(c)]);
          then.push_back(store[ks]);
        }
        for (const int p : partial)
          for (const int t : then) d.feeds[static_cast<std::size_t>(p)].push_back(t);
        // The sum from the parent goes on down and into the domain.
        if (parent[ks] >= 0) {
          for (const int c : children[ks])
            d.feeds[static_cast<std::size_t>(down[ks])].push_back(down[static_cast<std::size_t>(c)]);
          d.feeds[static_cast<std::size_t>(down[ks])].push_back(store[ks]);
        }
      }
    }
  }
  return d;
}

void add_nvls_tree(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec,
                   Fidelity level, int chunks) {
  const ChannelDag dag = nvls_tree_dag(topo, spec.ranks);
  const auto g = static_cast<double>(nvls_domains(topo, spec.ranks).front().size());
  add_dag(graph, topo, spec, dag, level, spec.bytes / g / 2 / spec.channels / chunks, chunks);
}

}  // namespace commstack::sim::detail
