#pragma once
// How many channels NCCL gives each send/receive peer (comm->p2pnChannelsPerPeer,
// src/graph/paths.cc ncclTopoComputeP2pChannels): the fewest any peer allows, as a power of two.
// An NVLink peer allows 2 per NVLink between the two GPUs, a peer over PCIe 2, a peer across the
// network a number that changed in 2.29: up to 2.28 two per NIC halved as the communicator grows
// (8 or more operations per channel lose the sync warp), from 2.29 enough 14 GB/s channels to fill
// the NIC path, then halved until every peer fits in one round of the p2p channels.
#include "sim/select/tuning_constants.hpp"

namespace commstack::select {

struct P2pPeerInputs {
  NcclVersion version = default_nccl_version();
  int ranks = 1;          // comm->nRanks
  int nodes = 1;          // comm->nNodes: NVLink domains
  int local_ranks = 1;    // ranks in this rank's domain
  int comm_channels = 1;  // comm->nChannels (p2pnChannels before the power of two)
  // NVLinks between two GPUs of the domain (through an NVSwitch: all of a GPU's); 0 = over PCIe.
  int nvlinks_to_peer = 0;
  double net_path_GBps = 0;  // the GPU's NIC path (NCCL's paths[NET].bw), for peers across domains
};

struct P2pChannels {
  int channels = 1;  // comm->p2pnChannels
  int per_peer = 1;  // comm->p2pnChannelsPerPeer
};

P2pChannels nccl_p2p_channels(const P2pPeerInputs& in);

}  // namespace commstack::select
