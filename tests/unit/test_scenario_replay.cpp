// Replay jobs in what-if scenarios (sim/scenario/replay_job.hpp): an unchanged variant has a
// speedup of exactly 1, faster NICs never slow the replay down and shorten its re-simulated
// communication, the trace path is taken from the scenario file's folder, and bad replay sections
// are refused with their JSON path.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/report/otf2_writer.hpp"
#include "test_train_helpers.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/whatif.hpp"
#include "sim/scenario/whatif_report.hpp"

using namespace commstack;
using nlohmann::json;
namespace sc = sim::scenario;

namespace {

const std::string samples = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples";

// Rank 0 of the 2-GPU Kineto sample (5 all-reduces with sizes and groups) as replica 0 of 8
// data-parallel replicas: 16 GPUs on 2 DGX A100, so the widened all-reduces cross the fabric.
json baseline() {
  return json::parse(R"({"cluster": "dgx-a100",
                         "replay": {"trace": "kineto-hta-nccl-2gpu", "scale_dp": 8},
                         "comm": {"fidelity": "step"}})");
}

sc::Scenario scenario(const json& variants) {
  const json doc = {{"name", "t"}, {"baseline", baseline()}, {"variants", variants}};
  return sc::parse_scenario(doc, "t.json", samples);
}

json variant(const std::string& name, const std::string& overrides) {
  return {{"name", name}, {"overrides", json::parse(overrides)}};
}

std::string error_of(const json& doc, const std::string& base_dir = samples) {
  try {
    (void)sc::prepare_runs(sc::parse_scenario(doc, "s.json", base_dir));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "whatif replay: the trace path is resolved from the scenario's folder and defaults are written out") {
  const auto s = scenario(json::array({variant("same", "{}")}));
  const json& job = s.runs[0].job;
  CHECK(job.at("replay").at("trace") == samples + "/kineto-hta-nccl-2gpu");
  CHECK(job.at("replay").at("scale_dp") == 8);
  CHECK(job.at("replay").at("iteration") == "last");
  CHECK(job.at("replay").at("traced_gpu") == "auto");
  CHECK(job.at("replay").at("scale_pp") == 1);
  CHECK(job.at("nodes") == "auto");
  CHECK(job.at("compute_profile") == "traced");
  CHECK(!job.contains("model"));
  // Normalizing a normalized job (as apply_overrides does) changes nothing.
  CHECK(sc::normalize_job(job, {"s.json", "$"}) == job);
  const auto prepared = sc::prepare_runs(s);
  REQUIRE(prepared[0].replay);
  CHECK(prepared[0].topology.gpu_count() == 16);  // 2 traced ranks x 8 replicas: 2 nodes of 8
}

TEST_CASE("whatif replay: an identical variant has a speedup of exactly 1") {
  const auto w = sc::run_whatif(
      scenario(
          json::array({variant("same", "{}"),
                       variant("same, written out", R"({"replay": {"scale_dp": 8}, "nodes": "auto"})")})),
      2);
  REQUIRE(w.rows.size() == 3);
  CHECK(w.replay);
  CHECK(w.parts == sc::replay_breakdown_parts());
  for (const auto& r : w.rows) {
    CHECK(r.speedup == 1.0);
    CHECK(r.iteration_s == w.rows[0].iteration_s);
    CHECK(r.moved.empty());
  }
  // The parts add up to the critical rank's iteration (compute + exposed comm + idle).
  const auto& b = w.rows[0];
  CHECK(b.breakdown_s[0] + b.breakdown_s[1] + b.breakdown_s[2] == approx(b.iteration_s).epsilon(1e-9));
  CHECK(b.result.at("traced_s").get<double>() > 0.2);  // ProfilerStep#6: 224.9 ms traced
  const std::string text = sc::whatif_text(w);
  CHECK(text.find("iteration ms") != std::string::npos);
  CHECK(text.find("exposed_comm") != std::string::npos);
  CHECK(sc::whatif_csv(w).rfind("variant,iteration_s,speedup,traced_s,compute_s,exposed_comm_s,idle_s", 0) ==
        0);
}

TEST_CASE("whatif replay: faster NICs never slow the replay down and shorten the re-simulated collectives") {
  const auto w = sc::run_whatif(
      scenario(json::array({
          variant("50G", R"({"cluster": {"node": {"nics": {"bandwidth": "50Gbps"}}}})"),
          variant("100G", R"({"cluster": {"node": {"nics": {"bandwidth": "100Gbps"}}}})"),
          variant("400G",
                  R"({"cluster": {"node": {"nics": {"bandwidth": "400Gbps"}, "pcie_bandwidth": "64GB/s"},
                                          "fabric": {"link_bandwidth": "400Gbps"}}})"),
      })),
      2);
  REQUIRE(w.rows.size() == 4);
  // rows: 200G baseline, 50G, 100G, 400G; from slowest to fastest fabric: 50, 100, 200, 400.
  const std::vector<std::size_t> by_speed = {1, 2, 0, 3};
  auto comm_sum = [&](std::size_t i) {
    return w.rows[i].result.at("replay").at("replayed_breakdown").at("comm_op_sum_s").get<double>();
  };
  for (std::size_t k = 1; k < by_speed.size(); ++k) {
    const auto& slower = w.rows[by_speed[k - 1]];
    const auto& faster = w.rows[by_speed[k]];
    CAPTURE(slower.name);
    CAPTURE(faster.name);
    CHECK(faster.iteration_s <= slower.iteration_s);
    CHECK(comm_sum(by_speed[k]) < comm_sum(by_speed[k - 1]));
  }
}

