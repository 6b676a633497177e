#include "sim/algorithms/collective.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/algorithms/detail.hpp"

namespace commstack::sim {
namespace {

constexpr std::pair<CollectiveOp, const char*> kOps[] = {
    {CollectiveOp::allreduce, "allreduce"}, {CollectiveOp::allgather, "allgather"},
    {CollectiveOp::reducescatter, "reducescatter"}, {CollectiveOp::alltoall, "alltoall"},
    {CollectiveOp::broadcast, "broadcast"}, {CollectiveOp::reduce, "reduce"},
    {CollectiveOp::sendrecv, "sendrecv"}};
constexpr std::pair<Fidelity, const char*> kFidelities[] = {
    {Fidelity::automatic, "auto"}, {Fidelity::chunk, "chunk"}, {Fidelity::step, "step"}, {Fidelity::edge, "edge"}};

// A forced level may exceed the automatic budget, but not by so much that memory runs out.
constexpr long long kHardFlowLimit = 50'000'000;

void validate_nvls(const topologies::Topology& topo, const CollectiveSpec& spec);
void validate_pat(const topologies::Topology& topo, const CollectiveSpec& spec);
void validate_nvls_tree(const topologies::Topology& topo, const CollectiveSpec& spec);

void validate(const topologies::Topology& topo, const CollectiveSpec& spec) {
  if (spec.ranks.empty()) throw InputError("collective: the communicator has no rank");
  std::set<int> seen;
  for (int r : spec.ranks) {
    if (r < 0 || r >= topo.gpu_count()) {
      throw InputError(fmt::format("collective: rank {} is not a GPU of topology '{}' (it has {} GPUs)", r,
                                   topo.name, topo.gpu_count()));
    }
    if (!seen.insert(r).second) throw InputError(fmt::format("collective: GPU {} appears twice in the communicator", r));
  }
  if (!std::isfinite(spec.bytes) || spec.bytes < 0) {
    throw InputError(fmt::format("collective: size must be a finite number of bytes >= 0 (got {})", spec.bytes));
  }
  if (spec.channels < 1 || spec.channels > 64) {
    throw InputError(fmt::format("collective: channels must be between 1 and 64 (got {})", spec.channels));
  }
  if (!std::isfinite(spec.chunk_bytes) || spec.chunk_bytes < 0) {
    throw InputError(fmt::format("collective: chunk size must be >= 0 bytes (got {})", spec.chunk_bytes));
  }
  if (!std::isfinite(spec.step_overhead_s) || spec.step_overhead_s < 0) {
    throw InputError(fmt::format("collective: per-step overhead must be >= 0 s (got {})", spec.step_overhead_s));
  }
  if (spec.root < 0 || spec.root >= static_cast<int>(spec.ranks.size())) {
    throw InputError(fmt::format("collective: root {} is not a rank of the {}-rank communicator", spec.root,
                                 spec.ranks.size()));
  }
  if (spec.max_concurrent_peers < 0) {
    throw InputError(fmt::format("collective: max concurrent peers must be >= 0 (got {})", spec.max_concurrent_peers));
  }
  if (spec.group < 0) throw InputError("collective: group must be >= 0");
  if (spec.algorithm == Algorithm::tree && spec.op != CollectiveOp::allreduce) {
    throw InputError(fmt::format(
        "collective: the tree algorithm runs all-reduce only (as NCCL's Tree), not {}", to_string(spec.op)));
  }
  if (spec.algorithm == Algorithm::nvls) validate_nvls(topo, spec);
  if (spec.algorithm == Algorithm::pat) validate_pat(topo, spec);
  if (spec.algorithm == Algorithm::nvlstree) validate_nvls_tree(topo, spec);
  if (spec.algorithm == Algorithm::collnet_direct || spec.algorithm == Algorithm::collnet_chain) {
    if (spec.op != CollectiveOp::allreduce) {
      throw InputError(
          fmt::format("collective: the {} algorithm runs allreduce only (as NCCL's CollNet with "
                      "SHARP), not {}",
                      to_string(spec.algorithm), to_string(spec.op)));
    }
    (void)detail::collnet_layout(topo, spec.ranks);  // throws what the ranks or the topology lack
  }
}

// NCCL's NVLSTree is an all-reduce across NVLink domains with the same GPUs in each.
void validate_nvls_tree(const topologies::Topology& topo, const CollectiveSpec& spec) {
  if (spec.op != CollectiveOp::allreduce) {
    throw InputError(
        fmt::format("collective: the nvlstree algorithm runs allreduce only (as NCCL's NVLSTree), not {}",
                    to_string(spec.op)));
  }
  for (const int r : spec.ranks) {
    if (topo.nvswitch_endpoint(r) < 0) {
      throw InputError(fmt::format(
          "collective: the nvlstree algorithm needs GPUs on NVSwitches; GPU {} of topology '{}' has none", r,
          topo.name));
    }
  }
  const auto domains = detail::nvls_domains(topo, spec.ranks);
  if (domains.size() < 2) {
    throw InputError(
        fmt::format("collective: the nvlstree algorithm joins several NVLink domains, but all {} ranks are "
                    "on one NVSwitch: "
                    "NCCL runs NVLS there (--algo nvls)",
                    spec.ranks.size()));
  }
  for (const auto& d : domains) {
    if (d.size() != domains.front().size()) {
      throw InputError(
          fmt::format("collective: the nvlstree algorithm needs the same number of ranks in every NVLink "
                      "domain (got {} and "
                      "{})",
                      domains.front().size(), d.size()));
    }
  }
}

// NCCL enables PAT for all-gather and reduce-scatter when every rank is on its own node
// (src/graph/tuning.cc, ncclPatEnable: comm->nNodes == comm->nRanks; Simple only), and runs each
// aggregated step as one transfer.
void validate_pat(const topologies::Topology& topo, const CollectiveSpec& spec) {
  if (spec.op != CollectiveOp::allgather && spec.op != CollectiveOp::reducescatter) {
    throw InputError(
        fmt::format("collective: the pat algorithm runs allgather and reducescatter (as NCCL's PAT), not {}",
                    to_string(spec.op)));
  }
  const int nodes = detail::tree_nodes(topo, spec.ranks);
  if (nodes != static_cast<int>(spec.ranks.size())) {
    throw InputError(
        fmt::format("collective: the pat algorithm needs one GPU per node (NCCL runs PAT only then), but the "
                    "{} ranks span {} "
                    "node(s) of topology '{}'",
                    spec.ranks.size(), nodes, topo.name));
  }
  if (spec.chunk_bytes > 0) {
    throw InputError(
        fmt::format("collective: the pat algorithm moves each aggregated step as one transfer; a chunk size "
                    "({} bytes) does "
                    "not apply to it",
                    spec.chunk_bytes));
  }
}

// NVLS needs every rank on one NVSwitch (NCCL's NVLS inside an NVLink domain; across domains NCCL
// runs NVLSTree, which only the stack model predicts).
void validate_nvls(const topologies::Topology& topo, const CollectiveSpec& spec) {
  if (spec.op != CollectiveOp::allreduce && spec.op != CollectiveOp::reducescatter &&
      spec.op != CollectiveOp::allgather) {
    throw InputError(fmt::format(
        "collective: the nvls algorithm runs allreduce, reducescatter and allgather (as NCCL's NVLS), not {}",
        to_string(spec.op)));
  }
  const int nvswitch = topo.nvswitch_endpoint(spec.ranks.front());
  if (nvswitch < 0) {
    throw InputError(
        fmt::format("collective: the nvls algorithm needs GPUs on an NVSwitch; GPU {} of topology '{}' has "
                    "none (NCCL runs "
                    "NVLS only on NVSwitch systems)",
                    spec.ranks.front(), topo.name));
  }
  for (const int r : spec.ranks) {
    if (topo.nvswitch_endpoint(r) != nvswitch) {
      throw InputError(fmt::format(
          "collective: the nvls algorithm runs inside one NVLink domain, but GPUs {} and {} of topology '{}' "
          "are on different NVSwitches; across domains NCCL runs NVLSTree (--algo nvlstree)",
          spec.ranks.front(), r, topo.name));
    }
  }
}

}  // namespace

std::string to_string(CollectiveOp op) {
  for (auto [o, name] : kOps)
    if (o == op) return name;
  return "?";
}

CollectiveOp collective_op_from_string(const std::string& name) {
  // nccl-tests users type the binaries' names (all_reduce_perf) or the words apart (reduce_scatter,
  // all-gather): those exact spellings, with '-' or '_' and an optional _perf, nothing looser.
  std::string key = name;
  std::replace(key.begin(), key.end(), '-', '_');
  if (key.size() > 5 && key.ends_with("_perf")) key.resize(key.size() - 5);
  static const std::pair<const char*, CollectiveOp> kSpelledApart[] = {
      {"all_reduce", CollectiveOp::allreduce},
      {"all_gather", CollectiveOp::allgather},
      {"reduce_scatter", CollectiveOp::reducescatter},
      {"all_to_all", CollectiveOp::alltoall},
      {"send_recv", CollectiveOp::sendrecv}};
  for (auto [alias, o] : kSpelledApart)
    if (key == alias) return o;
  std::string valid;
  for (auto [o, n] : kOps) {
    if (key == n) return o;
    valid += valid.empty() ? n : std::string(", ") + n;
  }
  throw InputError(
      fmt::format("--op: unknown collective '{}'; expected one of {} (nccl-tests' names such as "
                  "all_reduce or all_reduce_perf work too)",
                  name, valid));
}

std::string to_string(Fidelity f) {
  for (auto [l, name] : kFidelities)
    if (l == f) return name;
  return "?";
}

Fidelity fidelity_from_string(const std::string& name) {
  for (auto [l, n] : kFidelities)
    if (name == n) return l;
  throw InputError(fmt::format("--fidelity: unknown level '{}'; expected one of auto, chunk, step, edge", name));
}

std::string to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvlstree: return "nvlstree";
    case Algorithm::pat: return "pat";
    case Algorithm::collnet_direct: return "collnetdirect";
    case Algorithm::collnet_chain: return "collnetchain";
  }
  return "?";
}

