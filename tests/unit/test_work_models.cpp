#include <doctest/doctest.h>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "common/error.hpp"
#include "test_work_csv.hpp"
#include "workloads/model.hpp"

using namespace commstack;
using namespace commstack::workloads;

TEST_CASE("work: every built-in model parses and names its source") {
  const auto names = builtin_model_names();
  CHECK(names.size() ==
        23);  // 10 Megatron Table 1 + GPT-3 + 4 Korthikanti + 3 Llama 2 + 3 Llama 3 + Mixtral + DeepSeek-V3
  for (const auto& n : names) {
    ModelSpec m = builtin_model(n);
    CHECK(m.name == n);
    CHECK(m.source.size() > 20);
    CHECK(m.heads % m.kv_heads == 0);
  }
}

TEST_CASE("work: Megatron SC'21 Table 1 models match the published shapes and parameter counts") {
  auto rows = work_test::read_table(work_test::data_dir() + "training_megatron-sc21_weak-scaling_table1.csv");
  REQUIRE(rows.size() == 10);
  for (const auto& r : rows) {
    std::string billions = r.at("params_billion");
    if (billions == "1008.0") billions = "1008";
    ModelSpec m = builtin_model("megatron-" + billions + "b");
    CHECK(m.heads == std::stoll(r.at("attention_heads")));
    CHECK(m.hidden == std::stoll(r.at("hidden_size")));
    CHECK(m.layers == std::stoll(r.at("layers")));
    CHECK(m.seq == 2048);
    CHECK(m.vocab == 51200);
    // Narayanan et al.: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)); ours adds the final LayerNorm (2h).
    const double l = m.layers, h = m.hidden;
    const double P = 12 * l * h * h * (1 + 13 / (12 * h) + (51200.0 + 2048.0) / (12 * l * h));
    const ParamCount pc = count_params(m);
    CHECK(static_cast<double>(pc.total) == approx(P + 2 * h).epsilon(1e-15));
    // The table's column is that count in billions, rounded to 0.1.
    CHECK(std::round(static_cast<double>(pc.total) / 1e8) / 10 == approx(std::stod(r.at("params_billion"))));
  }
}

