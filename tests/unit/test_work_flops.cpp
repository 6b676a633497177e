#include <doctest/doctest.h>

#include "approx.hpp"

#include "test_work_csv.hpp"
#include "workloads/flops.hpp"
#include "workloads/model.hpp"

using namespace commstack::workloads;

TEST_CASE("work: per-layer FLOPs sum to Narayanan eq. (3) for all Megatron Table 1 models (full recompute)") {
  for (const char* n :
       {"megatron-1.7b", "megatron-3.6b", "megatron-7.5b", "megatron-18.4b", "megatron-39.1b",
        "megatron-76.1b", "megatron-145.6b", "megatron-310.1b", "megatron-529.6b", "megatron-1008b"}) {
    ModelSpec m = builtin_model(n);
    const std::int64_t B = 512;
    IterationFlops it = iteration_flops(m, B, m.seq, Recompute::full);
    const double closed =
        narayanan_full_recompute_flops(B, static_cast<double>(m.seq), static_cast<double>(m.layers),
                                       static_cast<double>(m.hidden), static_cast<double>(m.vocab));
    CHECK(it.hardware == approx(closed).epsilon(1e-12));
    CHECK(it.model ==
          approx(korthikanti_model_flops(B, static_cast<double>(m.seq), static_cast<double>(m.layers),
                                         static_cast<double>(m.hidden), static_cast<double>(m.vocab)))
              .epsilon(1e-12));
  }
}

TEST_CASE("work: per-layer FLOPs of one GPT layer equal 24Bsh^2 + 4Bs^2h and split into the named GEMMs") {
  ModelSpec m = builtin_model("korthikanti-22b");
  const double B = 4, s = 2048, h = 6144;
  LayerFlops f = layer_forward_flops(m, 0, 4, 2048);
  CHECK(f.qkv == 6 * B * s * h * h);
  CHECK(f.attn_scores == 2 * B * s * s * h);
  CHECK(f.attn_over_v == 2 * B * s * s * h);
  CHECK(f.proj == 2 * B * s * h * h);
  CHECK(f.mlp == 16 * B * s * h * h);
  CHECK(f.total() == 24 * B * s * h * h + 4 * B * s * s * h);
  CHECK(logits_forward_flops(m, 4, 2048) == 2 * B * s * h * 51200);
}

TEST_CASE(
    "work: selective recompute adds 4Bs^2h per layer, Korthikanti's printed HFU formula counts it twice") {
  auto rows = work_test::read_table(work_test::data_dir() +
                                    "training_korthikanti_activation-recompute_tables3-5.csv");
  REQUIRE(rows.size() == 4);
  const char* names[] = {"korthikanti-22b", "korthikanti-175b", "korthikanti-530b", "korthikanti-1t"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ModelSpec m = builtin_model(names[i]);
    const double B = std::stod(rows[i].at("global_batch"));
    const double s = 2048, l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden), V = 51200;
    IterationFlops it = iteration_flops(m, static_cast<std::int64_t>(B), 2048, Recompute::selective);
    CHECK(it.recompute == approx(4 * B * s * s * h * l).epsilon(1e-12));
    CHECK(it.hardware ==
          approx(72 * B * s * l * h * h * (1 + 2 * s / (9 * h) + V / (12 * h * l))).epsilon(1e-12));
    // Published MFU (Table 5): model FLOPs / (time * GPUs * 312 TFLOP/s), to the table's 0.1 %.
    const double gpus = std::stod(rows[i].at("num_gpus"));
    const double t = std::stod(rows[i].at("present_work_iter_time_s"));
    const double published_mfu = std::stod(rows[i].at("model_flops_utilization")) / 100;
    CHECK(mfu(it.model, t, static_cast<int>(gpus), 312e12) == approx(published_mfu).epsilon(0.004));
    // Published HFU follows the paper's s/(3h) formula, not the per-op count.
    const double published_hfu = std::stod(rows[i].at("hardware_flops_utilization")) / 100;
    CHECK(mfu(korthikanti_selective_paper_flops(B, s, l, h, V), t, static_cast<int>(gpus), 312e12) ==
          approx(published_hfu).epsilon(0.004));
  }
}

