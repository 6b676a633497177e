// commstack-bench: measures NCCL collectives (every legal algorithm x protocol, channel sweeps),
// point-to-point pairs, kernel throughput and overheads, and cuBLAS GEMM on a GPU cluster, and
// writes one JSON report (calibration/bench/report.hpp) for `commstack calibrate`.
// Exit status: 0 ok, 2 bad flags, 3 the machine cannot run it (no GPU, too few GPUs, NCCL/MPI
// failure), 4 watchdog timeout. docs/calibration-bench.md has the usage.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "calibration/bench/gpu_util.hpp"
#include "calibration/bench/launch_env.hpp"
#include "calibration/bench/measure.hpp"
#include "calibration/bench/report.hpp"
#include "common/error.hpp"
#include "common/units.hpp"

namespace commstack::bench {
namespace {

struct Options {
  std::string preset = "standard";
  std::string output;
  std::vector<std::string> ops;
  std::string min_bytes, max_bytes;
  int warmup = -1, iters = -1, reps = -1;
  int gpus = 0;  // single-process: GPUs to use (0 = all)
  double init_timeout_s = 120;
  double op_timeout_s = 900;
  bool no_matrix = false, no_p2p = false, no_kernels = false, no_gemm = false;
  bool collnet = false;
  std::string nvls = "auto";
  std::vector<std::int64_t> hidden{4096, 8192, 12288, 16384};
  std::int64_t tokens = 4096;
  std::string p2p_sizes = "8,64K,1M,16M,256M";
  bool plan_only = false;
  int plan_nodes = 1, plan_gpus_per_node = 8, plan_sm = 90;
};

Preset preset_from(const Options& o) {
  Preset p = preset_by_name(o.preset, "--preset");
  if (!o.ops.empty()) {
    p.ops.clear();
    for (const auto& s : o.ops) p.ops.push_back(op_from_name(s, "--ops"));
  }
  if (!o.min_bytes.empty()) p.min_bytes = parse_bytes(o.min_bytes, "--min-bytes");
  if (!o.max_bytes.empty()) p.max_bytes = parse_bytes(o.max_bytes, "--max-bytes");
  if (o.warmup >= 0) p.warmup = o.warmup;
  if (o.iters >= 0) p.iters = o.iters;
  if (o.reps >= 0) p.reps = o.reps;
  if (p.iters < 1) throw InputError("--iters: expected an integer >= 1");
  if (p.reps < 1) throw InputError("--reps: expected an integer >= 1");
  if (o.no_matrix) p.algo_proto_matrix = false;
  if (o.no_p2p) p.p2p = false;
  if (o.no_kernels) p.kernels = false;
  if (o.no_gemm) p.gemm = false;
  if (o.init_timeout_s <= 0) throw InputError("--init-timeout: expected seconds > 0");
  if (o.op_timeout_s <= 0) throw InputError("--op-timeout: expected seconds > 0");
  if (o.tokens < 1) throw InputError("--tokens: expected an integer >= 1");
  for (auto h : o.hidden)
    if (h < 1) throw InputError("--hidden: expected hidden sizes >= 1");
  if (o.nvls != "auto" && o.nvls != "on" && o.nvls != "off") throw InputError("--nvls: expected auto, on or off");
  size_ladder(p.min_bytes, p.max_bytes, p.factor);  // validates the range
  return p;
}

std::vector<std::uint64_t> p2p_sizes_from(const Options& o) {
  std::vector<std::uint64_t> out;
  std::stringstream ss(o.p2p_sizes);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(parse_bytes(item, "--p2p-sizes"));
  if (out.empty()) throw InputError("--p2p-sizes: expected a comma-separated list of sizes");
  return out;
}

int print_plan(const Options& o) {
  Machine m{o.plan_nodes, o.plan_gpus_per_node, o.plan_sm, o.nvls != "off", o.collnet};
  if (m.nodes < 1 || m.gpus_per_node < 1) throw InputError("--nodes/--gpus-per-node: expected integers >= 1");
  const SweepPlan plan = plan_sweep(preset_from(o), m);
  const CostEstimate e = estimate_cost(plan);
  fmt::print("preset {}: {} nodes x {} GPUs (sm_{}), {} sizes {}..{}, {} series on {} communicators\n",
             plan.preset.name, m.nodes, m.gpus_per_node, m.sm, plan.sizes.size(), format_bytes(plan.sizes.front()),
             format_bytes(plan.sizes.back()), plan.cases.size(), e.communicators);
  for (const auto& c : plan.cases)
    fmt::print("  {:<15} algo {:<15} proto {:<7} ctas {}\n", to_string(c.op), to_string(c.algo), to_string(c.proto),
               c.ctas);
  for (const auto& s : plan.skipped) fmt::print("  skipped: {}\n", s);
  fmt::print("estimate: {} collective calls, {:.0f} s collectives + {:.0f} s communicator init, {:.1f} min wall, "
             "{:.1f} GPU-minutes\n",
             e.calls, e.collective_s, e.init_s, e.wall_s / 60, e.gpu_minutes);
  return 0;
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(ProcessGroup& pg, const Options& o, const LaunchEnv& env) {
  const Preset preset = preset_from(o);
  const std::vector<std::uint64_t> p2p_sizes = p2p_sizes_from(o);
  if (preset.algo_proto_matrix && (std::getenv("NCCL_ALGO") || std::getenv("NCCL_PROTO")))
    throw InputError("NCCL_ALGO/NCCL_PROTO are set: the bench forces them per communicator; unset them or pass "
                     "--no-matrix to measure only under your setting");
  if (const std::string m = launch_mismatch(env, ProcessGroup::built_with_mpi()); !m.empty()) throw EnvError(m);
  if (ProcessGroup::built_with_mpi() && env.world_size > 1 && pg.size() != env.world_size)
    throw EnvError(fmt::format("MPI reports {} processes but the launcher ({}) started {}: the MPI library this "
                               "bench was built with does not match the mpirun/srun in use",
                               pg.size(), env.source, env.world_size));

  int visible = 0;
  const cudaError_t ce = cudaGetDeviceCount(&visible);
  if (ce != cudaSuccess || visible == 0)
    throw EnvError(fmt::format("no usable GPU: cudaGetDeviceCount failed: {} ({}); check the NVIDIA driver, "
                               "CUDA_VISIBLE_DEVICES and that this node has GPUs",
                               ce == cudaSuccess ? "0 devices" : cudaGetErrorString(ce),
                               ce == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(ce)));
  char host_buf[256] = {};
  gethostname(host_buf, sizeof host_buf - 1);
  const std::string host = host_buf;

  Context ctx;
  ctx.pg = &pg;
  ctx.init_timeout_s = o.init_timeout_s;
  ctx.op_timeout_s = o.op_timeout_s;
  const bool single = pg.size() == 1;
  const int local_gpus = single ? (o.gpus > 0 ? o.gpus : visible) : 1;
  if (single) {
    if (const std::string m = gpu_shortage(local_gpus, visible, host); !m.empty()) throw EnvError(m);
    for (int d = 0; d < local_gpus; ++d) ctx.locals.push_back({d, d});
    ctx.nranks = local_gpus;
    ctx.hostnames.assign(static_cast<std::size_t>(local_gpus), host);
    for (int d = 0; d < local_gpus; ++d) ctx.local_index.push_back(d);
  } else {
    ctx.hostnames = pg.allgather(host);
    ctx.nranks = pg.size();
    for (int r = 0; r < ctx.nranks; ++r) {
      int idx = 0;
      for (int q = 0; q < r; ++q) idx += ctx.hostnames[static_cast<std::size_t>(q)] == ctx.hostnames[static_cast<std::size_t>(r)];
      ctx.local_index.push_back(idx);
    }
    const int mine = ctx.local_index[static_cast<std::size_t>(pg.rank())];
    int on_host = 0;
    for (const auto& h : ctx.hostnames) on_host += h == host;
    // srun --gpus-per-task / --gpu-bind hands each process exactly one visible GPU: use it. Otherwise
    // every process sees the node's GPUs and takes the one at its local index.
    if (visible > 1)
      if (const std::string m = gpu_shortage(on_host, visible, host); !m.empty()) throw EnvError(m);
    ctx.locals.push_back({pg.rank(), visible == 1 ? 0 : mine});
  }

  BenchReport rep;
  auto& mi = rep.machine;
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, ctx.locals.front().device), "cudaGetDeviceProperties");
  mi.gpu_model = prop.name;
  mi.sm = prop.major * 10 + prop.minor;
  int drv = 0, rt = 0, nccl = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  ncclGetVersion(&nccl);
  mi.driver_version = version_text(drv);
  mi.cuda_runtime = version_text(rt);
  mi.nccl_version = fmt::format("{}.{}.{}", nccl / 10000, (nccl / 100) % 100, nccl % 100);
  mi.hostnames = ctx.hostnames;
  mi.nranks = ctx.nranks;
  mi.nodes = static_cast<int>(std::set<std::string>(ctx.hostnames.begin(), ctx.hostnames.end()).size());
  if (ctx.nranks % mi.nodes != 0)
    throw EnvError(fmt::format("{} ranks on {} hosts: every host must run the same number of ranks", ctx.nranks,
                               mi.nodes));
  mi.gpus_per_node = ctx.nranks / mi.nodes;
  mi.launcher = single ? "single-process" : fmt::format("mpi ({})", pg.library_version());
  mi.nccl_env = nccl_environment();
  // The topology dump is written by NCCL at the first communicator init (rank 0).
  if (!std::getenv("NCCL_TOPO_DUMP_FILE")) setenv("NCCL_TOPO_DUMP_FILE", (o.output + ".topo.xml").c_str(), 1);
  mi.topo_dump_path = std::getenv("NCCL_TOPO_DUMP_FILE");
  rep.settings = {preset.name, preset.warmup, preset.iters, preset.reps, "float",
                  "host wall clock around iters launches + stream sync (nccl-tests); mean over processes"};

