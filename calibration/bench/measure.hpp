#pragma once
// The measurement sections of the bench. Every timing follows nccl-tests: `warmup` untimed calls,
// then per repetition a barrier, a host wall-clock timer around `iters` launches and the stream
// synchronization, divided by `iters`; the report keeps the summary over repetitions.
#include <cstdint>
#include <vector>

#include "calibration/bench/context.hpp"
#include "calibration/bench/report.hpp"

namespace commstack::bench {

struct Timing {
  int warmup = 5;
  int iters = 20;
  int reps = 5;
};

// One series on the current communicators (create_comms with the case's setting first). An NCCL
// error ends the series with its status; the caller recreates communicators for the next one.
CollectiveSeries measure_collective(Context& ctx, const SweepCase& c, const std::vector<std::uint64_t>& sizes,
                                    const Timing& t);

// NCCL send/recv for every pair of ranks on the same host (intra-node) and for every local index
// between the first two hosts (one rail), on the current (default) communicators; cudaMemcpyPeer
// for every device pair of a process that sees several GPUs (rank 0's process).
std::vector<P2pSeries> measure_p2p(Context& ctx, const std::vector<std::uint64_t>& sizes, const Timing& t);

// Copy and reduction kernel throughput, launch and stream-sync overhead on rank 0's GPU.
std::vector<KernelPoint> measure_kernels(Context& ctx, const std::vector<std::uint64_t>& sizes, const Timing& t);

// cuBLAS GEMM (bf16; fp8 e4m3 through cublasLt on sm_89 and newer) on rank 0's GPU.
std::vector<GemmPoint> measure_gemm(Context& ctx, const std::vector<GemmShape>& shapes, int sm, const Timing& t);

}  // namespace commstack::bench
