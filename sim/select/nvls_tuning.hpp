#pragma once
// How many channels NVLS and NVLSTree run on and how large their chunks start: comm->nvlsChannels,
// comm->nvlsChunkSize and the NVLSTree chunk ceiling, set once per communicator at init
// (src/transport/nvls.cc). Up to 2.29.x these are fixed per GPU generation; 2.30 tunes them for
// Blackwell across NVLink domains from the NIC speed, the ranks per domain and the GPU -> NIC path
// (ncclNvlsTreeSm100Tuning). NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE override both,
// NCCL_MIN/MAX_CTAS clamp the channels. docs/nccl-selection.md "NVLS channels and chunks".
#include <cstdint>

#include "sim/select/nccl_env.hpp"
#include "sim/select/nccl_types.hpp"
#include "sim/select/tuning_constants.hpp"

namespace commstack::select {

struct NvlsCommInputs {
  NcclVersion version = default_nccl_version();
  int sm = 90;                          // comm->compCap (x10)
  int nodes = 1;                        // comm->nNodes: NVLink domains
  int ranks_per_node = 1;               // comm->minLocalRanks
  double min_net_GBps = 0;              // comm->minNetBw: the slowest GPU -> NIC path NCCL sees (GB/s)
  PathType gpu_to_nic = PathType::pix;  // the NVLS graph's typeInter
};

struct NvlsTuning {
  int channels = 16;                            // comm->nvlsChannels, after NCCL_MIN/MAX_CTAS
  std::uint64_t chunk_bytes = 131072;           // comm->nvlsChunkSize (NCCL_NVLS_CHUNKSIZE)
  std::uint64_t tree_max_chunk_bytes = 131072;  // NVLSTree's ceiling (NCCL_NVLSTREE_MAX_CHUNKSIZE)
};

NvlsTuning nccl_nvls_tuning(const NvlsCommInputs& in, const NcclEnv& env = {});

}  // namespace commstack::select
