#include "workloads/parallel/parallel.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/json_fields.hpp"

namespace commstack::workloads {

std::string to_string(PipelineSchedule s) {
  return s == PipelineSchedule::one_f_one_b ? "1f1b" : "interleaved";
}
std::string to_string(Precision p) {
  return p == Precision::bf16 ? "bf16" : "fp8";
}
std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}
std::string to_string(AttentionKernel a) {
  return a == AttentionKernel::flash ? "flash" : "materialized";
}
std::string to_string(TokenDispatcher d) {
  return d == TokenDispatcher::alltoall ? "alltoall" : "allgather";
}
std::string to_string(Dim d) {
  switch (d) {
    case Dim::tp: return "tp";
    case Dim::cp: return "cp";
    case Dim::dp: return "dp";
    case Dim::pp: return "pp";
  }
  return "?";
}

namespace {

std::vector<Dim> parse_order(JsonFields& f, const std::string& text) {
  // "tp-cp-ep-dp-pp": Megatron spelling; "ep" is accepted (it lives inside cp x dp) and skipped.
  std::vector<Dim> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t dash = text.find('-', pos);
    std::string tok = text.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (tok == "tp")
      out.push_back(Dim::tp);
    else if (tok == "cp")
      out.push_back(Dim::cp);
    else if (tok == "dp")
      out.push_back(Dim::dp);
    else if (tok == "pp")
      out.push_back(Dim::pp);
    else if (tok != "ep")
      f.fail("order", fmt::format("'{}' is not one of tp, cp, ep, dp, pp", tok));
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  for (Dim d : {Dim::tp, Dim::cp, Dim::dp, Dim::pp}) {
    if (std::count(out.begin(), out.end(), d) != 1) {
      f.fail(
          "order",
          fmt::format("'{}' must name each of tp, cp, dp, pp exactly once (e.g. \"tp-cp-ep-dp-pp\")", text));
    }
  }
  return out;
}

// Megatron-Core's rules for splitting the layers over pipeline stages and model chunks
// (TransformerConfig.__post_init__, get_num_layers_to_build), each with the numbers that break it.
template <class Bad>
void check_layer_split(const ModelSpec& m, const ParallelConfig& p, const Bad& bad) {
  const std::int64_t vs = p.virtual_stages, pp = p.pp, l = m.layers;
  const bool first = p.first_stage_layers > 0, last = p.last_stage_layers > 0;
  if (p.layout) {
    const char* field = "pipeline_model_parallel_layout";
    if (first || last || p.embedding_in_split || p.loss_in_split)
      bad(field,
          "cannot be set together with num_layers_in_first/last_pipeline_stage or "
          "account_for_embedding/loss_in_pipeline_split (Megatron refuses it too)");
    const auto stages = static_cast<std::int64_t>(p.layout->layers_per_stage.size());
    std::int64_t layers = 0;
    for (std::int64_t n : p.layout->layers_per_stage) layers += n;
    if (layers != l)
      bad(field, fmt::format("holds {} transformer layers 't' but {} has {}", layers, m.name, l));
    if (p.layout->mtp_layers != m.mtp_layers)
      bad(field, fmt::format("holds {} MTP layers 'm' but {} has mtp_num_layers {}", p.layout->mtp_layers,
                             m.name, m.mtp_layers));
    if (stages % pp != 0)
      bad(field, fmt::format("has {} stages, not a multiple of pp = {} (each pipeline rank runs stages / pp "
                             "model chunks)",
                             stages, pp));
    if (vs != stages / pp)
      bad(field,
          fmt::format("has {} stages = pp {} x {} model chunks but virtual_stages is {} (leave it out: the "
                      "layout sets it, as in Megatron)",
                      stages, pp, stages / pp, vs));
    return;
  }
  if ((first || last) && (p.embedding_in_split || p.loss_in_split)) {
    bad(first ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
        "cannot be set together with account_for_embedding/loss_in_pipeline_split (Megatron refuses it too)");
  }
  // At pp 1 one stage is both the first and the last: one size (equal to the layers) or the
  // embedding / loss counted is what Megatron accepts; both sizes would contradict each other.
  if (first && last && pp < 2)
    bad("num_layers_in_last_pipeline_stage",
        "set together with num_layers_in_first_pipeline_stage needs pp >= 2 (at pp = 1 the first stage is "
        "the last)");
  if (first || last) {
    for (const auto& [set, n, field] :
         {std::tuple{first, p.first_stage_layers, "num_layers_in_first_pipeline_stage"},
          std::tuple{last, p.last_stage_layers, "num_layers_in_last_pipeline_stage"}}) {
      if (set && n % vs != 0)
        bad(field,
            fmt::format("{} is not a multiple of virtual_stages = {} (each model chunk of the stage gets "
                        "the same number of layers)",
                        n, vs));
    }
    const std::int64_t rest = l - p.first_stage_layers - p.last_stage_layers;
    const std::int64_t middle = pp - (first ? 1 : 0) - (last ? 1 : 0);
    const char* field = last ? "num_layers_in_last_pipeline_stage" : "num_layers_in_first_pipeline_stage";
    if (rest < 0)
      bad(field, fmt::format("the first and last stages take {} layers but {} has {}", l - rest, m.name, l));
    if ((rest > 0) != (middle > 0)) {
      bad(field,
          fmt::format("{} layers are left for the {} middle stages of pp = {} (expected both zero or both "
                      "positive)",
                      rest, middle, pp));
    }
    if (middle > 0 && rest % (middle * vs) != 0) {
      bad(field,
          fmt::format("the {} layers left are not a multiple of middle stages x virtual_stages = {} x {}",
                      rest, middle, vs));
    }
    return;
  }
  const std::int64_t counted = l + (p.embedding_in_split ? 1 : 0) + (p.loss_in_split ? 1 : 0);
  if (counted % (pp * vs) != 0) {
    const bool extra = counted != l;
    bad("pp", fmt::format("pp*virtual_stages = {}*{} = {} does not divide the {} layers of {}{}", pp, vs,
                          pp * vs, counted, m.name,
                          extra ? " (with the embedding / loss counted as layers)"
                                : " (uneven stages: num_layers_in_first/last_pipeline_stage, or "
                                  "account_for_embedding/loss_in_pipeline_split)"));
  }
}

}  // namespace

