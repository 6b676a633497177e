#pragma once
// The contention layer of the stack model (docs/stack-model.md, "Contention"): how much slower the
// scale-out fabric carries one collective's network traffic than the NICs alone would, from
// oversubscribed uplinks or routes that meet on a link.
//
// The flows an algorithm sends between NVLink domains are routed on the cluster's topology
// (Topology::route, the routes the SimGrid simulation uses). Every flow of a pattern carries the
// same bytes, so max-min fair sharing gives the slowest flow cap / k on the link where cap / k is
// least (k flows on a link of capacity cap), and the pattern needs max over links of k / cap per
// byte of a flow. The factor is that maximum over every network link divided by the same maximum
// over the NIC links alone, which the bandwidth layer already counts: exactly 1 on a non-blocking
// fabric whose routes do not collide, and the slowdown of the network stage otherwise.
#include <array>
#include <memory>
#include <mutex>
#include <optional>

#include "topologies/cluster.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim::stack {

// Which GPUs exchange bytes across the network (one flow per GPU position of a domain, GPU rank =
// domain x ranks per domain + position).
enum class NetPattern {
  ring,      // domain d -> d+1: each channel's ring leaves a domain once (rings rotate their exit GPU)
  tree,      // both directions of every edge of NCCL's two binary trees over the domains
  pat,       // PAT: shifts by 1, 2, 4, ... domains, weighted by the bytes each phase moves (2^k)
  alltoall,  // every domain to every other, GPU i to GPU i (PXN sends on the peer's rail)
  boundary,  // send/recv ring r -> r+1 across a domain boundary: PXN sends on the receiver's rail
};
inline constexpr int kNetPatterns = 5;

// How the fabric spreads what a switch forwards. Fat trees spread over their equal-cost up/down
// links either way (ECMP). On a dragonfly, adaptive routing (Slingshot, Aries) spreads a router's
// traffic over all its local links (non-minimal detours through the group) and a group's over all
// its global links; minimal routing sends each flow on the one route Topology::route gives, as
// the SimGrid simulation (`collective --profile none`) does.
enum class Routing { adaptive, minimal };

struct DomainLayout {
  int domains = 1;           // NVLink domains (NCCL's nNodes)
  int ranks_per_domain = 1;  // GPUs of the communicator in one domain
  int nodes_per_domain = 1;
};

// The NVLink domains of `nodes` x `gpus_per_node` GPUs of `spec` (node.nvlink_domain_nodes
// consecutive nodes share one; the last may be partial).
DomainLayout domain_layout(const topologies::ClusterSpec& spec, int nodes, int gpus_per_node);

// The factor (>= 1) for one pattern. Alltoall routes about kAlltoallRouteBudget flows at most: beyond,
// each source routes every s-th shift with weight s (deterministic, the same loads on average).
double contention_factor(const topologies::Topology& topo, const DomainLayout& layout, NetPattern pattern,
                         Routing routing = Routing::adaptive);
inline constexpr long long kAlltoallRouteBudget = 2'000'000;

// The factors of one communicator, each computed on first use (routing an alltoall over thousands of
// nodes takes a while and most calls never need it). Thread-safe; copies share the cache.
class ContentionCache {
 public:
  ContentionCache(std::shared_ptr<const topologies::Topology> topo, DomainLayout layout);
  double factor(NetPattern pattern) const;

 private:
  struct State {
    std::mutex mutex;
    std::array<std::optional<double>, kNetPatterns> factors;
  };
  std::shared_ptr<const topologies::Topology> topo_;
  DomainLayout layout_;
  std::shared_ptr<State> state_;
};

}  // namespace commstack::sim::stack
