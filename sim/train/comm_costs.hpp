#pragma once
// Durations of the communication ops of a training iteration, each measured once on the
// SimGrid engine and cached. A collective is simulated with ALL its sibling communicators of the
// same kind running at the same time (the 8 DP groups of a TP8 job cross the same NIC rails and
// spine switches), so the contention the real job sees is in the number. A point-to-point message
// (PP activation, CP K/V chunk) is simulated together with every sibling pair that sends at the
// same moment (all TP/CP/DP ranks of a stage send to the next stage at once).
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/algorithms/collective.hpp"
#include "sim/engine/graph_footprint.hpp"
#include "sim/engine/simulator.hpp"
#include "workloads/graph/op_graph.hpp"
#include "workloads/parallel/layout.hpp"

namespace commstack::sim::train {

struct CommSettings {
  int channels = 0;  // rings per collective; 0: one per NIC of a node (every rail used), at least 1
  Fidelity fidelity = Fidelity::automatic;
  double step_overhead_s = 0;  // per ring step software cost (uncalibrated: 0)
  // Ready flows at which the engine starts them from actors (Simulator::set_actor_threshold).
  long long actor_threshold = 2048;
};

class CommCosts {
public:
  CommCosts(Simulator& sim, const workloads::RankLayout& layout, const CommSettings& settings);
  // Without a Megatron layout (replayed traces): only the explicit-group calls below may be used.
  CommCosts(Simulator& sim, const CommSettings& settings);

  // Seconds one collective of `kind` x `op` x `bytes` takes when every communicator of that kind
  // runs it at once (the slowest sibling's finish).
  double collective(workloads::GroupKind kind, workloads::Collective op, std::uint64_t bytes);
  // Seconds for a message of `bytes` from `src` to `dst` while every sibling pair (same offset
  // in pipeline stage and CP index, for all TP/CP/DP coordinates of src's stage) sends too.
  double p2p(int src, int dst, std::uint64_t bytes);

  // Seconds one collective takes on the first of `groups` (GPU ranks of the topology) while every
  // other group runs the same collective at the same time (siblings sharing the fabric); the
  // slowest group's finish. Used for communicators read from traces.
  double collective_groups(const std::vector<std::vector<int>>& groups, workloads::Collective op, std::uint64_t bytes);
  // Seconds for `bytes` to go over every (src, dst) pair at once (the slowest pair's finish).
  double p2p_pairs(const std::vector<std::pair<int, int>>& pairs, std::uint64_t bytes);

  int simulations() const { return simulations_; }
  long long flows() const { return flows_; }
  int channels() const { return channels_; }

private:
  double simulate(const std::vector<std::vector<int>>& groups, workloads::Collective op, std::uint64_t bytes);
  // One graph that shares no link with the others running beside it, cached by its signature.
  double run_alone(const FlowGraph& graph, const GraphFootprint& fp);

  Simulator& sim_;
  const workloads::RankLayout* layout_ = nullptr;
  CommSettings settings_;
  int channels_ = 1;
  std::map<std::tuple<int, int, std::uint64_t>, double> coll_cache_;
  std::map<std::tuple<int, int, int, std::uint64_t>, double> p2p_cache_;  // (src stage, dst stage, cp shift, bytes)
  std::map<std::tuple<std::vector<std::vector<int>>, int, std::uint64_t>, double> groups_cache_;
  std::map<std::pair<std::vector<std::pair<int, int>>, std::uint64_t>, double> pairs_cache_;
  std::map<std::vector<std::int64_t>, double> alone_cache_;  // GraphFootprint::signature -> seconds
  int simulations_ = 0;
  long long flows_ = 0;
};

}  // namespace commstack::sim::train
