// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout): the string expanded as
// Megatron's parse_str_to_list does, the layers of every model chunk against its
// get_layer_offset / get_num_layers_to_build, and the refusals.
#include <random>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel/parallel.hpp"
#include "workloads/parallel/pipeline_layout.hpp"

using namespace commstack;
using namespace commstack::workloads;

namespace {

std::vector<std::int64_t> layers_of(const std::string& text) {
  return parse_pipeline_layout(text, "x").layers_per_stage;
}

ParallelConfig cfg(const ModelSpec& m, const std::string& text) {
  ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par.json");
  validate(m, p, -1, "par.json");
  return p;
}

}  // namespace

TEST_CASE("work: a pipeline layout string expands as Megatron's parse_str_to_list") {
  // Repeats of one character and of a group, commas ignored, empty stages kept.
  CHECK(layers_of("Et*3|t*2|tL") == std::vector<std::int64_t>{3, 2, 1});
  CHECK(layers_of("Ettt|(tt|)*3,t|L") == std::vector<std::int64_t>{3, 2, 2, 2, 1, 0});
  CHECK(layers_of("E|(|t)*2|L") == std::vector<std::int64_t>{0, 0, 1, 1, 0});  // "(|t)*2" -> "|t|t"
  CHECK(layers_of("E,t,t,|,t*10,L") == std::vector<std::int64_t>{2, 10});
  CHECK(layers_of("Et|*2tL") == std::vector<std::int64_t>{1, 0, 1});  // '|' repeated like any character
}

TEST_CASE("work: a custom layout gives each chunk Megatron's layers (DeepSeek-V3 over PP 16, 2 chunks)") {
  // Megatron-Bridge's DeepSeek-V3 layout is "Et*3|(tt|)*29,m|L", its MTP layer on a stage of its own;
  // commstack keeps the MTP layer in the loss stage, so the same shape with its 61 layers: 2 in the
  // first virtual stage, 2 in the next 29, 1, and the MTP layer with the loss.
  const ModelSpec m = builtin_model("deepseek-v3");
  ParallelConfig p = cfg(m, R"({"pp":16,"dp":16,"ep":16,"pipeline_model_parallel_layout":"Et*2|(tt|)*29,t|mL",
                                "micro_batch":1,"global_batch":256})");
  CHECK(p.virtual_stages == 2);  // 32 stages over pp 16, as Megatron derives it
  CHECK(p.schedule == PipelineSchedule::interleaved);
  CHECK(uneven_split(p));
  // get_layer_offset: virtual stage v = chunk*pp + stage starts after the layers of all before it.
  CHECK(stage_layers(m, p, 0, 0).first == 0);
  CHECK(stage_layers(m, p, 0, 0).count() == 2);
  CHECK(stage_layers(m, p, 15, 0).first == 30);  // v 15: 2 + 14 x 2
  CHECK(stage_layers(m, p, 0, 1).first == 32);   // v 16
  CHECK(stage_layers(m, p, 14, 1).first == 60);  // v 30: the lone 't'
  CHECK(stage_layers(m, p, 14, 1).count() == 1);
  CHECK(stage_layers(m, p, 15, 1).count() == 0);  // v 31: the MTP layer and the loss
  CHECK(p.layout->mtp_layers == 1);
  CHECK(mtp_stage_layers(m, p, 15, 1).first == 61);  // MTP depth 0 is layer index 61
  CHECK(mtp_stage_layers(m, p, 15, 1).count() == 1);
  CHECK(mtp_stage_layers(m, p, 15, 0).count() == 0);
  CHECK(mtp_stage_layers(m, p, 14, 1).count() == 0);
  std::int64_t next = 0;
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < 16; ++s) {
      CHECK(stage_layers(m, p, s, c).first == next);
      next = stage_layers(m, p, s, c).last;
    }
  }
  CHECK(next == 61);
  CHECK(describe_uneven_split(m, p) == " pipeline layout Et*2|(tt|)*29,t|mL");
  // The even split written as a layout is the even split.
  ParallelConfig even =
      cfg(m, R"({"pp":1,"pipeline_model_parallel_layout":"Et*61mL","micro_batch":1,"global_batch":1})");
  CHECK(stage_layers(m, even, 0, 0).count() == 61);
  CHECK(even.virtual_stages == 1);
  // A layout that spells num_layers_in_first/last_pipeline_stage 4 gives the same chunks.
  const ModelSpec small = builtin_model("megatron-1.7b");  // 24 layers
  ParallelConfig spelled =
      cfg(small, R"({"pp":4,"pipeline_model_parallel_layout":"Et*4|(t*8|)*2t*4L","micro_batch":1,
                                         "global_batch":1})");
  ParallelConfig sizes = cfg(small, R"({"pp":4,"num_layers_in_first_pipeline_stage":4,
                                       "num_layers_in_last_pipeline_stage":4,"micro_batch":1,"global_batch":1})");
  for (int s = 0; s < 4; ++s) {
    CHECK(stage_layers(small, spelled, s, 0).first == stage_layers(small, sizes, s, 0).first);
    CHECK(stage_layers(small, spelled, s, 0).last == stage_layers(small, sizes, s, 0).last);
  }
}

