#include <array>

#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "common/error.hpp"
#include "test_work_csv.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {
ParallelConfig cfg(const ModelSpec& m, const std::string& text, int gpus = -1) {
  ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par.json");
  validate(m, p, gpus, "par.json");
  return p;
}
constexpr double GiB = 1024.0 * 1024 * 1024;
}  // namespace

TEST_CASE("work: activation bytes per layer equal Korthikanti's closed forms for GPT (materialized attention)") {
  for (const char* name : {"korthikanti-22b", "korthikanti-175b", "korthikanti-530b", "korthikanti-1t"}) {
    ModelSpec m = builtin_model(name);
    const double s = 2048, h = static_cast<double>(m.hidden), a = static_cast<double>(m.heads);
    for (int t : {1, 2, 8}) {
      for (bool sp : {false, true}) {
        if (sp && t == 1) continue;
        for (const char* rc : {"none", "selective", "full"}) {
          for (int b : {1, 4}) {
            ParallelConfig p = cfg(m, fmt::format(R"({{"tp":{},"sequence_parallel":{},"micro_batch":{},"global_batch":{},
                                                     "recompute":"{}","attention":"materialized"}})", t, sp, b, b, rc));
            CHECK(activation_bytes_per_layer(m, p, 0) ==
                  approx(korthikanti_activation_bytes(s, b, h, a, t, sp, p.recompute)).epsilon(1e-12));
            // A fused (flash) kernel keeps no seq^2 tensor, only an fp32 log-sum-exp per query row and
            // head: the selective-recompute closed form plus 4 b a s / t bytes (none), the same otherwise.
            ParallelConfig f = p;
            f.attention = AttentionKernel::flash;
            const double lse = p.recompute == Recompute::none ? 4.0 * b * a * s / t : 0;
            const Recompute kept = p.recompute == Recompute::none ? Recompute::selective : p.recompute;
            CHECK(activation_bytes_per_layer(m, f, 0) ==
                  approx(korthikanti_activation_bytes(s, b, h, a, t, sp, kept) + lse).epsilon(1e-12));
          }
        }
      }
    }
  }
  // The paper's headline: no recompute sbh(34 + 5as/h); e.g. 22B, b = 1: 34*2048*6144 + 5*64*2048^2 bytes.
  CHECK(korthikanti_activation_bytes(2048, 1, 6144, 64, 1, false, Recompute::none) ==
        approx(34.0 * 2048 * 6144 + 5.0 * 64 * 2048 * 2048).epsilon(1e-14));
}

TEST_CASE("work: weights, gradients and optimizer states split by ZeRO stage (16 bytes per parameter)") {
  ModelSpec m = builtin_model("llama2-7b");
  const double P = static_cast<double>(count_params(m).total);
  auto total_states = [&](int zero) {
    ParallelConfig p = cfg(m, fmt::format(R"({{"dp":8,"zero":{},"micro_batch":1,"global_batch":8}})", zero));
    const StageMemory s = estimate_memory(m, p).stages.at(0);
    return std::array<double, 3>{s.weights, s.gradients, s.optimizer};
  };
  auto z0 = total_states(0), z1 = total_states(1), z2 = total_states(2), z3 = total_states(3);
  CHECK(z0[0] == approx(2 * P));
  CHECK(z0[1] == approx(2 * P));
  CHECK(z0[2] == approx(12 * P));
  CHECK(z1[2] == approx(12 * P / 8));
  CHECK(z1[1] == approx(2 * P));
  CHECK(z2[1] == approx(2 * P / 8));
  // ZeRO-3 keeps 1/8 of the weights plus two gathered layers (prefetch).
  const double layer = static_cast<double>(count_params(m).attention_per_layer + count_params(m).dense_mlp_per_layer);
  CHECK(z3[0] == approx(2 * P / 8 + 2 * 2 * layer));
  CHECK(z3[1] + z3[2] == approx(14 * P / 8));
}

TEST_CASE("work: 1F1B holds pp - stage micro-batches, interleaving multiplies stage 0 by 1 + (p-1)/(pv)") {
  ModelSpec m = builtin_model("korthikanti-175b");
  ParallelConfig p = cfg(m, R"({"tp":8,"sequence_parallel":true,"pp":8,"micro_batch":1,"global_batch":64,"recompute":"selective"})");
  MemoryEstimate e = estimate_memory(m, p);
  const double per_layer = activation_bytes_per_layer(m, p, 0);
  for (int s = 0; s < 8; ++s) {
    CHECK(e.stages[static_cast<std::size_t>(s)].in_flight == 8 - s);
    const double logits = s == 7 ? 4.0 * 2048 * 51200 / 8 : 0;
    CHECK(e.stages[static_cast<std::size_t>(s)].activations == approx(per_layer * 12 * (8 - s) + logits));
  }
  // Stage 0 with 1F1B holds activations of all 96 layers: 34 sbh/t * L (Korthikanti sec. 4.2.3).
  CHECK(e.stages[0].activations == approx(34.0 * 2048 * 12288 / 8 * 96));
  ParallelConfig q = cfg(m, R"({"tp":8,"sequence_parallel":true,"pp":8,"schedule":"interleaved","virtual_stages":3,
                               "micro_batch":1,"global_batch":64,"recompute":"selective"})");
  CHECK(estimate_memory(m, q).stages[0].activations ==
        approx(34.0 * 2048 * 12288 / 8 * 96 * (1 + 7.0 / (8 * 3))));
}

