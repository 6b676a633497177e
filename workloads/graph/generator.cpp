#include "workloads/graph/generator.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "workloads/flops.hpp"
#include "workloads/graph/schedule.hpp"
#include "workloads/parallel/layout.hpp"
#include "workloads/rank_params.hpp"

namespace commstack::workloads {
namespace {

std::uint64_t to_bytes(double b) { return static_cast<std::uint64_t>(std::llround(b)); }

// HBM bytes per residual-stream element (bf16) of the memory-bound kernels around the GEMMs
// (Megatron's fused kernels; each reads its inputs and writes its outputs once):
// LayerNorm/RMSNorm forward reads x, writes y (2+2); backward reads dy and x, writes dx (6), and the
// residual stream's gradient then sums the two branches (read 2+2, write 2): 12.
constexpr double kNormFwdBytes = 4;
constexpr double kNormBwdBytes = 12;
// Residual add (Megatron's fused bias-dropout-add): reads the branch output and the residual, writes
// the sum (2+2+2) and, with dropout, the 1-byte mask; backward writes the branch gradient (2) after
// reading the incoming one (2) and the mask (1).
constexpr double kResidualFwdBytes = 6, kResidualBwdBytes = 4, kDropoutMaskBytes = 1;

// Kinds of point-to-point messages, part of the send/recv tag.
enum TagKind : std::int64_t { kPpForward = 1, kPpBackward = 2, kCpForward = 3, kCpBackward = 4, kCpRecompute = 5 };

std::int64_t make_tag(TagKind kind, std::int64_t mb, std::int64_t where, std::int64_t layer, std::int64_t step) {
  return (((kind * 1'000'000 + mb) * 1000 + where) * 100'000 + (layer + 1)) * 1000 + step;
}

// Emits the ops of one rank. Compute ops form one chain (the compute stream); a blocking
// collective (TP, EP, ZeRO-3 gather, a recv) is waited on by the next compute op.
class RankEmitter {
public:
  RankEmitter(const ModelSpec& m, const ParallelConfig& p, const RankLayout& layout, OpGraph& g, int rank)
      : m_(m), p_(p), layout_(layout), g_(g), rank_(rank), me_(layout.coord(rank)),
        held_(m, p.tp, p.pp, p.ep, p.expert_tp()) {
    tp_comm_ = g_.communicator(GroupKind::tp, layout_.group_of(GroupKind::tp, rank));
    dp_comm_ = g_.communicator(GroupKind::dp_cp, layout_.group_of(GroupKind::dp_cp, rank));
    if (m_.moe) {
      ep_comm_ = g_.communicator(GroupKind::ep, layout_.group_of(GroupKind::ep, rank));
      edp_comm_ = g_.communicator(GroupKind::expert_dp, layout_.group_of(GroupKind::expert_dp, rank));
      etp_comm_ = g_.communicator(GroupKind::expert_tp, layout_.group_of(GroupKind::expert_tp, rank));
      if (allgather_dispatch())
        tpep_comm_ =
            g_.communicator(GroupKind::expert_tp_ep, layout_.group_of(GroupKind::expert_tp_ep, rank));
    }
    sp_ = p_.sequence_parallel && p_.tp > 1;
    t_ = p_.tp;
    tokens_ = static_cast<double>(p_.micro_batch) * static_cast<double>(p_.seq) / p_.cp;
    hidden_bytes_ = tokens_ * static_cast<double>(m_.hidden) * p_.activation_bytes();
    buckets_ = gradient_buckets();
  }

  void run() {
    const auto steps = pipeline_schedule(p_.pp, me_.pp, p_.micro_batches(), p_.virtual_stages);
    for (const ScheduleStep& st : steps) {
      if (st.forward) forward_step(st.micro_batch, st.chunk);
      else backward_step(st.micro_batch, st.chunk);
    }
    finish_iteration();
  }

private:
  // ---- op creation -------------------------------------------------------------------------
  Op& add(OpKind kind, Stream stream, Phase phase, const char* name, int mb, std::int64_t layer, int chunk) {
    Op op;
    op.id = static_cast<int>(g_.ops.size());
    op.rank = rank_;
    op.kind = kind;
    op.stream = stream;
    op.phase = phase;
    op.name = name;
    op.micro_batch = mb;
    op.layer = static_cast<int>(layer);
    op.chunk = chunk;
    g_.ops.push_back(std::move(op));
    return g_.ops.back();
  }

  int compute(const char* name, ComputeClass cc, double flops, double mem, Phase ph, int mb, std::int64_t layer, int chunk) {
    Op& op = add(OpKind::compute, Stream::compute, ph, name, mb, layer, chunk);
    op.cclass = cc;
    op.flops = flops;
    op.mem_bytes = mem;
    if (last_compute_ >= 0) op.deps.push_back(last_compute_);
    op.deps.insert(op.deps.end(), pending_.begin(), pending_.end());
    pending_.clear();
    std::sort(op.deps.begin(), op.deps.end());
    op.deps.erase(std::unique(op.deps.begin(), op.deps.end()), op.deps.end());
    last_compute_ = op.id;
    return op.id;
  }

  // GEMM (M x K) * (K x N): 2MKN FLOPs, operands and result read/written once.
  // FP8 (Transformer Engine): the BF16 activation operand is quantized first by a fused cast-transpose
  // kernel (reads 2 bytes, writes the FP8 copy and its transpose for the backward: 4 bytes per
  // element): the input X (M x K) in the forward, the output gradient dY in the backward (M x N of
  // a combined dX+dW op; a split dX op casts its own A operand, see column_parallel_backward). FP8
  // weights are cast once per iteration (TE caches them across micro-batches): not counted.
  int gemm(const char* name, double M, double K, double N, double mult, Phase ph, int mb, std::int64_t layer, int chunk) {
    if (p_.precision == Precision::fp8 && ph != Phase::backward) fp8_cast(M * K, ph, mb, layer, chunk);
    if (p_.precision == Precision::fp8 && ph == Phase::backward && mult == 2) fp8_cast(M * N, ph, mb, layer, chunk);
    const double eb = p_.gemm_operand_bytes();
    return compute(name, ComputeClass::gemm, mult * 2 * M * K * N, mult * eb * (M * K + K * N + M * N), ph, mb, layer,
                   chunk);
  }

  int fp8_cast(double elements, Phase ph, int mb, std::int64_t layer, int chunk) {
    return compute("fp8_cast_transpose", ComputeClass::elementwise, 0, kFp8CastBytes * elements, ph, mb, layer, chunk);
  }
  static constexpr double kFp8CastBytes = 4;  // read bf16 (2), write fp8 and its fp8 transpose (1 + 1)

  // A memory-bound kernel (LayerNorm, fused bias-GeLU, bias-dropout-add, softmax): no tensor-core
  // work, its time is the HBM traffic (bytes read + written).
  int streaming(const char* name, double bytes, Phase ph, int mb, std::int64_t layer, int chunk) {
    return compute(name, ComputeClass::elementwise, 0, bytes, ph, mb, layer, chunk);
  }
  // Elements of the residual stream on this rank (b*s*h): split over TP ranks only with sequence
  // parallelism; without it every TP rank runs the LayerNorms and dropouts on the whole sequence.
  double residual_elements() const { return tokens_ * static_cast<double>(m_.hidden) / (sp_ ? t_ : 1); }
  double residual_fwd_bytes() const { return kResidualFwdBytes + (m_.dropout ? kDropoutMaskBytes : 0); }
  double residual_bwd_bytes() const { return kResidualBwdBytes + (m_.dropout ? kDropoutMaskBytes : 0); }

  // A collective on `stream`, ordered after the previous op of that stream. Blocking ones are
  // waited on by the next compute op; others only by what lists them explicitly.
  int collective(Stream stream, Collective c, int comm, double bytes, const char* name, Phase ph, int mb,
                 std::int64_t layer, int chunk, bool blocking, std::vector<int> deps = {}) {
    Op& op = add(OpKind::collective, stream, ph, name, mb, layer, chunk);
    op.collective = c;
    op.communicator = comm;
    op.bytes = to_bytes(bytes);
    op.instance = instances_[comm]++;
    auto it = last_on_stream_.find(stream);
    if (it != last_on_stream_.end()) deps.push_back(it->second);
    if (blocking && last_compute_ >= 0) deps.push_back(last_compute_);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    op.deps = std::move(deps);
    last_on_stream_[stream] = op.id;
    if (blocking) pending_.push_back(op.id);
    return op.id;
  }

  int send(Stream stream, int peer, std::int64_t tag, double bytes, const char* name, Phase ph, int mb, std::int64_t layer,
           int chunk, std::vector<int> deps) {
    Op& op = add(OpKind::send, stream, ph, name, mb, layer, chunk);
    op.peer = peer;
    op.tag = tag;
    op.bytes = to_bytes(bytes);
    op.deps = std::move(deps);
    return op.id;
  }
  int recv(Stream stream, int peer, std::int64_t tag, double bytes, const char* name, Phase ph, int mb,
           std::int64_t layer, int chunk, std::vector<int> deps = {}) {
    Op& op = add(OpKind::recv, stream, ph, name, mb, layer, chunk);
    op.peer = peer;
    op.tag = tag;
    op.bytes = to_bytes(bytes);
    op.deps = std::move(deps);
    return op.id;
  }

  // Dependencies of an op posted at this point of the rank's program: the compute before it.
  std::vector<int> after_last_compute() const {
    return last_compute_ >= 0 ? std::vector<int>{last_compute_} : std::vector<int>{};
  }

  // ---- parameters on this rank ---------------------------------------------------------------
  double layer_dense_params(std::int64_t l) const { return held_.layer_dense(l); }
  double layer_expert_params(std::int64_t l) const { return held_.layer_expert(l); }
  // Bytes of a bf16 parameter all-gather of `params` parameters, `gemm` of them weight matrices:
  // with --fp8-param-gather those travel as FP8, 1 byte each.
  double param_gather_bytes(double params, double gemm) const {
    return p_.fp8_param_gather ? 2 * params - gemm : 2 * params;
  }
  int virtual_stage(int chunk) const { return chunk * p_.pp + me_.pp; }
  bool first_virtual(int chunk) const { return virtual_stage(chunk) == 0; }
  bool last_virtual(int chunk) const { return virtual_stage(chunk) == p_.pp * p_.virtual_stages - 1; }

  // TP collective that follows a row-parallel GEMM (forward) or precedes a column-parallel one.
  // `width`: the tensor's last dimension in units of h (2 for MTP's concatenated projection input).
  void tp_reduce(const char* rs_name, const char* ar_name, Phase ph, int mb, std::int64_t l, int chunk,
                 double width = 1) {
    if (t_ == 1) return;
    const double bytes = width * hidden_bytes_;
    if (sp_) collective(Stream::tp, Collective::reduce_scatter, tp_comm_, bytes, rs_name, ph, mb, l, chunk, true);
    else collective(Stream::tp, Collective::all_reduce, tp_comm_, bytes, ar_name, ph, mb, l, chunk, true);
  }
  void tp_gather(const char* name, Phase ph, int mb, std::int64_t l, int chunk, double width = 1) {
    if (sp_) collective(Stream::tp, Collective::all_gather, tp_comm_, width * hidden_bytes_, name, ph, mb, l, chunk, true);
  }

  void zero3_gather(std::int64_t l, Phase ph, int mb, int chunk) {
    if (p_.zero != 3) return;
    if (p_.dp * p_.cp > 1) {
      collective(Stream::dp, Collective::all_gather, dp_comm_,
                 param_gather_bytes(layer_dense_params(l), held_.layer_dense_gemm(l)), "zero3.gather_weights",
                 ph, mb, l, chunk, true);
    }
    if (layer_expert_params(l) > 0 && p_.expert_dp() > 1) {
      collective(Stream::dp, Collective::all_gather, edp_comm_,
                 param_gather_bytes(layer_expert_params(l), held_.layer_expert_gemm(l)),
                 "zero3.gather_expert_weights", ph, mb, l, chunk, true);
    }
  }

  // ---- attention core with context parallelism (ring exchange of K/V chunks) ------------------
  void attention(std::int64_t l, const LayerFlops& lf, Phase ph, int mb, int chunk, bool backward) {
    const double core = lf.attention_core() / (t_ * p_.cp) * (backward ? 2 : 1);
    const double eb = p_.activation_bytes();
    const double qbytes = tokens_ * static_cast<double>(m_.q_width()) / t_ * eb;
    const double kv_chunk = tokens_ * 2 * static_cast<double>(m_.kv_width()) / t_ * eb;  // K and V of one CP rank
    // Flash-style HBM traffic: read Q, K, V, write O (backward: about twice that).
    const double mem = (2 * qbytes + kv_chunk * p_.cp) * (backward ? 2 : 1);
    const char* name = ph == Phase::recompute ? "attention.recompute" : backward ? "attention.bwd" : "attention";
    if (p_.attention == AttentionKernel::materialized) {  // validate() rules out CP here
      materialized_attention(core, qbytes, kv_chunk, ph, mb, l, chunk, backward);
      return;
    }
    if (p_.cp == 1) {
      compute(name, ComputeClass::attention, core, mem, ph, mb, l, chunk);
      return;
    }
    // Backward moves K/V and their gradients: twice the bytes per step.
    const double step_bytes = backward ? 2 * kv_chunk : kv_chunk;
    const TagKind kind = ph == Phase::recompute ? kCpRecompute : backward ? kCpBackward : kCpForward;
    const auto ring = layout_.group_of(GroupKind::cp, rank_);
    const int next = ring[static_cast<std::size_t>((me_.cp + 1) % p_.cp)];
    const int prev = ring[static_cast<std::size_t>((me_.cp + p_.cp - 1) % p_.cp)];
    int have = last_compute_;  // the chunk to pass on: first our own (just computed), then each received one
    compute(name, ComputeClass::attention, core / p_.cp, mem / p_.cp, ph, mb, l, chunk);
    for (int step = 1; step < p_.cp; ++step) {
      send(Stream::cp, next, make_tag(kind, mb, chunk, l, step), step_bytes, "cp.send_kv", ph, mb, l, chunk, {have});
      int r = recv(Stream::cp, prev, make_tag(kind, mb, chunk, l, step), step_bytes, "cp.recv_kv", ph, mb, l, chunk);
      pending_.push_back(r);
      compute(name, ComputeClass::attention, core / p_.cp, mem / p_.cp, ph, mb, l, chunk);
      have = r;
    }
  }

  // Megatron-LM's unfused attention core (2020-2022): scores = baddbmm(Q, K^T) written to HBM,
  // FusedScaleMaskSoftmax into a new tensor, dropout on the probabilities (models with dropout),
  // then bmm with V. Each kernel streams the b*(a/t)*s^2 score tensor (E elements, 2 bytes each; the
  // dropout mask 1 byte):
  //   forward:  scores write 2E, softmax read+write 4E, dropout read+write+mask 5E, P'V read 2E
  //   backward: dP = dO V^T write 2E and dV = P'^T dO read 2E, dropout backward 5E, softmax backward
  //             (reads y, dy, writes dx) 6E, dQ = dS K and dK = dS^T Q read dS twice 4E
  // The two batched GEMMs carry the FLOPs (half the core each) and go through the roofline with
  // their bytes, so a small head dimension (low arithmetic intensity) makes them memory-bound.
  void materialized_attention(double core, double qbytes, double kvbytes, Phase ph, int mb, std::int64_t l, int chunk,
                              bool backward) {
    const double E = static_cast<double>(p_.micro_batch) * static_cast<double>(m_.heads) / t_ *
                     static_cast<double>(p_.seq) * static_cast<double>(p_.seq);
    const double qkv_io = qbytes + kvbytes;  // Q, K, V in (forward) or their gradients out (backward)
    if (!backward) {
      const bool rc = ph == Phase::recompute;
      compute(rc ? "attention.scores.recompute" : "attention.scores", ComputeClass::attention, core / 2,
              2 * E + qkv_io * 2 / 3, ph, mb, l, chunk);
      streaming(rc ? "attention.softmax.recompute" : "attention.softmax", 4 * E, ph, mb, l, chunk);
      if (m_.dropout) streaming(rc ? "attention.dropout.recompute" : "attention.dropout", 5 * E, ph, mb, l, chunk);
      compute(rc ? "attention.context.recompute" : "attention.context", ComputeClass::attention, core / 2,
              2 * E + qkv_io / 3 + qbytes, ph, mb, l, chunk);
      return;
    }
    // `core` is already the backward's 2x.
    compute("attention.context.bwd", ComputeClass::attention, core / 2, 4 * E + qkv_io / 3 + qbytes, ph, mb, l, chunk);
    if (m_.dropout) streaming("attention.dropout.bwd", 5 * E, ph, mb, l, chunk);
    streaming("attention.softmax.bwd", 6 * E, ph, mb, l, chunk);
    compute("attention.scores.bwd", ComputeClass::attention, core / 2, 4 * E + qkv_io * 2 / 3, ph, mb, l, chunk);
  }

  // ---- one layer ---------------------------------------------------------------------------------
  void layer_forward(std::int64_t l, Phase ph, int mb, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const double qw = static_cast<double>(m_.q_width()), kvw = static_cast<double>(m_.kv_width());
    const LayerFlops lf = layer_forward_flops(m_, l, p_.micro_batch, p_.seq);
    const bool rc = ph == Phase::recompute;
    if (ph == Phase::forward) zero3_gather(l, ph, mb, chunk);
    if (auto it = gather_of_layer_.find(l); ph == Phase::forward && it != gather_of_layer_.end()) {
      wait_param_gather(it->second);
      gather_of_layer_.erase(it);
    }
    streaming(rc ? "layernorm.attn_in.recompute" : "layernorm.attn_in", kNormFwdBytes * residual_elements(), ph, mb, l,
              chunk);
    tp_gather("tp.all_gather.attn_in", ph, mb, l, chunk);
    gemm("qkv", tokens_, h, (qw + 2 * kvw) / t_, 1, ph, mb, l, chunk);
    attention(l, lf, ph, mb, chunk, false);
    gemm("attn_proj", tokens_, qw / t_, h, 1, ph, mb, l, chunk);
    tp_reduce("tp.reduce_scatter.attn_out", "tp.all_reduce.attn_out", ph, mb, l, chunk);
    streaming(rc ? "residual_add.attn.recompute" : "residual_add.attn", residual_fwd_bytes() * residual_elements(), ph, mb,
              l, chunk);
    streaming(rc ? "layernorm.mlp_in.recompute" : "layernorm.mlp_in", kNormFwdBytes * residual_elements(), ph, mb, l,
              chunk);
    if (m_.is_moe_layer(l)) {
      moe_forward(l, lf, ph, mb, chunk);
    } else {
      mlp_forward(kDenseMlp, static_cast<double>(m_.ffn_hidden), ph, mb, l, chunk);
    }
    streaming(rc ? "residual_add.mlp.recompute" : "residual_add.mlp", residual_fwd_bytes() * residual_elements(), ph, mb, l,
              chunk);
  }

  // The op names of one TP-split MLP: the dense MLP, or an MoE layer's shared experts (Megatron's
  // SharedExpertMLP, an MLP over the TP group whose width is shared_experts x the expert width).
  struct MlpNames {
    const char *gather_in, *fc1, *act, *act_recompute, *fc2, *rs_out, *ar_out;
    const char *gather_out_grad, *fc2_bwd, *act_bwd, *fc1_bwd_input, *fc1_bwd_weight, *rs_in_grad, *ar_in_grad;
  };
  static constexpr MlpNames kDenseMlp{
      "tp.all_gather.mlp_in",       "mlp_fc1",          "mlp_act",           "mlp_act.recompute",
      "mlp_fc2",                    "tp.reduce_scatter.mlp_out", "tp.all_reduce.mlp_out",
      "tp.all_gather.mlp_out_grad", "mlp_fc2.bwd",      "mlp_act.bwd",       "mlp_fc1.bwd_input",
      "mlp_fc1.bwd_weight",         "tp.reduce_scatter.mlp_in_grad",         "tp.all_reduce.mlp_in_grad"};
  static constexpr MlpNames kSharedExperts{
      "tp.all_gather.shared_experts_in", "shared_experts_fc1", "shared_experts_act", "shared_experts_act.recompute",
      "shared_experts_fc2", "tp.reduce_scatter.shared_experts_out", "tp.all_reduce.shared_experts_out",
      "tp.all_gather.shared_experts_out_grad", "shared_experts_fc2.bwd", "shared_experts_act.bwd",
      "shared_experts_fc1.bwd_input", "shared_experts_fc1.bwd_weight", "tp.reduce_scatter.shared_experts_in_grad",
      "tp.all_reduce.shared_experts_in_grad"};
  // Column-parallel fc1 (SwiGLU: gate and up in one GEMM), the activation, row-parallel fc2, with
  // SP's gather before and reduce-scatter after (all-reduce without SP).
  void mlp_forward(const MlpNames& n, double f, Phase ph, int mb, std::int64_t l, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const double in_width = m_.mlp == MlpKind::gelu ? f : 2 * f;
    tp_gather(n.gather_in, ph, mb, l, chunk);
    gemm(n.fc1, tokens_, h, in_width / t_, 1, ph, mb, l, chunk);
    streaming(ph == Phase::recompute ? n.act_recompute : n.act, activation_fwd_bytes() * tokens_ * f / t_, ph, mb, l,
              chunk);
    gemm(n.fc2, tokens_, f / t_, h, 1, ph, mb, l, chunk);
    tp_reduce(n.rs_out, n.ar_out, ph, mb, l, chunk);
  }
  // Conjugates of the forward: SP gathers the output gradient, and gathers the input again for
  // the weight gradient (SP stores it sharded); the input gradient is reduce-scattered.
  void mlp_backward(const MlpNames& n, double f, int mb, std::int64_t l, int chunk) {
    mlp_backward_fc2(n, f, mb, l, chunk);
    mlp_backward_fc1(n, f, mb, l, chunk);
  }
  void mlp_backward_fc2(const MlpNames& n, double f, int mb, std::int64_t l, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const Phase B = Phase::backward;
    tp_gather(n.gather_out_grad, B, mb, l, chunk);
    gemm(n.fc2_bwd, tokens_, f / t_, h, 2, B, mb, l, chunk);
    streaming(n.act_bwd, activation_bwd_bytes() * tokens_ * f / t_, B, mb, l, chunk);
  }
  void mlp_backward_fc1(const MlpNames& n, double f, int mb, std::int64_t l, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const double in_width = m_.mlp == MlpKind::gelu ? f : 2 * f;
    column_parallel_backward(n.fc1_bwd_input, n.fc1_bwd_weight, h, in_width / t_, n.gather_in, n.rs_in_grad,
                             n.ar_in_grad, mb, l, chunk);
  }

  // Bytes per element of the activation function between fc1 and fc2 (per element of the ffn width):
  // fused bias-GeLU reads x, writes y (2+2; backward reads dy and x, writes dx: 6); SwiGLU reads gate
  // and up, writes y (6; backward reads dy, gate, up, writes both gradients: 10).
  double activation_fwd_bytes() const { return m_.mlp == MlpKind::gelu ? 4 : 6; }
  double activation_bwd_bytes() const { return m_.mlp == MlpKind::gelu ? 6 : 10; }

  // MoE: tokens are already split over TP ranks by SP (validate() requires SP with TP), so each
  // rank routes tokens_/t tokens; the routed experts are spread over EP ranks and each expert's
  // weights over its etp expert-TP ranks (Megatron's MoEAlltoAllTokenDispatcher).
  double moe_tokens() const { return tokens_ / t_; }
  double a2a_bytes() const {
    return moe_tokens() * m_.moe->top_k * static_cast<double>(m_.hidden) * p_.activation_bytes();
  }
  // With expert TP every rank of an expert needs each token routed to it: after the EP all-to-all
  // the expert-TP group all-gathers what its ranks received (dispatch_postprocess), and before the
  // combine all-to-all reduce-scatters the partial fc2 outputs (combine_preprocess). Both move the
  // group's received tokens, etp x a2a_bytes() in all.
  void expert_tp_collective(Collective c, const char* name, Phase ph, int mb, std::int64_t l, int chunk) {
    if (p_.expert_tp() > 1)
      collective(Stream::ep, c, etp_comm_, p_.expert_tp() * a2a_bytes(), name, ph, mb, l, chunk, true);
  }
  void moe_forward(std::int64_t l, const LayerFlops& lf, Phase ph, int mb, int chunk) {
    const double h = static_cast<double>(m_.hidden), eb = p_.activation_bytes();
    compute("moe_router", ComputeClass::gemm, lf.router / (t_ * p_.cp),
            eb * (moe_tokens() * h + h * m_.moe->experts + moe_tokens() * m_.moe->experts), ph, mb, l, chunk);
    if (allgather_dispatch()) {
      moe_forward_allgather(lf, ph, mb, l, chunk);
      return;
    }
    if (shared_expert_overlap()) {
      moe_forward_overlapped(lf, ph, mb, l, chunk);
      return;
    }
    if (p_.ep > 1) collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(), "ep.dispatch", ph, mb, l, chunk, true);
    routed_experts_forward(lf, ph, mb, l, chunk);
    if (p_.ep > 1)
      collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(), "ep.combine", ph, mb, l, chunk,
                 true);
    if (m_.moe->shared_experts > 0) mlp_forward(kSharedExperts, shared_width(), ph, mb, l, chunk);
  }
  // The routed experts' GEMMs and the router's backward, one op each, the same under every dispatcher.
  void routed_experts_gemm(const LayerFlops& lf, Phase ph, int mb, std::int64_t l, int chunk) {
    compute("moe_experts", ComputeClass::gemm, routed_share() * lf.mlp / (t_ * p_.cp), expert_mem(1), ph, mb,
            l, chunk);
  }
  void routed_experts_gemm_backward(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    compute("moe_experts.bwd", ComputeClass::gemm, routed_share() * 2 * lf.mlp / (t_ * p_.cp), expert_mem(2),
            Phase::backward, mb, l, chunk);
  }
  void router_backward(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    compute("moe_router.bwd", ComputeClass::gemm, 2 * lf.router / (t_ * p_.cp), 0, Phase::backward, mb, l,
            chunk);
  }
  // The routed experts between the two all-to-alls, shared by the serial and the overlapped layer:
  // the expert-TP gather of the received tokens, the expert GEMMs, the expert-TP reduce-scatter.
  void routed_experts_forward(const LayerFlops& lf, Phase ph, int mb, std::int64_t l, int chunk) {
    expert_tp_collective(Collective::all_gather, "etp.dispatch_gather", ph, mb, l, chunk);
    routed_experts_gemm(lf, ph, mb, l, chunk);
    expert_tp_collective(Collective::reduce_scatter, "etp.combine_scatter", ph, mb, l, chunk);
  }
  // Conjugates of the forward: the reduce-scatter's backward gathers, the gather's reduces.
  void routed_experts_backward(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    const Phase B = Phase::backward;
    expert_tp_collective(Collective::all_gather, "etp.combine_scatter.bwd", B, mb, l, chunk);
    routed_experts_gemm_backward(lf, mb, l, chunk);
    expert_tp_collective(Collective::reduce_scatter, "etp.dispatch_gather.bwd", B, mb, l, chunk);
  }
  void moe_backward(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    if (allgather_dispatch()) {
      moe_backward_allgather(lf, mb, l, chunk);
      return;
    }
    if (shared_expert_overlap()) {
      moe_backward_overlapped(lf, mb, l, chunk);
      return;
    }
    const Phase B = Phase::backward;
    if (m_.moe->shared_experts > 0) mlp_backward(kSharedExperts, shared_width(), mb, l, chunk);
    if (p_.ep > 1)
      collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(), "ep.combine.bwd", B, mb, l, chunk,
                 true);
    routed_experts_backward(lf, mb, l, chunk);
    if (p_.ep > 1)
      collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(), "ep.dispatch.bwd", B, mb, l,
                 chunk, true);
    router_backward(lf, mb, l, chunk);
  }
  // --moe-token-dispatcher allgather (Megatron-Core's MoEAllGatherTokenDispatcher, its default):
  // the routing map (one bool per token and expert), the routing probabilities and the tokens of the
  // whole expert-TP x EP group are all-gathered to every rank of it; each rank picks the tokens
  // routed to its experts and runs them, scatters their outputs back into the gathered order (a
  // zero-filled tensor of every gathered token: a memory-bound write etp x ep times the rank's own
  // tokens, which the all-to-all path never makes) and reduce-scatters that to the tokens' owners.
  // Each rank thus moves the group's every token, not only the top_k copies routed to it. With etp
  // = ep = 1 no collective runs (Megatron skips them). Permuting the routed rows themselves is left
  // out, as in the all-to-all path.
  bool allgather_dispatch() const { return p_.moe_token_dispatcher == TokenDispatcher::allgather; }
  double gathered_tokens() const { return moe_tokens() * p_.expert_tp() * p_.ep; }
  bool dispatch_group() const { return p_.expert_tp() * p_.ep > 1; }
  void moe_forward_allgather(const LayerFlops& lf, Phase ph, int mb, std::int64_t l, int chunk) {
    const double h = static_cast<double>(m_.hidden), eb = p_.activation_bytes();
    const double experts = static_cast<double>(m_.moe->experts), tokens = gathered_tokens();
    if (dispatch_group()) {
      collective(Stream::ep, Collective::all_gather, tpep_comm_, tokens * experts, "ep.dispatch_gather_map",
                 ph, mb, l, chunk, true);
      collective(Stream::ep, Collective::all_gather, tpep_comm_, tokens * experts * eb,
                 "ep.dispatch_gather_probs", ph, mb, l, chunk, true);
      collective(Stream::ep, Collective::all_gather, tpep_comm_, tokens * h * eb, "ep.dispatch_gather", ph,
                 mb, l, chunk, true);
    }
    routed_experts_gemm(lf, ph, mb, l, chunk);
    streaming("moe_unpermute", tokens * h * eb, ph, mb, l, chunk);
    if (dispatch_group())
      collective(Stream::ep, Collective::reduce_scatter, tpep_comm_, tokens * h * eb, "ep.combine_scatter",
                 ph, mb, l, chunk, true);
    if (m_.moe->shared_experts > 0) mlp_forward(kSharedExperts, shared_width(), ph, mb, l, chunk);
  }
  // The conjugates: the combine's reduce-scatter gathers the output gradient, the experts' backward
  // runs, the permute's backward scatters their input gradients into a zero-filled tensor of every
  // gathered token, and reduce-scatters reduce it and the routing probabilities' gradient (no
  // gradient flows through the routing map).
  void moe_backward_allgather(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    const Phase B = Phase::backward;
    const double h = static_cast<double>(m_.hidden), eb = p_.activation_bytes();
    const double experts = static_cast<double>(m_.moe->experts), tokens = gathered_tokens();
    if (m_.moe->shared_experts > 0) mlp_backward(kSharedExperts, shared_width(), mb, l, chunk);
    if (dispatch_group())
      collective(Stream::ep, Collective::all_gather, tpep_comm_, tokens * h * eb, "ep.combine_scatter.bwd", B,
                 mb, l, chunk, true);
    routed_experts_gemm_backward(lf, mb, l, chunk);
    streaming("moe_permute.bwd", tokens * h * eb, B, mb, l, chunk);
    if (dispatch_group()) {
      collective(Stream::ep, Collective::reduce_scatter, tpep_comm_, tokens * h * eb,
                 "ep.dispatch_gather.bwd", B, mb, l, chunk, true);
      collective(Stream::ep, Collective::reduce_scatter, tpep_comm_, tokens * experts * eb,
                 "ep.dispatch_gather_probs.bwd", B, mb, l, chunk, true);
    }
    router_backward(lf, mb, l, chunk);
  }
  // --moe-shared-expert-overlap (Megatron's MoEAlltoAllTokenDispatcher with SharedExpertMLP on its own
  // CUDA stream): the shared experts' SP all-gather starts after the router, their fc1 and activation
  // run while the dispatch all-to-all moves the tokens, their fc2 and SP reduce-scatter while the
  // combine all-to-all brings them back. The GPU's kernels still run one after another (two GEMMs do
  // not share the SMs for free, and Megatron keeps the shared fc2 from overlapping the routed
  // experts), so the routed experts wait for the shared fc1 and the layer's output for both; what
  // the overlap hides is the all-to-all time.
  bool shared_expert_overlap() const { return p_.moe_shared_expert_overlap && m_.moe->shared_experts > 0; }
  void moe_forward_overlapped(const LayerFlops& lf, Phase ph, int mb, std::int64_t l, int chunk) {
    const MlpNames& n = kSharedExperts;
    const double h = static_cast<double>(m_.hidden), f = shared_width();
    const double in_width = m_.mlp == MlpKind::gelu ? f : 2 * f;
    const int router = last_compute_;
    tp_gather(n.gather_in, ph, mb, l, chunk);
    const int dispatch = p_.ep > 1 ? collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(),
                                                "ep.dispatch", ph, mb, l, chunk, false, {router})
                                   : -1;
    gemm(n.fc1, tokens_, h, in_width / t_, 1, ph, mb, l, chunk);
    streaming(ph == Phase::recompute ? n.act_recompute : n.act, activation_fwd_bytes() * tokens_ * f / t_, ph,
              mb, l, chunk);
    if (dispatch >= 0) pending_.push_back(dispatch);
    routed_experts_forward(lf, ph, mb, l, chunk);
    const int combine = p_.ep > 1 ? collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(),
                                               "ep.combine", ph, mb, l, chunk, false, after_last_compute())
                                  : -1;
    gemm(n.fc2, tokens_, f / t_, h, 1, ph, mb, l, chunk);
    tp_reduce(n.rs_out, n.ar_out, ph, mb, l, chunk);
    if (combine >= 0) pending_.push_back(combine);
  }
  // The backward mirrors it (autograd runs each op's backward on its forward's stream): the shared
  // fc2 and activation gradients while the combine's all-to-all returns the output gradient, the
  // shared fc1 gradients while the dispatch's all-to-all returns the input gradient.
  void moe_backward_overlapped(const LayerFlops& lf, int mb, std::int64_t l, int chunk) {
    const Phase B = Phase::backward;
    const int combine = p_.ep > 1 ? collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(),
                                               "ep.combine.bwd", B, mb, l, chunk, false, after_last_compute())
                                  : -1;
    mlp_backward_fc2(kSharedExperts, shared_width(), mb, l, chunk);
    if (combine >= 0) pending_.push_back(combine);
    routed_experts_backward(lf, mb, l, chunk);
    const int dispatch = p_.ep > 1
                             ? collective(Stream::ep, Collective::all_to_all, ep_comm_, a2a_bytes(),
                                          "ep.dispatch.bwd", B, mb, l, chunk, false, after_last_compute())
                             : -1;
    mlp_backward_fc1(kSharedExperts, shared_width(), mb, l, chunk);
    if (dispatch >= 0) pending_.push_back(dispatch);
    router_backward(lf, mb, l, chunk);
  }
  // The routed experts' part of the MoE layer's MLP FLOPs (top_k of top_k + shared expert copies per
  // token); the shared experts run as their own TP-split MLP of width shared x expert width.
  double routed_share() const {
    const double k = m_.moe->top_k;
    return k / (k + m_.moe->shared_experts);
  }
  double shared_width() const {
    return static_cast<double>(m_.moe->shared_experts) * static_cast<double>(m_.moe->ffn_hidden);
  }
  // Bytes the routed expert GEMMs move: the local experts' weight shards and the routed copies (each
  // on all etp ranks of its expert: the whole input and output, 1/etp of the intermediates).
  double expert_mem(double mult) const {
    const double h = static_cast<double>(m_.hidden), f = static_cast<double>(m_.moe->ffn_hidden);
    const double matrices = m_.mlp == MlpKind::gelu ? 2 : 3;
    const double etp = p_.expert_tp();
    const double local_experts = static_cast<double>(m_.moe->experts) / p_.ep;
    const double routed = moe_tokens() * m_.moe->top_k;
    return mult * p_.gemm_operand_bytes() *
           (local_experts * matrices * h * f / etp + routed * (2 * h * etp + matrices * f));
  }

  // Backward of a column-parallel linear Y = X W (X: tokens x K, W: K x N on this rank; qkv, fc1):
  // dX = dY W^T is a partial sum over the TP ranks, reduced across them (all-reduce; reduce-scatter
  // with SP); dW = X^T dY needs the whole X, which SP stores sharded and gathers again.
  // With tp_backward_overlap (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication) the
  // gather is launched before dX, the reduction right after dX, both on the TP stream, and dW is
  // computed meanwhile: the next op waits for the reduction, dW waits for the gather. Without it
  // (Megatron-LM 2021) dX and dW run back to back and then the reduction blocks.
  void column_parallel_backward(const char* dx_name, const char* dw_name, double K, double N, const char* gather_name,
                                const char* rs_name, const char* ar_name, int mb, std::int64_t l, int chunk) {
    const Phase B = Phase::backward;
    const double width = K / static_cast<double>(m_.hidden);  // the input's width in units of h
    const double bytes = width * hidden_bytes_;
    if (t_ == 1 || !p_.tp_backward_overlap) {
      tp_gather(gather_name, B, mb, l, chunk, width);
      if (p_.precision == Precision::fp8) fp8_cast(tokens_ * N, B, mb, l, chunk);  // dY
      gemm(dx_name, tokens_, N, K, 1, B, mb, l, chunk);
      gemm(dw_name, K, tokens_, N, 1, B, mb, l, chunk);
      tp_reduce(rs_name, ar_name, B, mb, l, chunk, width);
      return;
    }
    std::vector<int> before;
    if (last_compute_ >= 0) before.push_back(last_compute_);
    const int gather = sp_ ? collective(Stream::tp, Collective::all_gather, tp_comm_, bytes, gather_name, B, mb, l,
                                        chunk, false, before)
                           : -1;
    if (p_.precision == Precision::fp8) fp8_cast(tokens_ * N, B, mb, l, chunk);  // dY
    const int dx = gemm(dx_name, tokens_, N, K, 1, B, mb, l, chunk);
    const int reduce = sp_ ? collective(Stream::tp, Collective::reduce_scatter, tp_comm_, bytes, rs_name, B, mb, l,
                                        chunk, false, {dx})
                           : collective(Stream::tp, Collective::all_reduce, tp_comm_, bytes, ar_name, B, mb, l, chunk,
                                        false, {dx});
    if (gather >= 0) pending_.push_back(gather);
    gemm(dw_name, K, tokens_, N, 1, B, mb, l, chunk);
    pending_.push_back(reduce);
  }

  // `recomputed`: the caller already gathered the weights (ZeRO-3) and re-ran the forward (an MTP
  // layer's checkpoint spans more than the transformer layer).
  void layer_backward(std::int64_t l, int mb, int chunk, bool recomputed = false) {
    const double h = static_cast<double>(m_.hidden);
    const double qw = static_cast<double>(m_.q_width()), kvw = static_cast<double>(m_.kv_width());
    const LayerFlops lf = layer_forward_flops(m_, l, p_.micro_batch, p_.seq);
    const Phase B = Phase::backward;
    if (!recomputed) zero3_gather(l, B, mb, chunk);
    if (p_.recompute == Recompute::full && !recomputed) layer_forward(l, Phase::recompute, mb, chunk);
    streaming("residual_add.mlp.bwd", residual_bwd_bytes() * residual_elements(), B, mb, l, chunk);
    if (m_.is_moe_layer(l)) {
      moe_backward(lf, mb, l, chunk);
    } else {
      mlp_backward(kDenseMlp, static_cast<double>(m_.ffn_hidden), mb, l, chunk);
    }
    streaming("layernorm.mlp_in.bwd", kNormBwdBytes * residual_elements(), B, mb, l, chunk);
    streaming("residual_add.attn.bwd", residual_bwd_bytes() * residual_elements(), B, mb, l, chunk);
    tp_gather("tp.all_gather.attn_out_grad", B, mb, l, chunk);
    gemm("attn_proj.bwd", tokens_, qw / t_, h, 2, B, mb, l, chunk);
    if (p_.recompute == Recompute::selective) attention(l, lf, Phase::recompute, mb, chunk, false);
    attention(l, lf, B, mb, chunk, true);
    column_parallel_backward("qkv.bwd_input", "qkv.bwd_weight", h, (qw + 2 * kvw) / t_, "tp.all_gather.attn_in", "tp.reduce_scatter.attn_in_grad",
                             "tp.all_reduce.attn_in_grad", mb, l, chunk);
    const int last = streaming("layernorm.attn_in.bwd", kNormBwdBytes * residual_elements(), B, mb, l, chunk);
    if (p_.zero >= 2) {
      // ZeRO-2 and FSDP / ZeRO-3 keep only their shard of the gradients, so every micro-batch
      // reduce-scatters each layer's gradients as soon as its backward is done (DeepSpeed's
      // stage 2 reduces during every micro-step's backward); nothing is left for the step.
      const char* name = p_.zero == 3 ? "zero3.reduce_scatter_grads" : "zero2.reduce_scatter_grads";
      const char* expert_name =
          p_.zero == 3 ? "zero3.reduce_scatter_expert_grads" : "zero2.reduce_scatter_expert_grads";
      if (p_.dp * p_.cp > 1) {
        grad_ops_.push_back(collective(Stream::dp, Collective::reduce_scatter, dp_comm_,
                                       p_.grad_bytes * layer_dense_params(l), name, B, mb, l, chunk, false,
                                       {last}));
      }
      if (layer_expert_params(l) > 0 && p_.expert_dp() > 1) {
        grad_ops_.push_back(collective(Stream::dp, Collective::reduce_scatter, edp_comm_,
                                       p_.grad_bytes * layer_expert_params(l), expert_name, B, mb, l, chunk,
                                       false, {last}));
      }
    }
    if (mb == p_.micro_batches() - 1) layer_done_[l] = last;
  }

  // ---- multi-token prediction (Megatron-Core MultiTokenPredictionLayer) --------------------------
  // Depth l - layers, after the decoder on the last virtual stage: the embedding of the tokens
  // shifted once more (with its TP reduction, as on the first stage), the norms of that embedding
  // and of the previous depth's hidden states, their concatenation projected 2h -> h by a column-
  // parallel linear (SP gathers its 2h-wide input; the h/t-wide outputs are all-gathered over TP,
  // gather_from_tensor_model_parallel_region, and SP keeps its sequence shard of the result), one
  // transformer layer of the decoder's last kind, and a final norm. The logits and loss of each
  // depth go through the output layer (forward_step).
  void mtp_forward(std::int64_t l, int mb, int chunk) {
    const Phase F = Phase::forward;
    zero3_gather_params(held_.mtp_embedding_copy(), "zero3.gather_embedding", F, mb, chunk);
    compute("mtp.embedding", ComputeClass::elementwise, 0, hidden_bytes_, F, mb, l, chunk);
    tp_reduce("tp.reduce_scatter.mtp_embedding", "tp.all_reduce.mtp_embedding", F, mb, l, chunk);
    mtp_block(l, F, mb, chunk);
  }
  // What full recomputation checkpoints (MultiTokenPredictionLayer._checkpointed_forward): the
  // norms, the projection with its TP gathers, the transformer layer and the final norm.
  void mtp_block(std::int64_t l, Phase ph, int mb, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const double norm_bytes = kNormFwdBytes * residual_elements();
    streaming("mtp.enorm", norm_bytes, ph, mb, l, chunk);
    streaming("mtp.hnorm", norm_bytes, ph, mb, l, chunk);
    tp_gather("tp.all_gather.mtp_eh_proj_in", ph, mb, l, chunk, 2);
    gemm("mtp.eh_proj", tokens_, 2 * h, h / t_, 1, ph, mb, l, chunk);
    if (t_ > 1)
      collective(Stream::tp, Collective::all_gather, tp_comm_, hidden_bytes_, "tp.all_gather.mtp_eh_proj_out", ph, mb,
                 l, chunk, true);
    layer_forward(l, ph, mb, chunk);
    streaming("mtp.final_norm", norm_bytes, ph, mb, l, chunk);
  }
  // Conjugates in reverse: SP's split of the projection output gathers its gradient (the TP
  // gather's backward only keeps this rank's slice), the projection's input gradient is reduce-
  // scattered (all-reduced without SP), and the embedding's gradient is gathered as the first
  // stage's is. The depth's gradients are final after its embedding backward.
  void mtp_backward(std::int64_t l, int mb, int chunk) {
    const double h = static_cast<double>(m_.hidden);
    const Phase B = Phase::backward;
    const double norm_bytes = kNormBwdBytes * residual_elements();
    zero3_gather(l, B, mb, chunk);  // before the recomputation, which needs the weights too
    if (p_.recompute == Recompute::full) mtp_block(l, Phase::recompute, mb, chunk);
    streaming("mtp.final_norm.bwd", norm_bytes, B, mb, l, chunk);
    layer_backward(l, mb, chunk, /*recomputed=*/true);
    tp_gather("tp.all_gather.mtp_eh_proj_out_grad", B, mb, l, chunk);
    column_parallel_backward("mtp.eh_proj.bwd_input", "mtp.eh_proj.bwd_weight", 2 * h, h / t_,
                             "tp.all_gather.mtp_eh_proj_in", "tp.reduce_scatter.mtp_eh_proj_in_grad",
                             "tp.all_reduce.mtp_eh_proj_in_grad", mb, l, chunk);
    streaming("mtp.hnorm.bwd", norm_bytes, B, mb, l, chunk);
    streaming("mtp.enorm.bwd", norm_bytes, B, mb, l, chunk);
    tp_gather("tp.all_gather.mtp_embedding_grad", B, mb, l, chunk);
    zero3_gather_params(held_.mtp_embedding_copy(), "zero3.gather_embedding", B, mb, chunk);
    compute("mtp.embedding.bwd", ComputeClass::elementwise, 0, hidden_bytes_, B, mb, l, chunk);
    if (mb == p_.micro_batches() - 1) layer_done_[l] = last_compute_;
  }

  // ---- pipeline steps ----------------------------------------------------------------------------
  // Megatron's scatter/gather optimization (SC'21 Section 4.1; --scatter-gather-tensors-in-pipeline,
  // on by default): each TP rank sends only its 1/t slice of the stage-boundary tensor over its own
  // NIC and the receiving stage all-gathers the slices over NVLink. With SP the tensor is already a
  // sequence shard, so there is nothing to gather. The gather is on the pipeline stream: it is part
  // of the stage-boundary transfer (Megatron's p2p_communication), and waiting for it is pipeline time.
  double p2p_bytes() const { return hidden_bytes_ / t_; }
  // Returns the op after which the received tensor is whole (the gather, or the receive itself).
  int p2p_gather(int received, const char* name, Phase ph, int mb, int chunk) {
    if (t_ > 1 && !sp_)
      return collective(Stream::pp, Collective::all_gather, tp_comm_, hidden_bytes_, name, ph, mb, -1, chunk, true,
                        {received});
    return received;
  }
  // What a stage-boundary send waits for: the chunk's last compute, or, for a chunk that computes
  // nothing (an empty stage of a custom pipeline layout passes the tensor on), the tensor received.
  std::vector<int> send_deps(int received) const {
    return last_compute_ >= 0 && received < last_compute_ ? std::vector<int>{last_compute_} : std::vector<int>{received};
  }
  int rank_of_stage(int stage) const { return layout_.rank({me_.tp, me_.cp, me_.dp, stage, 0, 0, 0}); }

  // Megatron's 1F1B posts each stage-boundary receive at its point in the schedule, paired with
  // the send there (send_forward_recv_backward after a forward, send_backward_recv_forward after a
  // backward; recv_forward / send_forward alone in warm-up and cool-down), and waits for both
  // before the next compute (p2p_communication's wait on every request). The interleaved schedule
  // keeps its receives posted ahead and its sends unwaited (overlap_p2p_comm, as NeMo runs it).
  bool p2p_waits() const { return p_.virtual_stages == 1; }
  std::vector<int> p2p_recv_deps() const { return p2p_waits() ? after_last_compute() : std::vector<int>{}; }
  void p2p_send(int id) {
    if (p2p_waits()) pending_.push_back(id);
  }

  void forward_step(int mb, int chunk) {
    const int vs = virtual_stage(chunk);
    const LayerRange r = stage_layers(m_, p_, me_.pp, chunk);
    if (mb == 0) start_param_gathers(chunk);
    int input = -1;
    if (!first_virtual(chunk)) {
      const int from = rank_of_stage((me_.pp + p_.pp - 1) % p_.pp);
      const int got = recv(Stream::pp, from, make_tag(kPpForward, mb, vs - 1, -1, 0), p2p_bytes(),
                           "pp.recv_activation", Phase::forward, mb, -1, chunk, p2p_recv_deps());
      pending_.push_back(got);
      input = p2p_gather(got, "pp.all_gather_activation", Phase::forward, mb, chunk);
    } else {
      const double bytes = hidden_bytes_;
      zero3_gather_params(held_.embedding(), "zero3.gather_embedding", Phase::forward, mb,
                          chunk);
      wait_param_gather(gather_of_embedding_);
      compute("embedding", ComputeClass::elementwise, 0, bytes, Phase::forward, mb, -1, chunk);
      tp_reduce("tp.reduce_scatter.embedding", "tp.all_reduce.embedding", Phase::forward, mb, -1, chunk);
    }
    for (std::int64_t l = r.first; l < r.last; ++l) layer_forward(l, Phase::forward, mb, chunk);
    const LayerRange mtp = mtp_stage_layers(m_, p_, me_.pp, chunk);
    for (std::int64_t l = mtp.first; l < mtp.last; ++l) mtp_forward(l, mb, chunk);
    if (last_virtual(chunk)) {
      const double h = static_cast<double>(m_.hidden), V = static_cast<double>(m_.vocab);
      wait_param_gather(gather_of_output_);
      zero3_gather_params(output_grad_params(), "zero3.gather_output", Phase::forward, mb, chunk);
      // The decoder's logits and loss, then each MTP depth's through the same output layer.
      for (std::int64_t head = 0; head <= mtp.count(); ++head) {
        tp_gather("tp.all_gather.logits_in", Phase::forward, mb, -1, chunk);
        gemm("logits", tokens_, h, V / t_, 1, Phase::forward, mb, -1, chunk);
        compute("cross_entropy", ComputeClass::elementwise, 0, 4 * tokens_ * V / t_, Phase::forward, mb, -1, chunk);
      }
    } else {
      const int to = rank_of_stage((me_.pp + 1) % p_.pp);
      p2p_send(send(Stream::pp, to, make_tag(kPpForward, mb, vs, -1, 0), p2p_bytes(), "pp.send_activation",
                    Phase::forward, mb, -1, chunk, send_deps(input)));
    }
  }

  // The output layer's gradients this rank holds (the final norm, and the output projection unless
  // it is the embedding's, tied on the same stage).
  double output_grad_params() const { return held_.output(); }

  // ZeRO-2 and ZeRO-3: the embedding's and the output layer's gradients, reduce-scattered every
  // micro-batch like the layers' (layer_backward).
  void zero_reduce_scatter(double params, const char* zero2_name, const char* zero3_name, int mb, int chunk) {
    if (p_.zero < 2 || p_.dp * p_.cp <= 1 || params <= 0) return;
    grad_ops_.push_back(collective(Stream::dp, Collective::reduce_scatter, dp_comm_, p_.grad_bytes * params,
                                   p_.zero == 3 ? zero3_name : zero2_name, Phase::backward, mb, -1, chunk,
                                   false, {last_compute_}));
  }
  // ZeRO-3 / FSDP shards the embedding and the output layer too: their bf16 weights are gathered
  // before each use, forward and backward, like a layer's (zero3_gather).
  void zero3_gather_params(double params, const char* name, Phase ph, int mb, int chunk) {
    if (p_.zero != 3 || p_.dp * p_.cp <= 1 || params <= 0) return;
    collective(Stream::dp, Collective::all_gather, dp_comm_, 2 * params, name, ph, mb, -1, chunk, true);
  }

  void backward_step(int mb, int chunk) {
    const int vs = virtual_stage(chunk);
    const LayerRange r = stage_layers(m_, p_, me_.pp, chunk);
    const Phase B = Phase::backward;
    int input = -1;
    if (!last_virtual(chunk)) {
      const int from = rank_of_stage((me_.pp + 1) % p_.pp);
      const int got = recv(Stream::pp, from, make_tag(kPpBackward, mb, vs + 1, -1, 0), p2p_bytes(),
                           "pp.recv_grad", B, mb, -1, chunk, p2p_recv_deps());
      pending_.push_back(got);
      input = p2p_gather(got, "pp.all_gather_grad", B, mb, chunk);
    } else {
      const double h = static_cast<double>(m_.hidden), V = static_cast<double>(m_.vocab);
      zero3_gather_params(output_grad_params(), "zero3.gather_output", B, mb, chunk);
      for (std::int64_t head = 0; head <= m_.mtp_layers; ++head) {
        compute("cross_entropy.bwd", ComputeClass::elementwise, 0, 4 * tokens_ * V / t_, B, mb, -1, chunk);
        gemm("logits.bwd", tokens_, h, V / t_, 2, B, mb, -1, chunk);
        tp_reduce("tp.reduce_scatter.logits_in_grad", "tp.all_reduce.logits_in_grad", B, mb, -1, chunk);
      }
      if (mb == p_.micro_batches() - 1) output_done_ = last_compute_;
      zero_reduce_scatter(output_grad_params(), "zero2.reduce_scatter_output_grads",
                          "zero3.reduce_scatter_output_grads", mb, chunk);
    }
    const LayerRange mtp = mtp_stage_layers(m_, p_, me_.pp, chunk);
    for (std::int64_t l = mtp.last - 1; l >= mtp.first; --l) mtp_backward(l, mb, chunk);
    for (std::int64_t l = r.last - 1; l >= r.first; --l) layer_backward(l, mb, chunk);
    if (first_virtual(chunk)) {
      tp_gather("tp.all_gather.embedding_grad", B, mb, -1, chunk);
      zero3_gather_params(held_.embedding(), "zero3.gather_embedding", B, mb, chunk);
      compute("embedding.bwd", ComputeClass::elementwise, 0, hidden_bytes_, B, mb, -1, chunk);
      if (mb == p_.micro_batches() - 1) embedding_done_ = last_compute_;
      zero_reduce_scatter(held_.embedding(), "zero2.reduce_scatter_embedding_grads",
                          "zero3.reduce_scatter_embedding_grads", mb, chunk);
    } else {
      const int to = rank_of_stage((me_.pp + p_.pp - 1) % p_.pp);
      p2p_send(send(Stream::pp, to, make_tag(kPpBackward, mb, vs, -1, 0), p2p_bytes(), "pp.send_grad", B, mb,
                    -1, chunk, send_deps(input)));
    }
  }

  // ---- end of iteration: DP gradient reduction, optimizer, ZeRO parameter gather ----------------
  struct Bucket {
    double dense = 0, expert = 0;
    double dense_gemm = 0, expert_gemm = 0;  // the weight matrices among them (FP8 under --fp8-param-gather)
    int chunk = 0;
    std::vector<std::int64_t> layers;  // in the order their gradients are added (backward order)
    bool output = false, embedding = false;
  };

  // Megatron fills buckets in reverse parameter order (the order backward produces grads), one
  // set of buckets per model chunk, the last chunk's first. ZeRO-3 has none (it reduces per layer).
  std::vector<Bucket> gradient_buckets() const {
    std::vector<Bucket> buckets;
    if (p_.zero >= 3) return buckets;
    for (int c = p_.virtual_stages - 1; c >= 0; --c) {
      const LayerRange r = stage_layers(m_, p_, me_.pp, c);
      Bucket b;
      b.chunk = c;
      auto close = [&]() {
        if (b.dense + b.expert > 0) buckets.push_back(b);
        b = Bucket{};
        b.chunk = c;
      };
      if (last_virtual(c)) {
        b.dense += output_grad_params();
        b.output = true;
      }
      const LayerRange mtp = mtp_stage_layers(m_, p_, me_.pp, c);
      for (std::int64_t l = mtp.last - 1; l >= mtp.first; --l) {
        b.dense += layer_dense_params(l) + (l == mtp.first ? held_.mtp_embedding_copy() : 0);
        b.expert += layer_expert_params(l);
        b.dense_gemm += held_.layer_dense_gemm(l);
        b.expert_gemm += held_.layer_expert_gemm(l);
        b.layers.push_back(l);
        if (b.dense + b.expert >= static_cast<double>(p_.bucket_size())) close();
      }
      for (std::int64_t l = r.last - 1; l >= r.first; --l) {
        b.dense += layer_dense_params(l);
        b.expert += layer_expert_params(l);
        b.dense_gemm += held_.layer_dense_gemm(l);
        b.expert_gemm += held_.layer_expert_gemm(l);
        b.layers.push_back(l);
        if (b.dense + b.expert >= static_cast<double>(p_.bucket_size())) close();
      }
      if (first_virtual(c)) {
        b.dense += held_.embedding();
        b.embedding = true;
      }
      close();
    }
    return buckets;
  }
  // The op after which every gradient of the bucket is final: that of its last-added parameters.
  int bucket_ready(const Bucket& b) const {
    if (b.embedding) return embedding_done_;
    if (!b.layers.empty()) return layer_done_.at(b.layers.back());
    return b.output ? output_done_ : -1;
  }

  // --overlap-param-gather: the first forward of a model chunk starts the all-gathers of the
  // parameters the last step updated, bucket by bucket in forward order, and each layer (the
  // embedding, the output layer) waits for its bucket before its first use (Megatron-Core's
  // param_sync_func and forward pre-hooks). In steady state this is the previous step's gather.
  void start_param_gathers(int chunk) {
    if (!p_.overlap_param_gather || p_.dp * p_.cp <= 1) return;
    for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
      if (it->chunk != chunk) continue;
      int last = -1;
      if (it->dense > 0) {
        last = collective(Stream::dp, Collective::all_gather, dp_comm_,
                          param_gather_bytes(it->dense, it->dense_gemm), "dp.param_gather", Phase::forward, 0,
                          -1, chunk, false, after_last_compute());
      }
      if (it->expert > 0 && p_.expert_dp() > 1) {
        last = collective(Stream::dp, Collective::all_gather, edp_comm_,
                          param_gather_bytes(it->expert, it->expert_gemm), "dp.expert_param_gather",
                          Phase::forward, 0, -1, chunk, false, after_last_compute());
      }
      if (last < 0) continue;
      for (std::int64_t l : it->layers) gather_of_layer_[l] = last;
      if (it->embedding) gather_of_embedding_ = last;
      if (it->output) gather_of_output_ = last;
    }
  }
  // Before the first forward use of parameters whose gather is still pending: wait for it.
  void wait_param_gather(int& gather) {
    if (gather >= 0) pending_.push_back(gather);
    gather = -1;
  }

  void finish_iteration() {
    const int final_compute = last_compute_;
    // A rank whose stages hold no layer (a custom layout's empty stages) computed nothing.
    const std::vector<int> after_final = final_compute >= 0 ? std::vector<int>{final_compute} : std::vector<int>{};
    // The step waits for the DP reductions and for any wait still open (the last stage-boundary send).
    std::vector<int> before_step = grad_ops_;
    before_step.insert(before_step.end(), pending_.begin(), pending_.end());
    const Phase O = Phase::optimizer;
    const Collective reduce = p_.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter;
    // ZeRO-2 reduced every micro-batch's gradients during the backward; its buckets only gather
    // the updated parameters after the step.
    for (const Bucket& b : buckets_) {
      if (p_.zero == 2) break;
      const int ready = bucket_ready(b);
      const int dep = p_.overlap_grad_reduce && ready >= 0 ? ready : final_compute;
      if (b.dense > 0 && p_.dp * p_.cp > 1) {
        before_step.push_back(collective(Stream::dp, reduce, dp_comm_, p_.grad_bytes * b.dense, "dp.grad_bucket", O, -1, -1,
                                         b.chunk, false, {dep}));
      }
      if (b.expert > 0 && p_.expert_dp() > 1) {
        before_step.push_back(collective(Stream::dp, reduce, edp_comm_, p_.grad_bytes * b.expert, "dp.expert_grad_bucket",
                                         O, -1, -1, b.chunk, false, {dep}));
      }
    }
    // Sequence parallelism: every TP rank computed the gradients of its whole copies of the norms,
    // row-parallel biases and router on its own sequence shard; Megatron sums them over the TP
    // group once per iteration (finalize_model_grads), before the step.
    if (sp_ && t_ > 1) {
      double replicated = 0;
      for (int c = 0; c < p_.virtual_stages; ++c) {
        const LayerRange r = stage_layers(m_, p_, me_.pp, c);
        for (std::int64_t l = r.first; l < r.last; ++l) replicated += held_.layer_tp_replicated(l);
        const LayerRange mtp = mtp_stage_layers(m_, p_, me_.pp, c);
        for (std::int64_t l = mtp.first; l < mtp.last; ++l) replicated += held_.layer_tp_replicated(l);
        if (last_virtual(c)) replicated += held_.norm();  // the final norm
      }
      if (replicated > 0)
        before_step.push_back(collective(Stream::tp, Collective::all_reduce, tp_comm_, p_.grad_bytes * replicated,
                                         "tp.all_reduce.sequence_parallel_grads", O, -1, -1, 0, false, after_final));
    }
    // Tied input/output embeddings live on the first and last stage, and so does the embedding with
    // MTP layers (the last stage's copy): their gradients are summed.
    const bool holds_embedding = me_.pp == 0 || me_.pp == p_.pp - 1;
    if ((m_.tied_embeddings || m_.mtp_layers > 0) && p_.pp > 1 && holds_embedding) {
      const int emb_comm = g_.communicator(GroupKind::embedding, layout_.group_of(GroupKind::embedding, rank_));
      before_step.push_back(collective(Stream::dp, Collective::all_reduce, emb_comm,
                                       p_.grad_bytes * static_cast<double>(m_.vocab * m_.hidden) / t_,
                                       "embedding.grad_all_reduce", O, -1, -1, 0, false, after_final));
    }
    // Adam: ~12 FLOPs per parameter; reads fp32 weight, m, v and the gradient, writes fp32
    // weight, m, v and the bf16 copy.
    // The optimizer updates every parameter this rank holds: its layers', and the embedding's and
    // the output layer's on the stages that hold them.
    double dense = 0, expert = 0;
    for (int c = 0; c < p_.virtual_stages; ++c) {
      if (last_virtual(c)) dense += output_grad_params() + held_.mtp_embedding_copy();
      if (first_virtual(c)) dense += held_.embedding();
      for (const LayerRange r : {stage_layers(m_, p_, me_.pp, c), mtp_stage_layers(m_, p_, me_.pp, c)}) {
        for (std::int64_t l = r.first; l < r.last; ++l) {
          dense += layer_dense_params(l);
          expert += layer_expert_params(l);
        }
      }
    }
    const double owned = p_.zero >= 1 ? dense / (p_.dp * p_.cp) + expert / p_.expert_dp() : dense + expert;
    pending_ = before_step;
    const int step =
        compute("optimizer.adam", ComputeClass::optimizer, 12 * owned, owned * (26 + p_.grad_bytes), O, -1, -1, 0);
    // --fp8-param-gather: the step casts its updated shard to FP8, and each optimizer (dense, expert)
    // all-reduces the new amaxes of its FP8 weights, one fp32 each, over its data-parallel group
    // (Transformer Engine's cast_master_weights_to_fp8, called by Megatron's quantize_param_shard);
    // the parameter all-gathers wait for the scales.
    std::vector<int> gather_deps{step};
    if (p_.fp8_param_gather && p_.zero >= 1) {
      const auto [dense_tensors, expert_tensors] = fp8_weight_tensors();
      if (dense_tensors > 0 && p_.dp * p_.cp > 1) {
        gather_deps.push_back(collective(Stream::dp, Collective::all_reduce, dp_comm_, 4 * dense_tensors,
                                         "dp.fp8_amax_all_reduce", O, -1, -1, 0, false, {step}));
      }
      if (expert_tensors > 0 && p_.expert_dp() > 1) {
        gather_deps.push_back(collective(Stream::dp, Collective::all_reduce, edp_comm_, 4 * expert_tensors,
                                         "dp.expert_fp8_amax_all_reduce", O, -1, -1, 0, false, {step}));
      }
    }
    if ((p_.zero == 1 || p_.zero == 2) && !p_.overlap_param_gather) {
      for (const Bucket& b : buckets_) {
        if (b.dense > 0 && p_.dp * p_.cp > 1) {
          collective(Stream::dp, Collective::all_gather, dp_comm_, param_gather_bytes(b.dense, b.dense_gemm),
                     "dp.param_gather", O, -1, -1, b.chunk, false, gather_deps);
        }
        if (b.expert > 0 && p_.expert_dp() > 1) {
          collective(Stream::dp, Collective::all_gather, edp_comm_,
                     param_gather_bytes(b.expert, b.expert_gemm), "dp.expert_param_gather", O, -1, -1,
                     b.chunk, false, gather_deps);
        }
      }
    }
  }

  // FP8 weight tensors this rank holds (each has its own scale and amax): per layer the attention's
  // QKV and projection, the MLP's (or shared experts') fc1 and fc2 (TE fuses gate and up), MTP's
  // eh_proj; per local routed expert its fc1 and fc2 (TE's grouped linear keeps one weight each).
  std::pair<double, double> fp8_weight_tensors() const {
    double dense = 0, expert = 0;
    for (int c = 0; c < p_.virtual_stages; ++c) {
      for (const LayerRange r : {stage_layers(m_, p_, me_.pp, c), mtp_stage_layers(m_, p_, me_.pp, c)}) {
        for (std::int64_t l = r.first; l < r.last; ++l) {
          const bool moe = m_.is_moe_layer(l);
          dense += 2 + (!moe || m_.moe->shared_experts > 0 ? 2 : 0) + (m_.is_mtp_layer(l) ? 1 : 0);
          if (moe) expert += 2.0 * m_.moe->experts / p_.ep;
        }
      }
    }
    return {dense, expert};
  }

  const ModelSpec& m_;
  const ParallelConfig& p_;
  const RankLayout& layout_;
  OpGraph& g_;
  int rank_;
  RankCoord me_;
  RankParams held_;                // what this rank holds of the model
  std::vector<Bucket> buckets_;    // DP gradient buckets, fixed by the model and the config
  int tp_comm_ = -1, dp_comm_ = -1, ep_comm_ = -1, edp_comm_ = -1, etp_comm_ = -1, tpep_comm_ = -1;
  bool sp_ = false;
  double t_ = 1, tokens_ = 0, hidden_bytes_ = 0;
  int last_compute_ = -1;
  std::vector<int> pending_;
  std::map<Stream, int> last_on_stream_;
  std::map<int, int> instances_;
  std::map<std::int64_t, int> layer_done_;  // layer -> its last backward op (last micro-batch)
  int output_done_ = -1, embedding_done_ = -1;
  std::vector<int> grad_ops_;
  std::map<std::int64_t, int> gather_of_layer_;  // --overlap-param-gather: layer -> its bucket's gather
  int gather_of_embedding_ = -1, gather_of_output_ = -1;
};

}  // namespace

OpGraph generate_op_graph(const ModelSpec& model, const ParallelConfig& par, const GraphOptions& opts) {
  RankLayout layout(par);
  OpGraph g;
  g.world = layout.world();
  if (opts.ranks.empty()) {
    for (int r = 0; r < g.world; ++r) g.ranks.push_back(r);
  } else {
    g.ranks = opts.ranks;
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
    for (int r : g.ranks) {
      if (r < 0 || r >= g.world) throw std::out_of_range("generate_op_graph: rank outside the layout");
    }
  }
  for (std::size_t i = 0; i < g.ranks.size(); ++i) {
    RankEmitter(model, par, layout, g, g.ranks[i]).run();
    // Every rank emits about as many ops as the first (the planner's bound builds thousands of
    // graphs): one allocation instead of the vector's doublings, each moving every op.
    if (i == 0) g.ops.reserve(g.ops.size() * g.ranks.size() + g.ops.size() / 8);
  }
  return g;
}

}  // namespace commstack::workloads
