#include "sim/stack/call_shape.hpp"

#include <algorithm>

namespace commstack::sim::stack::detail {

using select::Algo;

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

namespace {

// A call NCCL's tuner chose an algorithm for (all-reduce, all-gather, reduce-scatter, broadcast, reduce).
void tuned_shape(const Predictor::Choice& choice, const CommGeometry& geo, const Profile& profile,
                 CallShape& shape) {
  const CollectiveOp op = choice.op;
  const int n = geo.ranks;
  const int N = geo.nccl_nodes;
  const int g = geo.local_ranks;
  const double S = static_cast<double>(choice.bytes);
  const double bf = bus_bandwidth_factor(op, n);
  const double S_bus = S * bf;
  const Algo algo = choice.algo;
  const double B_n = geo.nvlink_Bps;
  const double B_nic = geo.nic_domain_Bps;
  const double tree_egress = geo.tree_egress;
  const double eta_nvls = profile[Param::eta_nvls];
  Steps& steps = shape.steps;
  Resources& res = shape.res;
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
      const int h = std::clamp(geo.nic_gpus_domain, 1, g);
      const double per_gpu = algo == Algo::collnet_direct ? (h + g - 2.0) / h
                             : h == g                     ? 2.0 * (g - 1) / g
                                                          : 2.0;
      if (g > 1) res.intra_Bps = B_n * S_bus / (per_gpu * S);
      if (N > 1) res.inter_Bps = B_nic * S_bus / S;
      break;
    }
  }
}

// Send/receive work (alltoall, sendrecv): NCCL's P2P path, no algorithm choice.
void p2p_shape(const Predictor::Choice& choice, const CommGeometry& geo, CallShape& shape) {
  const CollectiveOp op = choice.op;
  const int n = geo.ranks;
  const int N = geo.nccl_nodes;
  const int g = geo.local_ranks;
  const double S = static_cast<double>(choice.bytes);
  const double S_bus = S * bus_bandwidth_factor(op, n);
  const double B_n = geo.nvlink_Bps;
  Steps& steps = shape.steps;
  Resources& res = shape.res;
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
    if (N > 1) res.inter_Bps = geo.nic_gpu_Bps * (n - 1.0) / (n - g);
  } else {  // sendrecv: rank r sends S to r+1 (mod n); all pairs run at once, the slowest ends the call
    // With more than one NVLink domain the pairs at a domain boundary (g-1 -> g, ..., n-1 -> 0) go
    // through the sending GPU's NIC and pace the call (one network step at one NIC's rate), whatever
    // the pairs inside a domain do over NVLink.
    steps.intra = N == 1 ? 1 : 0;
    steps.inter = N > 1 ? 1 : 0;
    if (N == 1)
      res.intra_Bps = B_n;
    else
      res.inter_Bps = geo.nic_gpu_Bps;
  }
}

}  // namespace

CallShape call_shape(const Predictor::Choice& choice, const CommGeometry& geo, const Profile& profile) {
  CallShape shape;
  shape.res.eta_intra = profile[Param::eta_nvlink];
  shape.res.eta_inter = profile[Param::eta_nic];
  if (geo.ranks <= 1) return shape;
  if (choice.p2p)
    p2p_shape(choice, geo, shape);
  else
    tuned_shape(choice, geo, profile, shape);
  return shape;
}

}  // namespace commstack::sim::stack::detail
