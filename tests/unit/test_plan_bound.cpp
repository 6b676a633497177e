// `commstack plan` branch and bound: the lower bound is <= the simulated iteration time on every
// configuration of a search (1F1B, interleaved, ZeRO 0-3, CP, SP, every recompute mode, MoE with EP),
// it is at least the compute-only bound, and pruning returns exactly the top K of simulating all.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "sim/plan/lower_bound.hpp"
#include "sim/plan/planner.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::plan::SearchSpace;

namespace {

std::string describe(const workloads::ParallelConfig& p) {
  return fmt::format("tp {} pp {} vs {} dp {} cp {} ep {} zero {} mb {} sp {} rc {}", p.tp, p.pp, p.virtual_stages, p.dp,
                     p.cp, p.ep, p.zero, p.micro_batch, p.sequence_parallel, workloads::to_string(p.recompute));
}

// Simulates every candidate (every `stride`-th) and checks compute-only bound <= lower bound <= simulated.
int check_bounds(sim::Simulator& simulator, const workloads::ModelSpec& model, const SearchSpace& space,
                 const workloads::ComputeProfile& prof, int stride) {
  const auto& topo = simulator.topology();
  const auto e = sim::plan::enumerate_candidates(model, topo.gpu_count(), topo.gpus_per_node, space, 1e30);
  const double egress = sim::plan::gpu_egress_bandwidth(topo);
  int checked = 0;
  for (std::size_t i = 0; i < e.fits.size(); i += static_cast<std::size_t>(stride)) {
    const auto& c = e.fits[i];
    sim::train::TrainSetup setup;
    setup.model = c.model;
    setup.par = c.par;
    setup.compute = prof;
    const auto res = sim::train::simulate_training(simulator, setup);
    const auto b = sim::plan::iteration_lower_bound(c, prof, egress);
    CAPTURE(describe(c.par));
    CAPTURE(res.iteration_s);
    CAPTURE(b.seconds);
    CHECK(b.seconds <= res.iteration_s * (1 + 1e-9));
    CHECK(b.seconds >= res.compute_bound_s * (1 - 1e-9));
    ++checked;
  }
  return checked;
}

}  // namespace

TEST_CASE("plan: lower bound <= simulated time (megatron-1.7b on 16 A100: 1F1B, interleaved, ZeRO 0-3, CP, SP)") {
  auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 2);
  sim::Simulator simulator(topo);
  const auto model = workloads::builtin_model("megatron-1.7b");
  const auto prof = workloads::builtin_compute_profile("a100-80gb");
  SearchSpace s;
  s.global_batch = 32;
  s.max_micro_batch = 2;
  s.max_vs = 2;
  s.cp = {1, 2};
  // 16 GPUs: several hundred candidates; every 7th keeps the test near 10 s and still visits all kinds.
  const int n = check_bounds(simulator, model, s, prof, 7);
  CHECK(n > 40);
}

TEST_CASE("plan: lower bound <= simulated time (Mixtral 8x7B with EP on 16 A100)") {
  auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 2);
  sim::Simulator simulator(topo);
  auto model = workloads::builtin_model("mixtral-8x7b");
  model.layers = 8;  // fewer layers: same ops per layer, a faster test
  const auto prof = workloads::builtin_compute_profile("a100-80gb");
  SearchSpace s;
  s.global_batch = 16;
  s.max_micro_batch = 1;
  s.max_vs = 2;
  s.sequence_parallel = {true};
  s.recompute = {workloads::Recompute::none, workloads::Recompute::full};
  const int n = check_bounds(simulator, model, s, prof, 6);
  CHECK(n > 10);
}

TEST_CASE("plan: branch and bound gives the same top 3 as simulating every configuration") {
  auto topo = topologies::build_topology(topologies::load_cluster("dgx-a100"), 2);
  sim::Simulator simulator(topo);
  const auto model = workloads::builtin_model("megatron-1.7b");
  const auto prof = workloads::builtin_compute_profile("a100-80gb");
  sim::plan::PlanOptions o;
  o.space.global_batch = 32;
  o.space.max_micro_batch = 2;
  o.space.cp = {1};
  o.space.recompute = {workloads::Recompute::none, workloads::Recompute::full};
  o.top = 3;
  const auto r = sim::plan::plan(simulator, model, prof, o);
  REQUIRE(r.ranked.size() == 3);
  CHECK(r.simulated + r.pruned == r.feasible);
  CHECK(r.pruned > 0);  // the bound does prune here

  const auto e = sim::plan::enumerate_candidates(model, 16, 8, o.space, prof.memory_bytes);
  REQUIRE(static_cast<long long>(e.fits.size()) == r.feasible);
  std::vector<double> all;
  for (const auto& c : e.fits) {
    sim::train::TrainSetup setup;
    setup.model = c.model;
    setup.par = c.par;
    setup.compute = prof;
    all.push_back(sim::train::simulate_training(simulator, setup).iteration_s);
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 0; i < 3; ++i) CHECK(r.ranked[i].result.iteration_s == approx(all[i]).epsilon(1e-9));
  for (std::size_t i = 1; i < 3; ++i) CHECK(r.ranked[i - 1].result.iteration_s <= r.ranked[i].result.iteration_s);
}
