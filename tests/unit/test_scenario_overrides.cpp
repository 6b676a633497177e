// sim/scenario/job + scenario: normalization, overrides and the errors of bad scenario files
// (unknown field, override of a missing field, invalid values), each naming the JSON path.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "sim/scenario/job.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/whatif.hpp"

using namespace commstack;
using nlohmann::json;
namespace sc = sim::scenario;

namespace {

// 16 GPUs: two DGX H100, a 1.7B model, TP8 DP2.
json small_baseline() {
  return json::parse(R"({
    "cluster": "dgx-h100", "nodes": 2, "model": "megatron-1.7b",
    "parallel": {"tp": 8, "dp": 2, "micro_batch": 1, "global_batch": 16}
  })");
}

json scenario_with(const json& overrides) {
  return {{"name", "t"},
          {"baseline", small_baseline()},
          {"variants", json::array({{{"name", "v"}, {"overrides", overrides}}})}};
}

// Parses and checks (prepare_runs) a scenario; returns the error message ("" when valid).
std::string error_of(const json& doc) {
  try {
    (void)sc::prepare_runs(sc::parse_scenario(doc, "s.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The error of `doc` (empty when valid) contains `expected`; the message is printed on failure.
#define CHECK_ERROR(doc, expected)                                              \
  do {                                                                          \
    const std::string got_ = error_of(doc);                                     \
    CHECK_MESSAGE(got_.find(expected) != std::string::npos, "error: " << got_); \
  } while (0)

TEST_CASE("scenario: a normalized job has every field explicit, the cluster and model resolved") {
  const json j = sc::normalize_job(small_baseline(), {"s.json", "$.baseline"});
  CHECK(j.at("cluster").at("name") == "dgx-h100");
  CHECK(j.at("cluster").at("node").at("nics").at("bandwidth") == "400Gbps");
  CHECK(j.at("nodes") == 2);
  CHECK(j.at("model").at("name") == "megatron-1.7b");
  const json& p = j.at("parallel");
  CHECK(p.at("tp") == 8);
  CHECK(p.at("pp") == 1);
  CHECK(p.at("dp") == 2);
  CHECK(p.at("zero") == 0);
  CHECK(p.at("sequence_parallel") == false);
  CHECK(p.at("seq") == 2048);  // the model's
  CHECK(p.at("order") == "tp-cp-dp-pp");
  CHECK(j.at("compute_profile") == "auto");
  CHECK(j.at("comm") == json({{"channels", "auto"}, {"fidelity", "auto"}}));
  // Normalizing twice changes nothing, and an empty override is the identity.
  CHECK(sc::normalize_job(j, {"s.json", "$"}) == j);
  CHECK(sc::apply_overrides(j, json::object(), {"s.json", "$.variants[0].overrides"}) == j);
}

TEST_CASE("scenario: overrides merge objects key by key and replace values and names") {
  const json base = sc::normalize_job(small_baseline(), {"s.json", "$.baseline"});
  const json v = sc::apply_overrides(
      base,
      json::parse(
          R"({"cluster": {"node": {"nics": {"bandwidth": "800Gbps"}}}, "parallel": {"tp": 4, "dp": 4}})"),
      {"s.json", "$.variants[0].overrides"});
  CHECK(v.at("cluster").at("node").at("nics").at("bandwidth") == "800Gbps");
  CHECK(v.at("cluster").at("node").at("nics").at("latency") ==
        base.at("cluster").at("node").at("nics").at("latency"));
  CHECK(v.at("cluster").at("fabric") == base.at("cluster").at("fabric"));
  CHECK(v.at("parallel").at("tp") == 4);
  CHECK(v.at("parallel").at("global_batch") == 16);
  // A name replaces the whole section, resolved again.
  const json a100 = sc::apply_overrides(base, json::parse(R"({"cluster": "dgx-a100"})"), {"s.json", "$.o"});
  CHECK(a100.at("cluster").at("name") == "dgx-a100");
  CHECK(a100.at("nodes") == 2);
}

TEST_CASE("scenario: overriding a field the baseline does not have names the JSON path") {
  CHECK_ERROR(
      scenario_with(json::parse(R"({"cluster": {"fabric": {"nic_gbps": 800}}})")),
      "s.json: $.variants[0].overrides.cluster.fabric.nic_gbps: no such field in the baseline cluster");
  CHECK_ERROR(
      scenario_with(json::parse(R"({"parallel": {"tensor_parallel": 4}})")),
      "s.json: $.variants[0].overrides.parallel.tensor_parallel: no such field in the baseline parallel");
  CHECK_ERROR(scenario_with(json::parse(R"({"gpus": 16})")),
              "s.json: $.variants[0].overrides.gpus: unknown field");
  CHECK_ERROR(scenario_with(json::parse(R"({"comm": {"algo": "ring"}})")),
              "s.json: $.variants[0].overrides.comm.algo: this NCCL knob is not modelled in training yet");
}

TEST_CASE("scenario: unknown fields of the scenario, the baseline and a variant are errors with their path") {
  json doc = scenario_with(json::object());
  doc["variantz"] = json::array();
  CHECK_ERROR(doc, "s.json: $.variantz: unknown field");
  doc = scenario_with(json::object());
  doc["baseline"]["parallel"]["tpp"] = 2;
  CHECK_ERROR(doc, "s.json: $.baseline.parallel: $.tpp");
  doc = scenario_with(json::object());
  doc["variants"][0]["overide"] = json::object();
  CHECK_ERROR(doc, "s.json: $.variants[0].overide: unknown field");
  doc = scenario_with(json::object());
  doc["variants"].push_back({{"name", "v"}, {"overrides", json::object()}});
  CHECK_ERROR(doc, "s.json: $.variants[1].name: 'v' is already used");
}

TEST_CASE("scenario: invalid values after the overrides are refused with the variant's path") {
  // Negative NIC bandwidth: the cluster parser's message, placed at the variant.
  CHECK_ERROR(scenario_with(json::parse(R"({"cluster": {"node": {"nics": {"bandwidth": "-400Gbps"}}}})")),
              "s.json: $.variants[0].overrides.cluster: /node/nics/bandwidth");
  // TP 16 does not divide the 24 heads of megatron-1.7b.
  CHECK_ERROR(
      scenario_with(json::parse(R"({"parallel": {"tp": 16, "dp": 1}})")),
      "$.variants[0] ('v', baseline + overrides).parallel (on 16 GPUs of dgx-h100 x 2 nodes): $.tp: 16 "
      "does not divide the 24 attention heads");
  // 3 nodes = 24 GPUs, but TP8 x DP2 = 16.
  CHECK_ERROR(scenario_with(json::parse(R"({"nodes": 3})")), "= 16 but the cluster has 24 GPUs");
  CHECK_ERROR(scenario_with(json::parse(R"({"nodes": -1})")),
              "s.json: $.variants[0].overrides.nodes: expected a node count");
  CHECK_ERROR(scenario_with(json::parse(R"({"comm": {"channels": 0}})")),
              "s.json: $.variants[0].overrides.comm.channels: expected \"auto\" or an integer 1..64, got 0");
  CHECK_ERROR(scenario_with(json::parse(R"({"cluster": "no-such-preset"})")),
              "s.json: $.variants[0].overrides.cluster: 'no-such-preset' is neither a preset");
  CHECK_ERROR(scenario_with(json::parse(R"({"parallel": {"tp": null}})")),
              "s.json: $.variants[0].overrides.parallel.tp: null is not a value");
}

TEST_CASE("scenario: the built-in default scenario parses, and every run is valid") {
  const auto names = sc::builtin_scenario_names();
  REQUIRE(std::find(names.begin(), names.end(), sc::default_scenario_name()) != names.end());
  const sc::Scenario s = sc::load_scenario(sc::default_scenario_name());
  REQUIRE(s.runs.size() >= 5);
  CHECK(s.runs[0].name == "baseline");
  const auto prepared = sc::prepare_runs(s);
  for (const auto& p : prepared) CHECK(p.topology.gpu_count() == 1024);
}

TEST_CASE("scenario: a variant's cluster.nodes sets the job's node count, and must agree with its nodes") {
  // Overriding cluster.nodes used to be accepted and ignored: the job's own 'nodes' (2) won.
  const sc::Scenario s = sc::parse_scenario(scenario_with({{"cluster", {{"nodes", 4}}}}), "s.json");
  CHECK(s.runs.back().job.at("nodes") == 4);
  CHECK(s.runs.back().job.at("cluster").at("nodes") == 4);
  // With TP8 DP2 fixed, 4 nodes (32 GPUs) no longer fit the parallelism: said, not simulated on 2.
  CHECK_ERROR(scenario_with({{"cluster", {{"nodes", 4}}}}),
              "tp*pp*dp*cp = 8*1*2*1 = 16 but the cluster has 32 GPUs");
  CHECK_ERROR(scenario_with({{"cluster", {{"nodes", 4}}}, {"nodes", 3}}),
              "$.variants[0].overrides.cluster.nodes: 4 disagrees with the variant's 'nodes' 3");
  CHECK(error_of(scenario_with({{"cluster", {{"nodes", 4}}}, {"nodes", 4}, {"parallel", {{"dp", 4}}}}))
            .empty());
}

TEST_CASE("scenario: names and descriptions with control characters are refused with their path") {
  // They are printed in tables, CSV rows, the tab-separated .dat and the gnuplot labels of --plot.
  const std::pair<std::string, std::string> cases[] = {
      {std::string("a\tb"), "a tab at byte 1"},   {std::string("a\nb"), "a newline at byte 1"},
      {std::string("ab\0c", 4), "NUL at byte 2"}, {std::string("\x1b[31mred"), "ESC at byte 0"},
      {std::string("del\x7f"), "DEL at byte 3"},  {std::string("bell\x07"), "U+0007 at byte 4"}};
  for (const auto& [text, what] : cases) {
    json doc = scenario_with(json::object());
    doc["variants"][0]["name"] = text;
    CHECK_ERROR(doc, "s.json: $.variants[0].name: " + what + "; expected text without control characters");
    doc = scenario_with(json::object());
    doc["variants"][0]["description"] = text;
    CHECK_ERROR(doc, "s.json: $.variants[0].description: " + what);
    doc = scenario_with(json::object());
    doc["name"] = text;
    CHECK_ERROR(doc, "s.json: $.name: " + what);
    doc = scenario_with(json::object());
    doc["description"] = text;
    CHECK_ERROR(doc, "s.json: $.description: " + what);
  }
  // Quotes, commas, '#' and non-ASCII text are fine: CSV quotes them, the plot labels escape them.
  json doc = scenario_with(json::object());
  doc["variants"][0]["name"] = "it's \"quoted\", # x_1 \xc3\xa9";
  CHECK(error_of(doc).empty());
}

TEST_CASE("scenario: the baseline's schedule is null unless written, so that a variant's layout sets it") {
  // 16 GPUs, TP2 PP4 DP2; a layout of 8 stages gives 2 model chunks per pipeline rank: interleaved.
  json doc = scenario_with(json::parse(
      R"({"parallel": {"pipeline_model_parallel_layout": "Et*3|t*3|t*3|t*3|t*3|t*3|t*3|t*3L"}})"));
  doc["baseline"]["parallel"] =
      json::parse(R"({"tp": 2, "pp": 4, "dp": 2, "micro_batch": 1, "global_batch": 16})");
  CHECK(sc::parse_scenario(doc, "s.json").runs.front().job.at("parallel").at("schedule").is_null());
  CHECK(error_of(doc).empty());
  // A written 1f1b contradicts the layout, in the baseline or in the variant; null unsets it again.
  json written = doc;
  written["baseline"]["parallel"]["schedule"] = "1f1b";
  CHECK_ERROR(written,
              "$.variants[0] ('v', baseline + overrides).parallel (on 16 GPUs of dgx-h100 x 2 nodes): "
              "$.schedule: \"1f1b\", but pipeline_model_parallel_layout's 8 stages over pp = 4 give 2 model "
              "chunks per pipeline rank, which need \"schedule\": \"interleaved\"");
  written["variants"][0]["overrides"]["parallel"]["schedule"] = nullptr;
  CHECK(error_of(written).empty());
  written["variants"][0]["overrides"]["parallel"]["schedule"] = "interleaved";
  CHECK(error_of(written).empty());
}
