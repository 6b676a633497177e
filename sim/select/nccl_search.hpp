#pragma once
// NCCL's topology search (src/graph/search.cc ncclTopoCompute, v2.28.9; later releases' Blackwell speeds) for
// the nodes the presets describe: GPUs that meet in an NVSwitch, each with the same NVLink bandwidth, and
// (across nodes) a set of identical NICs behind PCIe. On such a node the search is a pure function of a few
// numbers: the per-channel speeds it tries, how many channels fit at each speed on the GPUs' NVLinks and on
// the NICs, when it stops, when it duplicates channels, and how pass 2 raises the speed. ncclTopoPostset
// (src/graph/connect.cc) then doubles the channels for the communicator. docs/nccl-selection.md "Channels"
// explains the steps and lists what it gives per preset.
#include <string>

#include "sim/select/nccl_tuner.hpp"

namespace commstack::select {

struct SearchNode {
  int sm = 90;               // compute capability x10: picks NCCL's speed arrays (sm80 / sm90 / sm100)
  int gpus = 8;              // GPUs of the communicator in one node (NVLink domain)
  double nvlink_GBps = 0;    // NCCL's NVLink bandwidth of one GPU: links x per-link bandwidth (topo.h)
  int nets = 0;              // NICs of one node the communicator uses; 0 on one node (no network)
  double net_path_GBps = 0;  // NCCL's GPU -> NIC path bandwidth: min(NIC port, PCIe)
  NcclVersion version = default_nccl_version();  // whose speed arrays (2.29 and 2.30 add Blackwell speeds)
};

struct SearchedGraphs {
  GraphParams ring, tree;  // what NCCL's GRAPH lines would print (channels after ncclTopoDupChannels)
  GraphParams nvls;        // the NVLS graph (NVLS and NVLSTree): one channel per head GPU
  int comm_channels = 1;   // comm->nChannels after ncclTopoPostset, before NCCL_MIN/MAX_CTAS
};

// Throws InputError when the node has no NVLink bandwidth, or NICs without bandwidth.
SearchedGraphs search_nvswitch_node(const SearchNode& node);

// NCCL's NVLink bandwidth per link as its topology sees it (topo.h SM80/SM90/SM100_NVLINK_BW).
double nccl_nvlink_link_GBps(int sm);
// NVLinks of one GPU (at least 1) from its per-direction line rate: 25 GB/s per link up to Hopper,
// 50 on Blackwell.
int nvlink_links(int sm, double line_Bps);

// The communicator in the words NCCL_DEBUG=INFO uses at init: "24 coll channels (ring graph 12 x 20
// GB/s), 16 nvls channels" (the NVLS part only where NVLS is supported). The coll channels are those
// after NCCL_MIN/MAX_CTAS in `env` (NCCL prints them after the clamp); where the clamp changed the
// search's count it says so: "1 coll channels (ring graph 8 x 48 GB/s; 16 before NCCL_MAX_CTAS=1)".
// Where CollNet was asked for but is not set up (CommShape::collnet_off_reason) it ends with
// "; --collnet on ignored: " and the reason.
std::string describe_comm(const CommShape& shape, const NcclEnv& env = {});

}  // namespace commstack::select
