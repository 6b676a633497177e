#pragma once
// Builds the op graph of one training iteration from a model and a validated parallel config:
// per rank, per micro-batch, the forward/backward (and recompute) compute ops of every layer with
// FLOPs and HBM bytes, the TP / CP / EP collectives and point-to-point messages with their exact
// sizes, the PP sends/recvs between stages in 1F1B or interleaved order, the DP gradient
// reduction (bucketed all-reduce, or reduce-scatter + all-gather for ZeRO), and the optimizer.
#include <vector>

#include "workloads/graph/op_graph.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

struct GraphOptions {
  // Ranks to generate. Empty: every rank. RankLayout::representative_ranks() gives one rank per
  // pipeline stage, which is enough when the simulator treats the other ranks as symmetric.
  std::vector<int> ranks;
};

// `par` must have passed validate() for `model`.
OpGraph generate_op_graph(const ModelSpec& model, const ParallelConfig& par, const GraphOptions& opts = {});

}  // namespace commstack::workloads
