// `commstack collective`: predict an nccl-tests sweep (all_reduce_perf & co.) of one collective
// over every GPU of a cluster, with the calibrated stack model (sim/stack) or, with --profile none,
// the SimGrid fabric simulation of the algorithms' flows (sim/algorithms, sim/engine).
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/option_values.hpp"
#include "cli/output_paths.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "sim/algorithms/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/protocol/protocol.hpp"
#include "sim/report/breakdown.hpp"
#include "sim/report/otf2_writer.hpp"
#include "sim/report/sweep.hpp"
#include "sim/report/trace.hpp"
#include "sim/select/nccl_search.hpp"
#include "sim/stack/predict.hpp"
#include "topologies/analysis.hpp"
#include "topologies/cluster.hpp"

namespace commstack::cli {
namespace {

struct CollectiveOptions {
  std::string cluster;
  std::string nodes;
  std::string gpus_per_node;
  std::string op = "allreduce";
  std::string min_bytes = "8";
  std::string max_bytes = "16G";
  std::string step_factor = "2";
  std::string channels = "auto";
  std::string chunk_bytes = "auto";
  std::string step_overhead = "0";
  std::string alltoall_peers = "0";
  std::string fidelity = "auto";
  std::string format = "nccl-tests";
  std::string trace;
  std::string otf2;
  // Which model predicts the sweep (docs/stack-model.md): "auto" (default) the calibrated stack
  // model with the shipped profile of the cluster's GPU generation (NCCL's algorithm/protocol
  // choice, per-layer costs); a profile file or name; "none" the uncalibrated SimGrid fabric
  // simulation of ring-family flows (the only mode with --trace, --otf2, --channels, ...).
  std::string profile = "auto";
  std::string algo, proto, min_channels, max_channels, nvls, collnet, buffsize, gpus_per_thread, cuda_graph,
      nccl_version, mnnvl, nvls_chunksize, nvlstree_max_chunksize;
  bool breakdown = false;
};

// Default channels: one ring per NIC of a node, so that a multi-node ring uses every NIC (rail);
// 1 when the topology has no NIC (one node with NVSwitch needs one ring to fill every GPU port).
int default_channels(const topologies::Topology& topo) {
  int nics = 0;
  for (const auto& v : topo.vertices()) {
    if (v.kind == topologies::VertexKind::nic && v.node == 0) ++nics;
  }
  return std::max(1, std::min(nics, 64));
}

// NCCL's Simple protocol chunk: 4 MiB buffer / 8 FIFO slots = 512 KiB per slot; ring
// all-reduce / all-gather / reduce-scatter move 4 slots per step (2 MiB), broadcast / reduce one
// slot, as does a tree all-reduce; point-to-point flows are not chunked here (a chunked connection
// only overlaps latencies). NVLS moves 128 KiB of each rank's shard at a time (NCCL_NVLS_CHUNKSIZE).
double default_chunk(sim::CollectiveOp op, sim::Algorithm algorithm) {
  // NCCL's Tree and CollNetDirect move one slot per step (src/enqueue.cc: chunkSteps 1 but for
  // Ring/Simple; CollNetDirect a slot per head), CollNetChain at most 256 KiB.
  if (algorithm == sim::Algorithm::tree || algorithm == sim::Algorithm::collnet_direct) return 512.0 * 1024;
  if (algorithm == sim::Algorithm::collnet_chain) return 256.0 * 1024;
  if (algorithm == sim::Algorithm::nvls || algorithm == sim::Algorithm::nvlstree) return 128.0 * 1024;
  if (algorithm == sim::Algorithm::pat) return 0;  // one transfer per aggregated step (pat.cpp)
  switch (op) {
    case sim::CollectiveOp::allreduce:
    case sim::CollectiveOp::allgather:
    case sim::CollectiveOp::reducescatter: return 2.0 * 1024 * 1024;
    case sim::CollectiveOp::broadcast:
    case sim::CollectiveOp::reduce: return 512.0 * 1024;
    default: return 0;
  }
}

// --algo with --profile none: the SimGrid simulation's algorithm (ring by default), checked
// against the op and the fabric-only flags; the model line of the sweep's header says which.
sim::Algorithm fabric_algorithm(const CollectiveOptions& o, sim::CollectiveOp op) {
  const sim::Algorithm algorithm = o.profile == "none" && !o.algo.empty()
                                       ? sim::algorithm_from_string(o.algo, "--algo")
                                       : sim::Algorithm::ring;
  if (algorithm == sim::Algorithm::tree && op != sim::CollectiveOp::allreduce)
    throw InputError(fmt::format(
        "--algo {}: the tree algorithm runs all-reduce only (as NCCL's Tree), not {}", o.algo, o.op));
  if (algorithm == sim::Algorithm::pat && o.chunk_bytes != "auto")
    throw InputError(
        fmt::format("--chunk-bytes {}: PAT moves each aggregated step as one transfer, there is no chunk to "
                    "set; drop the flag",
                    o.chunk_bytes));
  const bool in_switch = algorithm == sim::Algorithm::nvls || algorithm == sim::Algorithm::nvlstree ||
                         algorithm == sim::Algorithm::collnet_direct ||
                         algorithm == sim::Algorithm::collnet_chain;
  if (in_switch && !o.otf2.empty())
    throw InputError(
        fmt::format("--otf2 records messages between ranks, and --algo {} moves its data through switches "
                    "that reduce: use "
                    "--trace for its flows",
                    o.algo));
  return algorithm;
}

std::string fabric_model_text(sim::Algorithm algorithm, int channels) {
  return fmt::format(
      "uncalibrated SimGrid fabric simulation, {} channel(s){} (--profile none)", channels,
      algorithm == sim::Algorithm::tree   ? ", NCCL's double binary tree"
      : algorithm == sim::Algorithm::nvls ? ", NVLS (reduction and multicast in the NVSwitch)"
      : algorithm == sim::Algorithm::nvlstree
          ? ", NVLSTree (NVLS in each NVLink domain, NCCL's double binary tree between them)"
      : algorithm == sim::Algorithm::pat ? ", PAT (binomial trees, one aggregated transfer per step)"
      : algorithm == sim::Algorithm::collnet_direct
          ? ", CollNetDirect (scatter to the NIC heads, SHARP reduction in the fabric switches, gather)"
      : algorithm == sim::Algorithm::collnet_chain
          ? ", CollNetChain (a chain to the NIC head in each node, SHARP reduction in the fabric switches)"
          : "");
}

// The stack model's knobs from the NCCL-like flags (NCCL_ALGO, NCCL_PROTO, NCCL_MIN/MAX_CTAS, ...).
sim::stack::Knobs stack_knobs(const CollectiveOptions& o) {
  sim::stack::Knobs knobs;
  if (!o.algo.empty()) knobs.env.algo = o.algo;
  if (!o.proto.empty()) knobs.env.proto = o.proto;
  if (!o.min_channels.empty())
    knobs.env.min_ctas = static_cast<int>(parse_int(o.min_channels, "--min-channels", 1, 64));
  if (!o.max_channels.empty())
    knobs.env.max_ctas = static_cast<int>(parse_int(o.max_channels, "--max-channels", 1, 64));
  if (!o.nvls.empty()) knobs.env.nvls_enable = parse_nccl_switch(o.nvls, "--nvls") ? 1 : 0;
  if (!o.collnet.empty()) knobs.collnet = parse_nccl_switch(o.collnet, "--collnet");
  if (!o.cuda_graph.empty()) knobs.cuda_graph = parse_on_off(o.cuda_graph, "--cuda-graph");
  if (!o.buffsize.empty()) {
    knobs.buffsize = parse_bytes(o.buffsize, "--buffsize");
    sim::protocol::check_buffer_bytes(knobs.buffsize, "--buffsize");
  }
  if (!o.nccl_version.empty())
    knobs.nccl_version = select::parse_nccl_version(o.nccl_version, "--nccl-version");
  // NCCL's chunk knobs: a positive byte count (0 is not "unset" here: it is a typo).
  const auto chunk_bytes = [](const std::string& text, const char* flag) {
    const std::uint64_t v = parse_bytes(text, flag);
    if (v == 0 || v > (std::uint64_t{1} << 30))
      throw InputError(fmt::format("{} {}: expected 1 byte .. 1G", flag, text));
    return static_cast<std::int64_t>(v);
  };
  if (!o.nvls_chunksize.empty()) knobs.env.nvls_chunksize = chunk_bytes(o.nvls_chunksize, "--nvls-chunksize");
  if (!o.nvlstree_max_chunksize.empty())
    knobs.env.nvlstree_max_chunksize = chunk_bytes(o.nvlstree_max_chunksize, "--nvlstree-max-chunksize");
  if (!o.gpus_per_thread.empty())
    knobs.gpus_per_thread = static_cast<int>(parse_int(o.gpus_per_thread, "--gpus-per-thread", 1, 1024));
  select::EnableMatrix check;  // names the flag for an unknown algorithm / protocol
  if (knobs.env.algo) select::apply_nccl_list(*knobs.env.algo, "--algo", true, check);
  if (knobs.env.proto) select::apply_nccl_list(*knobs.env.proto, "--proto", false, check);
  return knobs;
}

// The calibrated stack model, when it predicts the sweep; empty for the SimGrid fabric simulation.
struct StackModel {
  std::optional<sim::stack::Predictor> predictor;
  sim::stack::Profile profile;
};

// Which model predicts the sweep, with its line in the header (`info.model`). The stack model needs a
// GPU generation it knows; with --profile auto a cluster whose GPU it does not know is simulated on
// the fabric alone, and the header says so.
StackModel choose_model(const CollectiveOptions& o, const topologies::ClusterSpec& spec,
                        const topologies::Topology& topo, sim::Algorithm algorithm, int channels,
                        sim::SweepInfo& info) {
  const bool fabric_flags = o.channels != "auto" || o.chunk_bytes != "auto" || o.step_overhead != "0" ||
                            o.alltoall_peers != "0" || o.fidelity != "auto" || !o.trace.empty() ||
                            !o.otf2.empty();
  // --algo also picks the SimGrid simulation's all-reduce algorithm (ring or tree).
  const bool stack_flags = o.breakdown || (!o.algo.empty() && o.profile != "none") || !o.proto.empty() ||
                           !o.min_channels.empty() || !o.max_channels.empty() || !o.nvls.empty() ||
                           !o.collnet.empty() || !o.buffsize.empty() || !o.gpus_per_thread.empty() ||
                           !o.cuda_graph.empty() || !o.nccl_version.empty() || !o.nvls_chunksize.empty() ||
                           !o.nvlstree_max_chunksize.empty();
  StackModel model;
  if (o.profile == "auto" && sim::stack::sm_of_gpu_model(spec.node.gpu_model) == 0) {
    if (stack_flags)
      throw InputError(fmt::format(
          "--breakdown/--algo/--proto/...: these need the stack model, which knows A100, H100/H200/GH200 and "
          "B200/GB200 but not cluster {}'s GPU '{}'; drop them to run the uncalibrated SimGrid fabric "
          "simulation",
          o.cluster, spec.node.gpu_model));
    info.model = fmt::format(
        "uncalibrated SimGrid fabric simulation, {} channel(s) (no calibration profile for GPU '{}')",
        channels, spec.node.gpu_model);
    return model;
  }
  if (o.profile == "none") {
    if (stack_flags)
      throw InputError(
          "--breakdown/--proto/--min-channels/--max-channels/--nvls/--collnet/--buffsize/"
          "--nvls-chunksize/--nvlstree-max-chunksize/--gpus-per-thread/--cuda-graph/--nccl-version need the "
          "stack model: "
          "drop --profile none (or pass a profile file); with --profile none, --algo takes ring, tree, nvls, "
          "nvlstree, pat, collnetdirect or collnetchain");
    info.model = fabric_model_text(algorithm, channels);
    return model;
  }
  if (fabric_flags)
    throw InputError(
        "--channels/--chunk-bytes/--step-overhead/--alltoall-peers/--fidelity/--trace/--otf2 shape or record "
        "the "
        "SimGrid fabric simulation: add --profile none (the default is the calibrated stack model)");
  const sim::stack::Knobs knobs = stack_knobs(o);
  model.predictor.emplace(spec, topo.nodes, topo.gpus_per_node, knobs);
  const int sm = model.predictor->geometry().sm;
  model.profile = o.profile == "auto" ? sim::stack::default_profile_for_gpu(spec.node.gpu_model)
                                      : sim::stack::load_profile(o.profile);
  if (model.profile.sm != sm)
    throw InputError(fmt::format("--profile {}: a profile for sm {} cannot predict cluster {} (sm {})",
                                 o.profile, model.profile.sm, o.cluster, sm));
  info.model = fmt::format("calibrated stack model, profile {} ({}), NCCL {} selection", model.profile.name,
                           model.profile.origin, select::to_string(knobs.nccl_version));
  // The communicator as NCCL's topology search builds it (what NCCL_DEBUG=INFO prints at init).
  // The coll channels after --min-channels / --max-channels, as NCCL prints them after NCCL_MIN/MAX_CTAS.
  info.model += "; " + select::describe_comm(model.predictor->shape(), knobs.env);
  info.channels = 0;  // NCCL's channels are per call (the breakdown, CSV and JSON rows)
  // nccl-tests' header says what -g and -G the prediction models (validate reads them back).
  info.gpus_per_thread = knobs.gpus_per_thread;
  info.graph = knobs.cuda_graph ? 1 : 0;
  return model;
}

// One size with the stack model: the point (with its layers), and its --breakdown line.
std::string predict_point(const StackModel& model, sim::CollectiveOp op, int n, sim::SweepPoint& p) {
  const auto pr = model.predictor->predict(op, p.size.bytes, model.profile);
  p.stack_model = true;
  p.time_s = pr.time_s;
  p.algorithm = pr.algorithm;
  p.protocol = select::to_string(pr.proto);
  p.nccl_channels = pr.channels;
  p.breakdown = pr.breakdown;
  sim::set_bandwidths(p, op, n);
  return fmt::format(
      "# {:>12} {}/{}/{} {} = {:.2f} us{}", p.size.bytes, pr.algorithm, select::to_string(pr.proto),
      pr.channels, sim::breakdown_text(pr.breakdown), pr.time_s * 1e6,
      // Where the fabric is slower than the NICs for this pattern, say by how much.
      pr.contention_factor > 1.0 ? fmt::format(" (fabric {:.3f}x slower than the NICs)", pr.contention_factor)
                                 : "");
}

// One size with the SimGrid fabric simulation (a zero-byte call simulates nothing); the run's flows
// when `record`.
std::vector<sim::FlowRecord> simulate_point(sim::Simulator& simulator, const topologies::Topology& topo,
                                            const sim::CollectiveSpec& base, bool auto_chunk, bool record,
                                            sim::SweepPoint& p) {
  sim::CollectiveSpec cs = base;
  cs.bytes = static_cast<double>(p.size.bytes);
  // NCCL shrinks CollNet's chunk for calls too small to fill its pipeline.
  if (auto_chunk && cs.bytes > 0 &&
      (cs.algorithm == sim::Algorithm::collnet_direct || cs.algorithm == sim::Algorithm::collnet_chain))
    cs.chunk_bytes = sim::collnet_nccl_chunk(topo, cs);
  sim::FlowGraph graph;
  if (p.size.bytes > 0) {
    const sim::CollectivePlan plan = sim::add_collective(graph, topo, cs);
    p.fidelity = plan.fidelity;
    p.flows = plan.flows;
    p.chunks = plan.chunks;
  }
  sim::RunResult r = simulator.run(graph, record);
  p.time_s = r.duration_s;
  return std::move(r.flows);
}

// The largest size's flows, as a Perfetto trace (--trace) and an OTF2 archive (--otf2).
void write_recordings(const CollectiveOptions& o, const topologies::Topology& topo, sim::CollectiveOp op,
                      const sim::SweepInfo& info, const std::vector<sim::SweepPoint>& points,
                      const std::vector<sim::FlowRecord>& last_flows) {
  if (!o.trace.empty()) {
    std::ofstream out(o.trace);
    if (!out) throw InputError(fmt::format("--trace {}: cannot open the file for writing", o.trace));
    out << sim::format_trace(topo, last_flows);
    if (!out) throw InputError(fmt::format("--trace {}: write failed", o.trace));
  }
  if (!o.otf2.empty()) {
    const auto w = sim::write_otf2(
        sim::otf2_sweep_timeline(topo, op, points, last_flows,
                                 fmt::format("commstack collective: {} on {}", o.op, info.cluster)),
        o.otf2);
    fmt::print(stderr, "commstack: wrote OTF2 archive {} ({} locations, {} events)\n", w.anchor, w.locations,
               w.events);
  }
}

// --trace and --otf2 must not replace the cluster or profile file the run reads.
void refuse_outputs_over_inputs(const CollectiveOptions& o) {
  const std::vector<InputArg> inputs{{"--cluster", o.cluster, true}, {"--profile", o.profile, true}};
  refuse_overwriting_inputs("--trace", o.trace, inputs);
  refuse_overwriting_inputs("--otf2", o.otf2, otf2_written_paths(o.otf2), inputs);
}

void run(const CollectiveOptions& o) {
  refuse_outputs_over_inputs(o);
  const sim::CollectiveOp op = sim::collective_op_from_string(o.op);
  const sim::Fidelity fidelity = sim::fidelity_from_string(o.fidelity);
  const std::uint64_t min_bytes = parse_bytes(o.min_bytes, "--min-bytes");
  const std::uint64_t max_bytes = parse_bytes(o.max_bytes, "--max-bytes");
  // 512 TiB: far beyond any buffer a GPU holds, and below where NCCL's cost model (float
  // microseconds) stops ranking the algorithms.
  constexpr std::uint64_t kMaxCollectiveBytes = std::uint64_t{1} << 49;
  if (max_bytes > kMaxCollectiveBytes)
    throw InputError(
        fmt::format("--max-bytes {}: expected at most 512T ({} bytes)", o.max_bytes, kMaxCollectiveBytes));
  if (min_bytes > max_bytes) {
    throw InputError(fmt::format("--min-bytes {} is larger than --max-bytes {}; expected min <= max", o.min_bytes,
                                 o.max_bytes));
  }
  const auto factor = static_cast<std::uint64_t>(parse_int(o.step_factor, "--step-factor", 2, 1 << 20));
  if (o.format != "nccl-tests" && o.format != "csv" && o.format != "json") {
    throw InputError(fmt::format("--format: unknown format '{}'; expected nccl-tests, csv or json", o.format));
  }
  std::optional<int> nodes;
  std::optional<int> gpn;
  if (!o.nodes.empty()) nodes = static_cast<int>(parse_int(o.nodes, "--nodes", 1, 1 << 20));
  if (!o.gpus_per_node.empty()) gpn = static_cast<int>(parse_int(o.gpus_per_node, "--gpus-per-node", 1, 1024));
  const double overhead = parse_latency(o.step_overhead, "--step-overhead");
  const int peers = static_cast<int>(parse_int(o.alltoall_peers, "--alltoall-peers", 0, 1 << 20));

  auto spec = topologies::load_cluster(o.cluster);
  // --mnnvl off (NCCL_MNNVL_ENABLE=0): each node is its own NVLink domain, for the stack model and the
  // fabric simulation alike.
  const bool mnnvl = o.mnnvl.empty() || parse_nccl_switch(o.mnnvl, "--mnnvl");
  if (!mnnvl) spec.node.nvlink_domain_nodes = 1;
  const auto topo = topologies::build_topology(spec, nodes, gpn);
  const int channels = o.channels == "auto" ? default_channels(topo)
                                            : static_cast<int>(parse_int(o.channels, "--channels", 1, 64));
  const sim::Algorithm algorithm = fabric_algorithm(o, op);
  const double chunk = o.chunk_bytes == "auto"
                           ? default_chunk(op, algorithm)
                           : static_cast<double>(parse_bytes(o.chunk_bytes, "--chunk-bytes"));

  sim::CollectiveSpec base;
  base.op = op;
  base.algorithm = algorithm;
  for (int r = 0; r < topo.gpu_count(); ++r) base.ranks.push_back(r);
  base.channels = channels;
  base.chunk_bytes = chunk;
  base.fidelity = fidelity;
  base.step_overhead_s = overhead;
  base.max_concurrent_peers = peers;
  const int n = topo.gpu_count();

  sim::SweepInfo info;
  info.op = op;
  info.cluster = topo.name.empty() ? spec.name : topo.name;
  info.nranks = n;
  info.nodes = topo.nodes;
  info.gpus_per_node = topo.gpus_per_node;
  info.channels = channels;
  info.min_bytes = min_bytes;
  info.max_bytes = max_bytes;
  info.step_factor = factor;
  // --breakdown with --format csv / json: each row's layers, as validate prints them; the text
  // table is followed by '#' lines instead.
  info.breakdown = o.breakdown && o.format != "nccl-tests";
  const StackModel model = choose_model(o, spec, topo, algorithm, channels, info);
  const bool use_stack = model.predictor.has_value();
  if (use_stack) {
    if (const std::string note = model.predictor->p2p_proto_note(op); !note.empty())
      fmt::print(stderr, "commstack: note: {}\n", note);
  }
  if (const std::string note = topologies::several_nics_note(topo); !use_stack && !note.empty())
    fmt::print(stderr, "commstack: note: {}\n", note);

  std::vector<std::string> breakdown_lines;
  sim::Simulator simulator(topo);
  std::vector<sim::SweepPoint> points;
  std::vector<sim::FlowRecord> last_flows;
  const auto sizes = sim::size_sweep(min_bytes, max_bytes, factor);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sim::SweepPoint p;
    p.size = sim::sweep_size(op, sizes[i], n, info.type_size);
    // A zero-element collective returns at once in NCCL: nothing to predict (time and layers 0, no
    // algorithm), nor to simulate.
    if (use_stack) {
      if (p.size.bytes > 0) breakdown_lines.push_back(predict_point(model, op, n, p));
      p.stack_model = true;
      points.push_back(p);
      continue;
    }
    const bool record = (!o.trace.empty() || !o.otf2.empty()) && i + 1 == sizes.size();
    auto flows = simulate_point(simulator, topo, base, o.chunk_bytes == "auto", record, p);
    sim::set_bandwidths(p, op, n);
    points.push_back(p);
    if (record) last_flows = std::move(flows);
  }