ParallelConfig parse_parallel(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where, "$");
  ParallelConfig p;
  constexpr std::int64_t kMaxWays = 1 << 20;
  // Every degree defaults to 1 (that kind of parallelism not used).
  p.tp = static_cast<int>(f.integer_or("tp", 1, 1, kMaxWays));
  p.sequence_parallel = f.boolean_or("sequence_parallel", false);
  p.pp = static_cast<int>(f.integer_or("pp", 1, 1, kMaxWays));
  // null or absent: not set, 1F1B or what a pipeline layout implies (validate); a scenario's
  // normalized baseline carries it as null so that a variant's layout still sets it.
  p.schedule_given = f.string_or_unset("schedule").has_value();
  p.schedule = !p.schedule_given || f.choice("schedule", {"1f1b", "interleaved"}) == "1f1b"
                   ? PipelineSchedule::one_f_one_b
                   : PipelineSchedule::interleaved;
  p.virtual_stages = static_cast<int>(f.integer_or("virtual_stages", 1, 1, kMaxWays));
  // Megatron-Core's TransformerConfig names; a set stage size must be > 0, as Megatron checks;
  // null is "not set" (Megatron's None), so that a scenario variant can unset it.
  p.first_stage_layers = f.integer_or_unset("num_layers_in_first_pipeline_stage", 1, 100000).value_or(0);
  p.last_stage_layers = f.integer_or_unset("num_layers_in_last_pipeline_stage", 1, 100000).value_or(0);
  p.embedding_in_split = f.boolean_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_split = f.boolean_or("account_for_loss_in_pipeline_split", false);
  // null or absent: not set (Megatron's None).
  if (const auto layout = f.string_or_unset("pipeline_model_parallel_layout"))
    p.layout = parse_pipeline_layout(
        *layout, fmt::format("{}: {}", where, f.path_of("pipeline_model_parallel_layout")));
  p.dp = static_cast<int>(f.integer_or("dp", 1, 1, kMaxWays));
  p.zero = static_cast<int>(f.integer_or("zero", 0, 0, 3));
  if (f.has("fsdp")) {
    if (f.boolean("fsdp")) {
      if (f.has("zero") && p.zero != 3)
        f.fail("fsdp", fmt::format("true means ZeRO-3 but zero is {}", p.zero));
      p.zero = 3;
    }
  } else {
    f.boolean_or("fsdp", false);
  }
  p.cp = static_cast<int>(f.integer_or("cp", 1, 1, kMaxWays));
  p.ep = static_cast<int>(f.integer_or("ep", 1, 1, kMaxWays));
  // null or absent: Megatron's default, the attention TP degree (ParallelConfig::expert_tp).
  p.etp = static_cast<int>(f.integer_or_unset("etp", 1, kMaxWays).value_or(0));
  p.micro_batch = f.integer("micro_batch", 1, std::int64_t{1} << 30);
  p.global_batch = f.integer("global_batch", 1, std::int64_t{1} << 40);
  p.seq = f.integer_or("seq", 0, 1, std::int64_t{1} << 24);
  p.precision =
      f.choice_or("precision", "bf16", {"bf16", "fp8"}) == "bf16" ? Precision::bf16 : Precision::fp8;
  std::string rc = f.choice_or("recompute", "none", {"none", "selective", "full"});
  p.recompute = rc == "none" ? Recompute::none : rc == "selective" ? Recompute::selective : Recompute::full;
  p.attention = f.choice_or("attention", "flash", {"flash", "materialized"}) == "flash"
                    ? AttentionKernel::flash
                    : AttentionKernel::materialized;
  p.tp_backward_overlap = f.boolean_or("tp_backward_overlap", true);
  if (f.has("order")) p.order = parse_order(f, f.string("order"));
  p.overlap_grad_reduce = f.boolean_or("overlap_grad_reduce", true);
  p.overlap_param_gather = f.boolean_or("overlap_param_gather", false);
  p.fp8_param_gather = f.boolean_or("fp8_param_gather", false);
  p.moe_shared_expert_overlap = f.boolean_or("moe_shared_expert_overlap", false);
  if (f.has("moe_token_dispatcher") && f.string("moe_token_dispatcher") == "flex")
    f.fail("moe_token_dispatcher",
           "\"flex\" (DeepEP / HybridEP fused dispatch kernels) is not modelled; expected \"alltoall\" or "
           "\"allgather\"");
  p.moe_token_dispatcher =
      f.choice_or("moe_token_dispatcher", "alltoall", {"alltoall", "allgather"}) == "alltoall"
          ? TokenDispatcher::alltoall
          : TokenDispatcher::allgather;
  // null or absent: Megatron's default, which depends on dp (ParallelConfig::bucket_size).
  p.bucket_params = f.integer_or_unset("bucket_params", 1, std::int64_t{1} << 50).value_or(0);
  std::string gd = f.choice_or("grad_dtype", "bf16", {"bf16", "fp32"});
  p.grad_bytes = gd == "bf16" ? 2 : 4;
  f.reject_unknown();
  return p;
}

