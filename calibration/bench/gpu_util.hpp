#pragma once
// Shared helpers of the GPU part of the bench: error checks that turn CUDA/NCCL/cuBLAS failures
// into one exception type with a readable message, a monotonic clock, and a watchdog that ends the
// process with a clear message instead of hanging (NCCL init or a collective waiting for a peer
// that never comes).
#include <cstdint>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

namespace commstack::bench {

// The machine cannot run the measurement (no GPU, too few GPUs, NCCL failure): exit status 3.
class EnvError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// An NCCL call failed inside a series: the series is recorded with this status, the run goes on.
class NcclCallError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

void cuda_check(cudaError_t e, const std::string& what);
void nccl_check(ncclResult_t r, const std::string& what);
std::string nccl_result_text(ncclResult_t r);

// Microseconds on the host's steady clock.
double now_us();

// One process-wide watchdog thread. arm() sets a deadline and the text to print if it passes;
// disarm() clears it. On expiry: message on stderr, exit status 4 (no cleanup: a hung NCCL call
// cannot be unwound).
void watchdog_arm(double seconds, const std::string& what);
void watchdog_disarm();

}  // namespace commstack::bench
