// Uneven pipeline splits (ParallelConfig first/last stage layers, embedding/loss counted as
// layers): the layers of every model chunk against Megatron-Core's own expectations, the tiling
// of the model by the chunks, and the rules validate() enforces.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {

ParallelConfig cfg(const ModelSpec& m, const std::string& text) {
  ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par.json");
  validate(m, p, -1, "par.json");
  return p;
}

ModelSpec with_layers(std::int64_t layers) {
  ModelSpec m = builtin_model("llama3-8b");
  m.layers = layers;
  return m;
}

// The chunks, in virtual-stage order (chunk c of stage s is c*pp + s), cover [0, layers) once.
void check_tiling(const ModelSpec& m, const ParallelConfig& p) {
  std::int64_t next = 0;
  for (int c = 0; c < p.virtual_stages; ++c) {
    for (int s = 0; s < p.pp; ++s) {
      const LayerRange r = stage_layers(m, p, s, c);
      CHECK(r.first == next);
      CHECK(r.count() == chunk_layer_count(m, p, s, c));
      CHECK(r.count() >= 0);
      next = r.last;
    }
  }
  CHECK(next == m.layers);
}

}  // namespace

TEST_CASE("work: uneven pipeline stages put each chunk's first layer where Megatron-Core does") {
  // Megatron-LM tests/unit_tests/transformer/test_transformer_layer.py,
  // test_get_layer_offset_parametrized: pp 4, vp 2; expected offsets for (stage, chunk).
  struct Case {
    std::int64_t layers;
    const char* split;
    std::int64_t offsets[4][2];
  };
  const Case cases[] = {
      {30,
       R"("num_layers_in_first_pipeline_stage":8,"num_layers_in_last_pipeline_stage":10,)",
       {{0, 15}, {4, 19}, {7, 22}, {10, 25}}},
      {26, R"("num_layers_in_first_pipeline_stage":8,)", {{0, 13}, {4, 17}, {7, 20}, {10, 23}}},
      {26, R"("num_layers_in_last_pipeline_stage":8,)", {{0, 13}, {3, 16}, {6, 19}, {9, 22}}},
      {24, "", {{0, 12}, {3, 15}, {6, 18}, {9, 21}}},
  };
  for (const Case& k : cases) {
    INFO(k.layers, " ", k.split);
    const ModelSpec m = with_layers(k.layers);
    const ParallelConfig p = cfg(m, std::string(R"({"pp":4,"schedule":"interleaved","virtual_stages":2,)") +
                                        k.split + R"("micro_batch":1,"global_batch":4})");
    for (int s = 0; s < 4; ++s) {
      for (int c = 0; c < 2; ++c) CHECK(stage_layers(m, p, s, c).first == k.offsets[s][c]);
    }
    check_tiling(m, p);
  }
}

TEST_CASE("work: counting the embedding and the loss as layers splits Llama 3 405B over PP 8 and 16") {
  // Megatron-Bridge's Llama 3 405B recipes: 126 layers + embedding + loss = 128 over pp 8 vp 2
  // (8 per chunk, 7 in the first and the last chunk) and over pp 16 (8 per stage, 7 at the ends).
  const ModelSpec m = builtin_model("llama3-405b");
  REQUIRE(m.layers == 126);
  const std::string both =
      R"("account_for_embedding_in_pipeline_split":true,"account_for_loss_in_pipeline_split":true,)";
  const ParallelConfig vp = cfg(m, R"({"pp":8,"schedule":"interleaved","virtual_stages":2,)" + both +
                                       R"("micro_batch":1,"global_batch":8})");
  CHECK(chunk_layer_count(m, vp, 0, 0) == 7);
  CHECK(chunk_layer_count(m, vp, 0, 1) == 8);
  CHECK(chunk_layer_count(m, vp, 3, 0) == 8);
  CHECK(chunk_layer_count(m, vp, 7, 0) == 8);
  CHECK(chunk_layer_count(m, vp, 7, 1) == 7);
  CHECK(stage_layers(m, vp, 1, 0).first == 7);   // Megatron: offset 1*8 - 1 (the embedding's slot)
  CHECK(stage_layers(m, vp, 0, 1).first == 63);  // 1 * 128/2 - 1
  check_tiling(m, vp);
  const ParallelConfig pp16 = cfg(m, R"({"pp":16,)" + both + R"("micro_batch":1,"global_batch":16})");
  CHECK(stage_layers(m, pp16, 0, 0).count() == 7);
  CHECK(stage_layers(m, pp16, 5, 0).count() == 8);
  CHECK(stage_layers(m, pp16, 15, 0).count() == 7);
  check_tiling(m, pp16);
  // Only the embedding counted: 127 does not split over 8 stages; over pp 127 it would give the
  // first stage none.
  const ModelSpec m127 = with_layers(127);
  const ParallelConfig emb = cfg(
      m127, R"({"pp":8,"account_for_embedding_in_pipeline_split":true,"micro_batch":1,"global_batch":8})");
  CHECK(stage_layers(m127, emb, 0, 0).count() == 15);
  CHECK(stage_layers(m127, emb, 7, 0).count() == 16);
  check_tiling(m127, emb);
  CHECK_FALSE(uneven_split(cfg(m127, R"({"pp":1,"micro_batch":1,"global_batch":8})")));
  CHECK(uneven_split(emb));
}

