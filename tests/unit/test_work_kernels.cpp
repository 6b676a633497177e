// The memory-bound kernels the op graph emits around the GEMMs (norms, residual adds, activation,
// materialized attention), checked against their byte counts in closed form.
#include <string>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "common/error.hpp"
#include "workloads/flops.hpp"
#include "workloads/graph/generator.hpp"
#include "workloads/model.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {

ModelSpec gpt(bool dropout) {
  auto j = nlohmann::json::parse(R"({"name":"tiny-gpt","source":"test","layers":4,"hidden":256,"heads":8,
    "ffn_hidden":1024,"vocab":1024,"seq":128,"mlp":"gelu","norm":"layernorm","position":"learned","bias":true,
    "tied_embeddings":true,"dropout":true})");
  j["dropout"] = dropout;
  return parse_model(j, "tiny");
}

ParallelConfig cfg(const ModelSpec& m, const std::string& text) {
  ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par");
  validate(m, p, -1, "par");
  return p;
}

std::vector<const Op*> named(const OpGraph& g, const std::string& name) {
  std::vector<const Op*> out;
  for (const Op& op : g.ops) {
    if (op.rank == 0 && name == op.name) out.push_back(&op);
  }
  return out;
}

double flops_of(const OpGraph& g) {
  double f = 0;
  for (const Op& op : g.ops) f += op.phase == Phase::optimizer ? 0 : op.flops;  // iteration_flops has no optimizer
  return f;
}

}  // namespace

TEST_CASE("work: norms, residual adds and the MLP activation stream their bytes (replicated over TP without SP)") {
  const ModelSpec m = gpt(true);
  const double T = 2 * 128, h = 256, f = 1024, t = 2;  // tokens per micro-batch, widths, TP
  for (bool sp : {false, true}) {
    const ParallelConfig p = cfg(m, std::string(R"({"tp":2,"micro_batch":2,"global_batch":2,"sequence_parallel":)") +
                                        (sp ? "true" : "false") + "}");
    const OpGraph g = generate_op_graph(m, p);
    const double res = T * h / (sp ? t : 1);  // residual-stream elements per rank
    for (const char* name : {"layernorm.attn_in", "layernorm.mlp_in"}) {
      auto ops = named(g, name);
      REQUIRE(ops.size() == 4);  // one per layer
      for (const Op* op : ops) {
        CHECK(op->cclass == ComputeClass::elementwise);
        CHECK(op->flops == 0);
        CHECK(op->mem_bytes == approx(4 * res));  // read x, write y (bf16)
      }
      for (const Op* op : named(g, std::string(name) + ".bwd")) CHECK(op->mem_bytes == approx(12 * res));
    }
    for (const Op* op : named(g, "residual_add.attn")) CHECK(op->mem_bytes == approx(7 * res));  // + mask
    for (const Op* op : named(g, "residual_add.mlp.bwd")) CHECK(op->mem_bytes == approx(5 * res));
    // The activation is TP-sharded with or without SP (it lives between the column and row GEMMs).
    for (const Op* op : named(g, "mlp_act")) CHECK(op->mem_bytes == approx(4 * T * f / t));
    for (const Op* op : named(g, "mlp_act.bwd")) CHECK(op->mem_bytes == approx(6 * T * f / t));
    // The new kernels add no FLOPs: the graph still sums to the model's hardware FLOPs (x TP ranks).
    CHECK(flops_of(g) == approx(iteration_flops(m, 2, 128, Recompute::none).hardware).epsilon(1e-12));
  }
  // Without dropout there is no mask byte.
  const ModelSpec nd = gpt(false);
  const OpGraph g = generate_op_graph(nd, cfg(nd, R"({"tp":2,"micro_batch":2,"global_batch":2})"));
  for (const Op* op : named(g, "residual_add.attn")) CHECK(op->mem_bytes == approx(6 * T * h));
}

