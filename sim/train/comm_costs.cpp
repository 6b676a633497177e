#include "sim/train/comm_costs.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace commstack::sim::train {
namespace {

CollectiveOp to_sim_op(workloads::Collective c) {
  switch (c) {
    case workloads::Collective::all_reduce: return CollectiveOp::allreduce;
    case workloads::Collective::all_gather: return CollectiveOp::allgather;
    case workloads::Collective::reduce_scatter: return CollectiveOp::reducescatter;
    case workloads::Collective::all_to_all: return CollectiveOp::alltoall;
    // Root: the group's first rank (CollectiveSpec::root 0); the op graph does not carry one.
    case workloads::Collective::broadcast: return CollectiveOp::broadcast;
    case workloads::Collective::reduce: return CollectiveOp::reduce;
    case workloads::Collective::none: break;
  }
  throw std::logic_error("CommCosts: op without a collective type");
}

// NCCL's Simple protocol moves 4 FIFO slots of 512 KiB per ring step (same default as
// `commstack collective`); all-to-all and point-to-point flows are not chunked.
double chunk_for(CollectiveOp op) {
  return op == CollectiveOp::alltoall ? 0.0 : 2.0 * 1024 * 1024;
}

// Flows one collective simulation may hold at the automatic fidelity, all siblings together
// (a training iteration has tens of distinct collectives; each SimGrid run stays ~1 s).
constexpr long long kSiblingFlowBudget = 100'000;

}  // namespace

CommCosts::CommCosts(Simulator& sim, const workloads::RankLayout& layout, const CommSettings& settings)
    : CommCosts(sim, settings) {
  layout_ = &layout;
}

CommCosts::CommCosts(Simulator& sim, const CommSettings& settings) : sim_(sim), settings_(settings) {
  // Large batches of sibling rings start from actors (the engine's fast path; it lost successors
  // before d784728 and is pinned against the host-to-host path by test_sim_actor_path.cpp).
  sim_.set_actor_threshold(settings_.actor_threshold);
  if (settings_.channels > 0) {
    channels_ = settings_.channels;
  } else {
    // One ring per NIC of a node, so that a multi-node ring uses every rail.
    int nics = 0;
    for (const auto& v : sim_.topology().vertices()) {
      if (v.kind == topologies::VertexKind::nic && v.node == 0) ++nics;
    }
    channels_ = std::clamp(nics, 1, 64);
  }
}

double CommCosts::collective(workloads::GroupKind kind, workloads::Collective op, std::uint64_t bytes) {
  if (layout_ == nullptr) throw std::logic_error("CommCosts::collective: no rank layout");
  const auto key = std::make_tuple(static_cast<int>(kind), static_cast<int>(op), bytes);
  if (auto it = coll_cache_.find(key); it != coll_cache_.end()) return it->second;
  // Siblings: every group of the kind inside pipeline stage 0. Groups of other stages run at other
  // moments (stages reach their gradient reduction one after another) on other nodes, and the
  // topology is taken as symmetric across stages (the assumption rank folding already makes).
  // Groups spanning stages (embedding) are all taken.
  std::vector<std::vector<int>> groups;
  for (auto& grp : layout_->groups(kind)) {
    bool stage0 = true;
    for (int r : grp) stage0 = stage0 && layout_->coord(r).pp == 0;
    if (stage0 || kind == workloads::GroupKind::embedding || kind == workloads::GroupKind::pp) groups.push_back(std::move(grp));
  }
  const double t = simulate(groups, op, bytes);
  coll_cache_.emplace(key, t);
  return t;
}

double CommCosts::p2p(int src, int dst, std::uint64_t bytes) {
  if (layout_ == nullptr) throw std::logic_error("CommCosts::p2p: no rank layout");
  const workloads::RankLayout& layout = *layout_;
  const workloads::RankCoord a = layout.coord(src);
  const workloads::RankCoord b = layout.coord(dst);
  // Only the pipeline stage and the CP ring position may differ between the two ends; that shift
  // applied to every rank of the source stage gives the sibling pairs sending at the same moment.
  const int cp_size = static_cast<int>(layout.group_of(workloads::GroupKind::cp, src).size());
  const int cp_shift = ((b.cp - a.cp) % cp_size + cp_size) % cp_size;
  const auto key = std::make_tuple(a.pp, b.pp, cp_shift, bytes);
  if (auto it = p2p_cache_.find(key); it != p2p_cache_.end()) return it->second;
  FlowGraph graph;
  for (int r = 0; r < layout.world(); ++r) {
    workloads::RankCoord c = layout.coord(r);
    if (c.pp != a.pp) continue;
    workloads::RankCoord d = c;
    d.pp = b.pp;
    d.cp = (c.cp + cp_shift) % cp_size;
    Flow f;
    f.src = r;
    f.dst = layout.rank(d);
    f.bytes = static_cast<double>(bytes);
    graph.add_flow(f);
  }
  const RunResult res = sim_.run(graph);
  ++simulations_;
  flows_ += res.flow_count;
  p2p_cache_.emplace(key, res.duration_s);
  return res.duration_s;
}

