#pragma once
// A cheap lower bound on the iteration time `simulate_training` would predict for one
// configuration, used by `commstack plan` to skip configurations that cannot make the top K
// (branch and bound, docs/plan.md). It never runs SimGrid and never builds the full op graph.
//
// Why it is a lower bound. The training scheduler (sim/train/scheduler.hpp) is a max-plus system:
// every op starts at the latest finish of what it waits for, so shortening any duration never
// makes an op finish later. The bound takes the op graph's own dependency chains with durations
// that are each <= the simulated ones:
//   * compute ops: the exact compute-model time (the same workloads::compute_time the simulator uses);
//   * a collective or message: the bytes one rank must push out of its GPU divided by the GPU's total
//     link bandwidth (sum of its NVLink, PCIe ... links), a bound for any max-min fair flow model:
//     ring all-reduce 2(n-1)/n S, all-gather / reduce-scatter / all-to-all (n-1)/n S, a message S.
// The chains (1F1B or interleaved, one representative rank per pipeline stage s):
//   fill:   stage s's first compute op waits for micro-batch 0's forward (model chunk 0) through
//           stages 0..s-1 and their messages;
//   busy:   then every compute op of stage s runs one after another, each after the blocking
//           collective (TP, EP, ZeRO-3 gather) that sits between it and the previous compute op;
//   drain:  stage 0 ends after the backward of the last micro-batch (chunk 0) went back through
//           stages s-1..0;
//   post:   the iteration ends after the non-blocking ops that wait for the last compute op (DP
//           parameter gathers, the last gradient bucket before the optimizer).
// bound = max over s of fill_s + max(busy_s + post_s, busy up to the last backward + drain_s).
// tests/unit/test_plan_bound.cpp checks bound <= simulated time on a set of configurations.
//
// Cost: the per-micro-batch numbers come from a reduced op graph with 2 micro-batches (2 x pp for
// the interleaved schedule), since every micro-batch runs the same ops.
#include "sim/plan/search_space.hpp"
#include "topologies/topology.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/graph/op_graph.hpp"

namespace commstack::sim::plan {

// The largest total bandwidth (bytes/s, one direction) of the links of any GPU of `topo`.
double gpu_egress_bandwidth(const topologies::Topology& topo);

// Seconds the op takes at the least: bytes one rank must send / `egress_Bps` (0 for compute ops).
double comm_lower_bound_s(const workloads::OpGraph& g, const workloads::Op& op, double egress_Bps);

struct IterationBound {
  double seconds = 0;       // the bound
  int stage = 0;            // the pipeline stage that gives it
  double busy_s = 0;        // that stage's compute + blocking-communication chain
  double fill_drain_s = 0;  // what the pipeline adds on top (fill, drain or post)
};

IterationBound iteration_lower_bound(const Candidate& c, const workloads::ComputeProfile& compute, double egress_Bps);

}  // namespace commstack::sim::plan
