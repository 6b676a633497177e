#include <algorithm>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/layout.hpp"
#include "workloads/parallel/parallel.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {
ParallelConfig cfg(const char* text) { return parse_parallel(nlohmann::json::parse(text), "par.json"); }
}  // namespace

TEST_CASE("work: parallel config parses every field and fills seq from the model") {
  ParallelConfig p = cfg(R"({"tp":8,"sequence_parallel":true,"pp":4,"schedule":"interleaved","virtual_stages":5,
     "dp":2,"zero":1,"cp":2,"micro_batch":1,"global_batch":128,"precision":"fp8","recompute":"selective",
     "order":"tp-cp-ep-dp-pp","overlap_grad_reduce":false,"bucket_params":1000,"grad_dtype":"fp32"})");
  ModelSpec m = builtin_model("llama3-70b");
  validate(m, p, 128, "par.json");
  CHECK(p.seq == 8192);
  CHECK(p.gpus() == 128);
  CHECK(p.micro_batches() == 64);
  CHECK(p.grad_bytes == 4);
  CHECK(p.precision == Precision::fp8);
  CHECK(cfg(R"({"micro_batch":1,"global_batch":1,"fsdp":true})").zero == 3);
}

TEST_CASE("work: parallel validation names the broken rule") {
  ModelSpec gpt = builtin_model("korthikanti-175b");  // 96 heads, 96 layers
  ModelSpec llama = builtin_model("llama2-70b");      // 64 heads, 8 kv heads, 80 layers
  ModelSpec mix = builtin_model("mixtral-8x7b");      // 8 experts
  auto check = [](const ModelSpec& m, const char* text, int gpus, const char* needle) {
    ParallelConfig p = cfg(text);
    CHECK_THROWS_WITH_AS(validate(m, p, gpus, "par.json"), doctest::Contains(needle), InputError);
  };
  check(gpt, R"({"tp":7,"micro_batch":1,"global_batch":1})", -1, "does not divide the 96 attention heads");
  check(llama, R"({"tp":16,"micro_batch":1,"global_batch":1})", -1, "does not divide the 8 key/value heads");
  check(gpt, R"({"pp":5,"micro_batch":1,"global_batch":1})", -1, "does not divide the 96 layers");
  check(gpt, R"({"pp":4,"schedule":"interleaved","virtual_stages":5,"micro_batch":1,"global_batch":8})", -1,
        "pp*virtual_stages = 4*5 = 20");
  check(gpt, R"({"pp":4,"virtual_stages":2,"micro_batch":1,"global_batch":8})", -1, "needs \"schedule\": \"interleaved\"");
  check(gpt, R"({"tp":8,"pp":8,"micro_batch":1,"global_batch":64})", 128, "= 64 but the cluster has 128 GPUs");
  check(gpt, R"({"dp":4,"micro_batch":3,"global_batch":20})", -1, "not a multiple of micro_batch*dp = 3*4");
  check(gpt, R"({"pp":4,"schedule":"interleaved","virtual_stages":2,"micro_batch":1,"global_batch":6})", -1,
        "not a multiple of pp = 4");
  check(gpt, R"({"cp":3,"micro_batch":1,"global_batch":1})", -1, "2*cp = 6 does not divide seq = 2048");
  check(gpt, R"({"ep":2,"dp":2,"micro_batch":1,"global_batch":2})", -1, "has no experts");
  check(mix, R"({"ep":3,"dp":3,"micro_batch":1,"global_batch":3})", -1, "does not divide the 8 experts");
  check(mix, R"({"ep":4,"dp":2,"micro_batch":1,"global_batch":2})", -1, "does not divide tp*cp*dp = 2");
  check(mix, R"({"tp":2,"micro_batch":1,"global_batch":1})", -1, "need sequence_parallel true");
  // pp not last (Megatron's --use-tp-pp-dp-mapping): the expert-DP size must equal dp.
  check(
      mix,
      R"({"tp":2,"sequence_parallel":true,"pp":2,"dp":4,"ep":4,"etp":1,"order":"tp-cp-ep-pp-dp","micro_batch":1,"global_batch":4})",
      -1,
      "$.order: pp is not the last dimension, so Megatron needs the expert-data-parallel size "
      "tp*cp*dp/(etp*ep) = "
      "2 to equal dp = 4");
  // Expert TP not set is Megatron's default, the tp degree: TP8 EP8 on 8 GPUs needs 64 ranks a stage.
  check(mix, R"({"tp":8,"sequence_parallel":true,"ep":8,"micro_batch":1,"global_batch":1})", 8,
        "$.etp: etp*ep = 8*8 = 64 does not divide tp*cp*dp = 8 (the ranks of a pipeline stage) (etp not set: "
        "Megatron's default, the tp degree); etp 1 keeps the experts whole");
  check(mix, R"({"ep":2,"dp":4,"etp":3,"micro_batch":1,"global_batch":4})", -1,
        "$.etp: expert tensor parallelism 3 does not divide the experts' ffn_hidden = 14336");
  check(gpt, R"({"etp":1,"micro_batch":1,"global_batch":1})", -1,
        "$.etp: is set but korthikanti-175b has no experts");
  // Set expert TP that breaks the expert grid is named as etp; the shared experts split over TP.
  check(mix, R"({"tp":2,"sequence_parallel":true,"dp":8,"ep":8,"etp":4,"micro_batch":1,"global_batch":8})",
        16, "$.etp: etp*ep = 4*8 = 32 does not divide tp*cp*dp = 16 (the ranks of a pipeline stage)");
  ModelSpec odd = mix;
  odd.moe->shared_experts = 1;
  odd.moe->ffn_hidden = 100;
  check(odd, R"({"tp":8,"sequence_parallel":true,"ep":8,"etp":1,"micro_batch":1,"global_batch":1})", 8,
        "$.tp: 8 does not divide the shared experts' width 1 x 100 = 100");
  check(gpt, R"({"pp":2,"dp":2,"zero":3,"micro_batch":1,"global_batch":2})", -1, "ZeRO-3");
  // Gradient accumulation the op graph cannot hold (it grew to 3 GB and std::bad_alloc before).
  check(gpt, R"({"dp":2,"micro_batch":1,"global_batch":8388608})", -1,
        "8388608 / (micro_batch*dp = 1*2) = 4194304 micro-batches per DP rank; expected at most 16384");
  CHECK_THROWS_WITH_AS(cfg(R"({"micro_batch":1,"global_batch":1,"tensor_parallel":2})"),
                       doctest::Contains("par.json: $.tensor_parallel: unknown field"), InputError);
  CHECK_THROWS_WITH_AS(cfg(R"({"micro_batch":1,"global_batch":1,"zero":4})"), doctest::Contains("$.zero"), InputError);
  CHECK_THROWS_WITH_AS(cfg(R"({"micro_batch":1,"global_batch":1,"order":"tp-dp-pp"})"), doctest::Contains("exactly once"),
                       InputError);
  CHECK_THROWS_WITH_AS(cfg(R"({"micro_batch":1,"global_batch":1,"recompute":"some"})"),
                       doctest::Contains("'some' is not one of: none, selective, full"), InputError);
  CHECK_THROWS_WITH_AS(cfg(R"({"global_batch":1})"), doctest::Contains("$.micro_batch: missing"), InputError);
  CHECK_THROWS_WITH_AS(cfg(R"({"micro_batch":1,"global_batch":1,"fsdp":true,"zero":1})"),
                       doctest::Contains("true means ZeRO-3"), InputError);
}