TEST_CASE("work: model FLOPs per token reproduce NeMo 24.07 tokens/s vs TFLOP/s on DGX-H100") {
  // NeMo counts 3 passes with full (non-causal) attention, like we do: tokens/s * FLOPs/token = TFLOP/s.
  auto rows = work_test::read_table(work_test::data_dir() + "training_nemo-24.07_perf-summary_dgx-h100.csv");
  int checked = 0;
  for (const auto& r : rows) {
    std::string model = r.at("Model");
    std::string name = model == "LLAMA2-7B"    ? "llama2-7b"
                       : model == "LLAMA2-13B" ? "llama2-13b"
                       : model == "LLAMA2-70B" ? "llama2-70b"
                       : model == "LLAMA3-8B"  ? "llama3-8b"
                       : model == "LLAMA3-70B" ? "llama3-70b"
                       : model == "GPT3-175B"  ? "korthikanti-175b"
                                               : "";
    if (name.empty()) continue;
    ModelSpec m = builtin_model(name);
    const std::int64_t seq = std::stoll(r.at("Sequence Length"));
    const double per_token = iteration_flops(m, 1, seq, Recompute::none).model / static_cast<double>(seq);
    const double tflops = std::stod(r.at("Tokens / sec / GPU")) * per_token / 1e12;
    CHECK(tflops == approx(std::stod(r.at("Model TFLOP / sec / GPU"))).epsilon(0.01));
    ++checked;
  }
  CHECK(checked == 7);  // the pre-training table rows of those models
}

TEST_CASE("work: GQA and MoE FLOPs count K/V heads and active experts only") {
  ModelSpec l = builtin_model("llama3-70b");
  LayerFlops f = layer_forward_flops(l, 0, 1, 8192);
  const double T = 8192, h = 8192;
  CHECK(f.qkv == 2 * T * h * (h + 2 * 1024));
  CHECK(f.mlp == 6 * T * h * 28672);
  ModelSpec mix = builtin_model("mixtral-8x7b");
  LayerFlops g = layer_forward_flops(mix, 0, 1, 4096);
  CHECK(g.mlp == 4096.0 * 2 * (6.0 * 4096 * 14336));
  CHECK(g.router == 2.0 * 4096 * 4096 * 8);
  // DeepSeek-V3: first 3 layers dense, the rest 8 routed + 1 shared expert per token.
  ModelSpec ds = builtin_model("deepseek-v3");
  CHECK(layer_forward_flops(ds, 2, 1, 4096).mlp == 4096.0 * 6 * 7168 * 18432);
  CHECK(layer_forward_flops(ds, 3, 1, 4096).mlp == 4096.0 * 9 * 6 * 7168 * 2048);
  // Its MTP depth (layer index 61, an MoE layer like the last) adds the layer, the 2h -> h
  // projection and one more output layer to every pass, as Megatron's FLOP count does.
  const IterationFlops with_mtp = iteration_flops(ds, 1, 4096, Recompute::full);
  ModelSpec no_mtp = ds;
  no_mtp.mtp_layers = 0;
  const IterationFlops without = iteration_flops(no_mtp, 1, 4096, Recompute::full);
  const double mtp_layer = layer_forward_flops(ds, 61, 1, 4096).total() + 2.0 * 4096 * 2 * 7168 * 7168;
  CHECK(with_mtp.forward - without.forward ==
        approx(mtp_layer + logits_forward_flops(ds, 1, 4096)).epsilon(1e-12));
  CHECK(with_mtp.recompute - without.recompute == approx(mtp_layer).epsilon(1e-12));
  // 6*N*T rule: training FLOPs/token ~ 6 * active params + attention (within a few % for short seqs).
  const double active = static_cast<double>(count_params(mix).active - count_params(mix).embedding);
  const double per_token = iteration_flops(mix, 1, 4096, Recompute::none).model / 4096;
  const double attention = 3 * 4.0 * 4096 * 4096 * 32;  // 3 passes x 4*s*(a*d) per layer
  CHECK(per_token == approx(6 * active + attention).epsilon(0.001));
}
