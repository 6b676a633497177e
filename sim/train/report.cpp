#include "sim/train/report.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace commstack::sim::train {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// Rounded for JSON so that the text of a number does not depend on the last bits of a sum.
double r9(double x) { return std::round(x * 1e9) / 1e9; }

}  // namespace

std::string format_text(const TrainResult& r, const RunLabel& label) {
  std::string out;
  auto line = [&](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("# commstack train: {} on {} ({} GPUs)", label.model, label.cluster, r.gpus));
  line(fmt::format("# {}", label.config));
  line(fmt::format("# compute profile {}; {} SimGrid runs, {} flows", label.compute, r.simulations, r.flows));
  line(fmt::format("iteration time        {:.4f} s", r.iteration_s));
  line(fmt::format("compute-only bound    {:.4f} s", r.compute_bound_s));
  line(fmt::format("tokens/s              {:.1f}", r.tokens_per_s));
  line(fmt::format("model TFLOP/s per GPU {:.1f}  (MFU {:.1f}%)", r.model_tflops_per_gpu, 100 * r.mfu));
  line(fmt::format("hw TFLOP/s per GPU    {:.1f}  (HFU {:.1f}%, recomputation included)", r.hardware_tflops_per_gpu,
                   100 * r.hfu));
  const auto& w = r.memory.worst();
  line(fmt::format("memory per GPU        {:.2f} GiB (stage {}: weights {:.2f}, grads {:.2f}, optimizer {:.2f}, "
                   "activations {:.2f})",
                   w.total() / kGiB, w.stage, w.weights / kGiB, w.gradients / kGiB, w.optimizer / kGiB,
                   w.activations / kGiB));
  const Breakdown& b = r.breakdown;
  line(fmt::format("\ntime of the critical rank {} (stage {}), compute stream view:", r.critical_rank,
                   r.ranks.empty() ? 0 : [&] {
                     for (const auto& k : r.ranks)
                       if (k.rank == r.critical_rank) return k.stage;
                     return 0;
                   }()));
  const double T = r.iteration_s;
  auto row = [&](const char* what, double exposed, double busy, bool comm) {
    if (comm) line(fmt::format("  {:<28} {:>10.4f} s {:>6.1f}%   (busy {:.4f} s)", what, exposed, pct(exposed, T), busy));
    else line(fmt::format("  {:<28} {:>10.4f} s {:>6.1f}%", what, exposed, pct(exposed, T)));
  };
  row("compute", b.compute, 0, false);
  row("exposed TP communication", b.tp, r.comm_busy.tp, true);
  row("exposed CP communication", b.cp, r.comm_busy.cp, true);
  row("exposed EP communication", b.ep, r.comm_busy.ep, true);
  row("exposed DP communication", b.dp, r.comm_busy.dp, true);
  row("PP bubble + transfers", b.pp, r.comm_busy.pp, true);
  row("tail (other stages)", b.tail, 0, false);
  line("\ncommunication of the critical rank (largest total first):");
  line(fmt::format("  {:<6} {:>12} {:>6} {:>12} {:>12}  {}", "stream", "bytes", "count", "each (us)", "total (ms)", "op"));
  for (const CommLine& c : r.comm) {
    line(fmt::format("  {:<6} {:>12} {:>6} {:>12.2f} {:>12.3f}  {}", c.stream, c.bytes, c.count, c.each_s * 1e6,
                     c.total_s * 1e3, c.what));
  }
  line("\nper simulated rank:");
  for (const RankSummary& k : r.ranks) {
    line(fmt::format("  rank {:>6} stage {:>3}: compute {:.4f} s, finishes {:.4f} s", k.rank, k.stage, k.compute_s,
                     k.finish_s));
  }
  return out;
}

