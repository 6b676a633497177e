// Backward of a column-parallel linear with and without Megatron's asynchronous TP reduction
// (ParallelConfig::tp_backward_overlap): the op graph's dependencies, and what it does to the
// simulated iteration.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/train/report.hpp"
#include "test_train_helpers.hpp"
#include "workloads/graph/generator.hpp"

using namespace commstack;
using namespace commstack::workloads;
using train_test::only;
using train_test::setup;
using train_test::waits_for;

namespace {

ModelSpec tiny() {
  return parse_model(nlohmann::json::parse(R"({"name":"tiny-gpt","source":"test","layers":2,"hidden":256,"heads":8,
    "ffn_hidden":1024,"vocab":1024,"seq":128,"mlp":"gelu","norm":"layernorm","position":"learned","bias":true,
    "tied_embeddings":true,"dropout":false})"),
                     "tiny");
}

}  // namespace

TEST_CASE("train: with tp_backward_overlap the input-gradient reduction runs beside the weight-gradient GEMM") {
  const ModelSpec m = tiny();
  for (bool sp : {false, true}) {
    for (bool overlap : {false, true}) {
      ParallelConfig p;
      p.tp = 2;
      p.sequence_parallel = sp;
      p.micro_batch = 1;
      p.global_batch = 1;
      p.tp_backward_overlap = overlap;
      validate(m, p, -1, "par");
      const OpGraph g = generate_op_graph(m, p);
      CAPTURE(sp);
      CAPTURE(overlap);
      for (const auto& [dx, dw, red, next] :
           {std::tuple{"qkv.bwd_input", "qkv.bwd_weight", sp ? "tp.reduce_scatter.attn_in_grad" : "tp.all_reduce.attn_in_grad",
                       "layernorm.attn_in.bwd"},
            std::tuple{"mlp_fc1.bwd_input", "mlp_fc1.bwd_weight",
                       sp ? "tp.reduce_scatter.mlp_in_grad" : "tp.all_reduce.mlp_in_grad", "layernorm.mlp_in.bwd"}}) {
        const Op &in = only(g, dx, 1), &weight = only(g, dw, 1), &reduce = only(g, red, 1), &after = only(g, next, 1);
        CHECK(after.kind == OpKind::compute);
        CHECK(waits_for(after, reduce));      // the next op needs the reduced input gradient either way
        CHECK(waits_for(weight, in));         // one compute stream
        CHECK(waits_for(reduce, in) == overlap);      // launched right after dX ...
        CHECK(waits_for(reduce, weight) != overlap);  // ... or only after dW (2021 autograd order)
        CHECK_FALSE(waits_for(weight, reduce));
        // dX and dW: one GEMM each, the same FLOPs (2 M K N) and together the old single backward op.
        CHECK(in.flops == approx(weight.flops));
        CHECK(in.cclass == ComputeClass::gemm);
      }
    }
  }
}

TEST_CASE("train: overlapping the backward TP reduction saves at most the exposed TP time, never slows") {
  // Megatron 7.5B on one DGX A100 node, TP 8: the backward all-reduces are exposed without overlap.
  auto timing = [](bool overlap) {
    auto s = setup("megatron-7.5b", 8, 1, 1, 8, 4, 4, workloads::Recompute::none);
    s.par.tp_backward_overlap = overlap;
    return train_test::time_in_child(s, "dgx-a100", 1, &sim::train::Breakdown::tp);
  };
  const train_test::Timing off = timing(false), on = timing(true);
  train_test::check_overlap_gain(off, on);
  // Half of the layer's TP all-reduces (the two in the backward of QKV and fc1) can hide; the
  // forward ones and the exposed rest cannot.
  CHECK(on.exposed_s > 0);
}