TEST_CASE(
    "work: the published Megatron and Korthikanti configurations fit in 80 GB, without recompute 530B does "
    "not") {
  auto rows = work_test::read_table(work_test::data_dir() + "training_megatron-sc21_weak-scaling_table1.csv");
  for (const auto& r : rows) {
    std::string billions = r.at("params_billion") == "1008.0" ? "1008" : r.at("params_billion");
    ModelSpec m = builtin_model("megatron-" + billions + "b");
    ParallelConfig p = cfg(m, fmt::format(R"({{"tp":{},"pp":{},"dp":{},"micro_batch":{},"global_batch":{},"recompute":"full",
                                             "zero":0}})", r.at("tensor_parallel"), r.at("pipeline_parallel"),
                                          r.at("dp_derived"), r.at("micro_batch_bigscience_note"), r.at("global_batch_size")),
                           std::stoi(r.at("num_gpus")));
    INFO(m.name);
    CHECK_NOTHROW(check_fits(estimate_memory(m, p), 80 * GiB, "A100-80GB"));
  }
  ModelSpec big = builtin_model("korthikanti-530b");
  ParallelConfig ok = cfg(big, R"({"tp":8,"sequence_parallel":true,"pp":35,"micro_batch":1,"global_batch":280,"recompute":"selective"})", 280);
  CHECK_NOTHROW(check_fits(estimate_memory(big, ok), 80 * GiB, "A100-80GB"));
  ParallelConfig bad = cfg(big, R"({"tp":8,"pp":35,"micro_batch":1,"global_batch":280,"recompute":"none","attention":"materialized"})", 280);
  CHECK_THROWS_WITH_AS(check_fits(estimate_memory(big, bad), 80 * GiB, "A100-80GB"),
                       doctest::Contains("memory: pipeline stage 0 needs"), InputError);
}

TEST_CASE("work: MoE experts are split by EP and expert TP, their states by the expert-data-parallel group") {
  ModelSpec m = builtin_model("mixtral-8x7b");
  const ParamCount pc = count_params(m);
  // Expert TP 1: whole experts, 8 over EP; expert states over tp*dp*cp/ep = 2 ranks.
  ParallelConfig p = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"dp":8,"ep":8,"etp":1,"zero":1,"micro_batch":1,"global_batch":8,"seq":4096})");
  const StageMemory s = estimate_memory(m, p).stages.at(0);
  CHECK(static_cast<double>(s.params_expert) ==
        approx(static_cast<double>(pc.expert_per_layer) * 32 / 8).epsilon(1e-9));
  // Optimizer: dense states over dp*cp = 8, expert states over tp*dp*cp/ep = 2.
  CHECK(s.optimizer ==
        approx(12.0 * (static_cast<double>(s.params_dense) / 8 + static_cast<double>(s.params_expert) / 2))
            .epsilon(1e-6));
  // Megatron's default expert TP = tp = 2: each expert's matrices halved (Mixtral's experts have no
  // bias), and the expert grid 2 x 8 fills the 16 ranks, so the expert states are not sharded.
  ParallelConfig q = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"dp":8,"ep":8,"zero":1,"micro_batch":1,"global_batch":8,"seq":4096})");
  const StageMemory t = estimate_memory(m, q).stages.at(0);
  CHECK(static_cast<double>(t.params_expert) ==
        approx(static_cast<double>(pc.expert_per_layer) * 32 / 16).epsilon(1e-9));
  CHECK(t.params_dense == s.params_dense);
  CHECK(t.optimizer ==
        approx(12.0 * (static_cast<double>(t.params_dense) / 8 + static_cast<double>(t.params_expert)))
            .epsilon(1e-6));
  // Activations: each routed copy's input arrives on both expert-TP ranks (h more per copy of the
  // 4096 / 2 tokens x top 2 a rank routes, 2 bytes each, 32 layers); the intermediates stay the same.
  const double extra = 32.0 * 4096 / 2 * 2 * 4096 * 2;
  CHECK(t.activations - s.activations == approx(extra).epsilon(1e-9));
}
