// NCCL's PXN on the SimGrid fabric (sim/algorithms/pxn.hpp): point-to-point bytes to a peer in
// another NVLink domain leave through the NIC of the peer's GPU index, relayed over NVLink by the
// GPU of that index in the sender's domain, when that GPU is in the communicator.
#include <numeric>
#include <vector>

#include <doctest/doctest.h>

#include "sim/algorithms/pxn.hpp"
#include "topologies/cluster.hpp"

using namespace commstack;
using sim::detail::PxnRelays;

namespace {
std::vector<int> all_ranks(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}
}  // namespace

TEST_CASE("pxn: a DGX H100 GPU reaches another node's GPU j through its node's GPU j (rail j)") {
  const auto topo = topologies::build_topology(topologies::load_cluster("dgx-h100"), 2, 8);
  const PxnRelays pxn(topo, all_ranks(16));
  CHECK(pxn.relay(0, 9) == 1);    // node 0 GPU 0 -> node 1 GPU 1: via node 0 GPU 1's NIC
  CHECK(pxn.relay(15, 0) == 8);   // node 1 GPU 7 -> node 0 GPU 0: via node 1 GPU 0
  CHECK(pxn.relay(3, 11) == -1);  // same rail: its own NIC
  CHECK(pxn.relay(0, 5) == -1);   // same node: NVLink only
  // A communicator of one GPU per node (a data-parallel group) has no GPU to relay through.
  const PxnRelays dp(topo, {0, 9});
  CHECK(dp.relay(0, 9) == -1);
}

TEST_CASE(
    "pxn: inside a GB200 NVL72 rack there is no network, across racks the relay is the peer's position") {
  const auto spec = topologies::load_cluster("gb200-nvl72");
  const auto rack = topologies::build_topology(spec, 18, 4);
  CHECK(PxnRelays(rack, all_ranks(72)).relay(0, 71) == -1);
  const auto two = topologies::build_topology(spec, 36, 4);
  const PxnRelays pxn(two, all_ranks(144));
  CHECK(pxn.relay(0, 72 + 5) == 5);   // rack 0 position 0 -> rack 1 position 5: via rack 0 position 5
  CHECK(pxn.relay(6, 72 + 6) == -1);  // same position: its own NIC
}