ParallelFieldError::ParallelFieldError(const std::string& where, std::string field, std::string detail)
    : InputError(fmt::format("{}: $.{}: {}", where, field, detail)),
      field_(std::move(field)),
      detail_(std::move(detail)) {}

ParallelConfig load_parallel_file(const std::string& path) {
  return parse_parallel(read_json_file(path, "parallelism file"), path);
}

namespace {

// The software switches that need another setting or a model feature (overlaps, FP8 gathers, the
// MoE dispatcher's options), refused as Megatron refuses them. Part of validate().
void validate_switches(const ModelSpec& m, const ParallelConfig& p, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw ParallelFieldError(where, field, msg);
  };
  if (p.overlap_param_gather && p.zero != 1 && p.zero != 2) {
    bad("overlap_param_gather",
        fmt::format("true needs the distributed optimizer's parameter all-gather (zero 1 or 2), "
                    "but zero is {} (Megatron asserts the same)",
                    p.zero));
  }
  if (p.moe_shared_expert_overlap && (!m.moe || m.moe->shared_experts == 0)) {
    bad("moe_shared_expert_overlap",
        fmt::format("true overlaps the shared experts with the token dispatcher, but {} has {}", m.name,
                    m.moe ? "no shared experts" : "no experts"));
  }
  if (p.moe_token_dispatcher == TokenDispatcher::allgather && !m.moe)
    bad("moe_token_dispatcher",
        fmt::format("\"allgather\" dispatches tokens to experts, but {} has no experts", m.name));
  // Megatron asserts the same: the shared experts overlap only the all-to-all or flex dispatchers.
  if (p.moe_token_dispatcher == TokenDispatcher::allgather && p.moe_shared_expert_overlap)
    bad("moe_token_dispatcher",
        "\"allgather\" cannot overlap the shared experts (moe_shared_expert_overlap needs the all-to-all "
        "dispatcher; Megatron asserts the same)");
  if (p.fp8_param_gather && p.precision != Precision::fp8)
    bad("fp8_param_gather",
        "true needs precision fp8 (FP8 weights exist only in FP8 training; Megatron "
        "asserts the same)");
  if (p.fp8_param_gather && p.zero < 1) {
    bad("fp8_param_gather",
        fmt::format("true needs a parameter all-gather to run in FP8 (zero 1, 2 or 3: the distributed "
                    "optimizer or FSDP), but zero is {} (Megatron asserts the same)",
                    p.zero));
  }
}

}  // namespace