TEST_CASE("work: Megatron rank order puts TP innermost, then CP, DP, PP") {
  ParallelConfig p = cfg(R"({"tp":2,"cp":2,"dp":2,"pp":2,"micro_batch":1,"global_batch":2})");
  RankLayout L(p);
  CHECK(L.world() == 16);
  // rank = tp + 2*(cp + 2*(dp + 2*pp))
  CHECK(L.rank({1, 1, 1, 1, 0, 0, 0}) == 15);
  CHECK(L.rank({1, 0, 1, 0, 0, 0, 0}) == 5);
  for (int r = 0; r < 16; ++r) CHECK(L.rank(L.coord(r)) == r);
  CHECK(L.group_of(GroupKind::tp, 5) == std::vector<int>{4, 5});
  CHECK(L.group_of(GroupKind::cp, 5) == std::vector<int>{5, 7});
  CHECK(L.group_of(GroupKind::dp, 5) == std::vector<int>{1, 5});
  CHECK(L.group_of(GroupKind::dp_cp, 5) == std::vector<int>{1, 3, 5, 7});
  CHECK(L.group_of(GroupKind::pp, 5) == std::vector<int>{5, 13});
  CHECK(L.group_of(GroupKind::embedding, 5) == std::vector<int>{5, 13});
  CHECK(L.groups(GroupKind::tp).size() == 8);
  CHECK(L.groups(GroupKind::dp_cp).size() == 4);
  CHECK(L.representative_ranks() == std::vector<int>{0, 8});
  // Overridden order: PP innermost.
  ParallelConfig q = cfg(R"({"tp":2,"pp":4,"order":"pp-tp-dp-cp","micro_batch":1,"global_batch":1})");
  RankLayout M(q);
  CHECK(M.group_of(GroupKind::pp, 0) == std::vector<int>{0, 1, 2, 3});
  CHECK(M.group_of(GroupKind::tp, 0) == std::vector<int>{0, 4});
}

