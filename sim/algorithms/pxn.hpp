#pragma once
// Internal to sim/algorithms: NCCL's PXN for point-to-point traffic across the network. With
// NCCL_P2P_PXN_LEVEL=2 (the default, src/graph/search.cc ncclTopoGetNetDev) a GPU sends to a peer
// in another NVLink domain through the NIC local to the peer's GPU index: its bytes cross NVLink to
// the GPU of that index in its own domain, whose NIC puts them on the peer's rail. On a
// rail-optimized fabric the network part then stays on one rail instead of climbing to the spines.
#include <vector>

#include "topologies/topology.hpp"

namespace commstack::sim::detail {

class PxnRelays {
 public:
  // `ranks`: the communicator's GPUs. NCCL relays only through a GPU of the communicator
  // (ncclTopoGetIntermediateRank): a group with one GPU per node sends through its own NIC.
  PxnRelays(const topologies::Topology& topo, const std::vector<int>& ranks);
  // The GPU rank that forwards src's bytes to dst, or -1 when src sends through its own NIC (same
  // domain, same position, the peer's position shares src's NIC, or that GPU is not in the
  // communicator).
  int relay(int src, int dst) const;

 private:
  std::vector<char> member_;  // per GPU rank: in the communicator
  int domain_ranks_ = 0;      // GPUs per NVLink domain (0: one domain, no network)
  int gpus_ = 0;
  std::vector<int> nic_;  // per position in a domain: the NIC vertex its network routes leave by
};

}  // namespace commstack::sim::detail
