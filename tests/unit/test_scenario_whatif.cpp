// commstack whatif on small jobs: a variant identical to the baseline has a speedup of exactly 1,
// slowing a link never speeds the run up, and the report does not depend on the number of
// parallel processes.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <algorithm>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/whatif.hpp"
#include "sim/scenario/whatif_report.hpp"

using namespace commstack;
using nlohmann::json;
namespace sc = sim::scenario;

namespace {

// 32 GPUs: four DGX H100 in scalable units of 2 nodes (so DP traffic crosses the spine), a 1.7B
// model at TP8 DP4 (24 layers, 24 heads).
json baseline() {
  return json::parse(R"({
    "cluster": "dgx-h100", "nodes": 4, "model": "megatron-1.7b",
    "parallel": {"tp": 8, "dp": 4, "micro_batch": 2, "global_batch": 32},
    "comm": {"channels": "auto", "fidelity": "step"}
  })");
}

sc::WhatifResult run(const json& variants, int jobs = 2) {
  json doc = {{"name", "t"}, {"baseline", baseline()}, {"variants", variants}};
  doc["baseline"]["cluster"] = json::parse(sc::normalize_job(baseline(), {"t", "$"}).at("cluster").dump());
  doc["baseline"]["cluster"]["fabric"]["nodes_per_unit"] = 2;
  return sc::run_whatif(sc::parse_scenario(doc, "t.json"), jobs);
}

json variant(const std::string& name, const std::string& overrides) {
  return {{"name", name}, {"overrides", json::parse(overrides)}};
}

}  // namespace

TEST_CASE("whatif: a variant identical to the baseline has a speedup of exactly 1") {
  const auto w = run(json::array(
      {variant("same", "{}"), variant("same, written out", R"({"parallel": {"tp": 8}, "nodes": 4})")}));
  REQUIRE(w.rows.size() == 3);
  for (const auto& r : w.rows) {
    CHECK(r.speedup == 1.0);
    CHECK(r.iteration_s == w.rows[0].iteration_s);
    CHECK(r.moved.empty());
    for (double d : r.delta_s) CHECK(d == 0.0);
  }
  CHECK(sc::whatif_text(w).find("same, written out") != std::string::npos);
}

TEST_CASE("whatif: slower NICs or more oversubscription never speed the run up") {
  const auto w = run(json::array({
      variant("nic 200G", R"({"cluster": {"node": {"nics": {"bandwidth": "200Gbps"}}}})"),
      variant("nic 100G", R"({"cluster": {"node": {"nics": {"bandwidth": "100Gbps"}}}})"),
      variant("nic 50G", R"({"cluster": {"node": {"nics": {"bandwidth": "50Gbps"}}}})"),
      variant("oversub 2", R"({"cluster": {"fabric": {"oversubscription": [2, 1]}}})"),
      variant("oversub 4", R"({"cluster": {"fabric": {"oversubscription": [4, 1]}}})"),
      variant("spine 100G", R"({"cluster": {"fabric": {"link_bandwidth": "100Gbps"}}})"),
  }));
  REQUIRE(w.rows.size() == 7);
  const auto& base = w.rows[0];
  // NIC speed: a chain of ever slower runs, and the DP all-reduce is what moved.
  CHECK(w.rows[1].iteration_s >= base.iteration_s);
  CHECK(w.rows[2].iteration_s >= w.rows[1].iteration_s);
  CHECK(w.rows[3].iteration_s >= w.rows[2].iteration_s);
  CHECK(w.rows[3].iteration_s > base.iteration_s);  // 8x slower NICs must show
  CHECK(w.rows[3].moved == "dp");
  CHECK(w.rows[3].moved_s > 0);
  // Oversubscription: 1 <= 2 <= 4.
  CHECK(w.rows[4].iteration_s >= base.iteration_s);
  CHECK(w.rows[5].iteration_s >= w.rows[4].iteration_s);
  CHECK(w.rows[6].iteration_s >= base.iteration_s);
  for (const auto& r : w.rows) {
    CHECK(r.speedup <= 1.0);
    CHECK(r.speedup == approx(base.iteration_s / r.iteration_s).epsilon(1e-15));
    // Compute does not depend on the network.
    CHECK(r.breakdown_s[0] == base.breakdown_s[0]);
  }
}

TEST_CASE("whatif: the report is byte-identical with 1 or 3 parallel processes, and run to run") {
  const json variants =
      json::array({variant("nic 100G", R"({"cluster": {"node": {"nics": {"bandwidth": "100Gbps"}}}})"),
                   variant("tp4 dp8", R"({"parallel": {"tp": 4, "dp": 8}})")});
  const auto a = run(variants, 1);
  const auto b = run(variants, 3);
  const auto c = run(variants, 3);
  CHECK(sc::whatif_json(a).dump() == sc::whatif_json(b).dump());
  CHECK(sc::whatif_json(b).dump() == sc::whatif_json(c).dump());
  CHECK(sc::whatif_text(a) == sc::whatif_text(b));
  CHECK(sc::whatif_csv(a) == sc::whatif_csv(c));
  // The CSV has a header and one line per run.
  const std::string csv = sc::whatif_csv(a);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  CHECK(csv.rfind("variant,iteration_s,speedup,mfu,tokens_per_s,compute_s", 0) == 0);
}

// A variant with twice the global batch does twice the work per iteration: its iteration time is
// longer, yet each token costs no more. The speedup compares time per token (the ratio of tokens/s)
// and says so; a variant with the baseline's tokens keeps the per-iteration ratio.
TEST_CASE("whatif: a variant with another global batch is compared per token, not per iteration") {
  const auto w =
      run(json::array({variant("batch x2", R"({"parallel": {"global_batch": 64}})"),
                       variant("nic 100G", R"({"cluster": {"node": {"nics": {"bandwidth": "100Gbps"}}}})")}));
  REQUIRE(w.rows.size() == 3);
  const auto& base = w.rows[0];
  const auto& batch = w.rows[1];
  CHECK(batch.iteration_s > base.iteration_s);
  CHECK(batch.per_token);
  CHECK(batch.speedup == approx(batch.tokens_per_s / base.tokens_per_s)
                             .epsilon(1e-7));  // the reports keep 9 decimals of seconds
  CHECK(batch.speedup >=
        1.0);  // more micro-batches amortise the pipeline and DP tail: never slower per token
  CHECK_FALSE(w.rows[2].per_token);
  CHECK(w.rows[2].speedup == base.iteration_s / w.rows[2].iteration_s);
  const std::string text = sc::whatif_text(w);
  CHECK(text.find("* per token (the ratio of tokens/s)") != std::string::npos);
  const auto j = sc::whatif_json(w);
  CHECK(j["runs"][1]["speedup_per"] == "token");
  CHECK(j["runs"][2]["speedup_per"] == "iteration");
}