void validate(const ModelSpec& m, ParallelConfig& p, int gpus, const std::string& where) {
  auto bad = [&](const std::string& field, const std::string& msg) {
    throw ParallelFieldError(where, field, msg);
  };
  if (p.seq == 0) p.seq = m.seq;
  if (gpus > 0 && p.gpus() != gpus) {
    // Named under dp: the factor usually derived from the others, and the one to change.
    const long long rest = static_cast<long long>(p.tp) * p.pp * p.cp;
    bad("dp", fmt::format("tp*pp*dp*cp = {}*{}*{}*{} = {} but the cluster has {} GPUs{}", p.tp, p.pp, p.dp,
                          p.cp, p.gpus(), gpus,
                          gpus % rest == 0 ? fmt::format(" (expected dp = {})", gpus / rest)
                                           : fmt::format(" (no multiple of tp*pp*cp = {})", rest)));
  }
  if (m.heads % p.tp != 0)
    bad("tp", fmt::format("{} does not divide the {} attention heads of {}", p.tp, m.heads, m.name));
  // Megatron-Core shards whole K/V groups (num_query_groups % tp == 0); no K/V replication.
  if (m.kv_heads % p.tp != 0) {
    bad("tp",
        fmt::format("{} does not divide the {} key/value heads of {} (Megatron shards whole K/V groups)",
                    p.tp, m.kv_heads, m.name));
  }
  if (m.ffn_hidden % p.tp != 0)
    bad("tp", fmt::format("{} does not divide ffn_hidden = {}", p.tp, m.ffn_hidden));
  if (m.vocab % p.tp != 0)
    bad("tp", fmt::format("{} does not divide the vocabulary of {} (pad it)", p.tp, m.vocab));
  // A layout sets the model chunks per pipeline rank (Megatron derives the virtual pipeline size from
  // it and refuses --num-virtual-stages-per-pipeline-rank next to it): virtual_stages 1 (the default)
  // lets the layout set it, and the schedule follows (Megatron has no schedule switch: more than one
  // chunk per rank is the interleaved schedule). A schedule written next to the layout must be
  // the one the layout gives, as virtual_stages > 1 must come with "interleaved".
  if (p.layout && p.layout->layers_per_stage.size() % static_cast<std::size_t>(p.pp) == 0 &&
      p.virtual_stages == 1) {
    const std::size_t stages = p.layout->layers_per_stage.size();
    p.virtual_stages = static_cast<int>(stages / static_cast<std::size_t>(p.pp));
    const PipelineSchedule implied =
        p.virtual_stages > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
    if (p.schedule_given && p.schedule != implied) {
      const bool one = p.virtual_stages == 1;
      bad("schedule",
          fmt::format("\"{}\", but pipeline_model_parallel_layout's {} stages over pp = {} give {} "
                      "model chunk{} per pipeline rank, which need{} \"schedule\": \"{}\" (or leave "
                      "schedule out or null: the layout sets it)",
                      to_string(p.schedule), stages, p.pp, p.virtual_stages, one ? "" : "s", one ? "s" : "",
                      to_string(implied)));
    }
    p.schedule = implied;
  }
  // The op graph numbers a message's virtual stage below 1000 (its tags); an even split needs a
  // layer per chunk, so only a layout of mostly empty stages comes near it.
  if (std::int64_t{p.pp} * p.virtual_stages > 1000)
    bad(p.layout ? "pipeline_model_parallel_layout" : "virtual_stages",
        fmt::format("pp x virtual_stages = {} x {} = {} model chunks in a pipeline; expected at most 1000",
                    p.pp, p.virtual_stages, std::int64_t{p.pp} * p.virtual_stages));
  if (p.schedule == PipelineSchedule::one_f_one_b && p.virtual_stages != 1) {
    bad("virtual_stages", fmt::format("{} needs \"schedule\": \"interleaved\"", p.virtual_stages));
  }
  if (p.schedule == PipelineSchedule::interleaved) {
    if (p.pp < 2) bad("schedule", "the interleaved schedule needs pp >= 2");
    if (p.virtual_stages < 2)
      bad("virtual_stages", fmt::format("{}: the interleaved schedule needs >= 2", p.virtual_stages));
  }
  check_layer_split(m, p, bad);
  if (p.global_batch % (p.micro_batch * p.dp) != 0) {
    bad("global_batch",
        fmt::format("{} is not a multiple of micro_batch*dp = {}*{}", p.global_batch, p.micro_batch, p.dp));
  }
  // The op graph holds every micro-batch of a pipeline (its forward and backward per layer): an
  // absurd gradient accumulation would exhaust memory before a clear word. Real jobs run tens to a
  // few hundred micro-batches per DP rank (Llama 3 405B: 16).
  if (p.global_batch % (p.micro_batch * p.dp) == 0 && p.micro_batches() > ParallelConfig::kMaxMicroBatches) {
    bad("global_batch",
        fmt::format("{} / (micro_batch*dp = {}*{}) = {} micro-batches per DP rank; expected at most {}",
                    p.global_batch, p.micro_batch, p.dp, p.micro_batches(),
                    ParallelConfig::kMaxMicroBatches));
  }
  if (p.schedule == PipelineSchedule::interleaved && p.micro_batches() % p.pp != 0) {
    bad("global_batch",
        fmt::format("{} micro-batches per DP rank is not a multiple of pp = {} (interleaved schedule)",
                    p.micro_batches(), p.pp));
  }
  // Megatron's load-balanced context parallelism cuts each sequence into 2*cp chunks.
  if (p.cp > 1 && p.attention == AttentionKernel::materialized) {
    bad("attention",
        "materialized attention has no context parallelism (Megatron's CP needs the fused attention kernel)");
  }
  if (const std::int64_t two_cp = 2 * static_cast<std::int64_t>(p.cp); p.cp > 1 && p.seq % two_cp != 0)
    bad("cp", fmt::format("2*cp = {} does not divide seq = {}", two_cp, p.seq));
  if (p.sequence_parallel && (p.seq / p.cp) % p.tp != 0) {
    bad("sequence_parallel",
        fmt::format("tp = {} does not divide the {} tokens per CP rank", p.tp, p.seq / p.cp));
  }
  if (p.ep > 1 && !m.moe) bad("ep", fmt::format("{} > 1 but {} has no experts", p.ep, m.name));
  if (p.etp > 0 && !m.moe) bad("etp", fmt::format("is set but {} has no experts", m.name));
  if (m.moe) {
    // 64-bit: the degrees are checked one by one (up to 2^20 each), not their product.
    const std::int64_t stage_ranks = std::int64_t{p.tp} * p.cp * p.dp;
    const std::int64_t etp = p.expert_tp(), expert_grid = etp * p.ep;
    const std::string etp_origin = p.etp > 0 ? "" : " (etp not set: Megatron's default, the tp degree)";
    if (m.moe->experts % p.ep != 0)
      bad("ep", fmt::format("{} does not divide the {} experts", p.ep, m.moe->experts));
    if (m.moe->ffn_hidden % etp != 0)
      bad(p.etp > 0 ? "etp" : "tp",
          fmt::format("expert tensor parallelism {} does not divide the experts' ffn_hidden = {}{}", etp,
                      m.moe->ffn_hidden, etp_origin));
    // Megatron: world % (etp * ep * pp) == 0, i.e. the expert grid etp x ep tiles a stage's ranks.
    if (stage_ranks % expert_grid != 0) {
      bad(etp > 1 ? "etp" : "ep",
          fmt::format(
              "etp*ep = {}*{} = {} does not divide tp*cp*dp = {} (the ranks of a pipeline stage){}{}", etp,
              p.ep, expert_grid, stage_ranks, etp_origin,
              p.etp == 0 && etp > 1 && stage_ranks % p.ep == 0 ? "; etp 1 keeps the experts whole" : ""));
    }
    // Megatron asserts it: with pp not the outermost dimension the expert grid and the dense grid
    // keep their pipelines alike only when the expert-data-parallel size equals dp.
    if (p.pp > 1 && p.order.back() != Dim::pp && stage_ranks / expert_grid != p.dp)
      bad("order",
          fmt::format("pp is not the last dimension, so Megatron needs the expert-data-parallel size "
                      "tp*cp*dp/(etp*ep) = {} to equal dp = {} (etp*ep = tp*cp = {}), or pp last",
                      stage_ranks / expert_grid, p.dp, std::int64_t{p.tp} * p.cp));
    // The shared experts are one MLP over the TP group (Megatron's SharedExpertMLP), its width
    // shared x expert width split like a dense MLP's.
    if (const std::int64_t shared = m.moe->shared_experts * m.moe->ffn_hidden;
        shared > 0 && shared % p.tp != 0)
      bad("tp", fmt::format("{} does not divide the shared experts' width {} x {} = {}", p.tp,
                            m.moe->shared_experts, m.moe->ffn_hidden, shared));
    // Megatron asserts the same: MoE token dispatch with TP works on sequence-parallel shards.
    if (p.tp > 1 && !p.sequence_parallel)
      bad("sequence_parallel", "MoE models with tp > 1 need sequence_parallel true");
  }
  validate_switches(m, p, where);
  if (p.zero == 3 && p.pp > 1)
    bad("zero", "ZeRO-3/FSDP together with pipeline parallelism is not supported (as in Megatron)");
  // DeepSpeed's pipeline engine refuses ZeRO-2 too (runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are
  // incompatible with pipeline parallelism"); Megatron has no ZeRO-2.
  if (p.zero == 2 && p.pp > 1)
    bad("zero", "ZeRO-2 together with pipeline parallelism is not supported (as in DeepSpeed)");
}