TEST_CASE("whatif replay: bad replay jobs are refused with the JSON path") {
  auto doc = [](const json& baseline, const json& overrides = json::object()) {
    return json{{"name", "t"},
                {"baseline", baseline},
                {"variants", json::array({{{"name", "v"}, {"overrides", overrides}}})}};
  };
  json b = baseline();
  CHECK(
      error_of(doc(b, json::parse(R"({"replay": {"scale_dp": 0}})"))) ==
      "s.json: $.variants[0].overrides.replay.scale_dp: expected a whole number of replicas 1..65536, got 0");
  b["replay"]["scale_dp"] = "2";
  CHECK(error_of(doc(b)).find("s.json: $.baseline.replay.scale_dp: expected a whole number of replicas") ==
        0);
  b = baseline();
  b["replay"]["scale"] = 2;
  CHECK(error_of(doc(b)).find(
            "s.json: $.baseline.replay.scale: unknown field; expected one of trace, iteration") == 0);
  b = baseline();
  b["replay"]["trace"] = "no-such-trace";
  const std::string missing = error_of(doc(b));
  CHECK(missing.find("s.json: $.baseline.replay.trace: '" + samples + "/no-such-trace' does not exist") == 0);
  CHECK(missing.find("scenario file's folder") != std::string::npos);
  b = baseline();
  b["model"] = "megatron-1.7b";
  CHECK(error_of(doc(b)).find("s.json: $.baseline.model: a replay job has no model or parallelism") == 0);
  b = baseline();
  b["replay"].erase("trace");
  CHECK(error_of(doc(b)).find("s.json: $.baseline.replay: missing required field 'trace'") == 0);
  b = baseline();
  b["nodes"] = 1;  // 16 GPUs needed, 8 on one node
  CHECK(error_of(doc(b)).find(
            "s.json: $.baseline.nodes: 1 nodes of dgx-a100 have 8 GPUs but the replay needs 16") == 0);
  // A training baseline cannot become a replay in a variant, nor a replay get a model.
  CHECK(error_of(doc(baseline(), json::parse(R"({"model": "megatron-1.7b"})")))
            .find("$.variants[0].overrides.model: the baseline is a replay job") != std::string::npos);
  const json training = json::parse(R"({"cluster": "dgx-h100", "nodes": 1, "model": "megatron-1.7b",
                                        "parallel": {"tp": 8, "micro_batch": 1, "global_batch": 8}})");
  CHECK(error_of(doc(training, json::parse(R"({"replay": {"trace": "kineto-hta-nccl-2gpu"}})")))
            .find("$.variants[0].overrides.replay: the baseline is a training job") != std::string::npos);
  // compute_profile "traced" belongs to replays only; on a trace without a device name "auto"
  // cannot find the traced GPU.
  json t2 = training;
  t2["compute_profile"] = "traced";
  CHECK(error_of(doc(t2)).find("$.baseline.compute_profile: 'traced' is neither") != std::string::npos);
  // Pipeline scale-out needs each op's micro-batch and phase, which a Kineto trace does not give.
  b = baseline();
  b["replay"]["scale_pp"] = 2;
  CHECK(error_of(doc(b)).find("s.json: $.baseline.replay.scale_pp: --scale-pp: the kineto trace does not give each op's "
                              "micro-batch and phase") == 0);
  b = baseline();
  b["replay"]["trace"] = "nccl-log-203";
  b["replay"]["scale_dp"] = 1;
  b["compute_profile"] = "auto";
  CHECK(error_of(doc(b)).find("$.baseline.replay.traced_gpu: \"auto\": the trace names no GPU") !=
        std::string::npos);
}

TEST_CASE("whatif replay: a scale_pp 2 variant of a PP2 train --otf2 archive takes the time of PP4 with twice the layers") {
  // Megatron-1.7B TP2 DP2 with `pp` stages and `layers` layers, every rank simulated.
  const auto job = [](int pp, int layers) {
    auto s = train_test::setup("megatron-1.7b", 2, pp, 2, 4 * pp, 1, 8);
    s.model.layers = layers;
    workloads::validate(s.model, s.par, 4 * pp, "test");
    s.fold = false;
    return s;
  };
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("commstack-whatif-scale-pp-{}", getpid());
  REQUIRE(train_test::in_child([&] {
            const auto one = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
            sim::Simulator simulator(one);
            sim::write_otf2(sim::otf2_timeline(sim::train::simulate_training(simulator, job(2, 24)), one, "pp2"),
                            dir.string());
            return std::string("ok");
          }) == "ok");
  const double deep_s = std::stod(train_test::in_child([&] {
    const auto two = topologies::build_topology(topologies::load_cluster("dgx-a100"), 2);
    sim::Simulator simulator(two);
    return fmt::format("{:.17g}", sim::train::simulate_training(simulator, job(4, 48)).iteration_s);
  }));
  const json doc = {{"name", "t"},
                    {"baseline", {{"cluster", "dgx-a100"}, {"replay", {{"trace", dir.string()}}}}},
                    {"variants", json::array({variant("2x deeper", R"({"replay": {"scale_pp": 2}})")})}};
  const auto w = sc::run_whatif(sc::parse_scenario(doc, "t.json", ""), 1);
  std::filesystem::remove_all(dir);
  REQUIRE(w.rows.size() == 2);
  CHECK(w.rows[1].iteration_s == approx(deep_s).epsilon(1e-6));
  CHECK(w.rows[1].iteration_s > w.rows[0].iteration_s);  // twice the layers, 3 bubbles instead of 1
}
