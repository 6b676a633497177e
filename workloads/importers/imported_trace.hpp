#pragma once
// What every trace importer returns (Kineto / PyTorch profiler JSON, Chakra JSON, NCCL_DEBUG=INFO
// logs, OTF2): one iteration of the traced job as the same op graph the workload generator
// builds (workloads/graph/op_graph.hpp), plus what the trace said about itself. The replay
// (sim/replay/replay.hpp) runs the graph on a cluster: ops with a traced duration keep it
// (optionally rescaled to another GPU), collectives and send/recv are re-simulated.
//
// Conventions an importer follows:
// - graph.ranks: the traced ranks (sorted); graph.world: the job's world size (>= every rank).
//   Communicator members that were not traced behave like the traced ones (the scheduler's
//   folding rule), so a subset of ranks replays as the whole job.
// - Every op has measured_s >= 0 (its traced duration, seconds); communication ops keep theirs
//   too, for the side-by-side timeline and the "traced comm" column, but replay re-simulates them.
// - Collective instances match across ranks by (communicator, instance): the n-th collective a
//   rank issues on a process group. Sizes follow op_graph.hpp's nccl-tests convention.
// - deps only point to earlier op ids of the same rank (check_graph holds).
// - traced_start_s: per op id, the traced start relative to the rank's iteration start, so
//   reports can draw the traced timeline next to the replayed one.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/graph/op_graph.hpp"

namespace commstack::workloads {

struct ImportedTrace {
  OpGraph graph;
  std::string format;  // "kineto", "chakra", "nccl-log", "otf2"
  std::string source;  // files read, e.g. "2 files in traces/run1 (rank 0, 1)"
  std::string device;  // GPU model the trace names (Kineto deviceProperties), "" if unknown
  std::string iteration;  // which iteration was taken, e.g. "ProfilerStep#5"
  std::map<int, double> traced_iteration_s;  // per traced rank: the iteration's traced duration
  double traced_s = 0;                        // the traced iteration time (max over ranks)
  std::vector<double> traced_start_s;         // per op id (see above); empty if unknown
  std::vector<std::string> warnings;          // things skipped or assumed, in plain words
  // Every op carries its micro-batch (Op::micro_batch, -1 per-iteration), phase and layer
  // (Op::layer, -1 none): commstack --otf2 archives. `replay --scale-pp` needs it.
  bool steps_known = false;
  // The host each traced rank ran on, where the format says (NCCL logs: "host:pid:tid [dev]"); the
  // replay puts each host on its own node. Empty when unknown.
  std::map<int, std::string> rank_host;
  // Whether NCCL used a multi-node NVLink domain, where the trace says (NCCL logs: the MNNVL field
  // of "comm 0x.. rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0"; 1 on any line counts).
  // Unset when unknown.
  std::optional<bool> multi_node_nvlink;
};

}  // namespace commstack::workloads
