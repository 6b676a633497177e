#include "calibration/bench/sweep_plan.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::bench {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.erase(std::remove(out.begin(), out.end(), '_'), out.end());
  return out;
}

int nranks_of(const Machine& m) { return m.nodes * m.gpus_per_node; }

}  // namespace

std::string to_string(Op op) {
  switch (op) {
    case Op::all_reduce: return "all_reduce";
    case Op::all_gather: return "all_gather";
    case Op::reduce_scatter: return "reduce_scatter";
    case Op::broadcast: return "broadcast";
    case Op::reduce: return "reduce";
    case Op::alltoall: return "alltoall";
    case Op::sendrecv: return "sendrecv";
  }
  return "unknown";
}

std::string to_string(Algo algo) {
  switch (algo) {
    case Algo::default_choice: return "default";
    case Algo::ring: return "ring";
    case Algo::tree: return "tree";
    case Algo::collnet_direct: return "collnet_direct";
    case Algo::collnet_chain: return "collnet_chain";
    case Algo::nvls: return "nvls";
    case Algo::nvls_tree: return "nvls_tree";
    case Algo::pat: return "pat";
  }
  return "unknown";
}

std::string to_string(Proto proto) {
  switch (proto) {
    case Proto::default_choice: return "default";
    case Proto::ll: return "ll";
    case Proto::ll128: return "ll128";
    case Proto::simple: return "simple";
  }
  return "unknown";
}

std::string nccl_env_value(Algo algo) {
  switch (algo) {
    case Algo::default_choice: return "";
    case Algo::ring: return "Ring";
    case Algo::tree: return "Tree";
    case Algo::collnet_direct: return "CollnetDirect";
    case Algo::collnet_chain: return "CollnetChain";
    case Algo::nvls: return "NVLS";
    case Algo::nvls_tree: return "NVLSTree";
    case Algo::pat: return "PAT";
  }
  return "";
}

std::string nccl_env_value(Proto proto) {
  switch (proto) {
    case Proto::default_choice: return "";
    case Proto::ll: return "LL";
    case Proto::ll128: return "LL128";
    case Proto::simple: return "Simple";
  }
  return "";
}

Op op_from_name(std::string_view name, std::string_view where) {
  const std::string n = lower(name);
  for (Op op : kAllOps)
    if (lower(to_string(op)) == n) return op;
  throw InputError(fmt::format("{}: unknown collective '{}', expected one of all_reduce, all_gather, "
                               "reduce_scatter, broadcast, reduce, alltoall, sendrecv",
                               where, name));
}

Algo algo_from_name(std::string_view name, std::string_view where) {
  const std::string n = lower(name);
  if (n == "default") return Algo::default_choice;
  for (Algo a : kForcedAlgos)
    if (lower(to_string(a)) == n || lower(nccl_env_value(a)) == n) return a;
  throw InputError(fmt::format("{}: unknown NCCL algorithm '{}', expected default, ring, tree, collnet_direct, "
                               "collnet_chain, nvls, nvls_tree or pat",
                               where, name));
}

Proto proto_from_name(std::string_view name, std::string_view where) {
  const std::string n = lower(name);
  if (n == "default") return Proto::default_choice;
  for (Proto p : kForcedProtos)
    if (lower(to_string(p)) == n) return p;
  throw InputError(fmt::format("{}: unknown NCCL protocol '{}', expected default, ll, ll128 or simple", where, name));
}

double bus_factor(Op op, int nranks) {
  const double n = nranks;
  switch (op) {
    case Op::all_reduce: return 2.0 * (n - 1) / n;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::alltoall: return (n - 1) / n;
    case Op::broadcast:
    case Op::reduce:
    case Op::sendrecv: return 1.0;
  }
  return 1.0;
}

std::uint64_t element_count(Op op, std::uint64_t size_bytes, int nranks, int type_size) {
  if (nranks <= 0 || type_size <= 0) return 0;
  const auto ts = static_cast<std::uint64_t>(type_size);
  switch (op) {
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::alltoall: return size_bytes / (ts * static_cast<std::uint64_t>(nranks));
    default: return size_bytes / ts;
  }
}

