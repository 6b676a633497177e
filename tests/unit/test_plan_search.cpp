// `commstack plan` search space: enumeration counts against hand counts, and every dropped
// configuration really breaks a rule of workloads::validate or the memory limit.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "common/error.hpp"
#include "sim/plan/search_space.hpp"
#include "workloads/compute/compute_model.hpp"

using namespace commstack;
using sim::plan::SearchSpace;

namespace {

// megatron-1.7b: 24 layers, 24 heads; one 8-GPU node, one choice for everything but TP, PP, VS.
SearchSpace small_space() {
  SearchSpace s;
  s.tp = {1, 2, 4};
  s.cp = {1};
  s.micro_batch = {1};
  s.sequence_parallel = {false};
  s.recompute = {workloads::Recompute::none};
  s.zero = {0};
  s.max_vs = 2;
  s.global_batch = 16;
  return s;
}

}  // namespace

TEST_CASE("plan: enumeration counts equal the hand count (megatron-1.7b, 8 GPUs)") {
  const auto model = workloads::builtin_model("megatron-1.7b");
  // PP runs over the divisors of the 24 layers that divide 8/tp; VS 2 is legal when 24 % (2 pp) == 0:
  //   tp 1: pp 1, 2 (+vs2), 4 (+vs2), 8 (24 % 16 != 0: no vs2) -> 6
  //   tp 2: pp 1, 2 (+vs2), 4 (+vs2)                          -> 5
  //   tp 4: pp 1, 2 (+vs2)                                    -> 3
  // 14 combinations; every one is valid (16 sequences: m = 16/dp is a multiple of pp for the interleaved ones).
  auto s = small_space();
  const auto e = sim::plan::enumerate_candidates(model, 8, 8, s, 1e30);
  CHECK(e.enumerated == 14);
  CHECK(e.infeasible_rule == 0);
  CHECK(e.infeasible_memory == 0);
  CHECK(e.fits.size() == 14);

  // ZeRO 0-3 on each: 56; ZeRO-2 and ZeRO-3 are refused with pp > 1 (11 of the 14 have pp > 1).
  s.zero = {0, 1, 2, 3};
  const auto z = sim::plan::enumerate_candidates(model, 8, 8, s, 1e30);
  CHECK(z.enumerated == 56);
  CHECK(z.infeasible_rule == 22);
  CHECK(z.rule_counts.at("$.zero") == 22);
  CHECK(z.fits.size() == 34);

  // Default TP (divisors of 24 up to the 8 GPUs of a node: 1, 2, 4, 8) adds tp 8: pp 1 only -> 15.
  s.zero = {0};
  s.tp.clear();
  CHECK(sim::plan::enumerate_candidates(model, 8, 8, s, 1e30).enumerated == 15);
  // A global batch of 12: 12/dp must be a whole number of micro-batches, and interleaving needs m % pp == 0.
  s.tp = {1};
  s.global_batch = 12;
  const auto b = sim::plan::enumerate_candidates(model, 8, 8, s, 1e30);
  // tp 1: pp 1 (dp 8: 12 % 8 != 0), pp 2 (dp 4, m 3; vs2 needs m % 2 == 0: no), pp 4 (dp 2, m 6; vs2: 6 % 4: no), pp 8 (dp 1, m 12)
  CHECK(b.enumerated == 6);
  CHECK(b.rule_counts.at("$.global_batch") == 3);
  CHECK(b.fits.size() == 3);
}

TEST_CASE("plan: every dropped configuration fails validate() or the memory check, every kept one passes both") {
  const auto model = workloads::builtin_model("korthikanti-175b");
  const auto prof = workloads::builtin_compute_profile("a100-80gb");
  SearchSpace s;
  s.global_batch = 64;
  s.max_micro_batch = 2;
  std::vector<sim::plan::Rejected> rejected;
  const auto e = sim::plan::enumerate_candidates(model, 64, 8, s, prof.memory_bytes, &rejected);
  REQUIRE(e.enumerated > 100);
  CHECK(static_cast<long long>(rejected.size()) == e.infeasible_rule + e.infeasible_memory);
  CHECK(static_cast<long long>(e.fits.size()) + e.infeasible_rule + e.infeasible_memory == e.enumerated);
  CHECK(e.infeasible_memory > 0);
  CHECK(!e.fits.empty());
  for (const auto& r : rejected) {
    CAPTURE(r.reason);
    const auto m = sim::plan::pad_vocab_for_tp(model, r.par.tp);
    auto par = r.par;
    if (r.reason.rfind("rule:", 0) == 0) {
      CHECK_THROWS_AS(workloads::validate(m, par, 64, "test"), InputError);
    } else {
      CHECK_NOTHROW(workloads::validate(m, par, 64, "test"));
      CHECK_THROWS_AS(workloads::check_fits(workloads::estimate_memory(m, par), prof.memory_bytes, "A100"), InputError);
    }
  }
  std::set<std::string> seen;
  for (const auto& c : e.fits) {
    auto par = c.par;
    CHECK_NOTHROW(workloads::validate(c.model, par, 64, "test"));
    CHECK_NOTHROW(workloads::check_fits(workloads::estimate_memory(c.model, par), prof.memory_bytes, "A100"));
    CHECK(c.memory_bytes <= prof.memory_bytes);
    CHECK(c.model.vocab % par.tp == 0);  // padded like Megatron when needed
    // No configuration twice.
    const std::string key = std::to_string(par.tp) + "/" + std::to_string(par.pp) + "/" + std::to_string(par.virtual_stages) +
                            "/" + std::to_string(par.cp) + "/" + std::to_string(par.zero) + "/" +
                            std::to_string(par.micro_batch) + "/" + std::to_string(par.sequence_parallel) + "/" +
                            workloads::to_string(par.recompute);
    CHECK(seen.insert(key).second);
  }
}
