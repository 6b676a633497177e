#pragma once
// One simulated training iteration (docs/training.md): the op graph of workloads/ scheduled in
// time, compute ops timed by the roofline compute model, communication timed by the SimGrid
// engine on the real topology (CommCosts), and the result broken down into compute, exposed
// communication per parallel dimension and the pipeline bubble.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/train/comm_costs.hpp"
#include "sim/train/scheduler.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/graph/op_graph.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::sim::train {

struct TrainSetup {
  workloads::ModelSpec model;
  workloads::ParallelConfig par;  // must have passed workloads::validate() for the simulator's GPU count
  workloads::ComputeProfile compute;
  CommSettings comm;
  // true: one representative rank per pipeline stage (all TP/CP/DP ranks of a stage are alike on
  // a symmetric topology); false: every rank (small jobs only; used to test that folding is exact).
  bool fold = true;
};

// Where the time of one rank goes. compute + the exposed parts + tail = iteration time.
struct Breakdown {
  double compute = 0;  // the compute stream busy
  double tp = 0, cp = 0, ep = 0, dp = 0;  // compute stream idle, waiting for that dimension's communication
  double pp = 0;  // idle waiting for a pipeline message: the pipeline bubble (fill, drain, stalls) plus transfer time
  double tail = 0;  // after this rank's last compute op until the iteration ends (slower stages, post-step gathers)
  double total() const { return compute + tp + cp + ep + dp + pp + tail; }
};

// One distinct communication op of the iteration, as the critical rank runs it.
struct CommLine {
  std::string stream;   // tp, cp, ep, dp, pp
  std::string what;     // "all_reduce over tp (8 ranks)", "send (stage 0 -> 1)"
  std::uint64_t bytes = 0;
  int count = 0;        // per iteration on the critical rank
  double each_s = 0;
  double total_s = 0;
};

struct RankSummary {
  int rank = 0;
  int stage = 0;
  double compute_s = 0;  // busy time of the compute stream
  double finish_s = 0;
};

struct TrainResult {
  double iteration_s = 0;
  double compute_bound_s = 0;   // the largest compute-stream busy time of any rank: no iteration is faster
  double model_flops = 0;       // per iteration, all GPUs (3 passes)
  double hardware_flops = 0;    // + recomputation
  double tokens_per_iteration = 0;  // global batch x sequence length
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double peak_flops = 0;        // per GPU, at the run's precision
  int gpus = 0;
  int critical_rank = 0;        // the generated rank whose compute stream ends last
  Breakdown breakdown;          // of the critical rank
  Breakdown comm_busy;          // summed durations of the critical rank's communication (overlapped or not); compute unused
  std::vector<CommLine> comm;   // distinct communication ops of the critical rank
  std::vector<RankSummary> ranks;
  workloads::MemoryEstimate memory;
  int simulations = 0;          // SimGrid runs (distinct communication ops)
  long long flows = 0;
  workloads::OpGraph graph;
  Schedule schedule;
};

// Simulates one iteration on `sim` (its topology must have par.gpus() GPUs).
TrainResult simulate_training(Simulator& sim, const TrainSetup& setup);
// The same with the communication costs taken from (and added to) `costs`, which must have been
// built on `sim` for the rank layout of setup.par and with setup.comm: configurations that share a
// layout (`commstack plan`) then simulate each distinct collective once. simulations/flows count
// only this call's new SimGrid runs.
TrainResult simulate_training(Simulator& sim, const TrainSetup& setup, CommCosts& costs);

}  // namespace commstack::sim::train
