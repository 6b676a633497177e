#pragma once
// How one training job is split over GPUs (Megatron-LM terms): tensor (TP, optionally with
// sequence parallelism), pipeline (PP, 1F1B or interleaved with virtual stages), data (DP, with
// ZeRO stage 0-3; FSDP = ZeRO-3), context (CP), expert (EP) parallelism, batch sizes, precision
// and activation recomputation. validate() enforces the divisibility rules Megatron enforces,
// with messages that say which number breaks which rule.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/error.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/pipeline_layout.hpp"

namespace commstack::workloads {

enum class PipelineSchedule { one_f_one_b, interleaved };
enum class Precision { bf16, fp8 };
enum class Recompute { none, selective, full };
// How the attention core runs: one fused kernel that never writes the seq x seq score matrix to HBM
// (FlashAttention, cuDNN fused attention: Megatron-Core / Transformer Engine today), or the
// materialized path of Megatron-LM 2020-2022 (baddbmm scores, fused scale-mask-softmax, dropout,
// bmm with V), whose seq^2 tensors make it memory-bound (Korthikanti et al., Section 4.2).
enum class AttentionKernel { flash, materialized };
// How an MoE layer moves tokens to the experts (Megatron-Core --moe-token-dispatcher-type): an
// all-to-all over the EP group (then an all-gather over expert TP), or an all-gather of every token
// of the expert-TP x EP group to every rank of it, each rank keeping those routed to its experts, and
// a reduce-scatter back (MoEAllGatherTokenDispatcher, Megatron-Core's default).
enum class TokenDispatcher { alltoall, allgather };
// The four grid dimensions of the rank layout (EP is carved out of CP x DP, see layout.hpp).
enum class Dim { tp, cp, dp, pp };

std::string to_string(PipelineSchedule s);
std::string to_string(Precision p);
std::string to_string(Recompute r);
std::string to_string(AttentionKernel a);
std::string to_string(TokenDispatcher d);
std::string to_string(Dim d);

struct ParallelConfig {
  int tp = 1;
  bool sequence_parallel = false;  // Korthikanti SP: LayerNorm/dropout regions split over TP ranks
  int pp = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  // "schedule" was written in the config, not null (parse_parallel): then a pipeline layout must
  // imply the same schedule instead of setting it (validate).
  bool schedule_given = false;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved schedule; 1 for 1F1B)
  // Uneven pipeline stages (Megatron-Core TransformerConfig, docs/workloads.md): the transformer
  // layers of the first / last stage (0: not set, the even split), the other stages share the rest
  // evenly (--decoder-first/last-pipeline-num-layers). Or the embedding and / or the loss count as
  // one layer each in an even split, so the first / last model chunk builds one transformer layer
  // fewer (--account-for-embedding/loss-in-pipeline-split: Llama 3 405B's 126 layers + 2 = 128
  // over PP 8 or 16). The two ways are exclusive, as in Megatron.
  std::int64_t first_stage_layers = 0;
  std::int64_t last_stage_layers = 0;
  bool embedding_in_split = false;
  bool loss_in_split = false;
  // Or a custom layout (Megatron-Core --pipeline-model-parallel-layout, pipeline_layout.hpp): the
  // layers of every virtual stage; it sets virtual_stages (stages / pp). Exclusive with the above.
  std::optional<PipelineLayout> layout;
  int dp = 1;
  int zero = 0;  // 0: replicated optimizer; 1: optimizer states; 2: + gradients; 3: + weights
  int cp = 1;
  int ep = 1;
  // Expert tensor parallelism (Megatron's --expert-tensor-parallel-size): each routed expert's
  // weights split over etp ranks. 0: not set, Megatron's default, the attention TP (expert_tp()).
  int etp = 0;
  std::int64_t micro_batch = 1;   // sequences per micro-batch per DP rank
  std::int64_t global_batch = 1;  // sequences per iteration, all DP ranks together
  std::int64_t seq = 0;           // tokens per sequence (the model's seq when the config omits it)
  Precision precision = Precision::bf16;
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::flash;
  // Backward of a column-parallel linear (QKV, fc1): the TP reduction of the input gradient (all-
  // reduce, or reduce-scatter with SP) runs on the communication stream while the weight-gradient
  // GEMM computes, and with SP the all-gather of the input overlaps the input-gradient GEMM.
  // Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication (--async-tensor-model-parallel-
  // allreduce, on by default from late 2021; with SP in Korthikanti et al. 2022). false: the 2021
  // code path of the SC'21 runs, where autograd computes both gradients and then the reduction
  // blocks the stream.
  bool tp_backward_overlap = true;
  // MoE layers: the shared experts' GEMMs run on their own stream while the token dispatcher's all-
  // to-alls move the routed tokens (Megatron-Core --moe-shared-expert-overlap); needs shared experts.
  bool moe_shared_expert_overlap = false;
  // MoE token dispatcher. The all-to-all is this tool's default (NeMo's MoE recipes and the published
  // MoE runs use it); Megatron-Core's own default is the all-gather.
  TokenDispatcher moe_token_dispatcher = TokenDispatcher::alltoall;
  // Rank order, innermost (fastest varying) first. Megatron-Core default "tp-cp-ep-dp-pp"
  // (parallel_state.initialize_model_parallel, order argument); EP is folded into CP x DP.
  std::vector<Dim> order = {Dim::tp, Dim::cp, Dim::dp, Dim::pp};
  bool overlap_grad_reduce = true;  // DP reduction starts per bucket as soon as backward produced it
  // The distributed optimizer's parameter all-gathers run during the next forward, bucket by
  // bucket before first use (Megatron-Core --overlap-param-gather, NeMo's default), instead of
  // after the optimizer step. Needs zero 1 or 2.
  bool overlap_param_gather = false;
  // Transformer Engine keeps the GEMM weights as FP8 tensors and the distributed optimizer (or
  // FSDP) all-gathers them in FP8, 1 byte each instead of 2 (Megatron-Core --fp8-param-gather,
  // NeMo's fp8_params); norms, biases, the router and the embedding / output layer stay bf16. The
  // optimizer casts its updated fp32 shard to FP8 and all-reduces the scales' amaxes over its data-
  // parallel group. Needs precision fp8 and zero >= 1, as in Megatron.
  bool fp8_param_gather = false;
  // DP bucket size in parameters; 0: Megatron-Core's default max(4e7, 1e6 x dp*cp), larger buckets
  // for large DP groups so that each ring chunk stays bandwidth-bound (bucket_size()).
  std::int64_t bucket_params = 0;
  int grad_bytes = 2;  // gradient element size: 2 (bf16, ZeRO paper's 16 B/param) or 4 (fp32)