  Machine machine{mi.nodes, mi.gpus_per_node, mi.sm,
                  o.nvls == "on" || (o.nvls == "auto" && mi.sm >= 90 && mi.gpus_per_node > 1), o.collnet};
  const SweepPlan plan = plan_sweep(preset, machine);
  rep.skipped = plan.skipped;

  // Buffers sized for the largest size of any section.
  std::uint64_t need = plan.sizes.back();
  for (auto s : p2p_sizes) need = std::max(need, s);
  ctx.buffer_bytes = need;
  for (auto& l : ctx.locals) {
    cuda_check(cudaSetDevice(l.device), "cudaSetDevice");
    cuda_check(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_check(cudaMalloc(&l.send, need), fmt::format("cudaMalloc of {} for the send buffer on GPU {} (lower "
                                                      "--max-bytes)", format_bytes(need), l.device));
    cuda_check(cudaMalloc(&l.recv, need), fmt::format("cudaMalloc of {} for the receive buffer on GPU {}",
                                                      format_bytes(need), l.device));
    cuda_check(cudaMemset(l.send, 0, need), "cudaMemset");
    cuda_check(cudaMemset(l.recv, 0, need), "cudaMemset");
  }
  const Timing timing{preset.warmup, preset.iters, preset.reps};

  bool topo_read = false;
  for (const CommSetting& s : plan.comm_settings()) {
    create_comms(ctx, s);
    if (!topo_read && pg.rank() == 0) mi.topo_dump_xml = read_file(mi.topo_dump_path);
    topo_read = true;
    for (const auto& c : plan.cases) {
      if (CommSetting{c.algo, c.proto, c.ctas} != s) continue;
      if (pg.rank() == 0)
        std::fprintf(stderr, "commstack-bench: %s algo %s proto %s ctas %d\n", to_string(c.op).c_str(),
                     to_string(c.algo).c_str(), to_string(c.proto).c_str(), c.ctas);
      CollectiveSeries series = measure_collective(ctx, c, plan.sizes, timing);
      const bool failed = series.status != "ok";
      rep.collectives.push_back(std::move(series));
      if (failed) {  // a failed call can leave the communicator unusable: start afresh
        destroy_comms(ctx);
        create_comms(ctx, s);
      }
    }
    destroy_comms(ctx);
  }
  if (preset.p2p) {
    create_comms(ctx, CommSetting{});
    rep.p2p = measure_p2p(ctx, p2p_sizes, timing);
    destroy_comms(ctx);
  }
  if (preset.kernels) rep.kernels = measure_kernels(ctx, plan.sizes, timing);
  if (preset.gemm) rep.gemm = measure_gemm(ctx, transformer_gemm_shapes(o.hidden, o.tokens), mi.sm, timing);
  for (auto& l : ctx.locals) {
    cudaSetDevice(l.device);
    cudaFree(l.send);
    cudaFree(l.recv);
    cudaStreamDestroy(l.stream);
  }
  if (pg.rank() == 0) {
    std::ofstream out(o.output, std::ios::binary);
    if (!out) throw InputError(fmt::format("--output {}: cannot write the report", o.output));
    out << dump_report(rep);
    std::fprintf(stderr, "commstack-bench: wrote %s (%zu collective series, %zu p2p series, %zu kernel points, %zu "
                 "GEMM points)\n",
                 o.output.c_str(), rep.collectives.size(), rep.p2p.size(), rep.kernels.size(), rep.gemm.size());
  }
  pg.barrier();
  return 0;
}

}  // namespace
// The command line, the launch checks and the measurements; main() only guards it.
int bench_main(int argc, char** argv) {
  Options o;
  CLI::App app{"commstack-bench: measure NCCL collectives, p2p, kernels and GEMM into one JSON report"};
  app.add_option("--preset", o.preset, "smoke, standard or full");
  app.add_option("--output,-o", o.output, "JSON report to write");
  app.add_option("--ops", o.ops, "Collectives to measure (default: the preset's)")->delimiter(',');
  app.add_option("--min-bytes,-b", o.min_bytes, "Smallest size (8, 1K, 16M, ...)");
  app.add_option("--max-bytes,-e", o.max_bytes, "Largest size");
  app.add_option("--warmup,-w", o.warmup, "Untimed calls per size");
  app.add_option("--iters,-n", o.iters, "Timed calls per repetition");
  app.add_option("--reps", o.reps, "Timed repetitions per size (median and spread reported)");
  app.add_option("--gpus", o.gpus, "Single-process mode: GPUs to use (default all visible)");
  app.add_option("--init-timeout", o.init_timeout_s, "Seconds allowed for one NCCL communicator init");
  app.add_option("--op-timeout", o.op_timeout_s, "Seconds allowed for one measured series");
  app.add_flag("--no-matrix", o.no_matrix, "Skip the forced algorithm x protocol matrix");
  app.add_flag("--no-p2p", o.no_p2p, "Skip point-to-point measurements");
  app.add_flag("--no-kernels", o.no_kernels, "Skip kernel throughput and overheads");
  app.add_flag("--no-gemm", o.no_gemm, "Skip cuBLAS GEMM");
  app.add_flag("--collnet", o.collnet, "The fabric has in-network reduction (SHARP): add CollNet algorithms");
  app.add_option("--nvls", o.nvls, "NVLS algorithms: auto (sm_90+ with >1 GPU per node), on, off");
  app.add_option("--hidden", o.hidden, "Hidden sizes for the GEMM shapes")->delimiter(',');
  app.add_option("--tokens", o.tokens, "Tokens per micro-batch (GEMM m)");
  app.add_option("--p2p-sizes", o.p2p_sizes, "Comma-separated point-to-point sizes");
  app.add_flag("--plan-only", o.plan_only, "Print the sweep plan and its GPU-minutes estimate; no GPU needed");
  app.add_option("--nodes", o.plan_nodes, "With --plan-only: nodes");
  app.add_option("--gpus-per-node", o.plan_gpus_per_node, "With --plan-only: GPUs per node");
  app.add_option("--sm", o.plan_sm, "With --plan-only: compute capability x 10 (80, 90, 100)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (o.plan_only) return print_plan(o);
    if (o.output.empty()) throw commstack::InputError("--output: required (the JSON report to write)");
  } catch (const commstack::InputError& e) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
    return 2;
  }
  const LaunchEnv env = [&] {
    try {
      return read_launch_env();
    } catch (const commstack::InputError& e) {
      std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
      std::exit(2);
    }
  }();
  // Refuse a multi-process launch of a non-MPI build before anything else touches the GPUs.
  if (const std::string m = launch_mismatch(env, ProcessGroup::built_with_mpi()); !m.empty()) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", m.c_str());
    return 3;
  }
  ProcessGroup pg(&argc, &argv);
  int code = 0;
  try {
    code = run(pg, o, env);
  } catch (const commstack::InputError& e) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
    code = 2;
  } catch (const EnvError& e) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
    code = 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
    code = 3;
  }
  // One rank failing alone would leave the others waiting in a collective: take them all down.
  if (code != 0 && pg.size() > 1) pg.abort(code);
  return code;
}

}  // namespace commstack::bench

int main(int argc, char** argv) {
  // bench_main catches what the measurements throw; this catches what escapes around them (the
  // command line's setup, printing), so that no exception ends in std::terminate.
  try {
    return commstack::bench::bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commstack-bench: error: %s\n", e.what());
    return 3;
  } catch (...) {
    std::fprintf(stderr, "commstack-bench: error: an unknown exception\n");
    return 3;
  }
}
