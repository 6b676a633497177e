// commstack calibrate: fit a stack-model profile to nccl-tests runs of one GPU generation and
// write it as JSON with provenance and residuals.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "calibration/fit/host_prior.hpp"
#include "calibration/fit/profile_fit.hpp"
#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"

namespace commstack::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> inputs;
  std::optional<std::string> cluster;
  std::string output;
  std::optional<std::string> prior;
  std::vector<std::string> host_from;
  std::string name;
  double prior_weight = fit::FitOptions{}.prior_weight;
  std::string loss = fit::FitOptions{}.loss;
};

// --output must not replace a file the fit reads (--output run.txt for --input run.txt would lose the
// measurement): checked before anything is read or written.
void refuse_output_over_inputs(const CalibrateOptions& o, const std::vector<fit::RunSpec>& specs) {
  std::vector<InputArg> inputs;
  for (const auto& spec : specs) {
    inputs.push_back({"--input", spec.file});
    if (spec.cluster) inputs.push_back({"--input ...@cluster=", *spec.cluster, true});
  }
  if (o.cluster) inputs.push_back({"--cluster", *o.cluster, true});
  if (o.prior) inputs.push_back({"--prior", *o.prior, true});
  for (const auto& path : o.host_from) inputs.push_back({"--host-from", path, true});
  refuse_overwriting_inputs("--output", o.output, inputs);
}

void run_calibrate(const CalibrateOptions& o) {
  std::vector<fit::MeasuredRun> runs;
  // The same run given twice (same file, same selectors) would weigh double in the least squares
  // without the user meaning it: refused. One file with different selectors (@op=, @run=, series=)
  // is several runs and is fine.
  std::map<std::string, std::string> seen;
  std::vector<fit::RunSpec> specs;
  for (const auto& text : o.inputs) {
    fit::RunSpec spec = fit::parse_run_spec(text, "--input");
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(spec.file, ec);
    const std::string key = (ec ? spec.file : canonical.string()) + "@" + spec.knob_text;
    if (const auto [it, fresh] = seen.emplace(key, text); !fresh)
      throw InputError(
          fmt::format("--input {}: the same run as --input {}; each --input counts once in the fit, so "
                      "give it once (or tell the runs apart with @op=, @run=, series= or config=)",
                      text, it->second));
    specs.push_back(std::move(spec));
  }
  refuse_output_over_inputs(o, specs);
  runs.reserve(specs.size());
  for (const auto& spec : specs) runs.push_back(fit::load_measured_run(spec, o.cluster));
  int sm = sim::stack::sm_of_gpu_model(runs.front().cluster.node.gpu_model);
  sim::stack::Profile prior =
      o.prior ? sim::stack::load_profile(*o.prior, "--prior") : sim::stack::prior_profile(sm);
  if (o.prior) {
    // A fitted profile used as the prior: its values become the prior means.
    for (auto& v : prior.params) v.prior = v.value;
  }
  if (!o.host_from.empty()) {
    std::vector<sim::stack::Profile> sources;
    for (const auto& path : o.host_from) sources.push_back(sim::stack::load_profile(path, "--host-from"));
    for (const auto& note : fit::apply_host_prior(prior, sources)) {
      const auto& info = sim::stack::param_info(note.param);
      if (note.sources == 0)
        fmt::print("note: --host-from: no profile's runs constrain {}; its prior stays {:.4g} {}\n",
                   info.name, note.value, info.unit);
      else
        fmt::print("note: --host-from: prior {} {:.4g} {} (geometric mean of {} profile(s))\n", info.name,
                   note.value, info.unit, note.sources);
    }
  }
  fit::FitOptions options;
  if (!(o.prior_weight >= 0)) throw InputError(fmt::format("--prior-weight {}: expected a number >= 0", o.prior_weight));
  options.prior_weight = o.prior_weight;
  options.loss = o.loss;
  options.name = o.name.empty() ? fmt::format("sm{}-fit", prior.sm) : o.name;
  sim::stack::Profile fitted = fit::fit_profile(runs, prior, options);
  fitted.description = fmt::format("fitted by commstack calibrate on {} run(s)", runs.size());
  // What the readers dropped (published tables' rounding rule) goes into the profile's provenance.
  for (const auto& run : runs)
    for (const auto& note : run.notes) {
      fitted.description += "; " + note;
      fmt::print("note: {}\n", note);
    }
  sim::stack::save_profile(fitted, o.output);
  fmt::print("wrote {}: {} points from {} run(s), MAPE {:.2f}%, rms ln-residual {:.4f}\n", o.output,
             fitted.residuals.size(), runs.size(), fitted.fit_mape_percent, fitted.fit_rms_log_residual);
  for (int i = 0; i < sim::stack::kNumParams; ++i) {
    const auto& info = sim::stack::param_info(i);
    const auto& v = fitted.params[static_cast<std::size_t>(i)];
    // Which values the runs set and which are the prior's: the JSON's provenance names the runs.
    fmt::print("  {:<22} {:>10.4g} {:<8} (prior {:.4g}{})\n", info.name, v.value, info.unit, v.prior,
               fit::fitted_on_data(v) ? "" : "; no run constrains it, kept near the prior");
  }
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand("calibrate", "Fit a stack-model profile to measured nccl-tests runs");
  sub->add_option(
         "--input", o->inputs,
         "nccl-tests output (text or -J JSON), OSU NCCL benchmark output (osu_xccl_*) or published table, "
         "FILE[@key=value,...] (keys: cluster nodes "
         "gpus_per_node op "
         "run "
         "series config min_bytes max_bytes algo proto min_ctas max_ctas nvls mnnvl collnet gpus_per_thread "
         "cuda_graph in_place nccl_version); repeatable")
      ->required();
  sub->add_option("--cluster", o->cluster, "Cluster preset or JSON for inputs that do not name one");
  sub->add_option("--output", o->output, "Profile JSON to write")->required();
  sub->add_option("--prior", o->prior, "Start from this profile instead of NCCL's constants");
  sub->add_option(
      "--host-from", o->host_from,
      "Profiles fitted on other GPU generations (paths or shipped names): the host-side parameters' "
      "prior (launch_us: enqueue + kernel launch, a property of the host CPU, driver and NCCL, not of "
      "the GPU) becomes the geometric mean of the values their runs constrain; repeatable");
  sub->add_option("--name", o->name, "Profile name");
  sub->add_option("--prior-weight", o->prior_weight,
                  "Weight of one prior standard deviation relative to one run's mean loss (default 0.01)");
  sub->add_option("--loss", o->loss,
                  "Robust loss on ln(predicted/measured): cauchy (default; a run the model cannot follow does not "
                  "drag the others) or soft_l1 (linear tail)");
  on_selected(sub, [o] { run_calibrate(*o); });
}

}  // namespace commstack::cli
