#pragma once
// Importer for PyTorch profiler / Kineto Chrome-trace JSON (plain or .gz), one file per rank
// (all ranks or a subset). Reads one iteration (a ProfilerStep# span) into the op graph:
// - host ops: every CUDA runtime/driver call of every CPU thread, with the CPU time between calls
//   as "cpu" ops, chained per thread in traced order;
// - GPU ops: kernels, memcpys and memsets, chained per CUDA stream, each after its launch call;
// - synchronizing calls (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
//   blocking cudaMemcpy) wait for the GPU work they waited for in the trace;
// - cudaStreamWaitEvent: the next op launched after it waits for the op of another stream that it
//   waited for in the trace;
// - NCCL kernels with a known collective, size and process group become collectives that match
//   across ranks by (process group, n-th call); the rest keep their traced duration.
// docs/trace-formats.md states every rule and what is assumed when a field is missing.
#include <string>
#include <vector>

#include "workloads/importers/imported_trace.hpp"

namespace commstack::workloads::importers {

struct KinetoOptions {
  // Which iteration: "" takes the last ProfilerStep# every file has; "N" or "ProfilerStep#N"
  // takes that one.
  std::string iteration;
};

// Throws InputError on unreadable files, syntax errors (file, byte, event index), two files of
// the same rank, or a requested iteration that a file does not have.
ImportedTrace import_kineto(const std::vector<std::string>& files, const KinetoOptions& options = {});

}  // namespace commstack::workloads::importers
