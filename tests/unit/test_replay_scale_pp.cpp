// Pipeline scale-out of an imported trace (sim/replay/scale_pp): a PP2 iteration written by
// `train --otf2`, imported and made 2x deeper, must be the PP4 job with twice the layers: the
// same compute kernels per rank in the same 1F1B order, the same stage-boundary messages, and
// (replayed) the same iteration time as simulating that job directly. Traces without micro-batch
// and phase, or without a pipeline, are refused.
#include <doctest/doctest.h>

#include "approx.hpp"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/scale_pp.hpp"
#include "sim/report/otf2_writer.hpp"
#include "test_train_helpers.hpp"
#include "workloads/importers/load_trace.hpp"
#include "workloads/importers/otf2_import.hpp"

using namespace commstack;
using workloads::OpKind;

namespace {

// Megatron-1.7B (24 layers) TP2 DP2 with `pp` stages and `layers` layers, every rank simulated.
sim::train::TrainSetup job(int pp, int layers) {
  auto s = train_test::setup("megatron-1.7b", 2, pp, 2, 4 * pp, 1, 8);
  s.model.layers = layers;
  workloads::validate(s.model, s.par, 4 * pp, "test");
  s.fold = false;
  return s;
}

bool is_kernel(const workloads::Op& op) {
  return op.kind == OpKind::compute && op.collective == workloads::Collective::none;
}

}  // namespace

TEST_CASE("scale-pp: a PP2 trace made 2x deeper is the PP4 job with twice the layers") {
  // One engine per process: the PP2 job (one node) is simulated and written in a child.
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("commstack-scale-pp-{}", getpid());
  const std::string child = train_test::in_child([&] {
    const auto one = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
    sim::Simulator sim_one(one);
    const auto traced = sim::train::simulate_training(sim_one, job(2, 24));
    sim::write_otf2(sim::otf2_timeline(traced, one, "scale-pp"), dir.string());
    return std::string("ok");
  });
  REQUIRE(child == "ok");
  const auto two = topologies::build_topology(topologies::load_cluster("dgx-a100"), 2);
  sim::Simulator sim(two);
  const auto t = workloads::importers::import_otf2(dir.string());
  std::filesystem::remove_all(dir);
  REQUIRE(t.steps_known);
  std::string rule;
  const auto scaled = sim::replay::scale_pipeline(t, 2, rule);
  CHECK(rule.find("1F1B order of its new depth") != std::string::npos);
  CHECK(scaled.graph.world == 16);
  CHECK_NOTHROW(workloads::check_graph(scaled.graph));

  const auto deep = sim::train::simulate_training(sim, job(4, 48));
  REQUIRE(deep.graph.ranks == scaled.graph.ranks);
  // Per rank: the compute kernels in order (name, phase, micro-batch) and the pipeline messages.
  using Kernel = std::tuple<std::string, workloads::Phase, int>;
  using Message = std::tuple<OpKind, workloads::Phase, int, int, std::uint64_t>;  // kind, phase, mb, peer, bytes
  const auto per_rank = [](const workloads::OpGraph& g) {
    std::map<int, std::vector<Kernel>> kernels;
    std::map<int, std::multiset<Message>> messages;
    for (const auto& op : g.ops) {
      if (is_kernel(op)) kernels[op.rank].emplace_back(op.name, op.phase, op.micro_batch);
      if (op.kind == OpKind::send || op.kind == OpKind::recv) {
        messages[op.rank].insert({op.kind, op.phase, op.micro_batch, op.peer, op.bytes});
      }
    }
    return std::pair{kernels, messages};
  };
  const auto [want_k, want_m] = per_rank(deep.graph);
  const auto [got_k, got_m] = per_rank(scaled.graph);
  for (int r : deep.graph.ranks) {
    CAPTURE(r);
    CHECK(got_k.at(r) == want_k.at(r));
    // Stage n of 4 with 8 micro-batches: forward receives from n-1 unless first, sends to n+1 unless last.
    CHECK(got_m.count(r) == 1);
    if (got_m.count(r) == 1) CHECK(got_m.at(r) == want_m.at(r));
  }

  // Replayed, the deeper trace takes the deeper job's time (same engine, same per-stage work).
  sim::replay::ReplayOptions ro;
  const auto rr = sim::replay::replay(scaled, sim, ro);
  CHECK(rr.replayed_s == approx(deep.iteration_s).epsilon(1e-6));
}

TEST_CASE("scale-pp: traces without micro-batch and phase, or without a pipeline, are refused") {
  const std::string samples = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples/";
  const auto kineto = workloads::importers::load_trace(samples + "kineto-hta-nccl-2gpu", {});
  std::string rule;
  try {
    (void)sim::replay::scale_pipeline(kineto, 2, rule);
    FAIL("a Kineto trace was scaled");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("micro-batch and phase") != std::string::npos);
  }

  const auto one = topologies::build_topology(topologies::load_cluster("dgx-a100"), 1);
  sim::Simulator sim_one(one);
  auto s = train_test::setup("megatron-1.7b", 2, 1, 4, 8, 1, 8);
  s.fold = false;
  const auto r = sim::train::simulate_training(sim_one, s);
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("commstack-scale-pp-nopp-{}", getpid());
  sim::write_otf2(sim::otf2_timeline(r, one, "no pp"), dir.string());
  const auto t = workloads::importers::import_otf2(dir.string());
  std::filesystem::remove_all(dir);
  CHECK(t.steps_known);
  try {
    (void)sim::replay::scale_pipeline(t, 2, rule);
    FAIL("a trace without pipeline stages was scaled");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("one pipeline stage") != std::string::npos);
  }
}