bool combination_legal(Op op, Algo algo, Proto proto, const Machine& m, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  const bool p2p_op = op == Op::alltoall || op == Op::sendrecv;
  if (p2p_op) {
    if (algo != Algo::default_choice || proto != Proto::default_choice)
      return refuse("point-to-point operations ignore NCCL_ALGO/NCCL_PROTO; measured with the default only");
    return true;
  }
  if (algo == Algo::default_choice) return true;  // NCCL picks a legal protocol itself
  const bool simple_only = algo == Algo::nvls || algo == Algo::nvls_tree || algo == Algo::collnet_direct ||
                           algo == Algo::collnet_chain || algo == Algo::pat;
  if (simple_only && proto != Proto::simple && proto != Proto::default_choice)
    return refuse(fmt::format("{} runs only with the Simple protocol", nccl_env_value(algo)));
  switch (algo) {
    case Algo::ring:
      if (op == Op::all_reduce || op == Op::all_gather || op == Op::reduce_scatter || op == Op::broadcast ||
          op == Op::reduce)
        return true;
      break;
    case Algo::tree:
      if (op == Op::all_reduce) return true;
      return refuse("Tree implements only all_reduce");
    case Algo::collnet_direct:
      if (!m.collnet) return refuse("CollNet needs in-network reduction (SHARP), not present");
      if (op == Op::all_reduce || op == Op::all_gather || op == Op::reduce_scatter) return true;
      return refuse("CollnetDirect implements only all_reduce, all_gather, reduce_scatter");
    case Algo::collnet_chain:
      if (!m.collnet) return refuse("CollNet needs in-network reduction (SHARP), not present");
      if (op == Op::all_reduce) return true;
      return refuse("CollnetChain implements only all_reduce");
    case Algo::nvls:
      if (m.sm < 90 || !m.nvswitch) return refuse("NVLS needs NVSwitch multicast (sm_90 or newer)");
      if (m.gpus_per_node < 2) return refuse("NVLS needs at least 2 GPUs per node");
      if (op == Op::all_reduce || op == Op::all_gather || op == Op::reduce_scatter) return true;
      return refuse("NVLS implements only all_reduce, all_gather, reduce_scatter");
    case Algo::nvls_tree:
      if (m.sm < 90 || !m.nvswitch) return refuse("NVLSTree needs NVSwitch multicast (sm_90 or newer)");
      if (m.nodes < 2 || m.gpus_per_node < 2) return refuse("NVLSTree needs several nodes with several GPUs each");
      if (op == Op::all_reduce) return true;
      return refuse("NVLSTree implements only all_reduce");
    case Algo::pat:
      if (op != Op::all_gather && op != Op::reduce_scatter) return refuse("PAT implements only all_gather and reduce_scatter");
      if (m.gpus_per_node != 1) return refuse("PAT runs only with one GPU per node");
      return true;
    case Algo::default_choice: return true;
  }
  return refuse(fmt::format("{} does not implement {}", nccl_env_value(algo), to_string(op)));
}

std::vector<std::uint64_t> size_ladder(std::uint64_t min_bytes, std::uint64_t max_bytes, int factor) {
  if (min_bytes == 0 || max_bytes < min_bytes || factor < 2)
    throw InputError(fmt::format("sizes: need 0 < min ({}) <= max ({}) and factor ({}) >= 2", min_bytes, max_bytes, factor));
  std::vector<std::uint64_t> out;
  const auto f = static_cast<std::uint64_t>(factor);
  for (std::uint64_t s = min_bytes; s <= max_bytes; s *= f) {
    out.push_back(s);
    if (s > std::numeric_limits<std::uint64_t>::max() / f) break;
  }
  return out;
}

std::vector<std::string> preset_names() { return {"smoke", "standard", "full"}; }

