#include "sim/replay/replay.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"

namespace commstack::sim::replay {
namespace {

using workloads::Op;
using workloads::OpKind;
using workloads::Stream;

bool is_comm(const Op& op) { return op.kind != OpKind::compute || op.stream != Stream::compute; }

// Kernels that run on the tensor cores (their time scales with peak FLOP/s); everything else is
// taken as memory bound (scales with HBM bandwidth).
bool is_math_kernel(const std::string& name) {
  static const std::regex re("gemm|cutlass|xmma|cublas|matmul|flash|fmha|attention|conv|wgrad|dgrad|sm\\d\\d_",
                             std::regex::icase);
  return std::regex_search(name, re);
}

using Interval = std::pair<double, double>;

double union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  double total = 0, cur_b = 0, cur_e = -1;
  bool open = false;
  for (const auto& [b, e] : v) {
    if (!open || b > cur_e) {
      if (open) total += cur_e - cur_b;
      cur_b = b;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_b;
  return total;
}

// Length of `a` not covered by `b` (both unions of intervals).
double uncovered(std::vector<Interval> a, std::vector<Interval> b) {
  std::vector<Interval> both = std::move(a);
  both.insert(both.end(), b.begin(), b.end());
  return union_length(std::move(both)) - union_length(std::move(b));
}

Breakdown breakdown(const workloads::OpGraph& g, int rank, double iteration, const std::vector<double>& start,
                    const std::vector<double>& dur) {
  Breakdown b;
  b.iteration_s = iteration;
  std::vector<Interval> comp, comm, all;
  for (const Op& op : g.ops) {
    if (op.rank != rank || op.host) continue;
    const auto i = static_cast<std::size_t>(op.id);
    const Interval iv{start[i], start[i] + dur[i]};
    all.push_back(iv);
    if (is_comm(op)) {
      comm.push_back(iv);
      b.comm_op_sum_s += dur[i];
    } else {
      comp.push_back(iv);
    }
  }
  b.compute_s = union_length(comp);
  b.comm_s = union_length(comm);
  b.exposed_comm_s = uncovered(comm, comp);
  b.idle_s = std::max(0.0, iteration - union_length(all));
  return b;
}

}  // namespace

std::string apply_traced_mnnvl(const workloads::ImportedTrace& trace, topologies::ClusterSpec& spec) {
  if (trace.multi_node_nvlink.value_or(true) || spec.node.nvlink_domain_nodes <= 1) return "";
  const int domain = spec.node.nvlink_domain_nodes;
  spec.node.nvlink_domain_nodes = 1;
  return fmt::format(
      "the NCCL log says MNNVL 0: NCCL did not use {}'s multi-node NVLink domains ({} nodes each), so each "
      "node is its own domain and the nodes talk over their NICs (as NCCL_MNNVL_ENABLE=0)",
      spec.name, domain);
}

// The GPU of each of the W x K ranks (K: scale-dp replicas), from the hosts the trace names. When
// every host holds m ranks in a block (ranks k m .. k m + m - 1, as launchers lay them out), rank r
// runs on node r / m, GPU r % m, untraced ranks included; when every rank's host is known, hosts in
// order of their lowest rank become nodes 0, 1, ... and a host's ranks its GPUs in rank order.
// Replica j runs on the nodes after replica j-1's.
RankPlacement place_ranks(const workloads::ImportedTrace& trace, int scale_dp, int gpus_per_node) {
  const int W = std::max(trace.graph.world, 1), K = std::max(scale_dp, 1), gpn = std::max(gpus_per_node, 1);
  const int total = W * K;
  const auto in_order = [&](const std::string& why) {
    return RankPlacement{{},
                         (total + gpn - 1) / gpn,
                         fmt::format("rank r runs on GPU r of the cluster (ranks 0-{} fill nodes in order{})",
                                     total - 1, why)};
  };
  if (trace.rank_host.empty()) return in_order("");
  std::vector<std::string> hosts;  // in order of their lowest rank (rank_host is ordered by rank)
  std::map<std::string, std::vector<int>> ranks_on;
  for (const auto& [rank, host] : trace.rank_host) {
    if (!ranks_on.count(host)) hosts.push_back(host);
    ranks_on[host].push_back(rank);
  }
  for (const auto& [host, ranks] : ranks_on)
    if (static_cast<int>(ranks.size()) > gpn)
      throw InputError(
          fmt::format("replay: host {} of the trace runs {} ranks, but the cluster's nodes have {} GPUs",
                      host, ranks.size(), gpn));
  // Blocks of m: every host's ranks share r / m and no two hosts share it.
  int m = static_cast<int>(ranks_on.begin()->second.size());
  std::set<int> blocks;
  for (const auto& [host, ranks] : ranks_on) {
    if (static_cast<int>(ranks.size()) != m || !blocks.insert(ranks.front() / m).second) m = 0;
    for (int rank : ranks)
      if (m > 0 && rank / m != ranks.front() / m) m = 0;
    if (m == 0) break;
  }
  const bool all_known = static_cast<int>(trace.rank_host.size()) == W;
  if (m > 0 && W % m != 0) m = 0;
  if (m == 0 && !all_known)
    return in_order(": the traced ranks' hosts are not blocks of equal size, and not every rank was traced");
  const int nodes_per_replica = m > 0 ? W / m : static_cast<int>(hosts.size());
  std::vector<int> gpu_of(static_cast<std::size_t>(total));
  std::map<std::string, int> next_local;
  for (int rank = 0; rank < W; ++rank) {
    int node = 0, local = 0;
    if (m > 0) {
      node = rank / m, local = rank % m;
    } else {
      const std::string& host = trace.rank_host.at(rank);
      node = static_cast<int>(std::find(hosts.begin(), hosts.end(), host) - hosts.begin());
      local = next_local[host]++;
    }
    for (int j = 0; j < K; ++j)
      gpu_of[static_cast<std::size_t>(rank) + static_cast<std::size_t>(j) * static_cast<std::size_t>(W)] =
          (node + j * nodes_per_replica) * gpn + local;
  }
  if (std::all_of(gpu_of.begin(), gpu_of.end(), [i = 0](int g) mutable { return g == i++; }))
    return in_order(fmt::format(", as the trace's {} host(s) do", hosts.size()));
  const std::vector<std::string> shown(hosts.begin(),
                                       hosts.begin() + std::min<std::ptrdiff_t>(4, std::ssize(hosts)));
  const std::string more = hosts.size() > 4 ? ", ..." : "";
  std::string rule =
      m > 0
          ? fmt::format(
                "the trace's hosts ({}{}) run {} rank(s) each in rank order: rank r runs on node r / {}, GPU "
                "r % {}{}",
                fmt::join(shown, ", "), more, m, m, m,
                all_known ? "" : " (untraced ranks laid out the same way)")
          : fmt::format(
                "each of the trace's {} hosts is a node ({}{}); a host's ranks run on its GPUs in rank order",
                hosts.size(), fmt::join(shown, ", "), more);
  return RankPlacement{std::move(gpu_of), nodes_per_replica * K, std::move(rule)};
}

namespace {

// A rank's GPU: by the trace's hosts (place_ranks), else rank r on GPU r.
struct GpuOf {
  const std::vector<int>& gpu_of;
  int operator()(int rank) const { return gpu_of.empty() ? rank : gpu_of[static_cast<std::size_t>(rank)]; }
};

// Scale-out: the sibling groups (as GPU lists) that run each communicator's collectives at the
// same time; groups spanning the traced world widen to K x W ranks.
std::vector<std::vector<std::vector<int>>> scale_out_groups(workloads::OpGraph& g, int W, int K,
                                                            const GpuOf& gpu, ReplayResult& r) {
  std::vector<std::vector<std::vector<int>>> siblings(g.communicators.size());
  int widened = 0, replicated = 0;
  for (auto& c : g.communicators) {
    auto& sib = siblings[static_cast<std::size_t>(c.id)];
    if (K > 1 && static_cast<int>(c.ranks.size()) == W) {
      std::vector<int> wide;
      for (int j = 0; j < K; ++j) {
        for (int x : c.ranks) wide.push_back(x + j * W);
      }
      c.ranks = wide;
      ++widened;
      sib.push_back(wide);
    } else {
      for (int j = 0; j < K; ++j) {
        std::vector<int> rep;
        for (int x : c.ranks) rep.push_back(x + j * W);
        sib.push_back(rep);
      }
      if (K > 1) ++replicated;
    }
  }
  g.world = r.world;
  // The sibling groups run on GPUs: rank lists become GPU lists.
  for (auto& groups : siblings)
    for (auto& group : groups)
      for (int& x : group) x = gpu(x);
  if (K > 1) {
    r.assumptions.push_back(fmt::format("scale-dp {}: the traced job is replica 0 of {}; {} process group(s) spanning the traced "
                                        "world widen to {} ranks with unchanged sizes (data parallel); {} other group(s) are "
                                        "copied per replica and run at the same time as their copies",
                                        K, K, widened, r.world, replicated));
  }
  return siblings;
}

// Every op's replayed duration: communication re-simulated on the cluster (all sibling groups at
// once), compute rescaled to the target GPU, the rest as traced.
void op_durations(const workloads::OpGraph& g, const std::vector<std::vector<std::vector<int>>>& siblings,
                  int W, int K, const GpuOf& gpu, train::CommCosts& costs, ReplayResult& r) {
  r.duration.assign(g.ops.size(), 0);
  for (const Op& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    double d = std::max(op.measured_s, 0.0);
    if (op.kind == OpKind::collective && op.collective != workloads::Collective::none) {
      d = costs.collective_groups(siblings[static_cast<std::size_t>(op.communicator)], op.collective, op.bytes);
      ++r.resimulated_ops;
    } else if ((op.kind == OpKind::send || op.kind == OpKind::recv) && op.bytes > 0) {
      const int src = op.kind == OpKind::send ? op.rank : op.peer;
      const int dst = op.kind == OpKind::send ? op.peer : op.rank;
      std::vector<std::pair<int, int>> pairs;
      pairs.reserve(static_cast<std::size_t>(K));
      for (int j = 0; j < K; ++j) pairs.emplace_back(gpu(src + j * W), gpu(dst + j * W));
      d = costs.p2p_pairs(pairs, op.bytes);
      ++r.resimulated_ops;
    } else if (is_comm(op)) {
      ++r.kept_comm_ops;
    } else if (!op.host && (r.scale_gemm != 1 || r.scale_memory != 1)) {
      d *= is_math_kernel(op.name) ? r.scale_gemm : r.scale_memory;
    }
    r.duration[i] = d;
  }
  if (r.kept_comm_ops > 0) {
    r.assumptions.push_back(
        fmt::format("{} communication op(s) keep their traced duration (no size, group or peer, or "
                    "no counterpart on every traced member: see the import warnings)",
                    r.kept_comm_ops));
  }
}

// The traced timeline: recorded, or rebuilt from the traced durations when the format has no
// timestamps but has durations. Returns each rank's traced time; sets r.traced_s / traced_start_s.
std::map<int, double> traced_timeline(const workloads::ImportedTrace& trace, const workloads::OpGraph& g,
                                      ReplayResult& r) {
  std::map<int, double> traced_per_rank = trace.traced_iteration_s;
  r.traced_s = trace.traced_s;
  r.traced_start_s = trace.traced_start_s;
  bool any_duration = false;
  for (const Op& op : trace.graph.ops) any_duration = any_duration || op.measured_s > 0;
  if (r.traced_start_s.size() != g.ops.size() && any_duration) {
    train::Schedule as_traced;
    try {
      as_traced = train::schedule_ops(trace.graph, [](const Op& op) { return std::max(op.measured_s, 0.0); });
    } catch (const std::logic_error& e) {
      throw InputError(fmt::format("replay: the traced calls cannot be scheduled ({})", e.what()));
    }
    r.traced_start_s = as_traced.start;
    for (const Op& op : g.ops) {
      double& f = traced_per_rank[op.rank];
      f = std::max(f, as_traced.finish[static_cast<std::size_t>(op.id)]);
    }
    r.traced_s = as_traced.iteration_s;
  }
  if (r.traced_start_s.size() != g.ops.size()) r.traced_start_s.clear();
  return traced_per_rank;
}

// Per rank: replayed and traced time; the critical rank's breakdowns, replayed and traced.
void rank_results(const workloads::OpGraph& g, const std::map<int, double>& traced_per_rank,
                  ReplayResult& r) {
  std::map<int, double> finish;
  for (const Op& op : g.ops) {
    double& f = finish[op.rank];
    f = std::max(f, r.schedule.finish[static_cast<std::size_t>(op.id)]);
  }
  r.critical_rank = g.ranks.empty() ? 0 : g.ranks.front();
  for (int rank : g.ranks) {
    RankResult rr;
    rr.rank = rank;
    rr.replayed_s = finish[rank];
    auto it = traced_per_rank.find(rank);
    rr.traced_s = it != traced_per_rank.end() ? it->second : 0;
    if (rr.replayed_s > finish[r.critical_rank]) r.critical_rank = rank;
    r.ranks.push_back(rr);
  }
  r.replayed_s = r.schedule.iteration_s;
  r.replayed = breakdown(g, r.critical_rank, finish[r.critical_rank], r.schedule.start, r.duration);
  if (!r.traced_start_s.empty()) {
    std::vector<double> traced_dur(g.ops.size());
    for (const Op& op : g.ops) traced_dur[static_cast<std::size_t>(op.id)] = std::max(op.measured_s, 0.0);
    auto it = traced_per_rank.find(r.critical_rank);
    r.traced = breakdown(g, r.critical_rank, it != traced_per_rank.end() ? it->second : 0, r.traced_start_s, traced_dur);
  }
}

}  // namespace

ReplayResult replay(const workloads::ImportedTrace& trace, Simulator& sim, const ReplayOptions& o) {
  ReplayResult r;
  r.graph = trace.graph;
  auto& g = r.graph;
  const int W = std::max(g.world, 1);
  const int K = std::max(o.scale_dp, 1);
  r.world = W * K;
  const int gpus = sim.topology().gpu_count();
  if (gpus < r.world) {
    throw InputError(
        fmt::format("replay: the trace needs {} GPUs (world {}{}) but the cluster has {}; pass --nodes",
                    r.world, W, K > 1 ? fmt::format(" x scale-dp {}", K) : "", gpus));
  }
  // Where the ranks run: by the hosts the trace names (one node per host), else rank r on GPU r.
  const RankPlacement placement = place_ranks(trace, K, sim.topology().gpus_per_node);
  if (!placement.gpu_of.empty() && placement.nodes > sim.topology().nodes)
    throw InputError(fmt::format(
        "replay: the trace's ranks run on {} hosts{} but the cluster has {} nodes; pass --nodes {}",
        placement.nodes / K, K > 1 ? fmt::format(" (x scale-dp {})", K) : "", sim.topology().nodes,
        placement.nodes));
  r.assumptions.push_back(placement.assumption);
  const GpuOf gpu{placement.gpu_of};
  if (g.ranks.size() < static_cast<std::size_t>(W)) {
    r.assumptions.push_back(
        fmt::format("{} of {} ranks traced: untraced members of a process group behave like the traced ones",
                    g.ranks.size(), W));
  }
  const auto siblings = scale_out_groups(g, W, K, gpu, r);

  // Compute rescaling.
  if (o.traced_gpu && o.target_gpu) {
    r.scale_gemm = o.traced_gpu->peak_bf16_flops / o.target_gpu->peak_bf16_flops;
    r.scale_memory = o.traced_gpu->hbm_bytes_per_s / o.target_gpu->hbm_bytes_per_s;
    r.assumptions.push_back(
        fmt::format("GPU compute rescaled from {} to {}: GEMM/attention kernels x {:.3f} (peak BF16 ratio), "
                    "other kernels and copies x {:.3f} (HBM bandwidth ratio); CPU time unchanged",
                    o.traced_gpu->name, o.target_gpu->name, r.scale_gemm, r.scale_memory));
  }
  train::CommCosts costs(sim, o.comm);
  op_durations(g, siblings, W, K, gpu, costs, r);
  r.simulations = costs.simulations();
  r.flows = costs.flows();
  try {
    r.schedule =
        train::schedule_ops(g, [&](const Op& op) { return r.duration[static_cast<std::size_t>(op.id)]; });
  } catch (const std::logic_error& e) {
    // The scheduler only deadlocks on graphs whose collective calls cannot all be matched in one
    // order (e.g. two process groups called in opposite orders on two traced ranks).
    throw InputError(
        fmt::format("replay: the traced calls cannot be scheduled ({}); the traced ranks call their process "
                    "groups in orders that do not match",
                    e.what()));
  }
  const std::map<int, double> traced_per_rank = traced_timeline(trace, g, r);
  rank_results(g, traced_per_rank, r);
  return r;
}

namespace {

nlohmann::ordered_json breakdown_json(const Breakdown& b) {
  nlohmann::ordered_json j;
  j["iteration_s"] = b.iteration_s;
  j["gpu_compute_s"] = b.compute_s;
  j["gpu_comm_s"] = b.comm_s;
  j["exposed_comm_s"] = b.exposed_comm_s;
  j["gpu_idle_s"] = b.idle_s;
  j["comm_op_sum_s"] = b.comm_op_sum_s;
  return j;
}

double rel_diff(double replayed, double traced) { return traced > 0 ? (replayed - traced) / traced : 0.0; }

}  // namespace

nlohmann::ordered_json to_json(const workloads::ImportedTrace& trace, const ReplayResult& r, const std::string& cluster) {
  nlohmann::ordered_json j;
  j["trace"] = {{"format", trace.format}, {"source", trace.source}, {"device", trace.device}, {"iteration", trace.iteration}};
  j["cluster"] = cluster;
  j["world"] = r.world;
  j["traced_s"] = r.traced_s;
  j["replayed_s"] = r.replayed_s;
  j["difference"] = rel_diff(r.replayed_s, r.traced_s);
  j["critical_rank"] = r.critical_rank;
  j["traced_breakdown"] = breakdown_json(r.traced);
  j["replayed_breakdown"] = breakdown_json(r.replayed);
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (const auto& rr : r.ranks) ranks.push_back({{"rank", rr.rank}, {"traced_s", rr.traced_s}, {"replayed_s", rr.replayed_s}});
  j["ops"] = r.graph.ops.size();
  j["resimulated_comm_ops"] = r.resimulated_ops;
  j["kept_comm_ops"] = r.kept_comm_ops;
  j["simulations"] = r.simulations;
  j["flows"] = r.flows;
  j["assumptions"] = r.assumptions;
  j["warnings"] = trace.warnings;
  return j;
}

std::string format_text(const workloads::ImportedTrace& trace, const ReplayResult& r, const std::string& cluster) {
  std::string s;
  s += fmt::format("trace      {} ({}{})\n", trace.source, trace.format, trace.device.empty() ? "" : ", " + trace.device);
  s += fmt::format("cluster    {}, world {}\n", cluster, r.world);
  s += fmt::format("ops        {} ({} communication ops re-simulated, {} kept as traced; {} simulations, {} flows)\n",
                   r.graph.ops.size(), r.resimulated_ops, r.kept_comm_ops, r.simulations, r.flows);
  s += "\n";
  if (r.traced_s > 0) {
    s += fmt::format("iteration  traced {:10.3f} ms   replayed {:10.3f} ms   ({:+.1f}%)\n", r.traced_s * 1e3, r.replayed_s * 1e3,
                     100 * rel_diff(r.replayed_s, r.traced_s));
  } else {
    s += fmt::format("iteration  traced        n/a      replayed {:10.3f} ms   (the trace has no timing)\n", r.replayed_s * 1e3);
  }
  s += fmt::format("\nbreakdown of rank {} (union of GPU op intervals)\n", r.critical_rank);
  s += fmt::format("  {:<22} {:>12} {:>12}\n", "", "traced ms", "replayed ms");
  auto row = [&](const char* what, double a, double b) { s += fmt::format("  {:<22} {:>12.3f} {:>12.3f}\n", what, a * 1e3, b * 1e3); };
  row("iteration", r.traced.iteration_s, r.replayed.iteration_s);
  row("GPU compute", r.traced.compute_s, r.replayed.compute_s);
  row("GPU communication", r.traced.comm_s, r.replayed.comm_s);
  row("  exposed", r.traced.exposed_comm_s, r.replayed.exposed_comm_s);
  row("  sum of comm ops", r.traced.comm_op_sum_s, r.replayed.comm_op_sum_s);
  row("GPU idle", r.traced.idle_s, r.replayed.idle_s);
  if (r.ranks.size() > 1) {
    s += "\nper rank\n";
    for (const auto& rr : r.ranks) {
      s += fmt::format("  rank {:<5} traced {:10.3f} ms   replayed {:10.3f} ms   ({:+.1f}%)\n", rr.rank, rr.traced_s * 1e3,
                       rr.replayed_s * 1e3, 100 * rel_diff(rr.replayed_s, rr.traced_s));
    }
  }
  if (!r.assumptions.empty()) {
    s += "\nassumed\n";
    for (const auto& a : r.assumptions) s += "  - " + a + "\n";
  }
  if (!trace.warnings.empty()) {
    s += "\nimport warnings\n";
    for (const auto& w : trace.warnings) s += "  - " + w + "\n";
  }
  return s;
}

nlohmann::ordered_json perfetto_trace(const workloads::ImportedTrace& /*trace*/, const ReplayResult& r) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  const auto& g = r.graph;
  const bool have_traced = r.traced_start_s.size() == g.ops.size();
  std::map<int, int> index;
  for (std::size_t k = 0; k < g.ranks.size(); ++k) index[g.ranks[k]] = static_cast<int>(k);
  auto tid_of = [](const Op& op) { return op.host ? op.lane : 1000000 + op.lane; };
  std::map<std::pair<int, int>, std::string> threads;
  for (const Op& op : g.ops) {
    const int pid_base = 2 * index[op.rank];
    threads[{pid_base, tid_of(op)}] = op.host ? fmt::format("cpu thread {}", op.lane) : fmt::format("stream {}", op.lane);
  }
  for (const auto& [rank, k] : index) {
    if (have_traced) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2 * k}, {"args", {{"name", fmt::format("traced rank {}", rank)}}}});
    }
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2 * k + 1}, {"args", {{"name", fmt::format("replayed rank {}", rank)}}}});
  }
  for (const auto& [key, name] : threads) {
    for (int side = have_traced ? 0 : 1; side < 2; ++side) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", key.first + side}, {"tid", key.second}, {"args", {{"name", name}}}});
    }
  }
  for (const Op& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    const int k = index[op.rank];
    nlohmann::ordered_json args;
    if (op.kind == OpKind::collective) args = {{"collective", to_string(op.collective)}, {"bytes", op.bytes}};
    if (have_traced) {
      events.push_back({{"ph", "X"}, {"name", op.name}, {"pid", 2 * k}, {"tid", tid_of(op)},
                        {"ts", r.traced_start_s[i] * 1e6}, {"dur", std::max(op.measured_s, 0.0) * 1e6}, {"args", args}});
    }
    events.push_back({{"ph", "X"}, {"name", op.name}, {"pid", 2 * k + 1}, {"tid", tid_of(op)}, {"ts", r.schedule.start[i] * 1e6},
                      {"dur", r.duration[i] * 1e6}, {"args", args}});
  }
  nlohmann::ordered_json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  return j;
}

}  // namespace commstack::sim::replay
