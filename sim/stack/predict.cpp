#include "sim/stack/predict.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/protocol/protocol.hpp"
#include "sim/select/nccl_search.hpp"
#include "sim/select/nccl_trees.hpp"
#include "sim/stack/call_shape.hpp"
#include "sim/stack/layer_rates.hpp"

namespace commstack::sim::stack {
namespace {

using select::Algo;
using select::Proto;

// NCCL_P2P_LL_THRESHOLD's default: the bytes per channel a send/receive peer may move with LL.
constexpr double kP2pLlThresholdBytes = 16384;

bool tuned(CollectiveOp op) {
  return op == CollectiveOp::allreduce || op == CollectiveOp::allgather || op == CollectiveOp::reducescatter ||
         op == CollectiveOp::broadcast || op == CollectiveOp::reduce;
}

select::Func func_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::allreduce: return select::Func::all_reduce;
    case CollectiveOp::allgather: return select::Func::all_gather;
    case CollectiveOp::reducescatter: return select::Func::reduce_scatter;
    case CollectiveOp::broadcast: return select::Func::broadcast;
    case CollectiveOp::reduce: return select::Func::reduce;
    default: return select::Func::all_reduce;
  }
}

double lat_param(const Profile& p, Proto proto, bool net) {
  switch (proto) {
    case Proto::ll: return p[net ? Param::lat_net_ll_us : Param::lat_nvlink_ll_us];
    case Proto::ll128: return p[net ? Param::lat_net_ll128_us : Param::lat_nvlink_ll128_us];
    case Proto::simple: return p[net ? Param::lat_net_simple_us : Param::lat_nvlink_simple_us];
  }
  return 0;
}

double cap_param(const Profile& p, Proto proto) {
  switch (proto) {
    case Proto::ll: return p[Param::cap_ll_GBps];
    case Proto::ll128: return p[Param::cap_ll128_GBps];
    case Proto::simple: return p[Param::cap_simple_GBps];
  }
  return 0;
}

// The network traffic pattern of a call, for the contention layer; none where the network is not
// crossed by point-to-point flows of the GPUs' NICs (CollNet reduces in the switches).
std::optional<NetPattern> net_pattern(Algo algo, CollectiveOp op, bool p2p) {
  if (p2p) return op == CollectiveOp::alltoall ? NetPattern::alltoall : NetPattern::boundary;
  switch (algo) {
    case Algo::ring: return NetPattern::ring;
    case Algo::pat: return NetPattern::pat;
    case Algo::tree:
    case Algo::nvls:
    case Algo::nvls_tree: return NetPattern::tree;
    case Algo::collnet_direct:
    case Algo::collnet_chain: return std::nullopt;
  }
  return std::nullopt;
}

// The latency layers of a call: what each step costs beyond its route (algorithm) and the routes
// themselves (fabric).
void latency_layers(const Predictor::Choice& choice, const detail::Steps& steps, const CommGeometry& geo,
                    const select::CommShape& comm, const select::NcclEnv& env, const Profile& profile,
                    Breakdown& b) {
  const Proto proto = choice.proto;
  const CollectiveOp op = choice.op;
  const bool p2p = choice.p2p;
  const Algo algo = choice.algo;
  // An NVLink step's latency is NCCL's whole step, the wire included: the NDm A100 v4 1 KiB
  // points (CUDA graph, one cluster) give 0.63 us per ring LL step (all-reduce 14 steps 16.96 us,
  // all-gather 7 steps 12.53 us), NCCL's hwLat is 0.6. The fabric layer below already counts the
  // route, so the algorithm layer keeps what the step costs beyond it (an NVLS round crosses the
  // route twice). A network step is left as NCCL's hwLat on top of the route: the measured one is
  // longer than NCCL's constant (NDm 2 x 1 GPU: 5.2 us per LL step against 2.7; docs/stack-model.md).
  const double route_intra_us = geo.route_latency_intra_s * 1e6;
  double intra_beyond_route_us = std::max(0.0, lat_param(profile, proto, false) - route_intra_us);
  // A ring that leaves the domain is paced by its network steps: NCCL's model lets none of its
  // intra-domain steps cost less than the proxy's per-step network overhead (tuning.cc). The
  // overhead is the proxy's and comes on top of the NVLink hop: 2-node rings take ~1.26-1.3 us
  // per NVLink LL step (NDm A100 v4, Vultr B200 1 KiB points), overhead + hop 1.6, the larger
  // of the two 1.0 (docs/stack-model-history.md, seventh landing).
  if (!p2p && algo == Algo::ring && op != CollectiveOp::broadcast && op != CollectiveOp::reduce)
    intra_beyond_route_us = std::max(intra_beyond_route_us, select::ring_net_overhead_us(comm, env, proto));
  const double nvls_beyond_route_us = std::max(0.0, profile[Param::nvls_latency_us] - 2 * route_intra_us);
  b.algorithm_latency_s =
      (steps.intra * intra_beyond_route_us + steps.inter * lat_param(profile, proto, true) +
       steps.nvls * nvls_beyond_route_us + steps.posts * profile[Param::lat_net_ll_us]) *
      1e-6;
  b.fabric_latency_s =
      (steps.intra + steps.nvls * 2) * geo.route_latency_intra_s + steps.inter * geo.route_latency_inter_s;
}

}  // namespace

