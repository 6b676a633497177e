#pragma once
// A re-implementation of NCCL's algorithm/protocol/channel selection (src/graph/tuning.cc
// ncclTopoTuneModel + ncclTopoGetAlgoTime, src/enqueue.cc updateCollCostTable/topoGetAlgoInfo):
// for a communicator it builds NCCL's latency/bandwidth table per function x algorithm x
// protocol; for one collective it gives the predicted time of every pair, the pairs NCCL
// allows, the one it picks (minimum time) and the channel and thread counts. docs/nccl-selection.md
// explains every input. The model is NCCL's prior, not a measurement.
#include <cstdint>
#include <string>

#include "sim/select/nccl_env.hpp"
#include "sim/select/nccl_types.hpp"
#include "sim/select/tuning_constants.hpp"

namespace commstack::select {

// One topology-search result as printed by NCCL's GRAPH line
// "Pattern p, crossNic c, nChannels n, bw intra/inter, type INTRA/INTER, sameChannels s".
struct GraphParams {
  int n_channels = 0;       // channels of this graph (after NCCL's duplication)
  double bw_intra = 0;      // GB/s per channel inside a node
  double bw_inter = 0;      // GB/s per channel between nodes
  PathType type_intra = PathType::nvl;
  PathType type_inter = PathType::pix;
  double latency_inter_us = 0;  // graph->latencyInter (0 for IB/RoCE)
  bool same_channels = true;
  int pattern = 4;              // 1 balanced tree, 2 split tree, 3 tree, 4 ring, 5 nvls, 6 collnet direct
};

struct CommShape {
  int n_ranks = 1;
  int n_nodes = 1;
  int local_ranks = 0;  // max GPUs of this comm on one node; 0 = n_ranks / n_nodes
  int min_sm = 90;      // compute capability x10 of the oldest / newest GPU (70 V100, 80 A100, 90 H100, 100 B200)
  int max_sm = 90;
  CpuArch cpu_arch = CpuArch::x86;
  CpuVendor cpu_vendor = CpuVendor::intel;
  GraphParams ring, tree;  // PAT uses the tree graph
  GraphParams nvls;        // NVLS and NVLSTree
  GraphParams collnet_direct, collnet_chain;
  bool nvls_support = false;     // NVLink SHARP (NVSwitch multicast) usable
  // CollNet set up: comm->config.collnetEnable after init (src/init.cc), i.e. a CollNet (SHARP)
  // plugin loaded, NCCL_COLLNET_ENABLE=1 and at least NCCL_COLLNET_NODE_THRESHOLD (2) nodes.
  bool collnet_support = false;
  bool collnet_chain_support = true;
  bool collnet_ag_rs = false;    // the CollNet plugin implements AllGather/ReduceScatter with enough heads
  int collnet_heads = 1;
  int nvs_count = 1;             // NVSwitches in the node (CollNetDirect needs one)
  bool net_device_host = true;   // no net device offload (PAT needs it)
  int n_channels = 0;            // comm->nChannels before CTA limits; 0 = min(ring, tree) channels
  int nvls_channels = 0;         // comm->nvlsChannels; 0 = nvls.n_channels
  double net_path_GBps = 0;      // comm->minNetBw: the GPU -> NIC path NCCL sees; 0 on one domain
  int nvls_heads = 0;  // channel->nvls.nHeads: the NVLS graph's head GPUs (at most 32); 0 = local_ranks
  std::uint64_t nvls_chunk_bytes = 131072;           // comm->nvlsChunkSize (sim/select/nvls_tuning.hpp)
  std::uint64_t nvls_tree_max_chunk_bytes = 131072;  // NVLSTree's chunk ceiling
  int cudart_version = 12080;
  // Where CollNet was asked for (NCCL_COLLNET_ENABLE=1, --collnet on) but is not set up
  // (collnet_support false): why, in the user's words; empty otherwise.
  std::string collnet_off_reason;
};

struct TuneTables {
  NcclVersion version = NcclVersion::v2_28_9;
  float latency_us[kNumFuncs][kNumAlgos][kNumProtos] = {};
  float bandwidth_GBps[kNumFuncs][kNumAlgos][kNumProtos] = {};  // 0 = disabled
  bool computed[kNumFuncs][kNumAlgos][kNumProtos] = {};          // NCCL filled this cell
  int max_threads[kNumAlgos][kNumProtos] = {};
  long thread_threshold[kNumAlgos][kNumProtos] = {};
  int comm_channels = 1;  // after NCCL_MIN/MAX_CTAS
  int nvls_channels = 0;
  // What the user's NCCL_ALGO / NCCL_PROTO lists leave on (before NCCL's own rules), to say why a
  // call has nothing left.
  bool user_algo[kNumFuncs][kNumAlgos] = {};
  bool user_proto[kNumFuncs][kNumProtos] = {};
};

// ncclTopoTuneModel. Throws InputError for impossible shapes or bad NCCL_* values.
TuneTables tune_model(const CommShape& shape, const NcclEnv& env = {}, NcclVersion version = default_nccl_version());

struct Selection {
  Func func = Func::all_reduce;
  std::uint64_t bytes = 0;
  // Model time per pair in us; < 0 when the pair is disabled (bandwidth 0) or not considered.
  float time_us[kNumAlgos][kNumProtos] = {};
  bool allowed[kNumAlgos][kNumProtos] = {};
  Algo algo = Algo::ring;
  Proto proto = Proto::simple;
  float best_time_us = 0;
  int n_channels = 1;  // channels NCCL uses for this call
  int n_threads = 0;   // threads per block
};

// Selection for one call. `bytes` is NCCL's nBytes: the count per rank x type size for
// AllReduce/Broadcast/Reduce, the total (count x nRanks x size) for AllGather/ReduceScatter.
// fp8 marks float8 types (Ring with > 8 ranks is pushed away). Throws InputError when no
// algorithm/protocol is left (as NCCL does when NCCL_ALGO/NCCL_PROTO exclude everything).
Selection select_algorithm(const TuneTables& tables, const CommShape& shape, Func func, std::uint64_t bytes, bool fp8 = false);

// The least time (us) one intra-node step of a multi-node ring costs in NCCL's model: the network
// overhead the proxy adds to every step of a ring that leaves the node (NCCL_NET_OVERHEAD, else
// 1 us on Intel, 2 us on AMD hosts; x3 for Simple). 0 on one node.
double ring_net_overhead_us(const CommShape& shape, const NcclEnv& env, Proto proto);

}  // namespace commstack::select
