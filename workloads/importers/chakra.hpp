#pragma once
// Importer for Chakra execution traces in their JSON form (the "workload_graph" node list that
// Chakra's JSON feeder reads): one file per rank (rank from "chakra.<rank>.json" or "rank<N>").
// COMP nodes keep their "runtime" (microseconds); COMM_COLL nodes with "comm_type" and
// "comm_size" become collectives on the communicator of all "ngpus" ranks (the JSON form has no
// process groups); COMM_SEND / COMM_RECV with "comm_src"/"comm_dst"/"comm_tag" become matched
// send/recv. Data and control dependencies are kept; CPU nodes, GPU compute nodes and GPU
// communication nodes are each serialized in node order (one CPU thread, one compute stream, one
// communication stream, as the trace has no stream ids). docs/trace-formats.md.
#include <string>
#include <vector>

#include "workloads/importers/imported_trace.hpp"

namespace commstack::workloads::importers {

ImportedTrace import_chakra(const std::vector<std::string>& files);

}  // namespace commstack::workloads::importers