Predictor::Predictor(const topologies::ClusterSpec& cluster, int nodes, int gpus_per_node, Knobs knobs)
    : knobs_(std::move(knobs)) {
  // NCCL_MNNVL_ENABLE=0 (or a fabric NCCL could not use: no IMEX channel, "MNNVL 0" in its log):
  // the nodes of a multi-node NVLink domain keep NVLink among their own GPUs and talk to each
  // other over their NICs, each node one NCCL node.
  std::optional<topologies::ClusterSpec> per_node;
  if (knobs_.env.mnnvl_enable == 0 && cluster.node.nvlink_domain_nodes > 1) {
    per_node = cluster;
    per_node->node.nvlink_domain_nodes = 1;
  }
  const topologies::ClusterSpec& spec = per_node ? *per_node : cluster;
  if (nodes < 1) throw InputError(fmt::format("--nodes: expected >= 1, got {}", nodes));
  topologies::check_gpus_per_node(spec, gpus_per_node);
  if (knobs_.gpus_per_thread < 1 || knobs_.gpus_per_thread > gpus_per_node)
    throw InputError(fmt::format("--gpus-per-thread: expected 1..{} (the GPUs of one node one host thread drives, "
                                 "nccl-tests -g), got {}",
                                 gpus_per_node, knobs_.gpus_per_thread));
  const auto topo_ptr =
      std::make_shared<const topologies::Topology>(topologies::build_topology(spec, nodes, gpus_per_node));
  const topologies::Topology& topo = *topo_ptr;
  geo_.ranks = nodes * gpus_per_node;
  geo_.nodes = nodes;
  geo_.gpus_per_node = gpus_per_node;
  const DomainLayout layout = domain_layout(spec, nodes, gpus_per_node);
  const int domain = layout.nodes_per_domain;
  geo_.nccl_nodes = layout.domains;
  geo_.local_ranks = layout.ranks_per_domain;
  geo_.tree_egress = select::nccl_dtree_max_egress(geo_.nccl_nodes);
  geo_.sm = sm_of_gpu_model(spec.node.gpu_model);
  if (geo_.sm == 0)
    throw InputError(fmt::format("cluster {}: node.gpu_model \"{}\" is not a GPU generation the stack model knows "
                                 "(A100, H100/H200/GH200, B200/GB200)",
                                 spec.origin, spec.node.gpu_model));
  geo_.nvlink_Bps = spec.node.gpu_link_bandwidth_Bps;
  {
    std::string model = spec.node.gpu_model;
    for (auto& ch : model) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    geo_.nvswitch = spec.node.nvswitch && model.find("gh200") == std::string::npos;
    geo_.arm_host = model.find("gh200") != std::string::npos || model.find("gb200") != std::string::npos ||
                    model.find("gb300") != std::string::npos;
  }
  double nic_node = 0, nic_gpu0 = 0;
  int used = 0;
  std::set<int> nic_gpus;  // GPUs of a node with a NIC of their own
  for (const auto& nic : spec.node.nics) {
    if (spec.node.nic_per_gpu && nic.gpu >= gpus_per_node) continue;
    if (nic.gpu >= 0 && nic.gpu < gpus_per_node) nic_gpus.insert(nic.gpu);
    nic_node += nic.bandwidth_Bps;
    if (nic.gpu == 0) nic_gpu0 += nic.bandwidth_Bps;
    geo_.nic_port_Bps = std::max(geo_.nic_port_Bps, nic.bandwidth_Bps);
    ++used;
  }
  geo_.nics_domain = used * domain;
  geo_.nic_gpus_domain = static_cast<int>(nic_gpus.size()) * domain;
  geo_.pcie_Bps = spec.node.pcie_bandwidth_Bps;
  if (used == 0 && geo_.nodes > domain)
    throw InputError(fmt::format("cluster {}: node.nics is empty but the communicator spans {} NVLink domains",
                                 spec.origin, geo_.nccl_nodes));
  geo_.nic_domain_Bps = nic_node * domain;
  geo_.nic_gpu_Bps = nic_gpu0 > 0 ? nic_gpu0 : (used > 0 ? nic_node / gpus_per_node : 0);
  if (geo_.local_ranks > 1) geo_.route_latency_intra_s = topo.path_latency(topo.route(0, 1));
  if (geo_.nccl_nodes > 1) geo_.route_latency_inter_s = topo.path_latency(topo.route(0, geo_.local_ranks));
  for (int r = 0; r < geo_.local_ranks; ++r) geo_.collnet_ports += sim::collnet_ports(topo, r);
  contention_.emplace(topo_ptr, layout);
  shape_ = comm_shape(geo_, knobs_);
  tables_ = select::tune_model(shape_, knobs_.env, knobs_.nccl_version);
  // Send/receive channels. Peers behind an NVSwitch share all of a GPU's NVLinks; the presets
  // without one (GH200's direct links) are counted as PCIe peers, 2 channels (an assumption).
  p2p_ = select::nccl_p2p_channels(
      {.version = knobs_.nccl_version,
       .ranks = geo_.ranks,
       .nodes = geo_.nccl_nodes,
       .local_ranks = geo_.local_ranks,
       .comm_channels = tables_.comm_channels,
       .nvlinks_to_peer = geo_.nvswitch ? select::nvlink_links(geo_.sm, geo_.nvlink_Bps) : 0,
       .net_path_GBps = shape_.net_path_GBps});
}

