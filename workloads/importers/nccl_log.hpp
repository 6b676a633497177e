#pragma once
// Importer for NCCL_DEBUG=INFO logs (NCCL_DEBUG_SUBSYS=COLL or ALL): the minimal trace when
// nothing else exists. Each "<Op>: opCount ... count N datatype D ... comm 0x... [nranks=R]"
// line becomes one collective (AllReduce, AllGather, ReduceScatter, AllToAll) or send/recv
// ("root" is the peer); ops of one CUDA stream run in log order. The log has no timestamps and no
// compute, so the replay gives the communication time of the logged sequence alone.
// Ranks come from "comm 0x... rank N nranks R ... Init COMPLETE" lines; without them, processes
// are numbered in order of appearance (with a warning). docs/trace-formats.md.
#include <string>
#include <vector>

#include "workloads/importers/imported_trace.hpp"

namespace commstack::workloads::importers {

ImportedTrace import_nccl_log(const std::vector<std::string>& files);

}  // namespace commstack::workloads::importers