Algorithm algorithm_from_string(const std::string& name, const std::string& flag) {
  std::string lower;
  for (const char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls, Algorithm::nvlstree,
                            Algorithm::pat, Algorithm::collnet_direct, Algorithm::collnet_chain})
    if (lower == to_string(a)) return a;
  throw InputError(fmt::format(
      "{}: the SimGrid fabric simulation runs algorithm ring, tree, nvls, nvlstree, pat, collnetdirect or "
      "collnetchain, not '{}'",
      flag, name));
}

double bus_bandwidth_factor(CollectiveOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case CollectiveOp::allreduce: return 2 * (n - 1) / n;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
    case CollectiveOp::alltoall: return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::sendrecv: return 1;
  }
  return 1;
}

std::vector<int> channel_ring(const topologies::Topology& topo, const std::vector<int>& ranks, int channel) {
  // Group by node, keeping the order in which nodes (and GPUs inside a node) first appear.
  std::vector<int> node_order;
  std::vector<std::vector<int>> members;
  for (int r : ranks) {
    const int node = topo.vertex(topo.gpu_vertex(r)).node;
    auto it = std::find(node_order.begin(), node_order.end(), node);
    if (it == node_order.end()) {
      node_order.push_back(node);
      members.push_back({r});
    } else {
      members[static_cast<std::size_t>(it - node_order.begin())].push_back(r);
    }
  }
  // Runs of consecutive nodes of one NVLink domain with the same GPU count, rotated as a block.
  const int dn = std::max(1, topo.nvlink_domain_nodes);
  std::vector<std::size_t> order(node_order.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (dn > 1) {
    for (std::size_t b = 0; b < order.size();) {
      std::size_t e = b + 1;
      while (e < order.size() && node_order[e] / dn == node_order[b] / dn &&
             members[e].size() == members[b].size())
        ++e;
      const std::size_t len = e - b;
      const std::size_t turn = (static_cast<std::size_t>(channel) / members[b].size()) % len;
      std::rotate(order.begin() + static_cast<std::ptrdiff_t>(b),
                  order.begin() + static_cast<std::ptrdiff_t>(b + turn),
                  order.begin() + static_cast<std::ptrdiff_t>(e));
      b = e;
    }
  }
  std::vector<int> ring;
  ring.reserve(ranks.size());
  for (const std::size_t j : order) {
    const auto& m = members[j];
    const auto k = m.size();
    const auto shift = static_cast<std::size_t>(channel) % k;
    for (std::size_t i = 0; i < k; ++i) ring.push_back(m[(i + shift) % k]);
  }
  return ring;
}

CollectivePlan plan_collective(const topologies::Topology& topo, const CollectiveSpec& spec) {
  validate(topo, spec);
  const detail::LevelCounts c = detail::level_counts(topo, spec);
  CollectivePlan plan;
  plan.chunks = c.chunks;
  Fidelity level = spec.fidelity;
  if (level == Fidelity::automatic &&
      (spec.algorithm == Algorithm::nvls || spec.algorithm == Algorithm::nvlstree ||
       spec.algorithm == Algorithm::collnet_direct || spec.algorithm == Algorithm::collnet_chain)) {
    // Every NVLS hop crosses one link, which the pipeline run outside SimGrid shares as SimGrid
    // does: the edge level ends where the chunk level does (nvls.cpp), in 2n flows instead of
    // thousands that SimGrid re-shares at every completion (NVL72, 1 MiB: 0.2 s against 7 s).
    // NVLSTree's network hops share their links max-min in that run: within 0.9% of the chunk level
    // on 2 to 16 DGX H100 nodes and two NVL72 racks (docs/simulator.md), 20-100x faster. CollNet's
    // switch hops are single links too (collnet.cpp; agreement in docs/simulator.md).
    level = Fidelity::edge;
  }
  if (level == Fidelity::automatic) {
    level = c.chunk <= kAutoFlowBudget ? Fidelity::chunk : c.step <= kAutoFlowBudget ? Fidelity::step : Fidelity::edge;
  }
  plan.fidelity = level;
  plan.flows = level == Fidelity::chunk ? c.chunk : level == Fidelity::step ? c.step : c.edge;
  return plan;
}

CollectivePlan add_collective(FlowGraph& graph, const topologies::Topology& topo, const CollectiveSpec& spec) {
  const CollectivePlan plan = plan_collective(topo, spec);
  if (plan.flows > kHardFlowLimit) {
    throw InputError(fmt::format("collective: fidelity '{}' would need {} flows (limit {}); use a coarser --fidelity",
                                 to_string(plan.fidelity), plan.flows, kHardFlowLimit));
  }
  if (spec.algorithm == Algorithm::nvls) {
    detail::add_nvls(graph, topo, spec, plan.fidelity, plan.chunks);
    return plan;
  }
  if (spec.algorithm == Algorithm::pat) {
    detail::add_pat(graph, spec);
    return plan;
  }
  if (spec.algorithm == Algorithm::nvlstree) {
    detail::add_nvls_tree(graph, topo, spec, plan.fidelity, plan.chunks);
    return plan;
  }
  if (spec.algorithm == Algorithm::collnet_direct || spec.algorithm == Algorithm::collnet_chain) {
    detail::add_collnet(graph, topo, spec, plan.fidelity, plan.chunks);
    return plan;
  }
  switch (spec.op) {
    case CollectiveOp::allreduce:
      if (spec.algorithm == Algorithm::tree) {
        detail::add_tree(graph, topo, spec, plan.fidelity, plan.chunks);
        break;
      }
      [[fallthrough]];
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter: detail::add_ring(graph, topo, spec, plan.fidelity, plan.chunks); break;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce: detail::add_chain(graph, topo, spec, plan.fidelity, plan.chunks); break;
    case CollectiveOp::alltoall: detail::add_alltoall(graph, topo, spec); break;
    case CollectiveOp::sendrecv: detail::add_sendrecv(graph, topo, spec, plan.fidelity, plan.chunks); break;
  }
  return plan;
}

namespace detail {

LevelCounts dag_level_counts(const topologies::Topology& topo, const ChannelDag& dag, long long copies,
                             int chunks) {
  // Every hop of every copy at the step level, K chunks each at the chunk level, one flow per pair
  // of endpoints with a switch among them and one per hop between GPUs at the edge level (dag.cpp).
  LevelCounts c;
  c.chunks = chunks;
  c.step = copies * static_cast<long long>(dag.hops.size());
  c.chunk = c.step * c.chunks;
  std::set<std::pair<int, int>> ports;
  long long between_gpus = 0;
  for (const auto& [src, dst] : dag.hops) {
    if (dag_port_hop(topo, src, dst))
      ports.emplace(src, dst);
    else
      ++between_gpus;
  }
  c.edge = static_cast<long long>(ports.size()) + copies * between_gpus;
  return c;
}

long long ring_relayed_edges(const topologies::Topology& topo, const CollectiveSpec& spec) {
  const auto n = spec.ranks.size();
  long long relayed = 0;
  for (int c = 0; c < spec.channels; ++c) {
    const std::vector<int> ring = channel_ring(topo, spec.ranks, c);
    for (std::size_t i = 0; i < n; ++i) {
      const int a = ring[i];
      const int b = ring[(i + 1) % n];
      if (topo.vertex(topo.gpu_vertex(a)).node != topo.vertex(topo.gpu_vertex(b)).node)
        relayed += route_relay(topo, a, b) >= 0;
    }
  }
  return relayed;
}

int relay_legs(const Flow& f, int relay, std::array<Flow, 2>& legs) {
  if (relay < 0) {
    legs[0] = f;
    return 1;
  }
  legs[0] = legs[1] = f;
  legs[0].dst = relay;
  legs[1].src = relay;
  return 2;
}

int route_relay(const topologies::Topology& topo, int src, int dst) {
  const int last = topo.gpu_vertex(dst);
  for (const auto& hop : topo.route(src, dst)) {
    const auto& link = topo.link(hop.link);
    const int to = hop.forward ? link.b : link.a;
    if (to == last) return -1;
    const auto& v = topo.vertex(to);
    if (v.kind == topologies::VertexKind::gpu) return v.node * topo.gpus_per_node + v.local;
  }
  return -1;
}

double RouteInfo::latency(int src, int dst) {
  auto key = std::make_pair(src, dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(key, topo_.path_latency(topo_.route(src, dst))).first->second;
}

void add_pipelined_flow(FlowGraph& graph, const CollectiveSpec& spec, int src, int dst, double bytes,
                        double end, double shared) {
  Flow f;
  f.src = src;
  f.dst = dst;
  f.bytes = bytes;
  f.add_route_latency = false;
  f.extra_latency_s = std::max(0.0, end - shared);
  f.group = spec.group;
  graph.add_flow(f);
}

int chunk_count(double bytes, double chunk_bytes) {
  if (chunk_bytes <= 0 || bytes <= chunk_bytes) return 1;
  const double k = std::ceil(bytes / chunk_bytes);
  return k > 1e9 ? 1'000'000'000 : static_cast<int>(k);
}

LevelCounts level_counts(const topologies::Topology& topo, const CollectiveSpec& spec) {
  const long long n = static_cast<long long>(spec.ranks.size());
  const long long ch = spec.channels;
  LevelCounts c;
  if (spec.algorithm == Algorithm::nvls) {
    // Every hop of every channel at the step level, K chunks each at the chunk level; the edge level
    // one flow per GPU port direction (nvls.cpp).
    c.chunks = chunk_count(spec.bytes / static_cast<double>(n * ch), spec.chunk_bytes);
    c.step = n < 2 ? 0 : ch * nvls_hops_per_channel(spec.op, n);
    c.chunk = c.step * c.chunks;
    c.edge = n < 2 ? 0 : 2 * n;
    return c;
  }
  if (spec.algorithm == Algorithm::nvlstree) {
    // K chunks of a half-shard a hop.
    const auto g = static_cast<double>(nvls_domains(topo, spec.ranks).front().size());
    return dag_level_counts(topo, nvls_tree_dag(topo, spec.ranks), ch,
                            chunk_count(spec.bytes / (g * 2 * static_cast<double>(ch)), spec.chunk_bytes));
  }
  if (spec.algorithm == Algorithm::collnet_direct || spec.algorithm == Algorithm::collnet_chain) {
    // Direct: K chunks of a head's share a hop, the one dag per channel; Chain: the dag holds every
    // channel, K chunks of the channel's bytes a hop.
    const CollNetLayout layout = collnet_layout(topo, spec.ranks);
    const int chunks = chunk_count(collnet_chunk(layout, spec, 1), spec.chunk_bytes);
    const bool direct = spec.algorithm == Algorithm::collnet_direct;
    return dag_level_counts(topo, collnet_dag(topo, layout, spec.algorithm, spec.channels), direct ? ch : 1,
                            chunks);
  }
  if (spec.algorithm == Algorithm::pat) {
    // One flow per rank and step at every level (pat.cpp).
    c.chunk = c.step = c.edge =
        ch * n * static_cast<long long>(pat_schedule(static_cast<int>(n)).steps.size());
    return c;
  }
  if (spec.algorithm == Algorithm::tree) {
    // Every rank but the root reduces up to its parent and receives the result back: 2 (n - 1)
    // hops per tree, 2 (N - 1) of them between its N nodes, each carrying the tree's share of the
    // channel in chunks. The coarse levels carry the two trees' identical chain hops inside the
    // nodes as one flow (tree.cpp).
    const long long N = detail::tree_nodes(topo, spec.ranks);
    const long long per = detail::trees_per_channel(topo, spec.ranks);
    c.chunks = chunk_count(spec.bytes / static_cast<double>(ch * per), spec.chunk_bytes);
    c.chunk = 2 * ch * per * (n - 1) * c.chunks;
    c.edge = c.step = 2 * ch * ((n - N) + per * (N - 1));
    return c;
  }
  switch (spec.op) {
    case CollectiveOp::allreduce:
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter: {
      const long long steps = n == 1 ? 0 : spec.op == CollectiveOp::allreduce ? 2 * (n - 1) : n - 1;
      c.chunks = chunk_count(spec.bytes / static_cast<double>(n * ch), spec.chunk_bytes);
      const long long edges = n == 1 ? 0 : ch * n;
      c.step = edges * steps;
      c.chunk = c.step * c.chunks;
      // The edge level sends a relayed node crossing as two legs (ring.cpp).
      c.edge = n == 1 ? 0 : edges + ring_relayed_edges(topo, spec);
      break;
    }
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
      c.chunks = chunk_count(spec.bytes / static_cast<double>(ch), spec.chunk_bytes);
      c.edge = c.step = ch * (n - 1);
      c.chunk = c.step * c.chunks;
      break;
    case CollectiveOp::alltoall:
      c.chunk = c.step = c.edge = n * (n - 1) + pxn_relayed_pairs(topo, spec, true);
      break;
    case CollectiveOp::sendrecv:
      c.chunks = chunk_count(spec.bytes / static_cast<double>(ch), spec.chunk_bytes);
      c.edge = c.step = n == 1 ? 0 : ch * (n + pxn_relayed_pairs(topo, spec, false));
      c.chunk = c.step * c.chunks;
      break;
  }
  return c;
}

}  // namespace detail
}  // namespace commstack::sim
