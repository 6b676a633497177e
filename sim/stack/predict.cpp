#include "sim/stack/predict.hpp"

#include <algorithm>
#include <bit>
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

namespace commstack::sim::stack {
namespace {

using select::Algo;
using select::Proto;

constexpr double kInf = std::numeric_limits<double>::infinity();

// NCCL maps send/receive peers to channels by powers of two (src/graph/paths.cc
// ncclTopoComputeP2pChannels: pow2Up of the communicator's channels; 24 coll channels give 32 p2p).
int pow2_up(int n) {
  return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(1, n))));
}

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

// NCCL's topology search only tries these per-channel speeds (GB/s, src/graph/search.cc); the
// graph values it prints are one of them.
double snap_to_nccl_speed(double gbps) {
  static constexpr double kSpeeds[] = {48, 40, 30, 28, 24, 20, 18, 15, 12, 11, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
  for (double s : kSpeeds)
    if (s <= gbps) return s;
  return 0.12;
}

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

// Sequential steps of one call, by the kind of hop they wait for.
struct Steps {
  double intra = 0;  // steps between GPUs of one NVLink domain
  double inter = 0;  // steps that cross the network
  double nvls = 0;   // NVLink SHARP rounds
  double posts = 0;  // extra network messages the proxy posts one after the other (alltoall peers)
};

// Bus-byte rates (bytes of S * busfactor per second) each resource allows at line rate, and the
// efficiency that applies to it. A resource that the algorithm does not use is infinite.
struct Resources {
  double intra_Bps = kInf;
  double inter_Bps = kInf;
  double eta_intra = 1;
  double eta_inter = 1;
};

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

}  // namespace

