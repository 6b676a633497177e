// validate's "# choice:" diagnosis (fit::ValidationResult::other_choices): consecutive sizes the
// modelled algorithm / protocol misses and another pair NCCL could run predicts.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <cmath>
#include <string>

#include "calibration/fit/validate_run.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

namespace fit = commstack::fit;
namespace stack = commstack::sim::stack;
namespace nccl = commstack::select;
using commstack::sim::CollectiveOp;

namespace {

// A 2 x 8 B200 reduce-scatter, 4 KiB to `max_bytes`, whose "measured" times are the shipped
// profile's own predictions: the modelled choice everywhere except [lo, hi], where they are those
// of `algo`/`proto` forced.
fit::MeasuredRun synthetic_run(std::uint64_t lo, std::uint64_t hi, const char* algo = "ring",
                               const char* proto = "simple", std::uint64_t max_bytes = 64u << 20) {
  fit::MeasuredRun run;
  run.file = "synthetic";
  run.cluster_name = "hgx-b200";
  run.cluster = commstack::topologies::load_cluster("hgx-b200");
  run.nodes = 2;
  run.gpus_per_node = 8;
  run.op = CollectiveOp::reducescatter;
  const auto profile = stack::load_profile("b200");
  const stack::Predictor modelled(run.cluster, 2, 8, run.knobs);
  stack::Knobs forced_knobs = run.knobs;
  forced_knobs.env.algo = algo;
  forced_knobs.env.proto = proto;
  const stack::Predictor forced(run.cluster, 2, 8, forced_knobs);
  for (std::uint64_t bytes = 4096; bytes <= max_bytes; bytes *= 2) {
    const bool other = bytes >= lo && bytes <= hi;
    run.bytes.push_back(bytes);
    run.measured_us.push_back((other ? forced : modelled).predict(run.op, bytes, profile).time_s * 1e6);
  }
  return run;
}

}  // namespace

TEST_CASE("other choices: sizes that follow Ring/Simple where the model picks Ring/LL are named") {
  const auto profile = stack::load_profile("b200");
  const auto run = synthetic_run(256u << 10, 1u << 20);
  const auto v = fit::validate_run(run, profile);
  REQUIRE(v.other_choices.size() == 1);
  const auto& c = v.other_choices[0];
  CHECK(c.min_bytes == (256u << 10));
  CHECK(c.max_bytes == (1u << 20));
  CHECK(c.sizes == 3);
  CHECK(c.other == "Ring/Simple");
  CHECK(c.modelled.find("Ring/LL") == 0);
  CHECK(c.other_mape_percent == approx(0).epsilon(1e-9));  // the very pair that made the times
  CHECK(c.modelled_mape_percent > fit::kOtherChoiceTrigger);
  // With NCCL_ALGO set by the run, only the protocol is looked for, and found the same.
  auto algo_set = run;
  algo_set.knobs.env.algo = "ring";
  const auto va = fit::validate_run(algo_set, profile);
  REQUIRE(va.other_choices.size() == 1);
  CHECK(va.other_choices[0].other == "Ring/Simple");
  CHECK(va.other_choices[0].min_bytes == (256u << 10));
  // The diagnosis is never part of the error.
  double sum = 0;
  for (const auto& r : v.rows) sum += std::fabs(r.error_percent);
  CHECK(v.mape_percent == approx(sum / static_cast<double>(v.rows.size())));
}

TEST_CASE(
    "other choices: one stray size, a forced pair, a logged choice or the model's own times say nothing") {
  const auto profile = stack::load_profile("b200");
  // One size alone is not a pattern (kOtherChoiceMinSizes).
  CHECK(fit::validate_run(synthetic_run(512u << 10, 512u << 10), profile).other_choices.empty());
  // The model's own times: nothing is off.
  CHECK(fit::validate_run(synthetic_run(1, 0), profile).other_choices.empty());
  // The user forced algorithm and protocol: NCCL ran what they said.
  auto forced = synthetic_run(256u << 10, 1u << 20);
  forced.knobs.env.algo = "ring";
  forced.knobs.env.proto = "ll";
  CHECK(fit::validate_run(forced, profile).other_choices.empty());
  // The log says what NCCL ran (TUNING lines): those sizes are predicted with it.
  auto logged = synthetic_run(256u << 10, 1u << 20);
  for (std::uint64_t b : {256u << 10, 512u << 10, 1u << 20})
    logged.logged_choices[b] = fit::MeasuredRun::LoggedChoice{nccl::Algo::ring, nccl::Proto::simple, 1};
  const auto vl = fit::validate_run(logged, profile);
  CHECK(vl.other_choices.empty());
  CHECK(vl.mape_percent < 1e-6);
}

TEST_CASE("other choices: the Vultr 2-node reduce-scatter's 256 KiB - 1 MiB step is Ring/Simple's latency") {
  // Published sweep (calibration/data): 42 us at 128 KiB, 80-83 us from 256 KiB to 1 MiB, where the
  // modelled Ring/LL and LL128 stay near 41-52 us; 15 network-paced Simple steps give ~85 us.
  const auto run = fit::load_measured_run(
      fit::parse_run_spec(
          std::string(COMMSTACK_SOURCE_DIR) +
              "/calibration/data/nccl-tests/nccl-tests_reduce_scatter_b200_2n8g_vultr-poc.txt@"
              "nodes=2,gpus_per_node=8",
          "--input"),
      std::string("hgx-b200"));
  const auto v = fit::validate_run(run, stack::load_profile("b200"));
  REQUIRE_FALSE(v.other_choices.empty());
  const auto& c = v.other_choices[0];
  CHECK(c.min_bytes == (256u << 10));
  CHECK(c.max_bytes == (1u << 20));
  CHECK(c.other == "Ring/Simple");
  CHECK(c.other_mape_percent < fit::kOtherChoiceMatch);
}

TEST_CASE("other choices: a run far below its hardware gets no pair") {
  // Ring/LL's times up to 1 GiB: half of what the NICs allow at 1 GiB, so the run is flagged. Its
  // large sizes follow Ring/LL exactly, but a run that slow everywhere would match some slow pair
  // by chance (as the nccl-tests#290 and #319 runs match Ring/LL and Tree/LL): none is named.
  const auto profile = stack::load_profile("b200");
  const auto slow = synthetic_run(0, ~std::uint64_t{0}, "ring", "ll", 1u << 30);
  const auto v = fit::validate_run(slow, profile);
  CHECK(v.below_hardware);
  CHECK(v.other_choices.empty());
}