TEST_CASE("work: materialized attention streams the seq^2 scores (13E forward, 19E backward) and keeps the FLOPs") {
  const ModelSpec m = gpt(true);
  const double b = 2, s = 128, heads = 8, t = 2;
  const double E = b * heads / t * s * s;  // score elements per rank and micro-batch
  const ParallelConfig p = cfg(m, R"({"tp":2,"micro_batch":2,"global_batch":2,"attention":"materialized"})");
  const OpGraph g = generate_op_graph(m, p);
  CHECK(named(g, "attention").empty());
  auto one = [&](const char* name) {
    auto ops = named(g, name);
    REQUIRE(ops.size() == 4);
    return ops[0]->mem_bytes;
  };
  CHECK(one("attention.softmax") == approx(4 * E));
  CHECK(one("attention.dropout") == approx(5 * E));
  CHECK(one("attention.softmax.bwd") == approx(6 * E));
  CHECK(one("attention.dropout.bwd") == approx(5 * E));
  // The two batched GEMMs: score bytes plus the (small) Q, K, V / O traffic.
  const double qkv = b * s * 256 / t * 2;  // bytes of Q (= K = V = O) per rank
  CHECK(one("attention.scores") == approx(2 * E + 2 * qkv));
  CHECK(one("attention.context") == approx(2 * E + 2 * qkv));
  CHECK(one("attention.context.bwd") == approx(4 * E + 2 * qkv));
  CHECK(one("attention.scores.bwd") == approx(4 * E + 2 * qkv));
  const LayerFlops lf = layer_forward_flops(m, 0, 2, 128);
  CHECK(named(g, "attention.scores")[0]->flops == approx(lf.attention_core() / t / 2));
  CHECK(flops_of(g) == approx(iteration_flops(m, 2, 128, Recompute::none).hardware).epsilon(1e-12));
  // Selective recomputation recomputes exactly these kernels.
  const OpGraph sel = generate_op_graph(m, cfg(m, R"({"tp":2,"micro_batch":2,"global_batch":2,
      "attention":"materialized","recompute":"selective"})"));
  CHECK(named(sel, "attention.softmax.recompute").size() == 4);
  CHECK(named(sel, "attention.softmax.recompute")[0]->mem_bytes == approx(4 * E));
  // No context parallelism with materialized attention (Megatron's CP needs the fused kernel).
  ParallelConfig cp = parse_parallel(nlohmann::json::parse(R"({"cp":2,"micro_batch":1,"global_batch":1,
      "attention":"materialized"})"), "par.json");
  CHECK_THROWS_WITH_AS(validate(m, cp, -1, "par.json"), doctest::Contains("par.json: $.attention"), InputError);
  CHECK_THROWS_WITH_AS(parse_parallel(nlohmann::json::parse(R"({"micro_batch":1,"global_batch":1,"attention":"sdpa"})"),
                                      "par.json"),
                       doctest::Contains("$.attention"), InputError);
}

TEST_CASE("work: FP8 quantizes each GEMM's activation operand with a cast-transpose kernel (4 bytes per element)") {
  const ModelSpec m = gpt(false);
  const double T = 2 * 128, h = 256, f = 1024, t = 2, V = 1024;  // tokens per micro-batch, widths, TP, vocab
  const OpGraph bf16 = generate_op_graph(m, cfg(m, R"({"tp":2,"micro_batch":2,"global_batch":2})"));
  CHECK(named(bf16, "fp8_cast_transpose").empty());
  const OpGraph g = generate_op_graph(m, cfg(m, R"({"tp":2,"micro_batch":2,"global_batch":2,"precision":"fp8"})"));
  double bytes = 0;
  for (const Op* op : named(g, "fp8_cast_transpose")) {
    CHECK(op->cclass == ComputeClass::elementwise);
    CHECK(op->flops == 0);
    bytes += op->mem_bytes;
  }
  // Per layer, forward: X of qkv (T x h), attn_proj (T x h/t), fc1 (T x h), fc2 (T x f/t); backward:
  // dY of qkv (T x 3h/t), attn_proj (T x h), fc1 (T x f/t), fc2 (T x h). Logits: X (T x h), dY (T x V/t).
  const double per_layer = T * (h + h / t + h + f / t) + T * (3 * h / t + h + f / t + h);
  CHECK(bytes == approx(4 * (4 * per_layer + T * h + T * V / t)));
  // No FLOPs added: the graph still sums to the model's hardware FLOPs.
  CHECK(flops_of(g) == approx(flops_of(bf16)).epsilon(1e-12));
}
