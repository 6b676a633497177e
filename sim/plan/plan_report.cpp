#include "sim/plan/plan_report.hpp"

#include <cmath>

#include <fmt/format.h>

namespace commstack::sim::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
double r9(double x) { return std::round(x * 1e9) / 1e9; }
double r3(double x) { return std::round(x * 1e3) / 1e3; }

std::string rules(const Enumeration& e) {
  std::string s;
  for (const auto& [rule, n] : e.rule_counts) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", rule, n);
  return s;
}

const char* on_off(bool b) { return b ? "on" : "off"; }

// How the layers split over the stages: evenly, or with the embedding and the loss counted as
// layers (the only uneven split the planner tries, search_space.cpp).
bool counts_ends(const workloads::ParallelConfig& p) {
  return p.embedding_in_split && p.loss_in_split;
}
const char* split_name(const workloads::ParallelConfig& p) {
  return counts_ends(p) ? "embedding+loss" : "even";
}
// Expert TP of a MoE candidate; "-" (text), empty (CSV), null (JSON) for a dense model.
bool has_experts(const Candidate& c) {
  return c.model.moe.has_value();
}
std::string etp_cell(const Candidate& c, const char* dense) {
  return has_experts(c) ? std::to_string(c.par.expert_tp()) : dense;
}

std::string pp_cell(const workloads::ParallelConfig& p) {
  return fmt::format("{}{}", p.pp, counts_ends(p) ? "+" : "");
}

}  // namespace

std::string summary_line(const PlanResult& r) {
  const Enumeration& e = r.space;
  std::string s = fmt::format("{} configurations enumerated: {} break a rule", e.enumerated, e.infeasible_rule);
  if (!e.rule_counts.empty()) s += fmt::format(" ({})", rules(e));
  s += fmt::format(", {} exceed GPU memory, {} feasible: {} simulated, {} pruned by the lower bound", e.infeasible_memory,
                   r.feasible, r.simulated, r.pruned);
  if (r.pruned > 0 && !r.ranked.empty()) {
    s += fmt::format(" (smallest pruned bound {:.4f} s >= rank-{} time {:.4f} s)", r.best_bound_pruned_s, r.ranked.size(),
                     r.ranked.back().result.iteration_s);
  }
  if (r.unsimulated > 0) {
    s += fmt::format(
        ", {} not simulated: STOPPED before the end (the ranking is of the configurations simulated, "
        "not proven the fastest)",
        r.unsimulated);
  }
  s += fmt::format("; {} SimGrid runs", r.simgrid_runs);
  return s;
}

std::string format_text(const PlanResult& r, const PlanLabel& label) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("# commstack plan: {} on {}", label.model, label.cluster));
  line(fmt::format("# {}; compute profile {}", label.batch, label.compute));
  line(fmt::format("# {}", summary_line(r)));
  line(fmt::format("# time columns in seconds; breakdown of the critical rank: compute + exposed tp/cp/ep/dp + pp "
                   "(bubble and transfers) + tail = iteration"));
  line(fmt::format(
      "{:>4} {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:>3} {:>3} {:>9} {:>9} {:>9} {:>10} "
      "{:>7} {:>7} {:>6} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
      "rank", "tp", "pp", "vs", "dp", "cp", "ep", "etp", "zero", "mb", "sp", "recompute", "iter_s", "bound_s",
      "tokens/s", "TFLOP/s", "hwTFLOP", "MFU%", "mem_GiB", "compute", "tp", "cp", "ep", "dp", "pp", "tail"));
  int rank = 0;
  bool marked = false;
  for (const PlanEntry& e : r.ranked) {
    const auto& p = e.candidate.par;
    const auto& t = e.result;
    const auto& b = t.breakdown;
    marked = marked || counts_ends(p);
    line(fmt::format(
        "{:>4} {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:>3} {:>3} {:>9} {:>9.4f} {:>9.4f} {:>10.0f} "
        "{:>7.1f} {:>7.1f} {:>6.1f} {:>7.1f} {:>8.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f}",
        ++rank, p.tp, pp_cell(p), p.virtual_stages, p.dp, p.cp, p.ep, etp_cell(e.candidate, "-"), p.zero,
        p.micro_batch, on_off(p.sequence_parallel), workloads::to_string(p.recompute), t.iteration_s,
        e.bound.seconds, t.tokens_per_s, t.model_tflops_per_gpu, t.hardware_tflops_per_gpu, 100 * t.mfu,
        e.candidate.memory_bytes / kGiB, b.compute, b.tp, b.cp, b.ep, b.dp, b.pp, b.tail));
  }
  if (marked)
    line(
        "# pp+: the layers split over the stages with the embedding and the loss counted as one layer each "
        "(Megatron --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split)");
  return out;
}