Predictor::Choice Predictor::choose(CollectiveOp op, std::uint64_t bytes) const {
  if (bytes == 0) throw InputError("size: expected bytes > 0");
  Choice c;
  c.op = op;
  c.bytes = bytes;
  c.channels = shape_.n_channels;
  c.p2p = !tuned(op);
  const int n = geo_.ranks;
  if (n == 1) {
    c.algorithm = "Local";
  } else if (!c.p2p) {
    select::Selection sel = select::select_algorithm(tables_, shape_, func_of(op), bytes);
    c.algo = sel.algo;
    c.proto = sel.proto;
    c.channels = sel.n_channels;
    c.algorithm = select::to_string(c.algo);
    c.nccl_model_us = sel.best_time_us;
  } else {
    // Send/receive work: LL while a peer's bytes fit NCCL_P2P_LL_THRESHOLD (16 KiB) per channel,
    // Simple above (src/enqueue.cc addP2pToPlan). Up to 2.28 the channels are the most a peer may
    // use, p2pnChannelsPerPeer (sim/select/p2p_channels.hpp: all of the communicator's through an
    // NVSwitch, 1-4 for a peer across the network); from 2.29 those the Simple split of the
    // peer's bytes would use, so LL stops at 16 KiB per peer. NCCL_PROTO (--proto) plays no part:
    // NCCL's P2P path never reads it (every release from 2.19 to 2.30 picks LL or Simple by the
    // threshold alone, and has no LL128 for send/receive), so a forced protocol is ignored here as
    // NCCL ignores it (p2p_proto_note says so).
    const int p2p_channels = p2p_.channels;
    const double per_peer = op == CollectiveOp::alltoall ? static_cast<double>(bytes) / n : static_cast<double>(bytes);
    // One peer's bytes as NCCL's Simple split sees them; comm->p2pChunkSize is
    // NCCL_P2P_NET_CHUNKSIZE across domains, NCCL_P2P_NVL_CHUNKSIZE inside.
    protocol::P2pInputs peer;
    peer.peer_bytes = static_cast<std::uint64_t>(per_peer);
    peer.ranks = n;
    peer.p2p_channels = p2p_channels;
    peer.channels_per_peer = p2p_.per_peer;
    peer.multi_node = geo_.nccl_nodes > 1;
    peer.chunk_bytes = peer.multi_node ? protocol::kP2pNetChunkBytes : protocol::kP2pNvlChunkBytes;
    const int ll_channels =
        knobs_.nccl_version >= select::NcclVersion::v2_29_3 ? protocol::p2p_split(peer).channels : p2p_.per_peer;
    // A peer across NVLink domains is a net-transport connection, which has no LL buffer unless
    // NCCL_ALLOC_P2P_NET_LL_BUFFERS=1 (or NCCL_NET_SHARED_BUFFERS=0): addP2pToPlan's
    // `protoLL[dir] &= conn->conn.buffs[NCCL_PROTO_LL] != nullptr` then keeps it on Simple at any
    // size (src/transport/net.cc sendProxyConnect / recvProxyConnect, NCCL 2.14 onwards). Peers
    // inside the domain (P2P / NVLink transport) keep the threshold. A call across domains is timed
    // by its network peers (alltoall's remote share, sendrecv's boundary pairs), so it runs Simple.
    const bool ll_buffers = geo_.nccl_nodes == 1 || select::p2p_net_ll_buffers(knobs_.env);
    c.proto = ll_buffers && per_peer <= ll_channels * kP2pLlThresholdBytes ? Proto::ll : Proto::simple;
    c.algorithm = "P2P";
    if (geo_.nccl_nodes == 1) {
      // NCCL stripes each peer's bytes over a few channels in parts of NCCL_P2P_NVL_CHUNKSIZE
      // steps (Simple) or LL FIFO slots (64 KiB, half of it data).
      protocol::P2pInputs pi = peer;
      if (c.proto == Proto::ll) {
        pi.chunk_bytes = protocol::default_buffer_bytes(Proto::ll) / protocol::kNcclSteps;
        pi.chunk_data_bytes = static_cast<std::uint64_t>(static_cast<double>(pi.chunk_bytes) *
                                                         protocol::wire_efficiency(Proto::ll));
      }
      const protocol::P2pSplit split = protocol::p2p_split(pi);
      const int peers = op == CollectiveOp::alltoall ? n : 1;
      c.channels = std::min(p2p_channels, split.channels * peers);
      c.p2p_steps = split.steps;
    }
  }
  return c;
}

