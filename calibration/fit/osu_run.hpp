#pragma once
// OSU Micro-Benchmarks output as a measured run for validate / calibrate. OSU 7's NCCL
// collectives (osu_xccl_allreduce, ...) time NCCL calls like nccl-tests does, except that each call
// is timed on its own (launched, then cudaStreamSynchronize) and sizes are OSU's (all-gather and
// alltoall: bytes per peer). OSU's MPI benchmarks measure the MPI library's own algorithms and
// transport, and its point-to-point tests a window of messages: neither is what the stack model
// predicts, and both are refused with the reason. docs/measurement-formats.md "OSU".
#include <string>
#include <string_view>

#include "calibration/fit/nccl_tests.hpp"
#include "calibration/fit/osu.hpp"

namespace commstack::fit {

// The text holds an OSU banner ("# OSU MPI-CUDA Latency Test v7.3", "# OSU NCCL-CUDA Allreduce ...").
bool looks_like_osu(std::string_view text);

// InputError when the text's OSU banner is an MPI benchmark's (checked before its table is read, so
// the reason comes first, whatever the table holds).
void refuse_mpi_osu(std::string_view text, const std::string& origin);

// The OSU run as an nccl-tests result: one out-of-place time per size (the average latency), sizes
// in nccl-tests' convention for `ranks` ranks, the op from the benchmark's name. `op_hint` must
// agree with it. InputError for MPI and point-to-point benchmarks, a missing average latency, or an
// op the benchmark's name does not give.
NcclTestsResult nccl_tests_result_from_osu(const OsuResult& osu, int ranks, NcclTestsOp op_hint);

}  // namespace commstack::fit