std::string format_csv(const PlanResult& r) {
  std::string out =
      "rank,tp,pp,vs,dp,cp,ep,etp,zero,micro_batch,sequence_parallel,recompute,iteration_s,bound_s,"
      "tokens_per_s,model_tflops_per_gpu,hardware_tflops_per_gpu,mfu,memory_gib,"
      "compute_s,tp_s,cp_s,ep_s,dp_s,pp_s,tail_s,pipeline_split\n";
  int rank = 0;
  for (const PlanEntry& e : r.ranked) {
    const auto& p = e.candidate.par;
    const auto& t = e.result;
    const auto& b = t.breakdown;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{:.9f},{:.9f},{:.3f},{:.3f},{:.3f},{:.6f},{:.3f},"
        "{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{:.9f},{}\n",
        ++rank, p.tp, p.pp, p.virtual_stages, p.dp, p.cp, p.ep, etp_cell(e.candidate, ""), p.zero,
        p.micro_batch, on_off(p.sequence_parallel), workloads::to_string(p.recompute), t.iteration_s,
        e.bound.seconds, t.tokens_per_s, t.model_tflops_per_gpu, t.hardware_tflops_per_gpu, t.mfu,
        e.candidate.memory_bytes / kGiB, b.compute, b.tp, b.cp, b.ep, b.dp, b.pp, b.tail, split_name(p));
  }
  return out;
}

nlohmann::ordered_json to_json(const PlanResult& r, const PlanLabel& label) {
  nlohmann::ordered_json j;
  j["model"] = label.model;
  j["cluster"] = label.cluster;
  j["compute_profile"] = label.compute;
  j["batch"] = label.batch;
  const Enumeration& e = r.space;
  nlohmann::ordered_json counts;
  counts["enumerated"] = e.enumerated;
  counts["infeasible_rule"] = e.infeasible_rule;
  nlohmann::ordered_json by_rule = nlohmann::ordered_json::object();
  for (const auto& [rule, n] : e.rule_counts) by_rule[rule] = n;
  counts["infeasible_by_rule"] = by_rule;
  counts["infeasible_memory"] = e.infeasible_memory;
  counts["feasible"] = r.feasible;
  counts["simulated"] = r.simulated;
  counts["pruned_by_bound"] = r.pruned;
  if (r.unsimulated > 0) counts["not_simulated_stopped"] = r.unsimulated;  // only in a search stopped early
  counts["smallest_pruned_bound_s"] = r9(r.best_bound_pruned_s);
  counts["simgrid_runs"] = r.simgrid_runs;
  j["counts"] = counts;
  j["gpu_egress_bytes_per_s"] = r.gpu_egress_Bps;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int rank = 0;
  for (const PlanEntry& x : r.ranked) {
    const auto& p = x.candidate.par;
    const auto& t = x.result;
    const auto& b = t.breakdown;
    nlohmann::ordered_json row;
    row["rank"] = ++rank;
    row["tp"] = p.tp;
    row["pp"] = p.pp;
    row["virtual_stages"] = p.virtual_stages;
    row["pipeline_split"] = split_name(p);
    row["dp"] = p.dp;
    row["cp"] = p.cp;
    row["ep"] = p.ep;
    row["etp"] =
        has_experts(x.candidate) ? nlohmann::ordered_json(p.expert_tp()) : nlohmann::ordered_json(nullptr);
    row["zero"] = p.zero;
    row["micro_batch"] = p.micro_batch;
    row["sequence_parallel"] = p.sequence_parallel;
    row["recompute"] = workloads::to_string(p.recompute);
    row["iteration_s"] = r9(t.iteration_s);
    row["lower_bound_s"] = r9(x.bound.seconds);
    row["tokens_per_s"] = r3(t.tokens_per_s);
    row["model_tflops_per_gpu"] = r3(t.model_tflops_per_gpu);
    row["hardware_tflops_per_gpu"] = r3(t.hardware_tflops_per_gpu);
    row["mfu"] = r9(t.mfu);
    row["memory_gib"] = r3(x.candidate.memory_bytes / kGiB);
    row["breakdown_s"] = {{"compute", r9(b.compute)}, {"tp", r9(b.tp)}, {"cp", r9(b.cp)}, {"ep", r9(b.ep)},
                          {"dp", r9(b.dp)},           {"pp", r9(b.pp)}, {"tail", r9(b.tail)}};
    rows.push_back(row);
  }
  j["ranked"] = rows;
  return j;
}

}  // namespace commstack::sim::plan