TEST_CASE("work: the memory estimate follows the uneven stages") {
  const ModelSpec m = builtin_model("llama3-405b");
  const ParallelConfig p = cfg(m, R"({"tp":8,"pp":16,"account_for_embedding_in_pipeline_split":true,
      "account_for_loss_in_pipeline_split":true,"micro_batch":1,"global_batch":16})");
  const MemoryEstimate est = estimate_memory(m, p);
  REQUIRE(est.stages.size() == 16);
  // A middle stage holds 8 layers, the first 7 plus the embedding: 8 x layer - (layer - embedding).
  const double layer = static_cast<double>(est.stages[1].params_dense) / 8;
  CHECK(static_cast<double>(est.stages[2].params_dense) == doctest::Approx(8 * layer));
  CHECK(est.stages[0].params_dense < est.stages[1].params_dense);
}

TEST_CASE("work: uneven pipeline splits are refused where Megatron refuses them") {
  const ModelSpec m = with_layers(30);
  auto refused = [&](const std::string& split, const char* needle) {
    INFO(split);
    ParallelConfig p = parse_parallel(
        nlohmann::json::parse("{" + split + R"("micro_batch":1,"global_batch":4})"), "par.json");
    CHECK_THROWS_WITH_AS(validate(m, p, -1, "par.json"), doctest::Contains(needle), InputError);
  };
  refused(R"("pp":4,"num_layers_in_first_pipeline_stage":6,"account_for_loss_in_pipeline_split":true,)",
          "$.num_layers_in_first_pipeline_stage: cannot be set together with account_for");
  // At pp 1 Megatron takes one size equal to the layers, or the embedding / loss counted; not both sizes.
  refused(R"("num_layers_in_first_pipeline_stage":6,)",
          "24 layers are left for the 0 middle stages of pp = 1");
  refused(R"("num_layers_in_first_pipeline_stage":10,"num_layers_in_last_pipeline_stage":20,)",
          "$.num_layers_in_last_pipeline_stage: set together with num_layers_in_first_pipeline_stage needs "
          "pp >= 2");
  refused(R"("pp":4,"schedule":"interleaved","virtual_stages":2,"num_layers_in_first_pipeline_stage":5,)",
          "5 is not a multiple of virtual_stages = 2");
  refused(R"("pp":4,"num_layers_in_first_pipeline_stage":7,)",
          "the 23 layers left are not a multiple of middle stages x virtual_stages = 3 x 1");
  refused(R"("pp":2,"num_layers_in_first_pipeline_stage":10,"num_layers_in_last_pipeline_stage":10,)",
          "10 layers are left for the 0 middle stages of pp = 2");
  refused(R"("pp":4,"num_layers_in_first_pipeline_stage":20,"num_layers_in_last_pipeline_stage":20,)",
          "the first and last stages take 40 layers but");
  refused(R"("pp":4,"account_for_embedding_in_pipeline_split":true,)",
          "pp*virtual_stages = 4*1 = 4 does not divide the 31 layers of llama3-8b (with the embedding / loss "
          "counted");
  refused(R"("pp":4,)", "does not divide the 30 layers of llama3-8b (uneven stages:");
  CHECK_THROWS_WITH_AS(
      parse_parallel(
          nlohmann::json::parse(
              R"({"pp":4,"num_layers_in_first_pipeline_stage":0,"micro_batch":1,"global_batch":4})"),
          "par.json"),
      doctest::Contains("$.num_layers_in_first_pipeline_stage"), InputError);
}

TEST_CASE("work: at pp 1 the one stage holds every layer, as Megatron builds it") {
  const ModelSpec m = with_layers(30);
  for (const char* split :
       {R"("num_layers_in_first_pipeline_stage":30,)", R"("num_layers_in_last_pipeline_stage":30,)",
        R"("account_for_embedding_in_pipeline_split":true,"account_for_loss_in_pipeline_split":true,)"}) {
    INFO(split);
    const ParallelConfig p = cfg(m, std::string("{") + split + R"("micro_batch":1,"global_batch":4})");
    CHECK(stage_layers(m, p, 0, 0).count() == 30);
    check_tiling(m, p);
  }
  // null is "not set" (Megatron's None): the even split.
  const ParallelConfig unset =
      cfg(m, R"({"pp":2,"num_layers_in_first_pipeline_stage":null,"micro_batch":1,"global_batch":4})");
  CHECK_FALSE(uneven_split(unset));
  CHECK(stage_layers(m, unset, 1, 0).first == 15);
  CHECK(describe_uneven_split(m, unset).empty());
  const ParallelConfig two =
      cfg(m, R"({"pp":2,"num_layers_in_first_pipeline_stage":14,"micro_batch":1,"global_batch":4})");
  CHECK(describe_uneven_split(m, two) == " stage layers first 14 last 16");
}