TEST_CASE("work: expert-parallel groups are consecutive blocks of a stage's ranks (expert TP = 1)") {
  // Megatron's expert grid "etp-ep-edp-pp" with --expert-tensor-parallel-size 1: EP innermost over
  // the in-stage index j = tp + t*(cp + c*dp), which is the rank itself on one stage.
  ModelSpec mix = builtin_model("mixtral-8x7b");
  ParallelConfig p =
      cfg(R"({"tp":2,"sequence_parallel":true,"dp":4,"ep":2,"etp":1,"micro_batch":1,"global_batch":4})");
  validate(mix, p, 8, "par.json");
  RankLayout L(p);
  CHECK(L.group_of(GroupKind::ep, 0) == std::vector<int>{0, 1});
  CHECK(L.group_of(GroupKind::ep, 5) == std::vector<int>{4, 5});
  // Expert gradients: same ep rank, tp*dp*cp/ep = 4 ranks.
  CHECK(L.group_of(GroupKind::expert_dp, 0) == std::vector<int>{0, 2, 4, 6});
  CHECK(L.group_of(GroupKind::expert_dp, 3) == std::vector<int>{1, 3, 5, 7});
  // Mixtral TP8 EP8 on one node: the EP group is the node's 8 TP ranks (refused before, when EP
  // had to divide dp*cp); expert gradients are then not reduced at all (expert-DP of 1).
  CHECK(L.group_of(GroupKind::expert_tp, 5) == std::vector<int>{5});
  ParallelConfig node =
      cfg(R"({"tp":8,"sequence_parallel":true,"ep":8,"etp":1,"micro_batch":1,"global_batch":1})");
  validate(mix, node, 8, "par.json");
  RankLayout N(node);
  CHECK(N.group_of(GroupKind::ep, 3) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(N.group_of(GroupKind::expert_dp, 3) == std::vector<int>{3});
  // With CP and PP: blocks of 4 of a stage's 8 ranks, on the stage of the rank.
  ParallelConfig q = cfg(
      R"({"tp":2,"sequence_parallel":true,"cp":2,"dp":2,"pp":2,"ep":4,"etp":1,"micro_batch":1,"global_batch":4})");
  validate(mix, q, 16, "par.json");
  RankLayout Q(q);
  CHECK(Q.group_of(GroupKind::ep, 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(Q.group_of(GroupKind::ep, 13) == std::vector<int>{12, 13, 14, 15});
  CHECK(Q.group_of(GroupKind::expert_dp, 13) == std::vector<int>{9, 13});
  for (int r = 0; r < 16; ++r) {
    const RankCoord c = Q.coord(r);
    CHECK(c.ep == (r % 8) % 4);
    CHECK(c.edp == (r % 8) / 4);
  }
}

TEST_CASE("work: with Megatron's default expert TP = tp, an EP group takes every tp-th rank of a stage") {
  // Expert grid "etp-ep-edp-pp" with etp = tp = 2: the expert-TP group is the TP group, EP runs
  // over j / 2 (Mixtral TP2 EP8 on 16 GPUs: the even ranks, across both nodes of 8).
  ModelSpec mix = builtin_model("mixtral-8x7b");
  ParallelConfig p =
      cfg(R"({"tp":2,"sequence_parallel":true,"dp":8,"ep":8,"micro_batch":1,"global_batch":8})");
  validate(mix, p, 16, "par.json");
  CHECK(p.expert_tp() == 2);
  CHECK(p.expert_dp() == 1);
  RankLayout L(p);
  CHECK(L.group_of(GroupKind::ep, 0) == std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14});
  CHECK(L.group_of(GroupKind::ep, 7) == std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15});
  CHECK(L.group_of(GroupKind::expert_tp, 7) == L.group_of(GroupKind::tp, 7));
  CHECK(L.group_of(GroupKind::expert_dp, 7) == std::vector<int>{7});
  // etp 2 under tp 4 with CP 2 and DP 2 (16 ranks a stage), EP 2: expert-TP pairs of consecutive
  // ranks, EP pairs two apart, expert-DP every fourth rank; every group of a kind partitions the stage.
  ParallelConfig q = cfg(
      R"({"tp":4,"sequence_parallel":true,"cp":2,"dp":2,"pp":2,"ep":2,"etp":2,"micro_batch":1,"global_batch":4})");
  validate(mix, q, 32, "par.json");
  CHECK(q.expert_dp() == 4);
  RankLayout Q(q);
  CHECK(Q.group_of(GroupKind::expert_tp, 5) == std::vector<int>{4, 5});
  CHECK(Q.group_of(GroupKind::ep, 5) == std::vector<int>{5, 7});
  CHECK(Q.group_of(GroupKind::expert_dp, 5) == std::vector<int>{1, 5, 9, 13});
  CHECK(Q.group_of(GroupKind::expert_dp, 21) == std::vector<int>{17, 21, 25, 29});
  for (GroupKind k : {GroupKind::ep, GroupKind::expert_tp, GroupKind::expert_dp}) {
    std::vector<int> seen(32, 0);
    for (const auto& g : Q.groups(k))
      for (int r : g) ++seen[static_cast<std::size_t>(r)];
    CHECK(std::count(seen.begin(), seen.end(), 1) == 32);
  }
  for (int r = 0; r < 32; ++r) {
    const RankCoord c = Q.coord(r);
    CHECK(c.etp == (r % 16) % 2);
    CHECK(c.ep == (r % 16) / 2 % 2);
    CHECK(c.edp == (r % 16) / 4);
  }
}
