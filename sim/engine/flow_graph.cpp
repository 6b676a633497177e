#include "sim/engine/flow_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace commstack::sim {

int FlowGraph::add_flow(const Flow& flow) {
  if (!(flow.bytes >= 0) || !(flow.extra_latency_s >= 0) || !(flow.delay_s >= 0) || flow.group < 0) {
    throw std::logic_error("FlowGraph::add_flow: negative bytes, latency or group");
  }
  flows_.push_back(flow);
  groups_ = std::max(groups_, flow.group + 1);
  return size() - 1;
}

void FlowGraph::add_dependency(int before, int after, Dep kind) {
  if (before < 0 || after < 0 || before >= size() || after >= size() || before == after) {
    throw std::logic_error("FlowGraph::add_dependency: bad flow id");
  }
  if (after > (1 << 30)) throw std::logic_error("FlowGraph: too many flows");
  edges_.push_back(Edge{before, after, kind});
}

void FlowGraph::append(const FlowGraph& other) {
  const int offset = size();
  if (static_cast<long long>(offset) + other.size() > (1 << 30))
    throw std::logic_error("FlowGraph: too many flows");
  flows_.insert(flows_.end(), other.flows_.begin(), other.flows_.end());
  groups_ = std::max(groups_, other.groups_);
  for (const Edge& e : other.edges_) edges_.push_back(Edge{e.before + offset, e.after + offset, e.kind});
}

FlowGraph::Adjacency FlowGraph::adjacency() const {
  Adjacency adj;
  const auto n = flows_.size();
  adj.offsets.assign(n + 1, 0);
  adj.predecessor_count.assign(n, 0);
  for (auto [b, a, k] : edges_) {
    ++adj.offsets[static_cast<std::size_t>(b) + 1];
    ++adj.predecessor_count[static_cast<std::size_t>(a)];
  }
  for (std::size_t i = 0; i < n; ++i) adj.offsets[i + 1] += adj.offsets[i];
  adj.successors.resize(edges_.size());
  std::vector<int> fill(adj.offsets.begin(), adj.offsets.end() - 1);
  // Edges are visited in insertion order, so successor order (and thus the run) is deterministic.
  for (auto [b, a, k] : edges_) {
    adj.successors[static_cast<std::size_t>(fill[static_cast<std::size_t>(b)]++)] = 2 * a + (k == Dep::sent ? 1 : 0);
  }
  return adj;
}

}  // namespace commstack::sim
