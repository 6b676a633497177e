// `commstack train`: one simulated LLM training iteration on a cluster (docs/training.md): op
// graph from workloads/, compute from the roofline compute model, communication from the SimGrid
// engine on the cluster's topology, reported as time, throughput, MFU, memory and a breakdown.
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/compute_profile_option.hpp"
#include "cli/option_values.hpp"
#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/report/otf2_writer.hpp"
#include "sim/train/report.hpp"
#include "sim/train/train.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::cli {
namespace {

struct TrainOptions {
  std::string cluster, nodes, model;
  std::string tp = "1", pp = "1", cp = "1", ep = "1", zero = "0";
  std::optional<std::string> dp;          // not given: the GPUs left, as Megatron
  std::optional<std::string> etp;         // not given: the tp degree, as Megatron
  std::optional<std::string> mtp_layers;  // not given: the model's mtp_num_layers
  std::string micro_batch = "1", global_batch, seq;
  std::string precision = "bf16", virtual_stages = "1", recompute = "none", attention = "flash";
  std::string tp_backward_overlap = "on", overlap_grad_reduce = "on", overlap_param_gather = "off";
  std::string fp8_param_gather = "off", moe_shared_expert_overlap = "off", moe_token_dispatcher = "alltoall";
  std::string grad_dtype = "bf16";
  std::optional<std::string> first_stage_layers, last_stage_layers, pipeline_layout;
  bool embedding_in_split = false, loss_in_split = false;
  bool sequence_parallel = false;
  std::string compute_profile, channels = "auto", fidelity = "auto";
  std::string format = "text", trace;
  std::string otf2;
  bool no_fold = false;
};

// Without --dp, data parallelism takes the GPUs the other dimensions leave, as Megatron-LM derives
// it (data_parallel_size = world_size / (tp x pp x cp)); said on stderr, and refused where the
// product does not divide the GPUs.
int derived_dp(const workloads::ParallelConfig& par, std::int64_t gpus) {
  const std::int64_t model_parallel = static_cast<std::int64_t>(par.tp) * par.pp * par.cp;
  if (model_parallel > gpus || gpus % model_parallel != 0)
    throw InputError(
        fmt::format("--dp not given and tp x pp x cp = {} x {} x {} = {} does not divide the cluster's {} "
                    "GPUs: choose sizes whose product divides them, or give --dp (tp x pp x dp x cp "
                    "must equal the GPUs)",
                    par.tp, par.pp, par.cp, model_parallel, gpus));
  const auto dp = static_cast<int>(gpus / model_parallel);
  fmt::print(stderr, "commstack: note: --dp not given: {} GPUs / (tp {} x pp {} x cp {}) = dp {}\n", gpus,
             par.tp, par.pp, par.cp, dp);
  return dp;
}

// --trace and --otf2 must not replace the cluster, model or compute profile file the run reads.
void refuse_outputs_over_inputs(const TrainOptions& o) {
  const std::vector<InputArg> inputs{{"--cluster", o.cluster, true},
                                     {"--model", o.model, true},
                                     {"--compute-profile", o.compute_profile, true}};
  refuse_overwriting_inputs("--trace", o.trace, inputs);
  refuse_overwriting_inputs("--otf2", o.otf2, otf2_written_paths(o.otf2), inputs);
}

// validate() names the parallelism JSON's field; on the command line the user typed a flag, so the
// message names that flag instead ("--etp: is set but ..."). A field without a flag of its own
// (schedule, order) keeps its JSON name.
std::string name_the_flag(const workloads::ParallelFieldError& e) {
  static const std::map<std::string, std::string> kFlags = {
      {"tp", "--tp"},
      {"pp", "--pp"},
      {"dp", "--dp"},
      {"cp", "--cp"},
      {"ep", "--ep"},
      {"etp", "--etp"},
      {"zero", "--zero"},
      {"fsdp", "--zero"},
      {"virtual_stages", "--virtual-stages"},
      {"micro_batch", "--micro-batch"},
      {"global_batch", "--global-batch"},
      {"seq", "--seq"},
      {"precision", "--precision"},
      {"recompute", "--recompute"},
      {"attention", "--attention"},
      {"sequence_parallel", "--sequence-parallel"},
      {"tp_backward_overlap", "--tp-backward-overlap"},
      {"overlap_grad_reduce", "--overlap-grad-reduce"},
      {"overlap_param_gather", "--overlap-param-gather"},
      {"fp8_param_gather", "--fp8-param-gather"},
      {"moe_shared_expert_overlap", "--moe-shared-expert-overlap"},
      {"moe_token_dispatcher", "--moe-token-dispatcher"},
      {"grad_dtype", "--grad-dtype"},
      {"num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers"},
      {"num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers"},
      {"account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split"},
      {"account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split"},
      {"pipeline_model_parallel_layout", "--pipeline-model-parallel-layout"},
      {"mtp_num_layers", "--mtp-num-layers"}};
  const auto flag = kFlags.find(e.field());
  return flag != kFlags.end() ? fmt::format("{}: {}", flag->second, e.detail()) : e.what();
}

void run(const TrainOptions& o) {
  refuse_outputs_over_inputs(o);
  auto model = workloads::resolve_model(o.model);
  if (o.mtp_layers) model.mtp_layers = parse_int(*o.mtp_layers, "--mtp-num-layers", 0, 16);
  workloads::ParallelConfig par;
  par.tp = static_cast<int>(parse_int(o.tp, "--tp", 1, 1 << 16));
  par.pp = static_cast<int>(parse_int(o.pp, "--pp", 1, 1 << 16));
  if (o.dp) par.dp = static_cast<int>(parse_int(*o.dp, "--dp", 1, 1 << 20));
  par.cp = static_cast<int>(parse_int(o.cp, "--cp", 1, 1 << 16));
  par.ep = static_cast<int>(parse_int(o.ep, "--ep", 1, 1 << 16));
  if (o.etp) par.etp = static_cast<int>(parse_int(*o.etp, "--etp", 1, 1 << 16));
  par.zero = static_cast<int>(parse_int(o.zero, "--zero", 0, 3));
  par.micro_batch = parse_int(o.micro_batch, "--micro-batch", 1, 1 << 20);
  if (!o.seq.empty()) par.seq = parse_int(o.seq, "--seq", 1, 1 << 24);
  if (o.precision == "bf16") par.precision = workloads::Precision::bf16;
  else if (o.precision == "fp8") par.precision = workloads::Precision::fp8;
  else throw InputError(fmt::format("--precision: unknown '{}'; expected bf16 or fp8", o.precision));
  if (o.recompute == "none") par.recompute = workloads::Recompute::none;
  else if (o.recompute == "selective") par.recompute = workloads::Recompute::selective;
  else if (o.recompute == "full") par.recompute = workloads::Recompute::full;
  else throw InputError(fmt::format("--recompute: unknown '{}'; expected none, selective or full", o.recompute));
  if (o.attention == "flash") par.attention = workloads::AttentionKernel::flash;
  else if (o.attention == "materialized") par.attention = workloads::AttentionKernel::materialized;
  else throw InputError(fmt::format("--attention: unknown '{}'; expected flash or materialized", o.attention));
  par.tp_backward_overlap = parse_on_off(o.tp_backward_overlap, "--tp-backward-overlap");
  par.overlap_grad_reduce = parse_on_off(o.overlap_grad_reduce, "--overlap-grad-reduce");
  par.overlap_param_gather = parse_on_off(o.overlap_param_gather, "--overlap-param-gather");
  par.fp8_param_gather = parse_on_off(o.fp8_param_gather, "--fp8-param-gather");
  par.moe_shared_expert_overlap = parse_on_off(o.moe_shared_expert_overlap, "--moe-shared-expert-overlap");
  par.moe_token_dispatcher = token_dispatcher_option(o.moe_token_dispatcher);
  par.grad_bytes = grad_bytes_option(o.grad_dtype);
  par.virtual_stages = static_cast<int>(parse_int(o.virtual_stages, "--virtual-stages", 1, 1024));
  if (par.virtual_stages > 1) par.schedule = workloads::PipelineSchedule::interleaved;
  if (o.first_stage_layers)
    par.first_stage_layers =
        parse_int(*o.first_stage_layers, "--decoder-first-pipeline-num-layers", 1, 100000);
  if (o.last_stage_layers)
    par.last_stage_layers = parse_int(*o.last_stage_layers, "--decoder-last-pipeline-num-layers", 1, 100000);
  if (o.pipeline_layout)
    par.layout = workloads::parse_pipeline_layout(*o.pipeline_layout, "--pipeline-model-parallel-layout");
  par.embedding_in_split = o.embedding_in_split;
  par.loss_in_split = o.loss_in_split;
  par.sequence_parallel = o.sequence_parallel;
  if (o.format != "text" && o.format != "json") {
    throw InputError(fmt::format("--format: unknown format '{}'; expected text or json", o.format));
  }

  const auto spec = topologies::load_cluster(o.cluster);
  std::optional<int> nodes;
  if (!o.nodes.empty()) nodes = static_cast<int>(parse_int(o.nodes, "--nodes", 1, 1 << 20));
  const auto topo = topologies::build_topology(spec, nodes);
  if (const std::string note = topologies::several_nics_note(topo); !note.empty())
    fmt::print(stderr, "commstack: note: {}\n", note);
  if (!o.dp) par.dp = derived_dp(par, topo.gpu_count());
  par.global_batch = o.global_batch.empty() ? par.micro_batch * par.dp
                                            : parse_int(o.global_batch, "--global-batch", 1, 1LL << 40);
  // Megatron pads the vocabulary to a multiple of 128 x TP (--make-vocab-size-divisible-by 128,
  // GPT-3's 50257 becomes 51200 at TP8); do the same and say so.
  if (const std::int64_t padded = workloads::megatron_padded_vocab(model.vocab, par.tp);
      padded != model.vocab) {
    fmt::print(stderr, "commstack: note: vocabulary of {} padded from {} to {} (a multiple of 128 x tp, as Megatron does)\n",
               model.name, model.vocab, padded);
    model.vocab = padded;
  }
  try {
    workloads::validate(model, par, topo.gpu_count(), "train options");
  } catch (const workloads::ParallelFieldError& e) {
    throw InputError(name_the_flag(e));
  }

  sim::train::TrainSetup setup;
  setup.model = model;
  setup.par = par;
  setup.compute = compute_profile_option(o.compute_profile, spec);
  if (par.precision == workloads::Precision::fp8 && setup.compute.peak_fp8_flops <= 0) {
    throw InputError(fmt::format("--precision fp8: compute profile {} has no FP8 peak", setup.compute.name));
  }
  workloads::check_fits(workloads::estimate_memory(model, par), setup.compute.memory_bytes,
                        fmt::format("{} (compute profile {})", spec.node.gpu_model, setup.compute.name));
  if (o.channels != "auto") setup.comm.channels = static_cast<int>(parse_int(o.channels, "--channels", 1, 64));
  setup.comm.fidelity = sim::fidelity_from_string(o.fidelity);
  setup.fold = !o.no_fold;

  sim::Simulator simulator(topo);
  const auto result = sim::train::simulate_training(simulator, setup);
  sim::train::RunLabel label;
  label.cluster = fmt::format("{} x {} nodes", spec.name, topo.nodes);
  label.model = model.name;
  label.compute = setup.compute.name;
  label.config = fmt::format("tp {} pp {} dp {} cp {} ep {} zero {} sp {} vs {} mb {} gbs {} seq {} {} recompute {} attention {} tp-backward-overlap {} overlap-grad-reduce {}",
                             par.tp, par.pp, par.dp, par.cp, par.ep, par.zero, par.sequence_parallel ? "on" : "off",
                             par.virtual_stages, par.micro_batch, par.global_batch, par.seq, to_string(par.precision),
                             to_string(par.recompute), to_string(par.attention),
                             par.tp_backward_overlap ? "on" : "off", par.overlap_grad_reduce ? "on" : "off");
  if (par.overlap_param_gather) label.config += " overlap-param-gather on";
  if (par.fp8_param_gather) label.config += " fp8-param-gather on";
  if (par.moe_shared_expert_overlap) label.config += " moe-shared-expert-overlap on";
  if (par.grad_bytes != 2) label.config += " grad-dtype fp32";
  label.config += workloads::describe_expert_tp(model, par) +
                  workloads::describe_token_dispatcher(model, par) + workloads::describe_mtp(model) +
                  workloads::describe_uneven_split(model, par);
  if (o.format == "json") fmt::print("{}\n", sim::train::to_json(result, label).dump(2));
  else fmt::print("{}", sim::train::format_text(result, label));
  if (!o.trace.empty()) {
    std::ofstream out(o.trace);
    if (!out) throw InputError(fmt::format("--trace: cannot write '{}'", o.trace));
    out << sim::train::perfetto_trace(result, label).dump() << "\n";
    if (!out) throw InputError(fmt::format("--trace: writing '{}' failed", o.trace));
  }
  if (!o.otf2.empty()) {
    const auto w = sim::write_otf2(sim::otf2_timeline(result, topo, fmt::format("commstack train: {} on {}, {}", label.model,
                                                                               label.cluster, label.config)),
                                   o.otf2);
    fmt::print(stderr, "commstack: wrote OTF2 archive {} ({} locations, {} events)\n", w.anchor, w.locations, w.events);
  }
}

}  // namespace