select::CommShape comm_shape(const CommGeometry& geo, const Knobs& knobs) {
  select::CommShape s;
  s.n_ranks = geo.ranks;
  s.n_nodes = geo.nccl_nodes;
  s.local_ranks = geo.local_ranks;
  s.min_sm = s.max_sm = geo.sm;
  // Grace (GH200 / GB200) hosts are Arm; the x86 clusters in the data are Intel or unknown.
  s.cpu_arch = select::CpuArch::x86;
  s.cpu_vendor = select::CpuVendor::intel;
  // NCCL sees NVLink at 20 / 20.6 / 40.1 GB/s per link (topo.h) where the line rate is 25 / 25 / 50:
  // 80% of the line rate.
  const double nccl_nvlink_GBps = 0.8 * geo.nvlink_Bps / 1e9;
  // Channels: where the GPUs of a domain meet in an NVSwitch, NCCL's own search on the node's
  // NVLink and NIC bandwidths (sim/select/nccl_search.hpp; 16 coll channels on 2 H100 nodes as the
  // nccl-tests#319 log prints). Elsewhere (one GPU per domain, GH200's direct NVLink) two per NIC
  // rail on 8-GPU nodes and one more doubling for NVLink5 (assumption, docs/stack-model.md).
  int channels = geo.sm >= 100 ? 32 : 16;
  if (geo.local_ranks <= 4 && geo.sm < 100) channels = std::min(channels, 2 * std::max(2, geo.local_ranks));
  const double bw_intra = snap_to_nccl_speed(std::min(40.0, nccl_nvlink_GBps / (channels / 2.0)));
  const double bw_inter =
      geo.nccl_nodes > 1 ? snap_to_nccl_speed(std::min(bw_intra, geo.nic_domain_Bps / 1e9 / channels)) : bw_intra;
  const auto inter_type = select::PathType::pix;  // a NIC per GPU on its PCIe switch (GPUDirect RDMA)
  s.ring = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 4};
  s.tree = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, geo.nccl_nodes > 1 ? 1 : 3};
  int comm_channels = channels;
  std::optional<select::GraphParams> searched_nvls;
  if (geo.nvswitch && geo.local_ranks >= 2 && geo.nvlink_Bps > 0 &&
      (geo.nccl_nodes == 1 || geo.nics_domain > 0)) {
    select::SearchNode node;
    node.sm = geo.sm;
    node.gpus = geo.local_ranks;
    node.nvlink_GBps = select::nvlink_links(geo.sm, geo.nvlink_Bps) * select::nccl_nvlink_link_GBps(geo.sm);
    if (geo.nccl_nodes > 1) {
      node.nets = geo.nics_domain;
      // NCCL rates a PCIe x16 link at 3/4 of its line rate (src/graph/topo.cc: Gen4 24, Gen5 48 GB/s).
      const double pcie = geo.pcie_Bps > 0 ? 0.75 * geo.pcie_Bps / 1e9 : kInf;
      node.net_path_GBps = std::min(geo.nic_port_Bps / 1e9, pcie);
    }
    const select::SearchedGraphs g = select::search_nvswitch_node(node);
    s.ring = g.ring;
    s.tree = g.tree;
    comm_channels = g.comm_channels;
    searched_nvls = g.nvls;
  }
  // NVLS heads each drive one NIC: the NVLS graph's bwInter is a whole NIC (src/graph/search.cc
  // searches NVLS graphs per NIC), where Ring/Tree share the domain's NICs among all channels.
  const double nvls_inter = geo.nccl_nodes > 1 ? snap_to_nccl_speed(geo.nic_gpu_Bps / 1e9) : bw_intra;
  s.nvls = {channels, bw_intra, nvls_inter, select::PathType::nvl, inter_type, 0, true, 5};
  s.collnet_direct = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 6};
  s.collnet_chain = {channels, bw_intra, bw_inter, select::PathType::nvl, inter_type, 0, true, 6};
  // NVLink SHARP needs NVSwitch gen3+ (sm >= 90) and more than 2 GPUs in the domain. GH200 nodes
  // wire their 4 GPUs all-to-all without an NVSwitch (the gh200-slingshot preset models that as
  // one NVLink plane), so they have no NVLS.
  // NCCL_NVLS_ENABLE=0 turns NVLS (and NVLSTree) off; 1 and the default leave it to the hardware check.
  s.nvls_support = knobs.env.nvls_enable != 0 && geo.sm >= 90 && geo.nvswitch && geo.local_ranks > 2 &&
                   geo.nvlink_Bps > 0 && geo.gpus_per_node >= 4;
  s.nvls_channels = channels;
  if (searched_nvls) {
    s.nvls = *searched_nvls;
    s.nvls_channels = select::nccl_default_nvls_channels(geo.sm, geo.nccl_nodes);
    if (searched_nvls->n_channels == 0) s.nvls_support = false;
  }
  s.collnet_support = knobs.collnet;
  s.n_channels = comm_channels;
  if (knobs.comm_channels > 0) s.n_channels = knobs.comm_channels;
  if (knobs.nvls_channels > 0) s.nvls_channels = knobs.nvls_channels;
  return s;
}

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
  if (gpus_per_node < 1 || gpus_per_node > spec.node.gpus)
    throw InputError(fmt::format("--gpus-per-node: expected 1..{} (cluster {} has {} GPUs per node), got {}",
                                 spec.node.gpus, spec.name, spec.node.gpus, gpus_per_node));
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
  contention_.emplace(topo_ptr, layout);
  shape_ = comm_shape(geo_, knobs_);
  tables_ = select::tune_model(shape_, knobs_.env, knobs_.nccl_version);
}