double CommCosts::simulate(const std::vector<std::vector<int>>& groups, workloads::Collective op, std::uint64_t bytes) {
  double t = 0;
  if (bytes > 0 && !groups.empty() && groups.front().size() > 1) {
    std::vector<CollectiveSpec> specs;
    for (const auto& ranks : groups) {
      CollectiveSpec spec;
      spec.op = to_sim_op(op);
      spec.ranks = ranks;
      spec.bytes = static_cast<double>(bytes);
      spec.channels = channels_;
      spec.chunk_bytes = chunk_for(spec.op);
      spec.fidelity = settings_.fidelity;
      spec.step_overhead_s = settings_.step_overhead_s;
      spec.group = static_cast<int>(specs.size());
      specs.push_back(std::move(spec));
    }
    if (settings_.fidelity == Fidelity::automatic) {
      // The finest level whose flows, all siblings together, fit the budget.
      Fidelity level = Fidelity::edge;
      for (Fidelity f : {Fidelity::chunk, Fidelity::step}) {
        CollectiveSpec probe = specs.front();
        probe.fidelity = f;
        if (plan_collective(sim_.topology(), probe).flows * static_cast<long long>(specs.size()) <= kSiblingFlowBudget) {
          level = f;
          break;
        }
      }
      for (auto& spec : specs) spec.fidelity = level;
    }
    // Siblings that share no link run independently, and identical ones take the same time:
    // simulate one of each kind (the slowest is the answer, as in the joint run). Otherwise they
    // contend and run together.
    std::vector<FlowGraph> graphs(specs.size());
    std::vector<GraphFootprint> footprints;
    footprints.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      add_collective(graphs[i], sim_.topology(), specs[i]);
      footprints.push_back(footprint(sim_.topology(), graphs[i]));
    }
    if (disjoint(footprints, sim_.topology().link_count())) {
      for (std::size_t i = 0; i < specs.size(); ++i) t = std::max(t, run_alone(graphs[i], footprints[i]));
    } else {
      FlowGraph graph;
      for (const FlowGraph& g : graphs) graph.append(g);
      const RunResult r = sim_.run(graph);
      t = r.duration_s;
      ++simulations_;
      flows_ += r.flow_count;
    }
  }
  return t;
}

double CommCosts::run_alone(const FlowGraph& graph, const GraphFootprint& fp) {
  if (auto it = alone_cache_.find(fp.signature); it != alone_cache_.end()) return it->second;
  const RunResult r = sim_.run(graph);
  ++simulations_;
  flows_ += r.flow_count;
  alone_cache_.emplace(fp.signature, r.duration_s);
  return r.duration_s;
}

double CommCosts::collective_groups(const std::vector<std::vector<int>>& groups, workloads::Collective op,
                                    std::uint64_t bytes) {
  auto key = std::make_tuple(groups, static_cast<int>(op), bytes);
  if (auto it = groups_cache_.find(key); it != groups_cache_.end()) return it->second;
  const double t = simulate(groups, op, bytes);
  groups_cache_.emplace(std::move(key), t);
  return t;
}

double CommCosts::p2p_pairs(const std::vector<std::pair<int, int>>& pairs, std::uint64_t bytes) {
  auto key = std::make_pair(pairs, bytes);
  if (auto it = pairs_cache_.find(key); it != pairs_cache_.end()) return it->second;
  double t = 0;
  if (bytes > 0 && !pairs.empty()) {
    FlowGraph graph;
    for (const auto& [src, dst] : pairs) {
      Flow f;
      f.src = src;
      f.dst = dst;
      f.bytes = static_cast<double>(bytes);
      graph.add_flow(f);
    }
    const RunResult res = sim_.run(graph);
    ++simulations_;
    flows_ += res.flow_count;
    t = res.duration_s;
  }
  pairs_cache_.emplace(std::move(key), t);
  return t;
}

}  // namespace commstack::sim::train