nlohmann::ordered_json to_json(const TrainResult& r, const RunLabel& label) {
  nlohmann::ordered_json j;
  j["cluster"] = label.cluster;
  j["model"] = label.model;
  j["compute_profile"] = label.compute;
  j["config"] = label.config;
  j["gpus"] = r.gpus;
  j["iteration_s"] = r9(r.iteration_s);
  j["compute_bound_s"] = r9(r.compute_bound_s);
  j["tokens_per_iteration"] = r.tokens_per_iteration;
  j["tokens_per_s"] = r9(r.tokens_per_s);
  j["model_flops"] = r.model_flops;
  j["hardware_flops"] = r.hardware_flops;
  j["model_tflops_per_gpu"] = r9(r.model_tflops_per_gpu);
  j["hardware_tflops_per_gpu"] = r9(r.hardware_tflops_per_gpu);
  j["mfu"] = r9(r.mfu);
  j["hfu"] = r9(r.hfu);
  const auto& w = r.memory.worst();
  j["memory_per_gpu_bytes"] = {{"stage", w.stage},         {"total", w.total()},       {"weights", w.weights},
                               {"gradients", w.gradients}, {"optimizer", w.optimizer}, {"activations", w.activations}};
  const Breakdown& b = r.breakdown;
  j["critical_rank"] = r.critical_rank;
  j["breakdown_s"] = {{"compute", r9(b.compute)}, {"tp", r9(b.tp)}, {"cp", r9(b.cp)},     {"ep", r9(b.ep)},
                      {"dp", r9(b.dp)},           {"pp", r9(b.pp)}, {"tail", r9(b.tail)}};
  j["comm_busy_s"] = {{"tp", r9(r.comm_busy.tp)}, {"cp", r9(r.comm_busy.cp)}, {"ep", r9(r.comm_busy.ep)},
                      {"dp", r9(r.comm_busy.dp)}, {"pp", r9(r.comm_busy.pp)}};
  auto& comm = j["communication"] = nlohmann::ordered_json::array();
  for (const CommLine& c : r.comm) {
    comm.push_back({{"stream", c.stream}, {"op", c.what}, {"bytes", c.bytes}, {"count", c.count},
                    {"each_s", r9(c.each_s)}, {"total_s", r9(c.total_s)}});
  }
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (const RankSummary& k : r.ranks) {
    ranks.push_back({{"rank", k.rank}, {"stage", k.stage}, {"compute_s", r9(k.compute_s)}, {"finish_s", r9(k.finish_s)}});
  }
  j["simulations"] = r.simulations;
  j["flows"] = r.flows;
  return j;
}

nlohmann::ordered_json perfetto_trace(const TrainResult& r, const RunLabel& label) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const auto& g = r.graph;
  std::map<int, int> stage_of;
  for (const RankSummary& k : r.ranks) stage_of[k.rank] = k.stage;
  for (int rank : g.ranks) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"tid", 0},
                      {"args", {{"name", fmt::format("rank {} (stage {})", rank, stage_of[rank])}}}});
    for (int s = 0; s <= static_cast<int>(workloads::Stream::pp); ++s) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", s},
                        {"args", {{"name", to_string(static_cast<workloads::Stream>(s))}}}});
    }
  }
  for (const auto& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    nlohmann::ordered_json args = {{"phase", to_string(op.phase)}, {"micro_batch", op.micro_batch}, {"layer", op.layer}};
    if (op.kind == workloads::OpKind::compute) args["flops"] = op.flops;
    else args["bytes"] = op.bytes;
    events.push_back({{"ph", "X"},
                      {"name", op.name},
                      {"cat", to_string(op.kind)},
                      {"pid", op.rank},
                      {"tid", static_cast<int>(op.stream)},
                      {"ts", std::round(r.schedule.start[i] * 1e9) / 1e3},
                      {"dur", std::round((r.schedule.finish[i] - r.schedule.start[i]) * 1e9) / 1e3},
                      {"args", std::move(args)}});
  }
  nlohmann::ordered_json doc;
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"cluster", label.cluster}, {"model", label.model}, {"config", label.config}};
  doc["traceEvents"] = std::move(events);
  return doc;
}

}  // namespace commstack::sim::train