std::string Predictor::p2p_proto_note(CollectiveOp op) const {
  if (tuned(op) || !knobs_.env.proto || geo_.ranks == 1) return {};
  return fmt::format(
      "NCCL_PROTO (--proto) {} does not apply to {}: NCCL's send/receive path never reads it and picks LL "
      "up to {:g} KiB per channel and peer, Simple above (it has no LL128; a peer across the network has no "
      "LL buffer unless NCCL_ALLOC_P2P_NET_LL_BUFFERS=1, so it always runs Simple); the protocol column is "
      "the one it runs",
      *knobs_.env.proto, to_string(op), kP2pLlThresholdBytes / 1024);
}

Prediction Predictor::predict(CollectiveOp op, std::uint64_t bytes, const Profile& profile) const {
  return evaluate(choose(op, bytes), profile);
}

Prediction Predictor::evaluate(const Choice& choice, const Profile& profile) const {
  const CollectiveOp op = choice.op;
  const std::uint64_t bytes = choice.bytes;
  const int n = geo_.ranks;
  const int N = geo_.nccl_nodes;
  const int g = geo_.local_ranks;
  const double S = static_cast<double>(bytes);
  const double S_bus = S * bus_bandwidth_factor(op, n);
  const Algo algo = choice.algo;
  const Proto proto = choice.proto;
  const int nch = choice.channels;
  const bool p2p = choice.p2p;
  Prediction out;
  out.algorithm = choice.algorithm;
  out.proto = proto;
  out.channels = nch;

  const detail::CallShape shape = detail::call_shape(choice, geo_, profile);
  const detail::Steps& steps = shape.steps;
  const detail::Resources& res = shape.res;

  // Chunking: user data per chunk per channel; chunks beyond one per step each pay a FIFO sync.
  protocol::ChunkInputs ci;
  ci.algo = algo;
  ci.proto = proto;
  ci.bytes = bytes;
  ci.channels = nch;
  const int nvls_heads = shape_.nvls_heads > 0 ? shape_.nvls_heads : g;
  ci.nvls_heads = nvls_heads;
  ci.tree_depth = (g - 1) + detail::ceil_log2(N) + 1;
  ci.nodes = N;
  ci.ranks_per_node = g;
  ci.buffer_bytes = proto == Proto::simple ? knobs_.buffsize : 0;
  ci.nvls_chunk_bytes = shape_.nvls_chunk_bytes;
  ci.nvls_tree_max_chunk_bytes = shape_.nvls_tree_max_chunk_bytes;
  out.chunk_bytes = protocol::chunk_data_bytes(ci);

  Breakdown& b = out.breakdown;
  if (n > 1) {
    const double line = std::min(res.intra_Bps, res.inter_Bps);
    // A P2P channel splits its warps between its send and its receive (src/device/sendrecv.h), so
    // each direction gets half of what a channel copies; a ring channel's warps move its bytes in
    // one recv-reduce-send pass.
    const double p2p_share = p2p ? protocol::kP2pDirectionShare : 1.0;
    const double tree_ll_share =
        !p2p && algo == Algo::tree && proto == Proto::ll ? protocol::kTreeLlChannelShare : 1.0;
    const double total_steps = steps.intra + steps.inter + steps.nvls;
    const double chunks = std::ceil(S_bus / (nch * out.chunk_bytes));
    const detail::RateInputs ri{
        .algo = algo,
        .p2p = p2p,
        .S = S,
        .S_bus = S_bus,
        .line_Bps = line,
        .res = res,
        .wire = protocol::wire_efficiency(proto),
        .channels_Bps = p2p_share * tree_ll_share * nch * cap_param(profile, proto) * 1e9,
        .extra_chunks = std::max(0.0, chunks - std::max(1.0, total_steps)),
        .chunk_sync_us = profile[Param::chunk_sync_us],
        .channels = nch,
        .heads = nvls_heads,
        .chunk_bytes = out.chunk_bytes,
        .inter_steps = steps.inter,
        .p2p_steps = choice.p2p_steps};
    latency_layers(choice, steps, geo_, shape_, knobs_.env, profile, b);
    b.fabric_bandwidth_s = S_bus / line;
    const detail::Rates idle = detail::layer_rates(ri, 1.0);
    b.transport_s = idle.transport_s;
    b.protocol_s = idle.protocol_s;
    out.busbw_line_GBps = line / 1e9;
    out.busbw_achievable_GBps = idle.achievable_Bps / 1e9;
    // Contention: the same layers with the network stage at the fabric's share of the pattern's
    // links; what that adds on top.
    const std::optional<NetPattern> pattern = net_pattern(algo, op, p2p);
    const double factor =
        N > 1 && pattern && std::isfinite(res.inter_Bps) ? contention_->factor(*pattern) : 1.0;
    if (factor > 1.0) {
      const detail::Rates shared = detail::layer_rates(ri, factor);
      b.contention_s = (shared.transport_s + shared.protocol_s) - (idle.transport_s + idle.protocol_s);
      out.busbw_achievable_GBps = shared.achievable_Bps / 1e9;
    }
    out.contention_factor = factor;
  } else {
    // One rank: NCCL copies the buffer locally (no communication layers).
    out.busbw_line_GBps = out.busbw_achievable_GBps = 0;
  }
  // nccl-tests times a loop of back-to-back calls on one stream with the host clock (src/common.cu
  // BenchTime): the host enqueues call i+1 while the GPU runs call i, so a call costs the larger
  // of its host time and its device time (kernel_us + the other layers). The host time is one
  // launch (launch_us: enqueue + kernel launch) per communicator the timing thread drives: with
  // nccl-tests -g G one thread enqueues G calls in a group and launches G kernels one after the
  // other; a CUDA-graph replay (nccl-tests -G) has no per-call host time. The launch layer is the
  // kernel's fixed cost plus the host time the device time does not hide.
  const double kernel_s = profile[Param::kernel_us] * 1e-6;
  const double device_s = kernel_s + b.algorithm_latency_s + b.fabric_latency_s + b.fabric_bandwidth_s +
                          b.transport_s + b.protocol_s + b.contention_s;
  const double host_s =
      knobs_.cuda_graph ? 0.0 : profile[Param::launch_us] * 1e-6 * static_cast<double>(knobs_.gpus_per_thread);
  // A call timed alone (OSU) waits for its own launch: nothing hides the host time.
  b.launch_s = kernel_s + (knobs_.synchronized_calls ? host_s : std::max(0.0, host_s - device_s));
  out.time_s = b.total_s();
  return out;
}

Prediction predict(const topologies::ClusterSpec& spec, int nodes, int gpus_per_node, CollectiveOp op,
                   std::uint64_t bytes, const Profile& profile, const Knobs& knobs) {
  return Predictor(spec, nodes, gpus_per_node, knobs).predict(op, bytes, profile);
}

}  // namespace commstack::sim::stack