bool uneven_split(const ParallelConfig& par) {
  return par.first_stage_layers > 0 || par.last_stage_layers > 0 || par.embedding_in_split ||
         par.loss_in_split || par.layout.has_value();
}

std::string describe_uneven_split(const ModelSpec& model, const ParallelConfig& par) {
  if (!uneven_split(par)) return "";
  if (par.layout) return fmt::format(" pipeline layout {}", par.layout->text);
  auto stage = [&](int s) {
    std::int64_t n = 0;
    for (int c = 0; c < par.virtual_stages; ++c) n += chunk_layer_count(model, par, s, c);
    return n;
  };
  if (par.pp == 1) return fmt::format(" stage layers {}", stage(0));
  if (par.pp == 2) return fmt::format(" stage layers first {} last {}", stage(0), stage(1));
  return fmt::format(" stage layers first {} middle {} last {}", stage(0), stage(1), stage(par.pp - 1));
}

std::string describe_expert_tp(const ModelSpec& model, const ParallelConfig& par) {
  return model.moe ? fmt::format(" etp {}", par.expert_tp()) : "";
}

std::string describe_token_dispatcher(const ModelSpec& model, const ParallelConfig& par) {
  return model.moe && par.moe_token_dispatcher != TokenDispatcher::alltoall
             ? fmt::format(" moe-token-dispatcher {}", to_string(par.moe_token_dispatcher))
             : "";
}

