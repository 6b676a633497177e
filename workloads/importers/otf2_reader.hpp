#pragma once
// OTF2 archives (Score-P traces, and commstack's own --otf2 output) read with the OTF2 library
// (docs/otf2.md). First layer: the archive's definitions and the events this project uses, as
// plain structs (read_otf2_archive). Score-P writes MPI calls as Enter/Leave of the MPI
// function's region around MpiSend/MpiRecv/MpiIsend/MpiIrecv or MpiCollectiveBegin/End; CUDA
// kernels as Enter/Leave of the kernel's region (CUDA paradigm) on accelerator-stream locations;
// CUDA memcpys as RmaPut/RmaGet on those streams. Everything else (metrics, parameters, I/O,
// threading, other RMA records, record kinds newer than the library) is counted by kind and
// reported as a warning, never an error.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace commstack::workloads {

struct Otf2LocationDef {
  std::uint64_t id = 0;
  std::string name;          // "Master thread", "CUDA[0:7]", "pp"
  std::string type;          // cpu_thread, accelerator_stream, metric, unknown
  std::uint64_t events = 0;  // as the definition says
  std::uint32_t group = 0;   // location group (Score-P: one per MPI rank)
  std::string group_name;    // "MPI Rank 3", "GPU rank 3"
  std::string group_type;    // process, accelerator, unknown
  std::string node;          // nearest system-tree node of class "node" (or the group's parent), "" if none
};

struct Otf2RegionDef {
  std::string name;
  std::string description;
  std::string paradigm;  // mpi, cuda, user, compiler, measurement, other
  std::string role;      // function, point2point, collective, barrier, wrapper, other
};

struct Otf2CommDef {
  std::string name;                      // "MPI_COMM_WORLD", "tp 0..7 (8 ranks)"
  std::vector<std::uint64_t> locations;  // communicator rank i -> location id
};

enum class Otf2EventKind { enter, leave, send, recv, isend, irecv, collective_begin, collective_end, rma_put, rma_get };
std::string to_string(Otf2EventKind k);

struct Otf2Event {
  std::uint64_t location = 0;
  std::uint64_t time = 0;  // ticks since the archive's global offset
  Otf2EventKind kind = Otf2EventKind::enter;
  std::uint32_t region = 0;        // enter, leave
  std::uint32_t comm = 0;          // send/recv/collective_end
  std::uint32_t peer = 0;          // send/recv: rank of the other end in `comm`; rma: remote rank
  std::uint32_t tag = 0;
  std::uint64_t bytes = 0;         // send/recv/rma: message bytes; collective_end: bytes sent
  std::uint64_t bytes_received = 0;  // collective_end
  std::string collective;          // collective_end: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ...
  std::uint32_t root = 0xffffffffU;  // collective_end: root rank in `comm`, 0xffffffff none
  // In archives written by commstack --otf2 (sim/report/otf2_writer.hpp): the op-graph id
  // (attribute commstack_op, -1 absent) on enter and on send/recv (the op the message belongs
  // to), and on enter the ids it waited for (commstack_after, "id,id,...").
  std::int64_t op = -1;
  std::string after;
  // commstack archives, on enter: the op's micro-batch and layer (-1 absent) and its phase
  // (forward, backward, recompute, optimizer; "" absent), attributes micro_batch, layer, phase.
  int micro_batch = -1;
  int layer = -1;
  std::string phase;
};

struct Otf2Archive {
  std::string anchor;  // the anchor file read
  std::string creator;
  std::uint64_t ticks_per_second = 0;
  std::uint64_t global_offset = 0;
  std::vector<Otf2LocationDef> locations;  // in definition order
  std::map<std::uint32_t, Otf2RegionDef> regions;
  std::map<std::uint32_t, Otf2CommDef> comms;
  std::vector<Otf2Event> events;  // in the archive's global time order (OTF2's merged reader)
  std::map<std::string, long long> ignored;  // event kinds skipped -> count
  std::vector<std::string> warnings;

  double seconds(std::uint64_t ticks) const { return static_cast<double>(ticks) / static_cast<double>(ticks_per_second); }
  const Otf2LocationDef* location(std::uint64_t id) const;
};

// Reads `path` (the anchor file DIR/traces.otf2, or a directory holding one). At most
// `max_events` events are kept; a bigger trace is an InputError naming the limit (filter it in
// Score-P). A missing, truncated or corrupt archive is an InputError naming the file and what
// OTF2 reported.
Otf2Archive read_otf2_archive(const std::string& path, long long max_events = 20'000'000);

}  // namespace commstack::workloads
