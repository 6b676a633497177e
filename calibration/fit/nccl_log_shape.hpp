#pragma once
// Bridge from a parsed NCCL log to the selection model's input: the communicator shape
// (nRanks, nNodes, localRanks from the "comm" line), the topology-search results (GRAPH
// "Pattern" lines: ring 4, trees 1-3, NVLS 5, CollNet direct 6) and NVLS availability.
// GPU and CPU kinds are not in the log and are given by the caller.
#include "calibration/fit/nccl_log.hpp"
#include "sim/select/nccl_tuner.hpp"

namespace commstack::fit {

// Throws InputError naming the log when it has no "comm ... nRanks" line or no ring GRAPH line.
select::CommShape comm_shape_from_log(const NcclLog& log, int sm, select::CpuVendor cpu_vendor);

}  // namespace commstack::fit