int Predictor::p2p_channels_per_nvlink_peer() const {
  return pow2_up(std::min(shape_.n_channels, 2 * select::nvlink_links(geo_.sm, geo_.nvlink_Bps)));
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
    // Send/receive work: LL while a peer's bytes fit p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD
    // (16 KiB), Simple above (src/enqueue.cc addP2pToPlan). p2pnChannelsPerPeer is the fewest
    // channels any peer allows (src/graph/paths.cc ncclTopoComputeP2pChannels): 2 x NVLinks per
    // NVLink peer, capped by the communicator's channels, so all of them through an NVSwitch; 2 over
    // PCIe and for a peer across the network.
    const int channels_per_peer =
        (geo_.nccl_nodes == 1 && geo_.nvswitch) ? p2p_channels_per_nvlink_peer() : 2;
    const int p2p_channels = pow2_up(shape_.n_channels);
    const double per_peer = op == CollectiveOp::alltoall ? static_cast<double>(bytes) / n : static_cast<double>(bytes);
    c.proto = per_peer <= channels_per_peer * 16384.0 ? Proto::ll : Proto::simple;
    if (knobs_.env.proto) {
      select::Proto forced;
      if (!select::parse_proto(*knobs_.env.proto, forced))
        throw InputError(fmt::format("--proto {}: expected LL, LL128 or Simple", *knobs_.env.proto));
      c.proto = forced;
    }
    c.algorithm = "P2P";
    if (geo_.nccl_nodes == 1 && c.proto != Proto::ll128) {
      // NCCL stripes each peer's bytes over a few channels in parts of NCCL_P2P_NVL_CHUNKSIZE
      // steps (Simple) or LL FIFO slots (64 KiB, half of it data). p2pnChannels is the
      // communicator's channel count; per peer NCCL allows 2 x (NVLink bandwidth to the peer / one
      // link's) channels, more than that through an NVSwitch, 2 over PCIe (src/graph/paths.cc
      // ncclTopoGetNchannels).
      protocol::P2pInputs pi;
      pi.peer_bytes = static_cast<std::uint64_t>(per_peer);
      pi.ranks = n;
      pi.p2p_channels = p2p_channels;
      pi.channels_per_peer = channels_per_peer;
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
  const double bf = bus_bandwidth_factor(op, n);
  const double S_bus = S * bf;
  const Algo algo = choice.algo;
  const Proto proto = choice.proto;
  const int nch = choice.channels;
  const bool p2p = choice.p2p;
  Prediction out;
  out.algorithm = choice.algorithm;
  out.proto = proto;
  out.channels = nch;

  Steps steps;
  Resources res;
  const double B_n = geo_.nvlink_Bps;
  const double B_nic = geo_.nic_domain_Bps;
  const double tree_egress = geo_.tree_egress;
  const double eta_p2p = profile[Param::eta_nvlink];
  const double eta_nvls = profile[Param::eta_nvls];
  const double eta_nic = profile[Param::eta_nic];
  res.eta_intra = eta_p2p;
  res.eta_inter = eta_nic;
  if (n > 1 && !p2p) {
    switch (algo) {
      case Algo::ring:
      case Algo::pat:
        if (op == CollectiveOp::allreduce) {
          steps.inter = N > 1 ? 2.0 * (N - 1) : 0;
          steps.intra = 2.0 * (n - 1) - steps.inter;
        } else {
          steps.inter = N > 1 ? N - 1 : 0;
          steps.intra = (n - 1) - steps.inter;
        }
        if (algo == Algo::pat) {  // log2 aggregated steps instead of n-1
          steps.inter = N > 1 ? ceil_log2(N) : 0;
          steps.intra = ceil_log2(g);
        }
        // Every rank sends S_bus; a domain's NICs carry S_bus (each channel's ring leaves once).
        // Across domains N of a ring's n hops cross the network, and NCCL rotates the GPU that
        // sends them over the channels: each GPU sends (g-1)/g of S_bus over NVLink and 1/g
        // through a NIC, so its NVLink allows g/(g-1) x B_n of bus bytes (2-node H100 ring:
        // 393 GB/s measured, above the 370 of a 1-node ring).
        if (g > 1) res.intra_Bps = N > 1 ? B_n * g / (g - 1.0) : B_n;
        if (N > 1) res.inter_Bps = B_nic;
        break;
      case Algo::tree:
        steps.intra = 2.0 * (g - 1);
        steps.inter = 2.0 * ceil_log2(N);
        // Chain inside the domain: each GPU sends S up and S down over the two trees.
        if (g > 1) res.intra_Bps = B_n * S_bus / (2 * S);
        if (N > 1) res.inter_Bps = B_nic * S_bus / (tree_egress * S);
        break;
      case Algo::nvls:
      case Algo::nvls_tree:
        steps.nvls = 1;
        steps.inter = (algo == Algo::nvls_tree || N > 1) ? 2.0 * ceil_log2(N) : 0;
        // Multimem: each GPU pushes S (reductions) and pulls S (multicast) through its link;
        // all-gather / reduce-scatter move the bus bytes once.
        res.intra_Bps = op == CollectiveOp::allreduce ? B_n * bf : B_n;
        res.eta_intra = algo == Algo::nvls_tree ? profile[Param::eta_nvlstree] : eta_nvls;
        if (N > 1) res.inter_Bps = B_nic * S_bus / (tree_egress * S);
        break;
      case Algo::collnet_direct:
      case Algo::collnet_chain: {
        steps.intra = 2.0 * (g - 1);
        steps.inter = N > 1 ? 1 : 0;  // one in-network (SHARP) reduction
        // NVLink bytes of the busiest GPU, each way (sim/algorithms/collnet.cpp has the flows). Direct
        // with h heads: a head scatters (h-1)/h S to the other heads and gathers its S/h out to the
        // g-1 others: (h+g-2)/h S, 2 (g-1)/g S with a head per GPU. Chain, channel c on head c mod h:
        // inside a node each GPU sends S up and S down the chain but the head (down only) and the
        // last (up only), so with a head per GPU the roles rotate to 2 (g-1)/g S too; with fewer
        // heads a GPU that is never one is in the middle of every chain: 2 S.
        const int h = std::clamp(geo_.nic_gpus_domain, 1, g);
        const double per_gpu = algo == Algo::collnet_direct ? (h + g - 2.0) / h
                               : h == g                     ? 2.0 * (g - 1) / g
                                                            : 2.0;
        if (g > 1) res.intra_Bps = B_n * S_bus / (per_gpu * S);
        if (N > 1) res.inter_Bps = B_nic * S_bus / S;
        break;
      }
    }
  } else if (n > 1) {
    if (op == CollectiveOp::alltoall) {
      // Peers inside the domain are served in parallel by the kernel's channels: one step. Peers
      // across the network are progressed one after the other by the GPU's proxy thread (one
      // NET send and receive posted per remote peer, src/proxy.cc): one network step of the
      // protocol plus n - g - 1 posts, each costing a bare network message (the LL step latency).
      steps.intra = g > 1 ? 1 : 0;
      steps.inter = N > 1 ? 1 : 0;
      steps.posts = N > 1 ? n - g - 1 : 0;
      // Per GPU: (g-1)/n of S over NVLink and (n-g)/n of S through the network. Alltoall cannot
      // aggregate NICs (each GPU's remote traffic leaves through one NIC, its own or, with PXN, the
      // rail of the peer: the same load per NIC), so one NIC carries (n-g)/n of S and the bus
      // bandwidth bound is (n-1)/(n-g) NICs: "on 2 nodes, 50% of the traffic is inter-node so you
      // should see BusBW = 2x network bandwidth per GPU ... it will go down to 1x" with more nodes
      // (sjeaugey, nccl-tests#130; nccl-tests#267's "performance of a single NIC" was on 6 nodes).
      if (g > 1) res.intra_Bps = S_bus / (S * (g - 1) / n) * B_n;
      if (N > 1) res.inter_Bps = geo_.nic_gpu_Bps * (n - 1.0) / (n - g);
    } else {  // sendrecv: rank r sends S to r+1 (mod n); all pairs run at once, the slowest ends the call
      // With more than one NVLink domain the pairs at a domain boundary (g-1 -> g, ..., n-1 -> 0) go
      // through the sending GPU's NIC and pace the call (one network step at one NIC's rate), whatever
      // the pairs inside a domain do over NVLink.
      steps.intra = N == 1 ? 1 : 0;
      steps.inter = N > 1 ? 1 : 0;
      if (N == 1)
        res.intra_Bps = B_n;
      else
        res.inter_Bps = geo_.nic_gpu_Bps;
    }
  }

  // Chunking: user data per chunk per channel; chunks beyond one per step each pay a FIFO sync.
  protocol::ChunkInputs ci;
  ci.algo = algo;
  ci.proto = proto;
  ci.bytes = bytes;
  ci.channels = nch;
  ci.nvls_heads = g;
  ci.tree_depth = (g - 1) + ceil_log2(N) + 1;
  ci.nodes = N;
  ci.ranks_per_node = g;
  ci.buffer_bytes = proto == Proto::simple ? knobs_.buffsize : 0;
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
    const double channels_Bps = p2p_share * tree_ll_share * nch * cap_param(profile, proto) * 1e9;
    const double wire = protocol::wire_efficiency(proto);
    const double total_steps = steps.intra + steps.inter + steps.nvls;
    const double chunks = std::ceil(S_bus / (nch * out.chunk_bytes));
    const double extra_chunks = std::max(0.0, chunks - std::max(1.0, total_steps));
    // The layers above the line rate, with the network stage slowed by `contention` (>= 1, the
    // fabric's share of the pattern's links, fabric_contention.hpp).
    struct Rates {
      double transport_s = 0, protocol_s = 0, achievable_Bps = 0;
    };
    const auto rates = [&](double contention) {
      Rates r;
      const double intra_achieved = res.intra_Bps * res.eta_intra;
      const double inter_achieved = res.inter_Bps * res.eta_inter / contention;
      const double transported = std::min(intra_achieved, inter_achieved);
      const double capped = std::min(transported * wire, channels_Bps);
      r.transport_s = S_bus / transported - S_bus / line;
      // The per-chunk FIFO sync is GPU work, in series with the GPU's copies. When the network is
      // the slower stage of the pipeline (GPU copies -> proxy -> NIC), the GPU stage has slack and
      // its syncs hide behind the NIC: only what the GPU stage takes beyond the NIC stage shows.
      double sync_s = extra_chunks * profile[Param::chunk_sync_us] * 1e-6;
      if (inter_achieved < intra_achieved) {
        const double gpu_Bps = std::min(intra_achieved * wire, channels_Bps);
        sync_s = std::max(0.0, S_bus / gpu_Bps + sync_s - S_bus / capped);
      }
      r.protocol_s = (S_bus / capped - S_bus / transported) + sync_s;
      if (!p2p && (algo == Algo::nvls || algo == Algo::nvls_tree || algo == Algo::tree)) {
        // Pipeline fill. A chunk goes through the stages of the algorithm one after the other, and
        // chunk k+1 enters a stage as chunk k leaves it, so a call takes the slowest stage's time
        // for every loop (the bandwidth term) plus one loop through each of the other stages, each
        // at its own rate: the NVLink stages at the GPU's, the network hops at the NICs'.
        // NVLS: one loop of the kernel gives every (channel, head) pair a chunk and goes through
        // the reduction in the switch (multimem.ld_reduce), across domains one network hop up and
        // one down per tree level (NVLSTree: the heads' sends and receives), and the multicast
        // (multimem.st). On one node (2 equal stages) this is one loop-time, what makes the H100
        // busbw jump where NCCL doubles the NVLS chunk (1 GiB on 8 GPUs: 437 -> 466 GB/s, dgxc
        // log) less than the per-chunk sync alone predicts; on two H100 nodes the NVLink stages are
        // the slow ones and the two hops add what keeps NVLSTree 5-10% below its bandwidth bound up
        // to 128 MiB (issue309 logs).
        // Tree: a loop is one chunk per channel. Across the network NCCL's proxy posts a FIFO step
        // only once the GPU has written all of it, whatever the protocol (src/transport/net.cc),
        // so each of the 2 log2(nodes) hops up and down the tree forwards whole chunks. The chain
        // inside the node is no stage: a chain GPU's NVLink port carries both directions of the
        // tree, busy from the first chunk up to the last chunk down, so its fill hides (the flows
        // of sim/algorithms/tree.cpp reach the NVLink bound on 2 nodes and pay the network hops'
        // loops on 4 and 16, docs/stack-model.md). NCCL sizes the Tree/LL128 chunk against this
        // depth (calcCollChunking's 1 + log2 nodes + 0.1 ppn); the 16-node CoreWeave A100 Tree
        // sweep shows it.
        const int heads = algo == Algo::tree ? 1 : std::max(1, g);
        const double loop_bytes = static_cast<double>(nch) * heads * out.chunk_bytes;
        const double t_nvlink = S_bus / std::min(intra_achieved * wire, channels_Bps);
        const double t_net = std::isfinite(inter_achieved) ? S_bus / (inter_achieved * wire) : 0.0;
        const double nvlink_stages = algo != Algo::tree ? 2.0 : 0.0;
        const double fill = std::max(0.0, nvlink_stages * t_nvlink + steps.inter * t_net - S_bus / capped);
        r.protocol_s += std::min(1.0, loop_bytes / S) * fill;
      }
      if (choice.p2p_steps > 0) {
        // P2P (Simple and LL) moves each chunk twice, sender into the FIFO slot and receiver out of
        // it, pipelined over the FIFO steps: a part of s chunks takes s + 1 chunk times.
        r.protocol_s += S_bus / capped / static_cast<double>(choice.p2p_steps);
      }
      r.achievable_Bps = capped;
      return r;
    };
    // An NVLink step's latency is NCCL's whole step, the wire included: the NDm A100 v4 1 KiB
    // points (CUDA graph, one cluster) give 0.63 us per ring LL step (all-reduce 14 steps 16.96 us,
    // all-gather 7 steps 12.53 us), NCCL's hwLat is 0.6. The fabric layer below already counts the
    // route, so the algorithm layer keeps what the step costs beyond it (an NVLS round crosses the
    // route twice). A network step is left as NCCL's hwLat on top of the route: the measured one is
    // longer than NCCL's constant (NDm 2 x 1 GPU: 5.2 us per LL step against 2.7; docs/stack-model.md).
    const double route_intra_us = geo_.route_latency_intra_s * 1e6;
    double intra_beyond_route_us = std::max(0.0, lat_param(profile, proto, false) - route_intra_us);
    // A ring that leaves the domain is paced by its network steps: NCCL's model lets none of its
    // intra-domain steps cost less than the proxy's per-step network overhead (tuning.cc). The
    // overhead is the proxy's and comes on top of the NVLink hop: 2-node rings take ~1.26-1.3 us
    // per NVLink LL step (NDm A100 v4, Vultr B200 1 KiB points), overhead + hop 1.6, the larger
    // of the two 1.0 (docs/stack-model.md, seventh landing).
    if (!p2p && algo == Algo::ring && op != CollectiveOp::broadcast && op != CollectiveOp::reduce)
      intra_beyond_route_us = std::max(intra_beyond_route_us, select::ring_net_overhead_us(shape_, knobs_.env, proto));
    const double nvls_beyond_route_us = std::max(0.0, profile[Param::nvls_latency_us] - 2 * route_intra_us);
    b.algorithm_latency_s =
        (steps.intra * intra_beyond_route_us + steps.inter * lat_param(profile, proto, true) +
         steps.nvls * nvls_beyond_route_us + steps.posts * profile[Param::lat_net_ll_us]) *
        1e-6;
    b.fabric_latency_s = (steps.intra + steps.nvls * 2) * geo_.route_latency_intra_s + steps.inter * geo_.route_latency_inter_s;
    b.fabric_bandwidth_s = S_bus / line;
    const Rates idle = rates(1.0);
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
      const Rates shared = rates(factor);
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
