#include "sim/select/p2p_channels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace commstack::select {
namespace {

int pow2_up(int n) {
  return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(1, n))));
}

constexpr int kMaxChannels = 64;        // MAXCHANNELS
constexpr int kP2pPerBatch = 8;         // NCCL_MAX_DEV_WORK_P2P_PER_BATCH
constexpr double kNetChannelGBps = 14;  // NCCL_P2P_PER_CHANNEL_NET_BW's default

}  // namespace

P2pChannels nccl_p2p_channels(const P2pPeerInputs& in) {
  const int raw = std::clamp(in.comm_channels, 1, kMaxChannels);  // min(nChannels, NCCL_MAX_P2P_NCHANNELS)
  const bool v2_29 = in.version >= NcclVersion::v2_29_3;
  int fewest = v2_29 ? kMaxChannels : raw;
  if (in.local_ranks > 1) fewest = std::min(fewest, 2 * std::max(1, in.nvlinks_to_peer));
  if (in.nodes > 1) {
    // The GPU's own NIC: one is enough for the PCIe path it sits behind (getLocalNetCountByBw).
    constexpr int nics = 1;
    int net = 0;
    if (v2_29) {
      net = std::max(nics, static_cast<int>(std::ceil(std::floor(in.net_path_GBps) / kNetChannelGBps)));
    } else {
      int most = 2;
      while (most * in.ranks > raw * 4 && most > 1) most /= 2;
      net = std::max(nics, most);
    }
    fewest = std::min(fewest, net);
  }
  P2pChannels out;
  out.channels = pow2_up(raw);
  out.per_peer = pow2_up(fewest);
  if (v2_29 && in.nodes > 1) {
    const int rounds = (in.ranks + kP2pPerBatch - 1) / kP2pPerBatch;
    while (out.per_peer * rounds > out.channels && out.per_peer > 1) out.per_peer /= 2;
  } else {
    out.per_peer = std::min(out.per_peer, out.channels);
  }
  return out;
}

}  // namespace commstack::select
