// `commstack replay`: replays a recorded trace (Kineto / PyTorch profiler JSON, Chakra JSON, an
// NCCL_DEBUG=INFO log) on a cluster: measured compute and CPU time are kept, communication is
// re-simulated on the cluster's topology, and the replayed iteration time is printed next to the
// traced one (docs/replay.md, docs/trace-formats.md).
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/option_values.hpp"
#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "common/input_file.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/replay/replay.hpp"
#include "sim/replay/scale_pp.hpp"
#include "sim/report/otf2_writer.hpp"
#include "topologies/cluster.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/importers/load_trace.hpp"

namespace commstack::cli {
namespace {

struct ReplayCliOptions {
  std::string trace, cluster, nodes, scale_dp = "1", scale_pp = "1", compute_profile, traced_gpu, iteration;
  std::string channels = "auto", fidelity = "auto", format = "text", trace_out;
  std::string otf2;
};

workloads::ComputeProfile profile_named(const std::string& flag, const std::string& value) {
  for (const auto& n : workloads::builtin_compute_profile_names()) {
    if (n == value) return workloads::builtin_compute_profile(n);
  }
  if (!is_input_file(value)) {
    throw InputError(fmt::format("{}: '{}' is neither a built-in profile ({}) nor a readable file", flag, value,
                                 fmt::join(workloads::builtin_compute_profile_names(), ", ")));
  }
  return workloads::load_compute_profile_file(value);
}

// The built-in profile of a GPU name as traces and cluster files write it, if any.
std::optional<std::string> builtin_for_gpu(const std::string& gpu) {
  auto has = [&](const char* s) { return gpu.find(s) != std::string::npos; };
  if (has("A100")) return "a100-80gb";
  if (has("H100")) return "h100-sxm5";
  if (has("H200")) return "h200-sxm";
  if (has("B200")) return "b200";
  return std::nullopt;
}

// --trace-out and --otf2 must not replace the trace (or a file of a trace directory), the cluster or
// a compute profile the replay reads: replaying a trace onto itself would lose the recording.
void refuse_outputs_over_inputs(const ReplayCliOptions& o) {
  const std::vector<InputArg> inputs{{"--trace", o.trace},
                                     {"--cluster", o.cluster, true},
                                     {"--compute-profile", o.compute_profile, true},
                                     {"--traced-gpu", o.traced_gpu, true}};
  refuse_overwriting_inputs("--trace-out", o.trace_out, inputs);
  refuse_overwriting_inputs("--otf2", o.otf2, otf2_written_paths(o.otf2), inputs);
}

// A device or a pipe (/dev/zero, <(zcat t.json.gz)) exists but is no trace file: the importers
// read a trace by path more than once (its format first), and would otherwise call it missing.
void check_trace_path(const std::string& path) {
  if (const std::string kind = special_file_kind(path); !kind.empty())
    throw InputError(fmt::format(
        "--trace {}: it is {}, not a regular file; expected a trace file (Kineto/PyTorch profiler JSON(.gz), "
        "Chakra JSON, NCCL_DEBUG=INFO log, OTF2 archive) or a directory of per-rank files (a stream must be "
        "saved to a file first: a trace is read more than once)",
        path, kind));
}

void run(const ReplayCliOptions& o) {
  refuse_outputs_over_inputs(o);
  if (o.format != "text" && o.format != "json") {
    throw InputError(fmt::format("--format: unknown format '{}'; expected text or json", o.format));
  }
  sim::replay::ReplayOptions ro;
  ro.scale_dp = static_cast<int>(parse_int(o.scale_dp, "--scale-dp", 1, 1 << 16));
  if (o.channels != "auto") ro.comm.channels = static_cast<int>(parse_int(o.channels, "--channels", 1, 64));
  ro.comm.fidelity = sim::fidelity_from_string(o.fidelity);
  auto spec = topologies::load_cluster(o.cluster);

  workloads::importers::LoadOptions lo;
  lo.iteration = o.iteration;
  const int scale_pp = static_cast<int>(parse_int(o.scale_pp, "--scale-pp", 1, 1 << 10));
  check_trace_path(o.trace);
  auto trace = workloads::importers::load_trace(o.trace, lo);
  std::string pp_rule;
  if (scale_pp > 1) trace = sim::replay::scale_pipeline(trace, scale_pp, pp_rule);
  const std::string mnnvl_rule = sim::replay::apply_traced_mnnvl(trace, spec);

  const long long needed = static_cast<long long>(std::max(trace.graph.world, 1)) * ro.scale_dp;
  std::optional<int> nodes;
  if (!o.nodes.empty()) nodes = static_cast<int>(parse_int(o.nodes, "--nodes", 1, 1 << 20));
  else  // enough for the world, and for the hosts the trace names (one node each)
    nodes = std::max(static_cast<int>(std::max<long long>(1, (needed + spec.node.gpus - 1) / spec.node.gpus)),
                     sim::replay::place_ranks(trace, ro.scale_dp, spec.node.gpus).nodes);
  const auto topo = topologies::build_topology(spec, nodes);

  if (!o.compute_profile.empty()) {
    ro.target_gpu = profile_named("--compute-profile", o.compute_profile);
    if (!o.traced_gpu.empty()) {
      ro.traced_gpu = profile_named("--traced-gpu", o.traced_gpu);
    } else if (auto b = builtin_for_gpu(trace.device)) {
      ro.traced_gpu = workloads::builtin_compute_profile(*b);
    } else {
      throw InputError(fmt::format("--compute-profile: the trace names no known GPU ('{}'); pass --traced-gpu with the profile "
                                   "of the GPU it was recorded on",
                                   trace.device));
    }
  }

  sim::Simulator simulator(topo);
  auto result = sim::replay::replay(trace, simulator, ro);
  if (!mnnvl_rule.empty()) result.assumptions.insert(result.assumptions.begin(), mnnvl_rule);
  if (!pp_rule.empty()) result.assumptions.insert(result.assumptions.begin(), pp_rule);
  const std::string cluster = fmt::format("{} x {} nodes ({} GPUs)", spec.name, topo.nodes, topo.gpu_count());
  if (o.format == "json") fmt::print("{}\n", sim::replay::to_json(trace, result, cluster).dump(2));
  else fmt::print("{}", sim::replay::format_text(trace, result, cluster));
  if (!o.trace_out.empty()) {
    std::ofstream out(o.trace_out);
    if (!out) throw InputError(fmt::format("--trace-out: cannot write '{}'", o.trace_out));
    out << sim::replay::perfetto_trace(trace, result).dump() << "\n";
    if (!out) throw InputError(fmt::format("--trace-out: writing '{}' failed", o.trace_out));
  }
  if (!o.otf2.empty()) {
    const auto w = sim::write_otf2(
        sim::otf2_timeline(result.graph, result.schedule, topo, fmt::format("commstack replay: {} on {}", o.trace, cluster)), o.otf2);
    fmt::print(stderr, "commstack: wrote OTF2 archive {} ({} locations, {} events)\n", w.anchor, w.locations, w.events);
  }
}

}  // namespace

void register_replay(CLI::App& app) {
  auto opts = std::make_shared<ReplayCliOptions>();
  CLI::App* sub = app.add_subcommand("replay", "Replay a recorded trace (Kineto, Chakra JSON, NCCL log) on a cluster");
  sub->add_option("--trace", opts->trace, "Trace file, or a directory of per-rank files")->required();
  sub->add_option("--cluster", opts->cluster, "Cluster preset name or JSON file")->required();
  sub->add_option("--nodes", opts->nodes,
                  "Number of nodes (default: enough for the replayed world, one per host the trace names)");
  sub->add_option("--scale-dp", opts->scale_dp, "Replicate the traced job K times as data parallel (docs/replay.md)");
  sub->add_option("--scale-pp", opts->scale_pp,
                  "Make the pipeline K times deeper: each traced stage becomes K stages (commstack OTF2 traces; docs/replay.md)");
  sub->add_option("--compute-profile", opts->compute_profile,
                  "Rescale measured GPU compute to this GPU (built-in profile or JSON file; default: keep as traced)");
  sub->add_option("--traced-gpu", opts->traced_gpu, "Compute profile of the traced GPU (default: from the trace's device)");
  sub->add_option("--iteration", opts->iteration, "Kineto: ProfilerStep number to replay (default: the last in every file)");
  sub->add_option("--channels", opts->channels, "Rings per collective (default auto: one per NIC)");
  sub->add_option("--fidelity", opts->fidelity, "Collective fidelity: auto, chunk, step, edge");
  sub->add_option("--format", opts->format, "text or json");
  sub->add_option("--trace-out", opts->trace_out, "Write a Perfetto timeline with the traced and the replayed run");
  sub->add_option("--otf2", opts->otf2, "Write the replayed timeline as an OTF2 archive (Vampir) into this directory");
  on_selected(sub, [opts] { run(*opts); });
}

}  // namespace commstack::cli