TEST_CASE("work: Llama, Mixtral and GPT-3 parameter counts equal the released checkpoints") {
  // Exact counts of the Hugging Face checkpoints (sum of tensor sizes).
  CHECK(count_params(builtin_model("llama2-7b")).total == 6'738'415'616LL);
  CHECK(count_params(builtin_model("llama2-13b")).total == 13'015'864'320LL);
  CHECK(count_params(builtin_model("llama2-70b")).total == 68'976'648'192LL);
  CHECK(count_params(builtin_model("llama3-8b")).total == 8'030'261'248LL);
  CHECK(count_params(builtin_model("llama3-70b")).total == 70'553'706'496LL);
  CHECK(count_params(builtin_model("llama3-405b")).total == 405'853'388'800LL);
  CHECK(count_params(builtin_model("mixtral-8x7b")).total == 46'702'792'704LL);
  // Mixtral: 12.9B active parameters per token (Jiang et al.).
  CHECK(static_cast<double>(count_params(builtin_model("mixtral-8x7b")).active) ==
        approx(12.88e9).epsilon(0.01));
  // GPT-3 "175B": 174.6B with the 50257-token vocabulary.
  CHECK(static_cast<double>(count_params(builtin_model("gpt3-175b")).total) ==
        approx(174.6e9).epsilon(0.002));
  // DeepSeek-V3 with MLA approximated by MHA: documented ~688B total, 37B-class active.
  ModelSpec dsm = builtin_model("deepseek-v3");
  const ParamCount ds = count_params(dsm);
  // With MLA approximated as MHA: ~688B for the decoder, plus one MTP depth (an MoE layer, three
  // RMSNorms and the 2h x h projection: 7168 x 2 x 7168) of ~12.2B.
  CHECK(dsm.mtp_layers == 1);
  CHECK(ds.mtp_per_layer == ds.attention_per_layer + ds.moe_mlp_per_layer + 3 * 7168 + 2 * 7168 * 7168);
  dsm.mtp_layers = 0;
  const ParamCount decoder_only = count_params(dsm);
  CHECK(static_cast<double>(decoder_only.total) == approx(688e9).epsilon(0.01));
  CHECK(ds.total == decoder_only.total + ds.mtp_per_layer);
  CHECK(static_cast<double>(ds.total) == approx(700e9).epsilon(0.01));
  CHECK(static_cast<double>(ds.active) == approx(55e9).epsilon(0.05));
}

TEST_CASE("work: the vocabulary is padded like Megatron's --make-vocab-size-divisible-by 128, always") {
  CHECK(megatron_padded_vocab(50257, 8) == 51200);    // GPT-3 at TP 8
  CHECK(megatron_padded_vocab(50257, 1) == 50304);    // and at TP 1: 393 x 128
  CHECK(megatron_padded_vocab(128256, 8) == 129024);  // Llama 3 at TP 8, though 8 divides 128256
  CHECK(megatron_padded_vocab(128256, 2) == 128256);  // already 501 x 256
  CHECK(megatron_padded_vocab(51200, 8) == 51200);
}

TEST_CASE("work: model parser rejects unknown fields and bad values with file and JSON path") {
  nlohmann::json j = nlohmann::json::parse(R"({"name":"x","source":"test","layers":2,"hidden":64,"heads":4,
    "ffn_hidden":256,"vocab":100,"seq":16,"mlp":"gelu","norm":"layernorm","position":"learned","bias":true,
    "tied_embeddings":true,"dropout":true})");
  CHECK(parse_model(j, "m.json").head_dim == 16);
  CHECK(parse_model(j, "m.json").kv_heads == 4);
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json k = j;
    k[key] = std::move(v);
    return k;
  };
  CHECK_THROWS_WITH_AS(parse_model(with("hiden", 64), "m.json"),
                       doctest::Contains("m.json: $.hiden: unknown field"), InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("layers", -1), "m.json"), doctest::Contains("$.layers"), InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("layers", "2"), "m.json"), doctest::Contains("expected an integer"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("layers", 2.5), "m.json"), doctest::Contains("$.layers"), InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("mlp", "relu"), "m.json"),
                       doctest::Contains("'relu' is not one of: gelu, swiglu"), InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("kv_heads", 3), "m.json"), doctest::Contains("$.kv_heads"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("heads", 5), "m.json"), doctest::Contains("give head_dim"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("bias", 1), "m.json"), doctest::Contains("expected true or false"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("moe", nlohmann::json{{"experts", 4},
                                                              {"top_k", 8},
                                                              {"shared_experts", 0},
                                                              {"ffn_hidden", 32},
                                                              {"first_dense_layers", 0}}),
                                   "m.json"),
                       doctest::Contains("$.moe.top_k"), InputError);
  CHECK_THROWS_WITH_AS(parse_model(with("moe", nlohmann::json{{"experts", 4},
                                                              {"top_k", 2},
                                                              {"shared_experts", 0},
                                                              {"ffn_hidden", 32},
                                                              {"first_dense_layers", 0},
                                                              {"extra", 1}}),
                                   "m.json"),
                       doctest::Contains("$.moe.extra: unknown field"), InputError);
  nlohmann::json missing = j;
  missing.erase("vocab");
  CHECK_THROWS_WITH_AS(parse_model(missing, "m.json"), doctest::Contains("$.vocab: missing required field"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_model(nlohmann::json::array(), "m.json"),
                       doctest::Contains("expected a JSON object"), InputError);
  CHECK_THROWS_WITH_AS(load_model_file("/nonexistent/model.json"),
                       doctest::Contains("/nonexistent/model.json: cannot read the model file: no such file"),
                       InputError);
  CHECK_THROWS_WITH_AS(builtin_model("gpt5"), doctest::Contains("known: deepseek-v3"), InputError);
  CHECK(resolve_model("llama2-7b").layers == 32);
}