void register_train(CLI::App& app) {
  auto opts = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand("train", "Simulate one LLM training iteration: time, tokens/s, MFU, breakdown");
  sub->add_option("--cluster", opts->cluster, "Cluster preset name or JSON file")->required();
  sub->add_option("--nodes", opts->nodes, "Number of nodes (default: the cluster's)");
  sub->add_option("--model", opts->model, "Built-in model name or model JSON file")->required();
  sub->add_option("--tp", opts->tp, "Tensor parallel size");
  sub->add_option("--pp", opts->pp, "Pipeline parallel size");
  sub->add_option("--dp", opts->dp,
                  "Data parallel size (default: the GPUs left, GPUs / (tp x pp x cp), as Megatron-LM)");
  sub->add_option("--cp", opts->cp, "Context parallel size");
  sub->add_option("--ep", opts->ep, "Expert parallel size");
  sub->add_option(
      "--etp", opts->etp,
      "Expert tensor parallel size (MoE; default: --tp, as Megatron's --expert-tensor-parallel-size)");
  sub->add_option("--zero", opts->zero, "ZeRO stage 0-3");
  sub->add_option("--micro-batch", opts->micro_batch, "Sequences per micro-batch");
  sub->add_option("--global-batch", opts->global_batch, "Sequences per iteration (default micro-batch*dp)");
  sub->add_option("--seq", opts->seq, "Sequence length (default: the model's)");
  sub->add_option("--precision", opts->precision, "bf16 or fp8");
  sub->add_option("--virtual-stages", opts->virtual_stages, "Model chunks per pipeline rank (>1: interleaved)");
  sub->add_option("--recompute", opts->recompute, "Activation recomputation: none, selective, full");
  sub->add_option("--attention", opts->attention,
                  "Attention kernel: flash (fused, default) or materialized (seq^2 scores in HBM, Megatron-LM <= 2022)");
  sub->add_option("--tp-backward-overlap", opts->tp_backward_overlap,
                  "on (default, Megatron-LM since late 2021): TP reduction of the input gradient overlaps the weight-"
                  "gradient GEMM; off: Megatron-LM 2021, the reduction blocks");
  sub->add_option("--overlap-grad-reduce", opts->overlap_grad_reduce,
                  "on (default): DP gradient buckets reduce during the backward (Megatron-Core --overlap-grad-reduce, "
                  "PyTorch DDP); off: after the backward (Megatron-LM 2021-22 local DDP)");
  sub->add_option(
      "--overlap-param-gather", opts->overlap_param_gather,
      "off (default, Megatron-Core's): ZeRO-1/2 parameter all-gathers after the optimizer step; on: "
      "during the next forward, each bucket before its first use (--overlap-param-gather, NeMo)");
  sub->add_option(
      "--fp8-param-gather", opts->fp8_param_gather,
      "off (default) or on: with --precision fp8 and --zero >= 1, the GEMM weights are FP8 tensors "
      "and their parameter all-gathers move 1 byte each (Megatron-Core --fp8-param-gather, NeMo "
      "fp8_params)");
  sub->add_option("--moe-shared-expert-overlap", opts->moe_shared_expert_overlap,
                  "off (default) or on: MoE models with shared experts run them while the token dispatcher's "
                  "all-to-alls move the routed tokens (Megatron-Core --moe-shared-expert-overlap)");
  sub->add_option(
      "--moe-token-dispatcher", opts->moe_token_dispatcher,
      "MoE token dispatcher: alltoall (default; NeMo's recipes) or allgather (Megatron-Core's default: "
      "every token of the expert-TP x EP group all-gathered to each rank, reduce-scattered back; "
      "--moe-token-dispatcher-type)");
  sub->add_option("--grad-dtype", opts->grad_dtype,
                  "Gradient (and DP reduction) precision: bf16 (default) or fp32 (Megatron-LM's bf16 runs: "
                  "--accumulate-allreduce-grads-in-fp32)");
  sub->add_option(
      "--decoder-first-pipeline-num-layers", opts->first_stage_layers,
      "Transformer layers of the first pipeline stage (uneven split; the middle stages share the rest)");
  sub->add_option("--decoder-last-pipeline-num-layers", opts->last_stage_layers,
                  "Transformer layers of the last pipeline stage (uneven split)");
  sub->add_flag("--account-for-embedding-in-pipeline-split", opts->embedding_in_split,
                "Count the embedding as one layer of the first stage in the pipeline split");
  sub->add_flag("--account-for-loss-in-pipeline-split", opts->loss_in_split,
                "Count the loss (output layer) as one layer of the last stage in the pipeline split");
  sub->add_option(
      "--pipeline-model-parallel-layout", opts->pipeline_layout,
      "Megatron-Core's custom layout: each virtual stage's layers, stages split by '|' (E embedding, t "
      "transformer layer, m MTP layer, in the last stage, L loss; x*n and (...)*n repeat), e.g. "
      "\"Et*2|(tt|)*29,t|mL\"; sets the model chunks per pipeline rank");
  sub->add_option("--mtp-num-layers", opts->mtp_layers,
                  "Multi-token prediction depths on the last stage (Megatron --mtp-num-layers; default: the "
                  "model's mtp_num_layers, 1 for deepseek-v3)");
  sub->add_flag("--sequence-parallel", opts->sequence_parallel, "Megatron sequence parallelism over the TP group");
  sub->add_option("--compute-profile", opts->compute_profile, "Built-in compute profile or JSON file (default: by GPU)");
  sub->add_option("--channels", opts->channels, "Rings per collective (default auto: one per NIC)");
  sub->add_option("--fidelity", opts->fidelity, "Collective fidelity: auto, chunk, step, edge");
  sub->add_flag("--no-fold", opts->no_fold, "Simulate every rank instead of one per pipeline stage");
  sub->add_option("--format", opts->format, "text or json");
  sub->add_option("--trace", opts->trace, "Write a Perfetto (Chrome trace JSON) timeline here");
  sub->add_option("--otf2", opts->otf2, "Write the timeline as an OTF2 archive (Vampir) into this directory");
  on_selected(sub, [opts] { run(*opts); });
}

}  // namespace commstack::cli
