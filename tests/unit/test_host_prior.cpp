// Host-side parameters from other generations (calibrate --host-from): which fits constrain
// launch_us, and how the prior is formed from them.
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/fit/host_prior.hpp"
#include "calibration/fit/profile_fit.hpp"
#include "calibration/fit/validate_run.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"

using namespace commstack;
using sim::stack::Param;
using sim::stack::Profile;

namespace {
// A one-node H100 all-reduce sweep 1 KiB - 1 GiB predicted by `truth` with nccl-tests -g `g`.
fit::MeasuredRun synthetic_run(const Profile& truth, int g) {
  fit::MeasuredRun run;
  run.file = "synthetic-1n8g-g" + std::to_string(g);
  run.cluster_name = "dgx-h100";
  run.cluster = topologies::load_cluster("dgx-h100");
  run.nodes = 1;
  run.gpus_per_node = 8;
  run.knobs.gpus_per_thread = g;
  const sim::stack::Predictor pr(run.cluster, 1, 8, run.knobs);
  for (std::uint64_t b = 1024; b <= (1ull << 30); b *= 4) {
    run.bytes.push_back(b);
    run.measured_us.push_back(pr.predict(sim::CollectiveOp::allreduce, b, truth).time_s * 1e6);
  }
  return run;
}

Profile source(const std::string& name, int sm, double launch_us, bool constrained) {
  Profile p = sim::stack::prior_profile(sm);
  p.name = name;
  auto& v = p.params[static_cast<std::size_t>(Param::launch_us)];
  v.value = launch_us;
  v.provenance = constrained
                     ? std::string(fit::kFittedProvenance) + name + ".txt@gpus_per_thread=8 (prior 8.4: ...)"
                     : "not constrained by the inputs, kept near the prior: ...";
  sim::stack::InputRun g8, g1;
  g8.file = name + ".txt";
  g1.file = name + "-g1.txt";
  p.inputs = {g8, g1};  // only the -g 8 run moved launch_us: its provenance says so, and is what is cited
  return p;
}
}  // namespace

TEST_CASE("host prior: only runs that show the host time constrain launch_us") {
  Profile truth = sim::stack::prior_profile(90);
  truth.at(Param::launch_us) = 4.0;
  // -g 8: eight launches (32 us) exceed the small calls' device time, the floor is the host's.
  const Profile g8 = fit::fit_profile({synthetic_run(truth, 8)}, sim::stack::prior_profile(90));
  CHECK(fit::fitted_on_data(g8.params[static_cast<std::size_t>(Param::launch_us)]));
  CHECK(g8[Param::launch_us] == approx(4.0).epsilon(0.05));
  // -g 1: one launch hides behind every call's device time; the fit cannot see it.
  const Profile g1 = fit::fit_profile({synthetic_run(truth, 1)}, sim::stack::prior_profile(90));
  CHECK_FALSE(fit::fitted_on_data(g1.params[static_cast<std::size_t>(Param::launch_us)]));
  CHECK(fit::fitted_on_data(g1.params[static_cast<std::size_t>(Param::eta_nvls)]));

  // The -g 1 generation fitted with the -g 8 fit as --host-from keeps the host value it cannot see.
  Profile prior = sim::stack::prior_profile(90);
  const auto notes = fit::apply_host_prior(prior, {g8});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].sources == 1);
  const Profile g1_host = fit::fit_profile({synthetic_run(truth, 1)}, prior);
  CHECK(g1_host[Param::launch_us] == approx(g8[Param::launch_us]).epsilon(1e-6));
  CHECK(g1_host.params[static_cast<std::size_t>(Param::launch_us)].provenance.find(
            "host-side, geometric mean of 1") != std::string::npos);
}

TEST_CASE("host prior: the geometric mean of the constrained sources, the others ignored") {
  Profile prior = sim::stack::prior_profile(100);
  const double kernel_before = prior[Param::kernel_us];
  const auto notes = fit::apply_host_prior(
      prior, {source("a100", 80, 4.0, true), source("h100", 90, 9.0, true), source("gh200", 90, 8.4, false)});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].param == Param::launch_us);
  CHECK(notes[0].sources == 2);
  CHECK(notes[0].value == approx(6.0));
  const auto& v = prior.params[static_cast<std::size_t>(Param::launch_us)];
  CHECK(v.value == approx(6.0));
  CHECK(v.prior == approx(6.0));
  CHECK(v.provenance ==
        "prior: host-side, geometric mean of 2 profile(s) of other GPU generations whose runs show the host "
        "time: a100 "
        "4 us (sm 80; fitted on a100.txt@gpus_per_thread=8); h100 9 us (sm 90; fitted on "
        "h100.txt@gpus_per_thread=8)");
  CHECK(prior[Param::kernel_us] == kernel_before);  // the device's fixed cost is the GPU's

  // No source constrains it: the prior stays NCCL's, and the note says so.
  Profile untouched = sim::stack::prior_profile(100);
  const auto none = fit::apply_host_prior(untouched, {source("gh200", 90, 3.0, false)});
  REQUIRE(none.size() == 1);
  CHECK(none[0].sources == 0);
  CHECK(untouched[Param::launch_us] == approx(sim::stack::prior_profile(100)[Param::launch_us]));
  CHECK(untouched.params[static_cast<std::size_t>(Param::launch_us)].provenance ==
        sim::stack::prior_profile(100).params[static_cast<std::size_t>(Param::launch_us)].provenance);
}

TEST_CASE("host prior: validate says which sizes the host's launches set and where launch_us comes from") {
  Profile truth = sim::stack::prior_profile(90);
  truth.at(Param::launch_us) = 4.0;
  const fit::MeasuredRun g8 = synthetic_run(truth, 8);

  // NCCL's constants: 8 x 8.4 us exceed the device time of the small sizes; nothing measured it.
  const fit::ValidationResult prior = fit::validate_run(g8, sim::stack::prior_profile(90));
  CHECK(prior.host_floor.launches == 8);
  CHECK(prior.host_floor.launch_us == approx(8.4));
  CHECK(prior.host_floor.sizes > 0);
  CHECK(prior.host_floor.max_bytes < g8.bytes.back());  // a large call's device time hides the host
  CHECK_FALSE(prior.host_floor.measured);
  CHECK_FALSE(prior.host_floor.other_generations);
  // Every host-bound size is predicted at the host's time: 8 launches.
  for (std::size_t i = 0; i < g8.bytes.size(); ++i)
    if (g8.bytes[i] <= prior.host_floor.max_bytes)
      CHECK(prior.rows[i].predicted_us == approx(8 * 8.4).epsilon(1e-9));

  // The fit on the run measures it; a profile given it by --host-from says where it came from.
  const Profile fitted = fit::fit_profile({g8}, sim::stack::prior_profile(90));
  CHECK(fit::validate_run(g8, fitted).host_floor.measured);
  Profile borrowed = sim::stack::prior_profile(90);
  fit::apply_host_prior(borrowed, {fitted});
  const fit::HostFloor h = fit::validate_run(g8, borrowed).host_floor;
  CHECK_FALSE(h.measured);
  CHECK(h.other_generations);

  // -g 1: one launch hides behind every call's device time.
  CHECK(fit::validate_run(synthetic_run(truth, 1), sim::stack::prior_profile(90)).host_floor.sizes == 0);
}
