// MoE shared experts beside the token dispatcher's all-to-alls (Megatron-Core
// --moe-shared-expert-overlap, ParallelConfig::moe_shared_expert_overlap): the op graph's
// dependencies, and what it does to the simulated iteration.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "sim/train/train.hpp"
#include "test_train_helpers.hpp"
#include "workloads/graph/generator.hpp"

using namespace commstack;
using namespace commstack::workloads;
using train_test::waits_for;

namespace {

// Two layers, the second MoE: 8 routed experts (top 2) and one shared expert.
ModelSpec tiny_moe() {
  return parse_model(nlohmann::json::parse(R"({"name":"tiny-moe","source":"test","layers":2,"hidden":1024,
    "heads":8,"ffn_hidden":4096,"vocab":4096,"seq":2048,"mlp":"swiglu","norm":"rmsnorm","position":"rope",
    "bias":false,"tied_embeddings":false,"dropout":false,"moe":{"experts":8,"top_k":2,"shared_experts":1,
    "ffn_hidden":1024,"first_dense_layers":1}})"),
                     "tiny-moe");
}

ParallelConfig par(const ModelSpec& m, bool overlap) {
  ParallelConfig p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.dp = 8;
  p.ep = 8;
  p.etp = 1;
  p.micro_batch = 1;
  p.global_batch = 16;
  p.moe_shared_expert_overlap = overlap;
  validate(m, p, 16, "par");
  return p;
}

const Op& only(const OpGraph& g, const std::string& name) {
  return train_test::only(g, name, 1);
}

}  // namespace

TEST_CASE(
    "train: --moe-shared-expert-overlap runs the shared experts beside the dispatch and combine "
    "all-to-alls") {
  const ModelSpec m = tiny_moe();
  const OpGraph serial = generate_op_graph(m, par(m, false));
  const OpGraph overlapped = generate_op_graph(m, par(m, true));
  // The same work: every op name with its count, FLOPs and bytes, only the dependencies differ.
  auto census = [](const OpGraph& g) {
    std::map<std::string, std::tuple<int, double, double>> c;
    for (const Op& op : g.ops) {
      auto& [n, flops, bytes] = c[op.name];
      ++n;
      flops += op.flops;
      bytes += static_cast<double>(op.bytes) + op.mem_bytes;
    }
    return c;
  };
  CHECK(census(serial) == census(overlapped));

  const OpGraph& g = overlapped;
  // Forward: fc1 runs while the dispatch all-to-all is in flight, the routed experts wait for both.
  const Op &dispatch = only(g, "ep.dispatch"), &fc1 = only(g, "shared_experts_fc1"),
           &act = only(g, "shared_experts_act"), &experts = only(g, "moe_experts"),
           &router = only(g, "moe_router");
  CHECK(waits_for(dispatch, router));
  CHECK_FALSE(waits_for(fc1, dispatch));
  CHECK(waits_for(experts, dispatch));
  CHECK(waits_for(experts, act));  // one compute stream: the GEMMs still take turns
  // fc2 and its SP reduce-scatter while the combine all-to-all is in flight; the residual add needs both.
  const Op &combine = only(g, "ep.combine"), &fc2 = only(g, "shared_experts_fc2"),
           &rs = only(g, "tp.reduce_scatter.shared_experts_out"), &add = only(g, "residual_add.mlp");
  CHECK(waits_for(combine, experts));
  CHECK_FALSE(waits_for(fc2, combine));
  CHECK(waits_for(add, combine));
  CHECK(waits_for(add, rs));
  // Backward: the shared fc2 gradients beside the combine's all-to-all, fc1's beside the dispatch's.
  const Op &combine_b = only(g, "ep.combine.bwd"), &fc2_b = only(g, "shared_experts_fc2.bwd"),
           &experts_b = only(g, "moe_experts.bwd"), &dispatch_b = only(g, "ep.dispatch.bwd"),
           &fc1_b = only(g, "shared_experts_fc1.bwd_input"), &router_b = only(g, "moe_router.bwd");
  CHECK_FALSE(waits_for(fc2_b, combine_b));
  CHECK(waits_for(experts_b, combine_b));
  CHECK(waits_for(dispatch_b, experts_b));
  CHECK_FALSE(waits_for(fc1_b, dispatch_b));
  CHECK(waits_for(router_b, dispatch_b));
  // Without the overlap the shared experts follow the combine and precede the combine's gradient.
  CHECK(only(serial, "shared_experts_fc1").id > only(serial, "ep.combine").id);

  // Megatron: only effective with shared experts; here a model without them is refused.
  const ModelSpec dense = builtin_model("llama3-8b");
  ParallelConfig p;
  p.moe_shared_expert_overlap = true;
  CHECK_THROWS_WITH_AS(validate(dense, p, -1, "par"), doctest::Contains("has no experts"), InputError);
}

TEST_CASE("train: the shared-expert overlap hides at most the exposed EP time and never slows an iteration") {
  auto timing = [](bool overlap) {
    sim::train::TrainSetup s;
    s.model = tiny_moe();
    s.par = par(s.model, overlap);
    s.compute = builtin_compute_profile("h100-sxm5");
    return train_test::time_in_child(s, "dgx-h100", 2, &sim::train::Breakdown::ep);
  };
  train_test::check_overlap_gain(timing(false), timing(true));
}