  write_recordings(o, topo, op, info, points, last_flows);
  if (o.format == "csv") {
    fmt::print("{}", sim::format_csv(info, points));
  } else if (o.format == "json") {
    fmt::print("{}", sim::format_json(info, points));
  } else {
    fmt::print("{}", sim::format_nccl_tests(info, points));
  }
  if (o.breakdown && !info.breakdown) {
    fmt::print("# stack-model breakdown per size (profile {}): algorithm/protocol/channels, layers in us\n",
               model.profile.name);
    for (const auto& line : breakdown_lines) fmt::print("{}\n", line);
  }
}

}  // namespace

void register_collective(CLI::App& app) {
  auto o = std::make_shared<CollectiveOptions>();
  CLI::App* sub = app.add_subcommand(
      "collective",
      "Predict an nccl-tests sweep of one collective over all GPUs of a cluster (calibrated stack model; "
      "--profile none: SimGrid fabric simulation)");
  sub->add_option("--cluster", o->cluster, "Cluster preset name or cluster JSON file")->required();
  sub->add_option("--nodes", o->nodes, "Number of nodes (default: the cluster's)");
  sub->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (default: the cluster's)");
  sub->add_option(
         "--op", o->op,
         "allreduce | allgather | reducescatter | alltoall | broadcast | reduce | sendrecv (nccl-tests' "
         "names too: all_reduce, all_reduce_perf)")
      ->capture_default_str();
  sub->add_option("-b,--min-bytes", o->min_bytes, "Smallest size (nccl-tests -b; K/M/G suffixes)")->capture_default_str();
  sub->add_option("-e,--max-bytes", o->max_bytes, "Largest size (nccl-tests -e)")->capture_default_str();
  sub->add_option("-f,--step-factor", o->step_factor, "Size multiplication factor (nccl-tests -f), >= 2")
      ->capture_default_str();
  sub->add_option("--channels", o->channels, "Parallel rings (auto: one per NIC of a node, at least 1)")
      ->capture_default_str();
  sub->add_option(
         "--chunk-bytes", o->chunk_bytes,
         "Pipeline chunk per channel step (auto: NCCL Simple, 2M rings / 512K chains and trees; nvls 128K of "
         "each rank's shard, nvlstree of each half-shard; collnetdirect 512K of each head's share, "
         "collnetchain 256K, both shrunk for small calls as NCCL does; pat none; 0: none)")
      ->capture_default_str();
  sub->add_option("--step-overhead", o->step_overhead, "Software overhead per step, e.g. 2us (uncalibrated: 0)")
      ->capture_default_str();
  sub->add_option("--alltoall-peers", o->alltoall_peers, "alltoall: peers each rank sends to at once (0: all)")
      ->capture_default_str();
  sub->add_option("--fidelity", o->fidelity, "auto | chunk | step | edge")->capture_default_str();
  sub->add_option("--format", o->format, "nccl-tests | csv | json")->capture_default_str();
  sub->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace of the largest size's flows to this file");
  sub->add_option("--otf2", o->otf2, "Write the sweep (and the largest size's flows) as an OTF2 archive into this directory");
  sub->add_option(
         "--profile", o->profile,
         "auto: the calibrated stack model with the shipped profile of the cluster's GPU generation; a "
         "profile file or shipped name (h100...); none: the uncalibrated SimGrid fabric simulation "
         "(needed by --trace, --otf2, --channels, --chunk-bytes, --step-overhead, --alltoall-peers, "
         "--fidelity)")
      ->capture_default_str();
  sub->add_option(
      "--algo", o->algo,
      "Stack model: force algorithms like NCCL_ALGO; with --profile none: ring (default), tree (all-reduce: "
      "NCCL's double binary tree across nodes, chains inside them) or nvls (all-reduce, reduce-scatter, "
      "all-gather in one NVLink domain: the NVSwitch reduces and multicasts), nvlstree (all-reduce across "
      "NVLink domains: NVLS in each, NCCL's double binary tree between them), pat (all-gather, "
      "reduce-scatter at one GPU per node: NCCL's binomial trees), collnetdirect or collnetchain (all-reduce "
      "across nodes of a fat tree: the InfiniBand switches reduce, SHARP)");
  sub->add_option("--proto", o->proto, "Stack model: force protocols like NCCL_PROTO");
  sub->add_option("--min-channels", o->min_channels, "Stack model: like NCCL_MIN_CTAS");
  sub->add_option("--max-channels", o->max_channels, "Stack model: like NCCL_MAX_CTAS");
  sub->add_option("--nvls", o->nvls, "Stack model: on|off, like NCCL_NVLS_ENABLE (1 or 0)");
  sub->add_option("--collnet", o->collnet,
                  "Stack model: on|off, like NCCL_COLLNET_ENABLE with a SHARP plugin loaded (default off)");
  sub->add_option(
      "--mnnvl", o->mnnvl,
      "on|off, like NCCL_MNNVL_ENABLE (1 or 0); off: the nodes of a multi-node NVLink domain (GB200 "
      "NVL72) keep NVLink inside each node and talk over their NICs, as when NCCL cannot use the "
      "fabric (no IMEX channel; its log says MNNVL 0). Default: the cluster's domains");
  sub->add_option(
      "--buffsize", o->buffsize,
      "Stack model: like NCCL_BUFFSIZE, the Simple protocol's FIFO per connection (at least 128 bytes; "
      "NCCL's default 4M)");
  sub->add_option(
      "--nvls-chunksize", o->nvls_chunksize,
      "Stack model: like NCCL_NVLS_CHUNKSIZE, the chunk NVLS and NVLSTree start from (NCCL's default "
      "128K; NCCL 2.30 tunes it on Blackwell)");
  sub->add_option(
      "--nvlstree-max-chunksize", o->nvlstree_max_chunksize,
      "Stack model: like NCCL_NVLSTREE_MAX_CHUNKSIZE, NVLSTree's chunk ceiling (NCCL's default 64K "
      "from 4 NVLink domains)");
  sub->add_option("--gpus-per-thread", o->gpus_per_thread,
                  "Stack model: GPUs one host thread drives, like nccl-tests -g (host time = that many launches)");
  sub->add_option("--cuda-graph", o->cuda_graph,
                  "Stack model: on|off, calls replayed from a CUDA graph like nccl-tests -G (no per-call host time)");
  sub->add_option("--nccl-version", o->nccl_version,
                  "Stack model: whose NCCL release picks algorithm, protocol, channels and chunks: 2.26.2 "
                  "(2.26.x), 2.27.7 (2.27.6-7), 2.28.9 (default), 2.29.3, 2.29.7 or 2.30.7, or a line "
                  "2.26 ... 2.30");
  sub->add_flag("--breakdown", o->breakdown, "Stack model: print each layer's contribution per size");
  on_selected(sub, [o] { run(*o); });
}

}  // namespace commstack::cli
