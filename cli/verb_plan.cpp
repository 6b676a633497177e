// `commstack plan`: search TP / PP / virtual stages / DP / CP / EP / ZeRO / micro-batch /
// sequence parallelism / recomputation for one model on one cluster, within GPU memory, and rank
// the configurations by simulated iteration time (docs/plan.md). Branch and bound: a proven lower
// bound per configuration decides which ones need the full simulation.
#include <unistd.h>

#include <cstdio>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/compute_profile_option.hpp"
#include "cli/interrupt.hpp"
#include "cli/option_values.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/plan/plan_report.hpp"
#include "sim/plan/planner.hpp"
#include "topologies/cluster.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/model.hpp"

namespace commstack::cli {
namespace {

struct PlanCliOptions {
  std::string cluster, nodes, model, global_batch, seq;
  std::string tp, pp, vs, cp, ep, etp, zero, micro_batch;
  std::string recompute = "none,selective,full", sequence_parallel = "on,off";
  std::string max_tp, max_vs = "8", max_micro_batch = "8";
  bool tp_across_nodes = false;
  std::string precision = "bf16", attention = "flash", tp_backward_overlap = "on", overlap_grad_reduce = "on",
              overlap_param_gather = "off", fp8_param_gather = "off", moe_token_dispatcher = "alltoall",
              grad_dtype = "bf16", compute_profile, channels = "auto", fidelity = "auto";
  std::string top = "10", format = "text";
  bool progress = false;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    out.push_back(text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// A value listed twice would enumerate every configuration with it twice (and fill the top list
// with copies): refused, naming it.
template <class T>
void refuse_repeats(const std::vector<T>& items, const std::string& flag) {
  for (std::size_t i = 0; i < items.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (items[i] == items[j])
        throw InputError(fmt::format("{}: '{}' is listed twice; expected each value once", flag, items[i]));
}

// "1,2,4,8" -> {1, 2, 4, 8}; empty text -> {} (search every legal value).
template <class T>
std::vector<T> parse_list(const std::string& text, const std::string& flag, long long lo, long long hi) {
  std::vector<T> out;
  if (text.empty()) return out;
  for (const auto& item : split(text)) out.push_back(static_cast<T>(parse_int(item, flag, lo, hi)));
  refuse_repeats(out, flag);
  return out;
}

void run(const PlanCliOptions& o) {
  using workloads::Recompute;
  const auto model = workloads::resolve_model(o.model);
  sim::plan::PlanOptions opts;
  auto& s = opts.space;
  s.tp = parse_list<int>(o.tp, "--tp", 1, 1 << 16);
  s.pp = parse_list<int>(o.pp, "--pp", 1, 1 << 16);
  s.vs = parse_list<int>(o.vs, "--virtual-stages", 1, 1024);
  s.cp = parse_list<int>(o.cp, "--cp", 1, 1 << 16);
  s.ep = parse_list<int>(o.ep, "--ep", 1, 1 << 16);
  s.etp = parse_list<int>(o.etp, "--etp", 1, 1 << 16);
  s.zero = parse_list<int>(o.zero, "--zero", 0, 3);
  s.micro_batch = parse_list<std::int64_t>(o.micro_batch, "--micro-batch", 1, 1 << 20);
  s.recompute.clear();
  refuse_repeats(split(o.recompute), "--recompute");
  refuse_repeats(split(o.sequence_parallel), "--sequence-parallel");
  for (const auto& r : split(o.recompute)) {
    if (r == "none") s.recompute.push_back(Recompute::none);
    else if (r == "selective") s.recompute.push_back(Recompute::selective);
    else if (r == "full") s.recompute.push_back(Recompute::full);
    else throw InputError(fmt::format("--recompute: unknown '{}'; expected a list of none, selective, full", r));
  }
  s.sequence_parallel.clear();
  for (const auto& v : split(o.sequence_parallel)) {
    if (v == "on") s.sequence_parallel.push_back(true);
    else if (v == "off") s.sequence_parallel.push_back(false);
    else throw InputError(fmt::format("--sequence-parallel: unknown '{}'; expected on, off or on,off", v));
  }
  if (!o.max_tp.empty()) s.max_tp = static_cast<int>(parse_int(o.max_tp, "--max-tp", 1, 1 << 16));
  s.tp_across_nodes = o.tp_across_nodes;
  s.max_vs = static_cast<int>(parse_int(o.max_vs, "--max-virtual-stages", 1, 1024));
  s.max_micro_batch = parse_int(o.max_micro_batch, "--max-micro-batch", 1, 1 << 20);
  if (!o.seq.empty()) s.seq = parse_int(o.seq, "--seq", 1, 1 << 24);
  if (o.precision == "bf16") s.precision = workloads::Precision::bf16;
  else if (o.precision == "fp8") s.precision = workloads::Precision::fp8;
  else throw InputError(fmt::format("--precision: unknown '{}'; expected bf16 or fp8", o.precision));
  if (o.attention == "flash") s.attention = workloads::AttentionKernel::flash;
  else if (o.attention == "materialized") s.attention = workloads::AttentionKernel::materialized;
  else throw InputError(fmt::format("--attention: unknown '{}'; expected flash or materialized", o.attention));
  s.tp_backward_overlap = parse_on_off(o.tp_backward_overlap, "--tp-backward-overlap");
  s.overlap_grad_reduce = parse_on_off(o.overlap_grad_reduce, "--overlap-grad-reduce");
  s.overlap_param_gather = parse_on_off(o.overlap_param_gather, "--overlap-param-gather");
  s.fp8_param_gather = parse_on_off(o.fp8_param_gather, "--fp8-param-gather");
  if (s.fp8_param_gather && s.precision != workloads::Precision::fp8)
    throw InputError("--fp8-param-gather on: needs --precision fp8 (FP8 weights exist only in FP8 training)");
  s.moe_token_dispatcher = token_dispatcher_option(o.moe_token_dispatcher);
  if (s.moe_token_dispatcher != workloads::TokenDispatcher::alltoall && !model.moe)
    throw InputError(fmt::format("--moe-token-dispatcher {}: {} has no experts to dispatch tokens to",
                                 o.moe_token_dispatcher, model.name));
  s.grad_bytes = grad_bytes_option(o.grad_dtype);
  opts.top = static_cast<int>(parse_int(o.top, "--top", 1, 1 << 20));
  if (o.format != "text" && o.format != "csv" && o.format != "json") {
    throw InputError(fmt::format("--format: unknown format '{}'; expected text, csv or json", o.format));
  }
  if (o.channels != "auto") opts.comm.channels = static_cast<int>(parse_int(o.channels, "--channels", 1, 64));
  opts.comm.fidelity = sim::fidelity_from_string(o.fidelity);

  const auto spec = topologies::load_cluster(o.cluster);
  std::optional<int> nodes;
  if (!o.nodes.empty()) nodes = static_cast<int>(parse_int(o.nodes, "--nodes", 1, 1 << 20));
  const auto topo = topologies::build_topology(spec, nodes);
  // Default batch: one sequence per GPU.
  s.global_batch = o.global_batch.empty() ? topo.gpu_count() : parse_int(o.global_batch, "--global-batch", 1, 1LL << 40);
  const auto compute = compute_profile_option(o.compute_profile, spec);
  if (s.precision == workloads::Precision::fp8 && compute.peak_fp8_flops <= 0) {
    throw InputError(fmt::format("--precision fp8: compute profile {} has no FP8 peak", compute.name));
  }
  if (o.progress || isatty(STDERR_FILENO) != 0) {
    opts.progress = [](long long done, long long most) {
      fmt::print(stderr, "\rcommstack plan: {} simulated (at most {} to go)   ", done, most - done);
      if (done == most) fmt::print(stderr, "\n");
    };
  }

  sim::Simulator simulator(topo);
  // Ctrl-C: the first stops the search after the simulation under way, and the configurations
  // simulated so far are ranked and printed (exit status 130); a second one ends the process.
  // Installed after the simulator, whose SimGrid engine sets a SIGINT handler of its own.
  const StopOnInterrupt stop;
  opts.stop_requested = [] { return StopOnInterrupt::requested(); };
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = sim::plan::plan(simulator, model, compute, opts);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (opts.progress) fmt::print(stderr, "\n");

  sim::plan::PlanLabel label;
  label.cluster = fmt::format("{} x {} nodes ({} GPUs)", spec.name, topo.nodes, topo.gpu_count());
  label.model = model.name;
  label.compute = compute.name;
  label.batch = fmt::format("global batch {}, seq {}, {}", s.global_batch, s.seq > 0 ? s.seq : model.seq,
                            workloads::to_string(s.precision));
  // The settings every candidate shares that are not the defaults: the ranking holds for them only.
  if (s.attention != workloads::AttentionKernel::flash) label.batch += ", attention materialized";
  if (!s.tp_backward_overlap) label.batch += ", tp-backward-overlap off";
  if (!s.overlap_grad_reduce) label.batch += ", overlap-grad-reduce off";
  if (s.overlap_param_gather) label.batch += ", overlap-param-gather on";
  if (s.fp8_param_gather) label.batch += ", fp8-param-gather on";
  if (model.moe && s.moe_token_dispatcher != workloads::TokenDispatcher::alltoall)
    label.batch += fmt::format(", moe-token-dispatcher {}", workloads::to_string(s.moe_token_dispatcher));
  if (s.grad_bytes != 2) label.batch += ", grad-dtype fp32";
  if (o.channels != "auto") label.batch += fmt::format(", channels {}", opts.comm.channels);
  if (opts.comm.fidelity != sim::Fidelity::automatic)
    label.batch += fmt::format(", fidelity {}", sim::to_string(opts.comm.fidelity));
  if (o.format == "json") fmt::print("{}\n", sim::plan::to_json(result, label).dump(2));
  else if (o.format == "csv") fmt::print("{}", sim::plan::format_csv(result));
  else fmt::print("{}", sim::plan::format_text(result, label));
  // Wall-clock numbers go to stderr so that stdout is byte-identical across runs.
  std::fflush(stdout);
  const long long evaluated = result.simulated + result.pruned;
  fmt::print(stderr,
             "commstack plan: wall {:.1f} s (enumerate {:.2f} s, bounds {:.2f} s, simulate {:.1f} s); {} feasible "
             "configurations evaluated ({} simulated, {} pruned by the bound) = {:.0f} per minute; {:.0f} simulated per "
             "minute of simulation\n",
             wall, result.enumerate_wall_s, result.bound_wall_s, result.simulate_wall_s, evaluated, result.simulated,
             result.pruned, wall > 0 ? 60.0 * static_cast<double>(evaluated) / wall : 0.0,
             result.simulate_wall_s > 0 ? 60.0 * static_cast<double>(result.simulated) / result.simulate_wall_s : 0.0);
  if (result.unsimulated > 0) {
    fmt::print(stderr, "commstack plan: stopped by Ctrl-C; {} feasible configurations were not simulated\n",
               result.unsimulated);
    std::fflush(stderr);
    throw Interrupted();
  }
}

}  // namespace

void register_plan(CLI::App& app) {
  auto opts = std::make_shared<PlanCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Search parallel configurations (TP, PP, VS, DP, CP, EP, ZeRO, micro-batch) and rank them by simulated time");
  sub->add_option("--cluster", opts->cluster, "Cluster preset name or JSON file")->required();
  sub->add_option("--nodes", opts->nodes, "Number of nodes (default: the cluster's)");
  sub->add_option("--model", opts->model, "Built-in model name or model JSON file")->required();
  sub->add_option("--global-batch", opts->global_batch, "Sequences per iteration (default: one per GPU)");
  sub->add_option("--seq", opts->seq, "Sequence length (default: the model's)");
  sub->add_option("--precision", opts->precision, "bf16 or fp8");
  sub->add_option("--attention", opts->attention,
                  "Attention kernel: flash (fused) or materialized (seq x seq scores through HBM, Megatron-LM <= 2022)");
  sub->add_option("--tp-backward-overlap", opts->tp_backward_overlap,
                  "on (default, Megatron-LM since late 2021) or off (Megatron-LM 2021: the TP reduction of the input "
                  "gradient blocks instead of overlapping the weight-gradient GEMM)");
  sub->add_option("--overlap-grad-reduce", opts->overlap_grad_reduce,
                  "on (default): DP gradient buckets reduce during the backward; off: after it (Megatron-LM 2021-22)");
  sub->add_option(
      "--overlap-param-gather", opts->overlap_param_gather,
      "off (default): ZeRO-1/2 parameter all-gathers after the step; on: during the next forward (NeMo)");
  sub->add_option(
      "--fp8-param-gather", opts->fp8_param_gather,
      "off (default) or on: candidates with ZeRO >= 1 all-gather their GEMM weights in FP8 (needs "
      "--precision fp8; Megatron-Core --fp8-param-gather)");
  sub->add_option(
      "--moe-token-dispatcher", opts->moe_token_dispatcher,
      "MoE models: alltoall (default) or allgather (Megatron-Core's default) token dispatcher for "
      "every candidate");
  sub->add_option("--grad-dtype", opts->grad_dtype,
                  "Gradient (and DP reduction) precision: bf16 (default) or fp32 (Megatron-LM's bf16 runs: "
                  "--accumulate-allreduce-grads-in-fp32)");
  sub->add_option("--compute-profile", opts->compute_profile, "Built-in compute profile or JSON file (default: by GPU)");
  sub->add_option("--tp", opts->tp, "TP degrees to try, e.g. 1,2,4,8 (default: divisors of the heads up to --max-tp)");
  sub->add_option("--max-tp", opts->max_tp, "Largest TP by default (default: GPUs per node)");
  sub->add_flag("--tp-across-nodes", opts->tp_across_nodes, "Let default TP degrees exceed one node");
  sub->add_option("--pp", opts->pp,
                  "PP degrees to try (default: divisors of the layers; and divisors of the layers + 2 that "
                  "do not divide the layers, with the embedding and the loss counted as one layer each)");
  sub->add_option("--virtual-stages", opts->vs, "Model chunks per pipeline rank to try (default: 1 and every legal "
                                                "value up to --max-virtual-stages)");
  sub->add_option("--max-virtual-stages", opts->max_vs, "Largest default virtual-stage count (default 8)");
  sub->add_option("--cp", opts->cp, "CP degrees to try (default: those leaving >= 1024 tokens per CP rank)");
  sub->add_option("--ep", opts->ep, "EP degrees to try (MoE models; default: divisors of the experts)");
  sub->add_option("--etp", opts->etp,
                  "Expert TP degrees to try (MoE models; default: 1 and the candidate's tp)");
  sub->add_option("--zero", opts->zero, "ZeRO stages to try (default 0,1,2,3)");
  sub->add_option("--micro-batch", opts->micro_batch, "Micro-batch sizes to try (default: divisors of the per-DP batch "
                                                      "up to --max-micro-batch)");
  sub->add_option("--max-micro-batch", opts->max_micro_batch, "Largest default micro-batch size (default 8)");
  sub->add_option("--recompute", opts->recompute, "Recomputation modes to try (default none,selective,full)");
  sub->add_option("--sequence-parallel", opts->sequence_parallel, "Sequence parallelism with tp > 1: on,off (default), "
                                                                  "on or off");
  sub->add_option("--top", opts->top, "Configurations to rank (default 10)");
  sub->add_option("--channels", opts->channels, "Rings per collective (default auto: one per NIC)");
  sub->add_option("--fidelity", opts->fidelity, "Collective fidelity: auto, chunk, step, edge");
  sub->add_option("--format", opts->format, "text, csv or json");
  sub->add_flag("--progress", opts->progress, "Progress on stderr even when it is not a terminal");
  on_selected(sub, [opts] { run(*opts); });
}

}  // namespace commstack::cli