Preset preset_by_name(std::string_view name, std::string_view where) {
  Preset p;
  p.name = std::string(name);
  p.ops.assign(std::begin(kAllOps), std::end(kAllOps));
  if (name == "smoke") {
    p.ops = {Op::all_reduce, Op::all_gather, Op::sendrecv};
    p.max_bytes = 64ull << 20;
    p.factor = 4;
    p.warmup = 2;
    p.iters = 5;
    p.reps = 3;
    p.algo_proto_matrix = false;
    p.cta_sweep = {};
    return p;
  }
  if (name == "standard") {
    p.max_bytes = 1ull << 30;
    p.cta_sweep = {1, 2, 4, 8, 16, 32};
    return p;
  }
  if (name == "full") {
    p.max_bytes = 8ull << 30;
    p.iters = 50;
    p.reps = 10;
    p.cta_sweep = {1, 2, 4, 8, 16, 24, 32, 48, 64};
    return p;
  }
  throw InputError(fmt::format("{}: unknown preset '{}', expected smoke, standard or full", where, name));
}

std::vector<CommSetting> SweepPlan::comm_settings() const {
  std::vector<CommSetting> out;
  for (const auto& c : cases) {
    CommSetting s{c.algo, c.proto, c.ctas};
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

SweepPlan plan_sweep(const Preset& preset, const Machine& machine) {
  if (machine.nodes < 1 || machine.gpus_per_node < 1)
    throw InputError(fmt::format("machine: need nodes >= 1 and gpus_per_node >= 1 (got {} x {})", machine.nodes,
                                 machine.gpus_per_node));
  SweepPlan plan;
  plan.preset = preset;
  plan.machine = machine;
  plan.sizes = size_ladder(preset.min_bytes, preset.max_bytes, preset.factor);
  std::vector<CommSetting> settings{{}};
  if (preset.algo_proto_matrix)
    for (Algo a : kForcedAlgos)
      for (Proto p : kForcedProtos) settings.push_back({a, p, 0});
  for (int c : preset.cta_sweep) settings.push_back({Algo::default_choice, Proto::default_choice, c});
  for (const auto& s : settings) {
    for (Op op : preset.ops) {
      const bool cta_case = s.ctas != 0;
      if (cta_case && op != Op::all_reduce) continue;  // the channel sweep is for all_reduce only
      std::string why;
      if (!combination_legal(op, s.algo, s.proto, machine, &why)) {
        // Only forced combinations are worth listing; p2p ops are skipped silently there.
        if (op != Op::alltoall && op != Op::sendrecv)
          plan.skipped.push_back(fmt::format("{} {}/{}: {}", to_string(op), to_string(s.algo), to_string(s.proto), why));
        continue;
      }
      plan.cases.push_back({op, s.algo, s.proto, s.ctas});
    }
  }
  return plan;
}

double modeled_call_us(Op op, std::uint64_t size_bytes, int nranks, const CostModel& model) {
  return model.latency_us + static_cast<double>(size_bytes) * bus_factor(op, nranks) / (model.busbw_GBps * 1e3);
}

CostEstimate estimate_cost(const SweepPlan& plan, const CostModel& model) {
  CostEstimate e;
  const int n = nranks_of(plan.machine);
  const auto calls_per_size =
      static_cast<std::uint64_t>(plan.preset.warmup) +
      static_cast<std::uint64_t>(plan.preset.iters) * static_cast<std::uint64_t>(plan.preset.reps);
  for (const auto& c : plan.cases)
    for (std::uint64_t s : plan.sizes) {
      e.collective_s += static_cast<double>(calls_per_size) * modeled_call_us(c.op, s, n, model) * 1e-6;
      e.calls += calls_per_size;
    }
  e.communicators = static_cast<int>(plan.comm_settings().size());
  e.init_s = e.communicators * (model.comm_init_s + model.init_per_node_s * plan.machine.nodes);
  e.wall_s = e.collective_s + e.init_s + model.fixed_s;
  e.gpu_minutes = e.wall_s * n / 60.0;
  return e;
}

}  // namespace commstack::bench
