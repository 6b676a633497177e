#include "sim/plan/search_space.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace commstack::sim::plan {
namespace {

using workloads::ModelSpec;
using workloads::ParallelConfig;

template <class T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? std::move(fallback) : given;
}

// validate() messages read "<where>: $.<field>: <what>"; the field is the reason's name.
std::string rule_of(const std::string& message) {
  const auto at = message.find("$.");
  if (at == std::string::npos) return "other";
  const auto end = message.find(':', at);
  return message.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

ModelSpec pad_vocab_for_tp(ModelSpec model, int tp) {
  model.vocab = workloads::megatron_padded_vocab(model.vocab, tp);
  return model;
}

namespace {

// One configuration (a copy: validate() completes it): refused by a rule, too large for the
// GPU's memory, or kept.
void consider(Enumeration& out, const ModelSpec& m, ParallelConfig par, int gpus,
              double memory_capacity_bytes, std::vector<Rejected>* rejected) {
  ++out.enumerated;
  try {
    workloads::validate(m, par, gpus, "plan");
  } catch (const InputError& e) {
    ++out.infeasible_rule;
    ++out.rule_counts[rule_of(e.what())];
    if (rejected) rejected->push_back({par, std::string("rule: ") + e.what()});
    return;
  }
  Candidate c{par, m, workloads::estimate_memory(m, par), 0};
  c.memory_bytes = c.memory.worst().total();
  if (!out.smallest_memory || c.memory_bytes < out.smallest_memory->memory_bytes) out.smallest_memory = c;
  if (c.memory_bytes > memory_capacity_bytes) {
    ++out.infeasible_memory;
    if (rejected) rejected->push_back({c.par, "memory"});
    return;
  }
  out.fits.push_back(std::move(c));
}

// Every configuration of one (tp, cp, pp) split: virtual stages, EP, ZeRO, micro-batch, SP and
// recomputation.
void enumerate_split(Enumeration& out, const ModelSpec& m, const SearchSpace& space, int gpus,
                     std::int64_t seq, int tp, int cp, int pp, double memory_capacity_bytes,
                     std::vector<Rejected>* rejected) {
  const int dp = gpus / tp / cp / pp;
  // A pp the layers do not split over evenly may split them once the embedding and the loss count
  // as one layer each (Megatron's account_for_embedding/loss_in_pipeline_split, as Megatron-Bridge
  // runs Llama 3 405B's 126 layers over PP 8 and 16).
  const bool count_ends = m.layers % pp != 0 && (m.layers + 2) % pp == 0;
  const std::int64_t split_layers = m.layers + (count_ends ? 2 : 0);
  std::vector<int> vss = {1};
  if (pp > 1) {
    for (std::int64_t v = 2; v <= space.max_vs; ++v) {
      if (split_layers % (pp * v) == 0) vss.push_back(static_cast<int>(v));
    }
  }
  std::vector<int> eps = {1};
  if (m.moe) {
    eps.clear();
    for (std::int64_t e : divisors(m.moe->experts)) {
      if ((std::int64_t{tp} * cp * dp) % e == 0) eps.push_back(static_cast<int>(e));
    }
  }
  // Expert TP: Megatron's default (tp) and experts kept whole (1, what the published MoE recipes
  // set); 0 (not set) for a dense model.
  std::vector<int> etps = {0};
  if (m.moe) etps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
  const std::vector<int> zeros = dp * cp > 1 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0};
  std::vector<std::int64_t> mbs = {1};  // a batch DP does not divide: validate() says so once
  if (space.global_batch % dp == 0) {
    mbs.clear();
    for (std::int64_t b : divisors(space.global_batch / dp)) {
      if (b <= space.max_micro_batch) mbs.push_back(b);
    }
  }
  const std::vector<bool> sps = tp > 1 ? space.sequence_parallel : std::vector<bool>{false};
  ParallelConfig par;
  par.tp = tp;
  par.cp = cp;
  par.pp = pp;
  par.embedding_in_split = par.loss_in_split = count_ends;
  par.dp = dp;
  par.global_batch = space.global_batch;
  par.seq = seq;
  par.precision = space.precision;
  par.attention = space.attention;
  par.tp_backward_overlap = space.tp_backward_overlap;
  par.overlap_grad_reduce = space.overlap_grad_reduce;
  par.grad_bytes = space.grad_bytes;
  for (int vs : or_default(space.vs, vss)) {
    par.virtual_stages = vs;
    par.schedule =
        vs > 1 ? workloads::PipelineSchedule::interleaved : workloads::PipelineSchedule::one_f_one_b;
    for (int ep : or_default(space.ep, eps)) {
      par.ep = ep;
      for (int etp : or_default(space.etp, etps)) {  // on a dense model validate() refuses a set etp
        par.etp = etp;
        for (int zero : or_default(space.zero, zeros)) {
          par.zero = zero;
          // Only the distributed optimizer (ZeRO 1/2) gathers parameters after the step.
          par.overlap_param_gather = space.overlap_param_gather && (zero == 1 || zero == 2);
          par.fp8_param_gather = space.fp8_param_gather && zero >= 1;
          if (m.moe) par.moe_token_dispatcher = space.moe_token_dispatcher;
          for (std::int64_t mb : or_default(space.micro_batch, mbs)) {
            par.micro_batch = mb;
            for (bool sp : sps) {
              par.sequence_parallel = sp;
              for (workloads::Recompute rc : space.recompute) {
                par.recompute = rc;
                consider(out, m, par, gpus, memory_capacity_bytes, rejected);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

Enumeration enumerate_candidates(const ModelSpec& model, int gpus, int gpus_per_node, const SearchSpace& space,
                                 double memory_capacity_bytes, std::vector<Rejected>* rejected) {
  Enumeration out;
  const std::int64_t seq = space.seq > 0 ? space.seq : model.seq;
  const int max_tp = space.max_tp > 0 ? space.max_tp : space.tp_across_nodes ? gpus : std::max(gpus_per_node, 1);

  std::vector<int> tps;
  for (std::int64_t d : divisors(model.heads)) {
    if (d <= max_tp && gpus % d == 0) tps.push_back(static_cast<int>(d));
  }
  tps = or_default(space.tp, tps);

  for (int tp : tps) {
    if (tp < 1 || gpus % tp != 0) continue;
    const ModelSpec m = pad_vocab_for_tp(model, tp);
    std::vector<int> cps;
    for (std::int64_t c : divisors(gpus / tp)) {
      if (c == 1 || (seq % (2 * c) == 0 && seq / c >= space.min_tokens_per_cp_rank)) cps.push_back(static_cast<int>(c));
    }
    for (int cp : or_default(space.cp, cps)) {
      if (cp < 1 || (gpus / tp) % cp != 0) continue;
      std::vector<int> pps;
      for (std::int64_t p : divisors(m.layers)) {
        if ((gpus / tp / cp) % p == 0) pps.push_back(static_cast<int>(p));
      }
      // And those that split the layers with the embedding and the loss counted (enumerate_split).
      for (std::int64_t p : divisors(m.layers + 2)) {
        if (m.layers % p != 0 && (gpus / tp / cp) % p == 0) pps.push_back(static_cast<int>(p));
      }
      std::sort(pps.begin(), pps.end());
      for (int pp : or_default(space.pp, pps)) {
        if (pp < 1 || (gpus / tp / cp) % pp != 0) continue;
        enumerate_split(out, m, space, gpus, seq, tp, cp, pp, memory_capacity_bytes, rejected);
      }
    }
  }
  return out;
}

}  // namespace commstack::sim::plan
