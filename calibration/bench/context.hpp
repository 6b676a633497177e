#pragma once
// State of one bench run shared by the measurement sections: which ranks and GPUs this process
// drives, their streams, buffers and current communicators.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "calibration/bench/process_group.hpp"
#include "calibration/bench/sweep_plan.hpp"

namespace commstack::bench {

struct LocalGpu {
  int rank = 0;    // NCCL rank
  int device = 0;  // CUDA device index in this process
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  ncclComm_t comm = nullptr;
};

struct Context {
  ProcessGroup* pg = nullptr;
  std::vector<LocalGpu> locals;
  int nranks = 1;
  std::vector<std::string> hostnames;  // per rank
  std::vector<int> local_index;        // per rank: its position among the ranks of its host
  std::uint64_t buffer_bytes = 0;      // allocated per send and per recv buffer
  double init_timeout_s = 120;
  double op_timeout_s = 600;
};

// Communicators for one setting on every local GPU (NCCL_ALGO/NCCL_PROTO set in the environment
// for the duration of the init, CTA bounds through ncclConfig_t). Guarded by the watchdog.
void create_comms(Context& ctx, const CommSetting& setting);
void destroy_comms(Context& ctx);

}  // namespace commstack::bench
