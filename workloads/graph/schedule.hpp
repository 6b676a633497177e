#pragma once
// Pipeline schedules: the order in which one pipeline stage runs forward (F) and backward (B)
// passes of micro-batches (and model chunks, for the interleaved schedule). Same order as
// Megatron-LM's schedules.py (forward_backward_pipelining_without_interleaving / _with_interleaving).
#include <cstdint>
#include <vector>

#include "workloads/parallel/parallel.hpp"

namespace commstack::workloads {

struct ScheduleStep {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0 for 1F1B)
  bool operator==(const ScheduleStep&) const = default;
};

// 1F1B: min(pp - stage - 1, m) warm-up forwards, then alternating F/B, then the cool-down Bs.
// Interleaved (virtual_stages = v > 1, m % pp == 0): warm-up (pp - stage - 1)*2 + (v - 1)*pp
// forward chunks (all m*v when m == pp), chunk of forward step k = (k mod pp*v) / pp, backward
// chunks in reverse, micro-batch of step k = (k / (pp*v))*pp + k mod pp.
std::vector<ScheduleStep> pipeline_schedule(int pp, int stage, std::int64_t micro_batches, int virtual_stages);

// Forward steps before the first backward (the warm-up depth, 1F1B: min(pp - stage, m)).
int forwards_before_first_backward(const std::vector<ScheduleStep>& steps);

}  // namespace commstack::workloads