  int gpus() const { return tp * pp * dp * cp; }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Ranks that hold one copy of a stage's routed experts between them: tp*cp*dp / (etp*ep).
  int expert_dp() const { return tp * cp * dp / (expert_tp() * ep); }
  std::int64_t bucket_size() const {
    if (bucket_params > 0) return bucket_params;
    // Without overlap Megatron reduces everything at once: bucket_size None (Megatron-Core), the
    // whole contiguous gradient buffer in one all-reduce (Megatron-LM 2021's LocalDDP).
    if (!overlap_grad_reduce) return std::numeric_limits<std::int64_t>::max();
    return std::max<std::int64_t>(40'000'000, std::int64_t{1'000'000} * dp * cp);
  }
  std::int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  // Micro-batches per DP rank a job may have (the op graph holds each one; validate_parallel).
  static constexpr std::int64_t kMaxMicroBatches = 16384;
  int activation_bytes() const { return 2; }  // bf16 activations (fp8 GEMM inputs are cast inside TE)
  int gemm_operand_bytes() const { return precision == Precision::fp8 ? 1 : 2; }
};

// What validate() throws: the InputError "WHERE: $.FIELD: DETAIL", keeping the field and the detail
// apart so that a caller whose user set the field another way (train's command-line flags) can name
// it so.
class ParallelFieldError : public InputError {
 public:
  ParallelFieldError(const std::string& where, std::string field, std::string detail);
  const std::string& field() const { return field_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string field_, detail_;
};

// Parses a parallelism object. Fields: docs/workloads.md. `where` names the input in errors.
ParallelConfig parse_parallel(const nlohmann::json& j, const std::string& where);
ParallelConfig load_parallel_file(const std::string& path);

// Layers [first, last) of pipeline stage `stage`, model chunk `chunk` (0 for 1F1B). Megatron's
// interleaved assignment: chunk c of stage s is virtual stage c*pp + s, and the layers follow the
// virtual stages in order (get_transformer_layer_offset). Uneven splits as set in ParallelConfig.
struct LayerRange {
  std::int64_t first = 0, last = 0;
  std::int64_t count() const { return last - first; }
};
LayerRange stage_layers(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk);
// The multi-token-prediction layers (indices layers .. layers + mtp_layers - 1) of one model chunk:
// all on the last virtual stage, after its decoder layers (Megatron's placement without a layout,
// and the only one a layout may give here); empty elsewhere.
LayerRange mtp_stage_layers(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk);
// Transformer layers of one model chunk (get_num_layers_to_build); stage_layers(...).count().
std::int64_t chunk_layer_count(const ModelSpec& model, const ParallelConfig& par, int stage, int chunk);
// True where the split is not the plain even one (first/last stage layers or embedding/loss set).
bool uneven_split(const ParallelConfig& par);
// For run labels: " stage layers first F middle M last L" (each stage's layers, all its chunks;
// no middle at pp 2, only "stage layers N" at pp 1); empty for the even split.
std::string describe_uneven_split(const ModelSpec& model, const ParallelConfig& par);
// For run labels: " etp N" for MoE models (the expert TP degree in use, set or Megatron's default).
std::string describe_expert_tp(const ModelSpec& model, const ParallelConfig& par);
// For run labels: " moe-token-dispatcher allgather" where an MoE model does not use the all-to-all.
std::string describe_token_dispatcher(const ModelSpec& model, const ParallelConfig& par);
// For run labels: " mtp N" for models with multi-token prediction layers.
std::string describe_mtp(const ModelSpec& model);
// Model chunks each stage runs before its first backward, at most (1F1B: pp - stage; interleaved:
// Megatron's warm-up (pp - stage - 1)*2 + (vs - 1)*pp, plus the first steady-state forward).
std::int64_t in_flight_chunks(const ParallelConfig& par, int stage);

// Fills seq from the model when absent and checks every rule against the model. `gpus` is the
// number of GPUs of the cluster (<= 0 to skip that check). Throws InputError naming `where`.
void validate(const ModelSpec& model, ParallelConfig& par, int gpus, const std::string& where);

}  // namespace commstack::workloads
