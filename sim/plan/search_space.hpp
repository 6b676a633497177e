#pragma once
// The configurations `commstack plan` considers (docs/plan.md): every combination of TP, CP, PP,
// virtual stages, DP (the rest of the GPUs), EP (MoE models), ZeRO stage, micro-batch size,
// sequence parallelism and activation recomputation that multiplies to the cluster's GPU count,
// checked with the same rules `commstack train` applies (workloads::validate) and the same memory
// model (workloads::estimate_memory). Candidates that break a rule or do not fit are counted by
// reason, so the user sees where the search space went.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::sim::plan {

// Each list restricts one dimension; an empty list means "every legal value" (bounded by the max_*
// fields). Values outside the legal range are still tried and end up in the divisibility count.
struct SearchSpace {
  std::vector<int> tp, pp, vs, cp, ep, etp, zero;  // etp empty: 1 and tp (MoE models)
  std::vector<std::int64_t> micro_batch;
  std::vector<workloads::Recompute> recompute = {workloads::Recompute::none, workloads::Recompute::selective,
                                                 workloads::Recompute::full};
  std::vector<bool> sequence_parallel = {true, false};  // only tried with tp > 1 (meaningless at tp 1)
  int max_tp = 0;          // 0: GPUs per node (TP stays on NVLink) unless tp_across_nodes
  bool tp_across_nodes = false;
  int max_vs = 8;          // default cap on model chunks per pipeline rank
  std::int64_t max_micro_batch = 8;
  // Default CP degrees keep at least this many tokens per CP rank (below it the K/V ring exchange
  // has too little attention work to hide behind); an explicit --cp list overrides it.
  std::int64_t min_tokens_per_cp_rank = 1024;
  std::int64_t global_batch = 0;  // required
  std::int64_t seq = 0;           // 0: the model's
  workloads::Precision precision = workloads::Precision::bf16;
  workloads::AttentionKernel attention = workloads::AttentionKernel::flash;  // every candidate runs this kernel
  bool tp_backward_overlap = true;  // every candidate: ParallelConfig::tp_backward_overlap
  bool overlap_grad_reduce = true;  // every candidate: ParallelConfig::overlap_grad_reduce
  bool overlap_param_gather = false;  // candidates with ZeRO 1/2: ParallelConfig::overlap_param_gather
  bool fp8_param_gather = false;      // candidates with ZeRO >= 1: ParallelConfig::fp8_param_gather
  // MoE models, every candidate: ParallelConfig::moe_token_dispatcher
  workloads::TokenDispatcher moe_token_dispatcher = workloads::TokenDispatcher::alltoall;
  double grad_bytes = 2;            // every candidate: ParallelConfig::grad_bytes (bf16 2, fp32 4)
};

struct Candidate {
  workloads::ParallelConfig par;  // validated for the model and the GPU count
  workloads::ModelSpec model;     // the model, vocabulary padded for this TP like Megatron
  workloads::MemoryEstimate memory;
  double memory_bytes = 0;        // worst stage
};

struct Enumeration {
  std::vector<Candidate> fits;    // valid and within GPU memory, in enumeration order
  long long enumerated = 0;       // combinations whose degrees multiply to the GPU count
  long long infeasible_rule = 0;  // broke a rule of workloads::validate
  long long infeasible_memory = 0;
  std::map<std::string, long long> rule_counts;  // by the field validate() names ("$.pp", "$.global_batch", ...)
  std::optional<Candidate> smallest_memory;      // the valid candidate needing the least memory (for the error)
};

// A configuration the enumeration dropped, and why (for tests and --explain style reports).
struct Rejected {
  workloads::ParallelConfig par;
  std::string reason;  // "rule: <validate message>" or "memory: <GiB needed>"
};

// Megatron's --make-vocab-size-divisible-by 128: the vocabulary padded to a multiple of 128 x tp
// (workloads::megatron_padded_vocab, the rule `commstack train` applies).
workloads::ModelSpec pad_vocab_for_tp(workloads::ModelSpec model, int tp);

// Enumerates `space` for `gpus` GPUs in nodes of `gpus_per_node`, keeping those that pass
// validate() and fit in `memory_capacity_bytes`. Deterministic order: tp, cp, pp, vs, ep, zero,
// micro-batch, sequence parallelism, recompute, each ascending as listed.
// `rejected`, when given, receives every dropped configuration.
Enumeration enumerate_candidates(const workloads::ModelSpec& model, int gpus, int gpus_per_node, const SearchSpace& space,
                                 double memory_capacity_bytes, std::vector<Rejected>* rejected = nullptr);

// Positive divisors of n in ascending order.
std::vector<std::int64_t> divisors(std::int64_t n);

}  // namespace commstack::sim::plan
