// commstack validate: predict every size of a measured nccl-tests run with the stack model and
// print measured vs predicted, the error, NCCL's algorithm/protocol, and the MAPE.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "calibration/fit/validate_run.hpp"
#include "calibration/fit/validation_plot.hpp"
#include "cli/option_values.hpp"
#include "cli/output_paths.hpp"
#include "cli/validate_report.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "sim/select/nccl_search.hpp"

namespace commstack::cli {
namespace {

struct ValidateOptions {
  std::string cluster;
  std::string measured;
  std::optional<int> nodes, gpus_per_node, gpus_per_thread, run;
  std::optional<std::string> algo, proto, op, profile;
  std::optional<int> min_channels, max_channels;
  std::optional<std::string> nvls, collnet, cuda_graph, nccl_version, mnnvl;
  std::optional<std::string> min_bytes, max_bytes;
  std::string format = "text";
  bool breakdown = false;
  bool in_place = false;
  std::string plot;
};

// --measured FILE@key=value,... (calibrate --input's run spec, e.g. a published table's series= /
// config=): folds the keys into `spec`, which holds the flags; a setting given both ways is an error.
// A path that exists as typed is a file even when it contains '@'.
void merge_measured_keys(const std::string& measured, fit::RunSpec& spec) {
  spec.file = measured;
  std::error_code ec;  // a name the file system refuses (too long) is no file: read as a run spec
  if (measured.find('@') == std::string::npos || std::filesystem::exists(measured, ec)) return;
  const fit::RunSpec keys = fit::parse_run_spec(measured, "--measured");
  // Only keys folded below are taken: a run-spec key added later fails here instead of being lost.
  const std::vector<std::string> folded{"cluster",    "nodes",     "gpus_per_node", "gpus_per_thread",
                                        "op",         "run",       "series",        "config",
                                        "min_bytes",  "max_bytes", "algo",          "proto",
                                        "min_ctas",   "max_ctas",  "nvls",          "collnet",
                                        "cuda_graph", "in_place",  "nccl_version",  "mnnvl"};
  for (std::size_t pos = 0; pos < keys.knob_text.size();) {
    const auto comma = std::min(keys.knob_text.find(',', pos), keys.knob_text.size());
    const std::string key = keys.knob_text.substr(pos, keys.knob_text.find('=', pos) - pos);
    if (std::find(folded.begin(), folded.end(), key) == folded.end())
      throw InputError(
          fmt::format("--measured {}: key \"{}\" is not taken here; pass it as a validate flag", measured, key));
    pos = comma + 1;
  }
  auto twice = [&](const char* key, const char* flag) {
    throw InputError(fmt::format("--measured {}: {} is given both here and as {}", measured, key, flag));
  };
  spec.file = keys.file;
  spec.knob_text = keys.knob_text;
  spec.series = keys.series;
  spec.config = keys.config;
  if (keys.cluster && *keys.cluster != spec.cluster.value_or(*keys.cluster)) twice("cluster", "--cluster");
  // A key set in the spec (an engaged optional, a non-zero count, true) moves into `spec` unless the
  // matching flag already set it.
  auto fold = [&](const auto& from, auto& to, const char* key, const char* flag) {
    if (!from) return;
    if (to) twice(key, flag);
    to = from;
  };
  fold(keys.nodes, spec.nodes, "nodes", "--nodes");
  fold(keys.gpus_per_node, spec.gpus_per_node, "gpus_per_node", "--gpus-per-node");
  fold(keys.gpus_per_thread, spec.gpus_per_thread, "gpus_per_thread", "--gpus-per-thread");
  fold(keys.cuda_graph, spec.cuda_graph, "cuda_graph", "--cuda-graph");
  fold(keys.nccl_version, spec.nccl_version, "nccl_version", "--nccl-version");
  fold(keys.knobs.collnet, spec.knobs.collnet, "collnet", "--collnet");
  if (keys.in_place) {
    if (spec.in_place) twice("in_place", "--in-place");
    spec.in_place = true;
  }
  fold(keys.op, spec.op, "op", "--op");
  fold(keys.run, spec.run, "run", "--run");
  fold(keys.min_bytes, spec.min_bytes, "min_bytes", "--min-bytes");
  fold(keys.max_bytes, spec.max_bytes, "max_bytes", "--max-bytes");
  const auto& k = keys.knobs.env;
  auto& e = spec.knobs.env;
  fold(k.algo, e.algo, "algo", "--algo");
  fold(k.proto, e.proto, "proto", "--proto");
  fold(k.min_ctas, e.min_ctas, "min_ctas", "--min-channels");
  fold(k.max_ctas, e.max_ctas, "max_ctas", "--max-channels");
  if (k.nvls_enable != select::NcclEnv{}.nvls_enable) {
    if (e.nvls_enable != select::NcclEnv{}.nvls_enable) twice("nvls", "--nvls");
    e.nvls_enable = k.nvls_enable;
  }
  if (k.mnnvl_enable != select::NcclEnv{}.mnnvl_enable) {
    if (e.mnnvl_enable != select::NcclEnv{}.mnnvl_enable) twice("mnnvl", "--mnnvl");
    e.mnnvl_enable = k.mnnvl_enable;
  }
  select::validate(e);
}

void run_validate(const ValidateOptions& o) {
  if (o.format != "text" && o.format != "csv" && o.format != "json")
    throw InputError(fmt::format("--format {}: expected text, csv or json", o.format));
  fit::RunSpec spec;
  spec.file = o.measured;
  spec.cluster = o.cluster;
  spec.nodes = o.nodes;
  spec.gpus_per_node = o.gpus_per_node;
  spec.gpus_per_thread = o.gpus_per_thread;
  if (o.gpus_per_thread && *o.gpus_per_thread < 1)
    throw InputError(fmt::format("--gpus-per-thread {}: expected >= 1 (nccl-tests -g)", *o.gpus_per_thread));
  spec.op = o.op;
  spec.run = o.run;
  if (o.run && *o.run < 1)
    throw InputError(fmt::format("--run {}: expected >= 1 (the log's first nccl-tests run is 1)", *o.run));
  if (o.min_bytes) spec.min_bytes = parse_bytes(*o.min_bytes, "--min-bytes");
  if (o.max_bytes) spec.max_bytes = parse_bytes(*o.max_bytes, "--max-bytes");
  spec.knobs.env.algo = o.algo;
  spec.knobs.env.proto = o.proto;
  if (o.min_channels) spec.knobs.env.min_ctas = *o.min_channels;
  if (o.max_channels) spec.knobs.env.max_ctas = *o.max_channels;
  if (o.nvls) spec.knobs.env.nvls_enable = parse_nccl_switch(*o.nvls, "--nvls") ? 1 : 0;
  if (o.collnet) spec.knobs.collnet = parse_nccl_switch(*o.collnet, "--collnet");
  if (o.mnnvl) spec.knobs.env.mnnvl_enable = parse_nccl_switch(*o.mnnvl, "--mnnvl") ? 1 : 0;
  if (o.cuda_graph) spec.cuda_graph = parse_on_off(*o.cuda_graph, "--cuda-graph");
  if (o.nccl_version) spec.nccl_version = select::parse_nccl_version(*o.nccl_version, "--nccl-version");
  spec.in_place = o.in_place;
  select::EnableMatrix check;  // names the flag for an unknown algorithm / protocol
  if (o.algo) select::apply_nccl_list(*o.algo, "--algo", true, check);
  if (o.proto) select::apply_nccl_list(*o.proto, "--proto", false, check);
  try {
    select::validate(spec.knobs.env);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--algo/--proto/--min-channels/--max-channels: {}", e.what()));
  }
  merge_measured_keys(o.measured, spec);
  // --plot writes a PNG, a .dat and a .gp: none of them may be the measured run or a file it reads.
  std::vector<InputArg> inputs{{"--measured", spec.file}, {"--cluster", o.cluster, true}};
  if (spec.cluster) inputs.push_back({"--measured ...@cluster=", *spec.cluster, true});
  if (o.profile) inputs.push_back({"--profile", *o.profile, true});
  refuse_overwriting_inputs("--plot", o.plot, plot_written_paths(o.plot), inputs);
  const fit::MeasuredRun run = fit::load_measured_run(spec, o.cluster);
  const int sm = sim::stack::sm_of_gpu_model(run.cluster.node.gpu_model);
  const sim::stack::Profile profile = o.profile
                                          ? sim::stack::load_profile(*o.profile)
                                          : sim::stack::default_profile_for_gpu(run.cluster.node.gpu_model);
  if (profile.sm != sm)
    throw InputError(fmt::format("--profile {}: a profile for sm {} cannot predict cluster {} (sm {})",
                                 profile.origin, profile.sm, run.cluster_name, sm));
  const fit::ValidationResult v = fit::validate_run(run, profile);
  if (!o.plot.empty()) fit::validation_plot(run, v, o.plot);
  const cli::ValidateReport report{run, profile, v, o.breakdown};
  if (o.format == "json")
    print_validate_json(report);
  else
    print_validate_table(report, o.format == "csv");
}

}  // namespace

void register_validate(CLI::App& app) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand("validate", "Predict a measured nccl-tests run and report the error per size");
  sub->add_option(
         "--cluster", o->cluster,
         "Cluster preset or JSON file the run was measured on; auto: the preset of the GPU the log's rank "
         "lines name (an assumption, printed as a note)")
      ->required();
  sub->add_option(
         "--measured", o->measured,
         "nccl-tests output (text or -J JSON), OSU NCCL benchmark output (osu_xccl_*) or published table, "
         "FILE[@key=value,...] (calibrate "
         "--input's keys, e.g. "
         "series=NAME or config=NAME,op=NAME for a table)")
      ->required();
  sub->add_option("--nodes", o->nodes, "Nodes (default: from the log's rank lines)");
  sub->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (default: from the log's rank lines)");
  sub->add_option("--gpus-per-thread", o->gpus_per_thread,
                  "GPUs one host thread drives, nccl-tests -g (default: the log header's nGpus, else 1)");
  sub->add_option("--cuda-graph", o->cuda_graph,
                  "on|off: the run replayed its calls from a CUDA graph, nccl-tests -G "
                  "(default: the log header's graph:)");
  sub->add_flag(
      "--in-place", o->in_place,
      "Validate the in-place time column (nccl-tests' second half; a published table: its numbers are "
      "in-place); default: out-of-place");
  sub->add_option("--op", o->op, "Collective, when the log does not say (all_reduce, all_gather, ...)");
  sub->add_option(
      "--run", o->run,
      "Which nccl-tests run of a log that holds several (1 = the first table); default: the one run of "
      "--op, else the only run");
  sub->add_option("--algo", o->algo,
                  "Force algorithms like NCCL_ALGO (ring, tree, nvls, nvlstree, pat, collnetdirect); "
                  "default: the NCCL_ALGO the log shows "
                  "(NCCL INFO 'set by environment', mpirun -x), else NCCL's choice");
  sub->add_option(
      "--proto", o->proto,
      "Force protocols like NCCL_PROTO (ll, ll128, simple); default: the log's NCCL_PROTO, as for --algo");
  sub->add_option("--min-channels", o->min_channels,
                  "Like NCCL_MIN_CTAS (default: the log's NCCL_MIN_CTAS / NCCL_MIN_NCHANNELS)");
  sub->add_option("--max-channels", o->max_channels,
                  "Like NCCL_MAX_CTAS (default: the log's NCCL_MAX_CTAS / NCCL_MAX_NCHANNELS)");
  sub->add_option("--nvls", o->nvls,
                  "on|off, like NCCL_NVLS_ENABLE (1 or 0; default: the log's NCCL_NVLS_ENABLE)");
  sub->add_option("--collnet", o->collnet, "on|off, like NCCL_COLLNET_ENABLE with a SHARP plugin loaded (default off)");
  sub->add_option("--mnnvl", o->mnnvl,
                  "on|off, like NCCL_MNNVL_ENABLE (1 or 0); off: the nodes of a multi-node NVLink domain "
                  "(GB200 NVL72) talk over their NICs (default: the log's NCCL_MNNVL_ENABLE or 'MNNVL 0' "
                  "line, else the cluster's domains)");
  sub->add_option(
      "--nccl-version", o->nccl_version,
      "Whose NCCL release picks algorithm, protocol, channels and chunks: 2.26.2 (2.26.x), "
      "2.27.7 (2.27.6-7), 2.28.9, 2.29.3, 2.29.7 or 2.30.7, or a line 2.26 ... 2.30 (default: the "
      "NCCL version the log printed, its nearest modeled release noted; else 2.28.9)");
  sub->add_option("--min-bytes", o->min_bytes, "Only sizes >= this (e.g. 1M)");
  sub->add_option("--max-bytes", o->max_bytes, "Only sizes <= this");
  sub->add_option("--profile", o->profile, "Calibration profile (file or shipped name; default: the GPU generation's)");
  sub->add_option("--format", o->format, "text, csv or json");
  sub->add_flag("--breakdown", o->breakdown, "Show each layer's contribution");
  sub->add_option(
      "--plot", o->plot,
      "Write a PNG of measured vs predicted bus bandwidth and the error per size here, with its .dat "
      "and .gp next to it (gnuplot)");
  on_selected(sub, [o] { run_validate(*o); });
}

}  // namespace commstack::cli