TEST_CASE("work: pipeline layouts are refused where Megatron refuses them, with the reason") {
  auto bad_string = [](const char* text, const char* needle) {
    CHECK_THROWS_WITH_AS(parse_pipeline_layout(text, "--pipeline-model-parallel-layout"),
                         doctest::Contains(needle), InputError);
  };
  bad_string("Et*3|x|L", "'x' in stage 1 is not a layer character");
  bad_string("t*3|EL", "the embedding 'E' must appear once, as the first layer of the first stage");
  bad_string("Et*3|L|tL", "the loss 'L' must appear once, as the last layer of the last stage");
  bad_string("Et*3|m|L", "every 'm' (MTP layer) must be in the last stage, before its 'L'");
  bad_string("Et*3|mtL", "a transformer layer 't' follows an MTP layer 'm'");
  CHECK(parse_pipeline_layout("Et*3|t*2m*2L", "x").mtp_layers == 2);
  bad_string("E((t)*2)*2|L", "nested parentheses");
  bad_string("Et*99999999999|L", "repeat count at '99999999999|L' is too large");
  bad_string("E(t*9|)*900000L", "expands to more than 1000000 characters");
  bad_string("E(tt|L", "'(' in stage 0 is not a layer character");
  bad_string("Et\xcf\x84|L", "a non-ASCII character in stage 0 is not a layer character");
  bad_string("", "is empty");

  const ModelSpec m = builtin_model("megatron-1.7b");  // 24 layers
  auto bad = [&](const char* text, const char* needle) {
    ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par.json");
    CHECK_THROWS_WITH_AS(validate(m, p, -1, "par.json"), doctest::Contains(needle), InputError);
  };
  bad(R"({"pp":4,"pipeline_model_parallel_layout":"Et*5|t*7|t*7|t*4L","micro_batch":1,"global_batch":1})",
      "$.pipeline_model_parallel_layout: holds 23 transformer layers 't' but megatron-1.7b has 24");
  bad(R"({"pp":4,"pipeline_model_parallel_layout":"Et*8|t*8|t*8L","micro_batch":1,"global_batch":1})",
      "has 3 stages, not a multiple of pp = 4");
  bad(R"({"pp":2,"virtual_stages":3,"schedule":"interleaved","pipeline_model_parallel_layout":"Et*6|t*6|t*6|t*6L",
          "micro_batch":1,"global_batch":2})",
      "has 4 stages = pp 2 x 2 model chunks but virtual_stages is 3");
  bad(R"({"pp":2,"account_for_loss_in_pipeline_split":true,"pipeline_model_parallel_layout":"Et*12|t*12L",
          "micro_batch":1,"global_batch":1})",
      "cannot be set together with num_layers_in_first/last_pipeline_stage or account_for");
  // The op graph's message tags number up to 1000 model chunks in a pipeline.
  bad(R"({"pp":2,"pipeline_model_parallel_layout":"E(|)*1000t*12|t*12L","micro_batch":1,"global_batch":2})",
      "$.pipeline_model_parallel_layout: pp x virtual_stages = 2 x 501 = 1002 model chunks in a pipeline; "
      "expected "
      "at most 1000");
  // The layout sets the schedule: a 2-chunk layout with "interleaved" (and virtual_stages left at 1).
  ParallelConfig inter = parse_parallel(
      nlohmann::json::parse(
          R"({"pp":2,"schedule":"interleaved","pipeline_model_parallel_layout":"Et*6|t*6|t*6|t*6L","micro_batch":1,"global_batch":2})"),
      "par.json");
  CHECK_NOTHROW(validate(m, inter, -1, "par.json"));
  CHECK(inter.virtual_stages == 2);
  // A schedule written next to the layout must be the one it gives (as virtual_stages > 1 needs
  // "interleaved"); left out or null, the layout sets it.
  bad(R"({"pp":2,"schedule":"1f1b","pipeline_model_parallel_layout":"Et*6|t*6|t*6|t*6L","micro_batch":1,
          "global_batch":2})",
      "par.json: $.schedule: \"1f1b\", but pipeline_model_parallel_layout's 4 stages over pp = 2 give 2 model "
      "chunks per pipeline rank, which need \"schedule\": \"interleaved\" (or leave schedule out or null: the "
      "layout sets it)");
  bad(R"({"pp":2,"schedule":"interleaved","pipeline_model_parallel_layout":"Et*12|t*12L","micro_batch":1,
          "global_batch":2})",
      "par.json: $.schedule: \"interleaved\", but pipeline_model_parallel_layout's 2 stages over pp = 2 give 1 "
      "model chunk per pipeline rank, which needs \"schedule\": \"1f1b\"");
  for (const char* schedule : {"", R"("schedule":null,)"}) {
    ParallelConfig unset = parse_parallel(
        nlohmann::json::parse(std::string("{") + schedule +
                              R"("pp":2,"pipeline_model_parallel_layout":"Et*6|t*6|t*6|t*6L","micro_batch":1,
                                 "global_batch":2})"),
        "par.json");
    CHECK_FALSE(unset.schedule_given);
    CHECK_NOTHROW(validate(m, unset, -1, "par.json"));
    CHECK(unset.schedule == PipelineSchedule::interleaved);
  }
  // One pipeline rank with several stages would be an interleaved schedule without a pipeline.
  bad(R"({"pp":1,"pipeline_model_parallel_layout":"Et*12|t*12L","micro_batch":1,"global_batch":1})",
      "the interleaved schedule needs pp >= 2");
  CHECK_THROWS_WITH_AS(
      parse_parallel(nlohmann::json::parse(R"({"pipeline_model_parallel_layout":3,"micro_batch":1,
                                                                "global_batch":1})"),
                     "par.json"),
      doctest::Contains("$.pipeline_model_parallel_layout"), InputError);
}

TEST_CASE("work: random pipeline layout strings parse or give an InputError, never anything else") {
  // Deterministic: a fixed-seed generator over the layout alphabet and a few strangers.
  const std::string alphabet = "EtLm|()*,0123456789x *(";
  std::mt19937 gen(12345);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1), len(0, 40);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    for (std::size_t n = len(gen); n > 0; --n) text += alphabet[pick(gen)];
    try {
      const PipelineLayout l = parse_pipeline_layout("E" + text + "L", "fuzz");
      CHECK(!l.layers_per_stage.empty());
      ++parsed;
    } catch (const InputError&) {
    }
  }
  CHECK(parsed > 0);
}