std::string describe_mtp(const ModelSpec& model) {
  return model.mtp_layers > 0 ? fmt::format(" mtp {}", model.mtp_layers) : "";
}

std::int64_t chunk_layer_count(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk) {
  const std::int64_t vs = par.virtual_stages;
  if (par.layout)
    return par.layout->layers_per_stage.at(
        static_cast<std::size_t>(chunk) * static_cast<std::size_t>(par.pp) + static_cast<std::size_t>(stage));
  if (par.first_stage_layers > 0 || par.last_stage_layers > 0) {
    if (stage == 0 && par.first_stage_layers > 0) return par.first_stage_layers / vs;
    if (stage == par.pp - 1 && par.last_stage_layers > 0) return par.last_stage_layers / vs;
    const std::int64_t middle =
        par.pp - (par.first_stage_layers > 0 ? 1 : 0) - (par.last_stage_layers > 0 ? 1 : 0);
    if (middle <= 0) return 0;  // unreachable: with no middle stage every stage is the first or the last
    return (model.layers - par.first_stage_layers - par.last_stage_layers) / (middle * vs);
  }
  // Even split, the embedding and the loss each counting as one layer where asked.
  const std::int64_t counted = model.layers + (par.embedding_in_split ? 1 : 0) + (par.loss_in_split ? 1 : 0);
  std::int64_t n = counted / (std::int64_t{par.pp} * vs);
  if (par.embedding_in_split && stage == 0 && chunk == 0) --n;
  if (par.loss_in_split && stage == par.pp - 1 && chunk == vs - 1) --n;
  return n;
}

LayerRange stage_layers(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk) {
  // The layers follow the virtual stages in order: all chunks before this one, stage by stage.
  std::int64_t first = 0;
  for (int c = 0; c <= chunk; ++c) {
    for (int s = 0; s < par.pp && !(c == chunk && s == stage); ++s)
      first += chunk_layer_count(model, par, s, c);
  }
  return {first, first + chunk_layer_count(model, par, stage, chunk)};
}

LayerRange mtp_stage_layers(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk) {
  if (stage != par.pp - 1 || chunk != par.virtual_stages - 1) return {model.layers, model.layers};
  return {model.layers, model.layers + model.mtp_layers};
}

std::int64_t in_flight_chunks(const ParallelConfig& par, int stage) {
  const std::int64_t m = par.micro_batches();
  if (par.schedule == PipelineSchedule::one_f_one_b) return std::min<std::int64_t>(par.pp - stage, m);
  const std::int64_t total = m * par.virtual_stages;
  if (m == par.pp) return total;  // Megatron runs all forwards first in that case
  return std::min<std::int64_t>(
      std::int64_t{par.pp - stage - 1} * 2 + std::int64_t{par.virtual_stages - 1} * par.pp + 1, total);
}

}  // namespace commstack::workloads
