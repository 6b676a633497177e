// Send/receive channels per peer (sim/select/p2p_channels), worked out by hand from
// src/graph/paths.cc ncclTopoGetNchannels / ncclTopoComputeP2pChannels at v2.28.9-1 and v2.29.3-1
// (2.30.7 the same as 2.29).
#include <doctest/doctest.h>

#include "sim/select/p2p_channels.hpp"

using namespace commstack::select;

namespace {

P2pChannels h100(NcclVersion v, int nodes, int channels) {
  // DGX H100: 18 NVLinks per GPU through the NVSwitch, a 400 Gb/s NIC per GPU behind PCIe Gen5 (48).
  return nccl_p2p_channels({v, 8 * nodes, nodes, 8, channels, 18, nodes > 1 ? 48.0 : 0.0});
}

}  // namespace

TEST_CASE("p2p channels: one NVSwitch node gives every peer all of the communicator's channels") {
  // 24 coll channels -> 32 p2p; an NVLink peer allows 2 x 18 = 36 -> 32.
  for (NcclVersion v : {NcclVersion::v2_28_9, NcclVersion::v2_30_7}) {
    const P2pChannels c = h100(v, 1, 24);
    CHECK(c.channels == 32);
    CHECK(c.per_peer == 32);
  }
  // Over PCIe: 2 per peer.
  const P2pChannels pcie = nccl_p2p_channels({NcclVersion::v2_28_9, 8, 1, 8, 16, 0, 0.0});
  CHECK(pcie.per_peer == 2);
}

TEST_CASE("p2p channels: 2.28.9 gives a network peer 2 channels, 1 above 32 ranks on 16 channels") {
  // nChannelsMax = 2 halves while 2 x nRanks > 4 x p2pnChannels (16): 2 up to 32 ranks. The
  // nccl-tests#319 log (2 x 8 H100, NCCL 2.26.2, whose rule this is) prints "16 coll channels, ...
  // 16 p2p channels, 2 p2p channels per peer".
  const P2pChannels issue319 = h100(NcclVersion::v2_28_9, 2, 16);
  CHECK(issue319.channels == 16);
  CHECK(issue319.per_peer == 2);
  CHECK(h100(NcclVersion::v2_28_9, 4, 16).per_peer == 2);
  CHECK(h100(NcclVersion::v2_28_9, 8, 16).per_peer == 1);
  CHECK(h100(NcclVersion::v2_28_9, 8, 16).channels == 16);
}

TEST_CASE(
    "p2p channels: from 2.29 a network peer gets 14 GB/s channels, halved until all peers fit one round") {
  // ceil(48 / 14) = 4 per peer; rounds of 8 peers: 16 ranks 2 rounds (4 x 2 <= 16), 64 ranks 8
  // rounds (2 x 8 <= 16), 256 ranks 32 rounds (1).
  CHECK(h100(NcclVersion::v2_29_3, 2, 16).per_peer == 4);
  CHECK(h100(NcclVersion::v2_30_7, 2, 16).per_peer == 4);
  CHECK(h100(NcclVersion::v2_30_7, 8, 16).per_peer == 2);
  CHECK(h100(NcclVersion::v2_30_7, 32, 16).per_peer == 1);
  // An 800 Gb/s NIC behind Gen6 (96 GB/s): ceil(96 / 14) = 7 -> 8, and 8 x 2 rounds fit 32 channels.
  CHECK(nccl_p2p_channels({NcclVersion::v2_30_7, 16, 2, 8, 32, 18, 96.0}).per_peer == 8);
}
