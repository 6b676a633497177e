#pragma once
// Replays an imported trace (workloads/importers/) on a cluster: every op keeps its traced
// duration except communication, which is re-simulated on the SimGrid engine for the target
// topology; the op graph's dependencies (CPU threads, CUDA streams, launches, synchronizations,
// collective rendezvous) are scheduled by the same scheduler `commstack train` uses. The result
// holds the replayed and the traced iteration time side by side and a breakdown of both.
// Library entry point for `commstack replay` and for what-if scenarios (docs/replay.md).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/simulator.hpp"
#include "sim/train/comm_costs.hpp"
#include "sim/train/scheduler.hpp"
#include "topologies/cluster.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/importers/imported_trace.hpp"

namespace commstack::sim::replay {

struct ReplayOptions {
  // Data-parallel scale-out: the traced job becomes replica 0 of `scale_dp` identical replicas
  // (rank r of replica j is r + j * world). Process groups spanning the whole traced world are
  // data parallel and widen over all replicas; every other group is replicated per replica and
  // its replicas run at the same time (docs/replay.md).
  int scale_dp = 1;
  // Both set: measured GPU compute is rescaled from the traced GPU to the target one
  // (GEMM/attention kernels by the peak FLOP/s ratio, every other kernel and copy by the HBM
  // bandwidth ratio). Unset: measured durations are kept as they are.
  std::optional<workloads::ComputeProfile> traced_gpu, target_gpu;
  train::CommSettings comm;
};

// Time split of one rank's iteration, from the union of its GPU op intervals.
struct Breakdown {
  double iteration_s = 0;
  double compute_s = 0;         // GPU busy with non-communication ops
  double comm_s = 0;            // GPU busy with communication
  double exposed_comm_s = 0;    // communication while no compute op runs
  double idle_s = 0;            // no GPU op at all (launch gaps, CPU bound, waiting)
  double comm_op_sum_s = 0;     // sum of communication op durations
};

struct RankResult {
  int rank = 0;
  double traced_s = 0, replayed_s = 0;
};

struct ReplayResult {
  workloads::OpGraph graph;       // the graph that was run (communicators widened by scale_dp)
  train::Schedule schedule;       // replayed start/finish per op
  std::vector<double> duration;   // replayed duration per op
  // Traced start per op: from the trace, or (formats without timestamps: Chakra) the graph
  // scheduled with the traced durations; empty when the trace has no durations (NCCL logs).
  std::vector<double> traced_start_s;
  std::vector<RankResult> ranks;
  int critical_rank = 0;          // the traced rank whose replayed iteration is longest
  double traced_s = 0, replayed_s = 0;
  Breakdown traced, replayed;     // of the critical rank
  int world = 0;                  // replayed world (traced world x scale_dp)
  int resimulated_ops = 0;        // communication ops re-simulated
  int kept_comm_ops = 0;          // communication ops that keep their traced duration
  int simulations = 0;
  long long flows = 0;
  double scale_gemm = 1, scale_memory = 1;  // compute rescaling factors applied
  std::vector<std::string> assumptions;      // what the replay assumed, in plain words
};

// Throws InputError when the cluster has fewer GPUs than the replayed world.
// Where a trace's ranks run (docs/replay.md "Rank placement"): by the hosts the trace names when it
// names them (NCCL logs), else rank r on GPU r. InputError when a host runs more ranks than a node
// has GPUs.
struct RankPlacement {
  std::vector<int> gpu_of;  // GPU of each rank of the world x scale_dp; empty: rank r on GPU r
  int nodes = 0;            // nodes the placement needs
  std::string assumption;   // the rule applied, in plain words
};
RankPlacement place_ranks(const workloads::ImportedTrace& trace, int scale_dp, int gpus_per_node);

ReplayResult replay(const workloads::ImportedTrace& trace, Simulator& sim, const ReplayOptions& options);

// NCCL's word on a multi-node NVLink domain (ImportedTrace::multi_node_nvlink): a trace that ran
// without one (its log says MNNVL 0: no IMEX channel, NCCL_MNNVL_ENABLE=0) on a cluster whose nodes
// share NVLink domains is replayed with each node its own domain, the nodes over their NICs, as NCCL
// ran it. Changes `spec` and returns the assumption to report; "" when nothing changes.
std::string apply_traced_mnnvl(const workloads::ImportedTrace& trace, topologies::ClusterSpec& spec);

// Deterministic JSON (ordered keys) of the result; `cluster` names the target.
nlohmann::ordered_json to_json(const workloads::ImportedTrace& trace, const ReplayResult& r, const std::string& cluster);
std::string format_text(const workloads::ImportedTrace& trace, const ReplayResult& r, const std::string& cluster);
// Chrome/Perfetto trace: per traced rank one process "traced rank N" and one "replayed rank N",
// one thread per CPU thread / CUDA stream, times in microseconds from the iteration start.
nlohmann::ordered_json perfetto_trace(const workloads::ImportedTrace& trace, const ReplayResult& r);

}  // namespace commstack::sim::replay
