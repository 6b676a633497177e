#pragma once
// Simulated timelines as OTF2 archives (Score-P's trace format), so a predicted run opens in
// Vampir next to the Score-P trace of the real run (docs/otf2.md).
//
// Layout of an archive: system tree cluster -> node -> one location group (process) per
// simulated GPU rank; inside it one location per stream of that rank (compute, tp, cp, ep, dp,
// pp for a training iteration; one "gpu" stream for a collective sweep), since the streams of a
// rank run at the same time and OTF2 regions on one location must nest. Ops are regions
// (Enter/Leave); collectives also carry MpiCollectiveBegin/End with the OTF2 collective kind,
// the communicator and the bytes this rank sends and receives; point-to-point messages are
// MpiSend/MpiRecv on the rank's first location of its message stream (OTF2's COMM_LOCATIONS
// entry for the rank). Communicators are OTF2 groups + comms. Timestamps: 1 ns ticks from 0.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/report/sweep.hpp"
#include "workloads/graph/op_graph.hpp"

namespace commstack::sim {
namespace train {
struct TrainResult;
struct Schedule;
}

// The collective kinds a timeline can hold (OTF2_CollectiveOp in the archive).
enum class Otf2Collective { none, all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce };

struct Otf2Comm {
  std::string name;        // e.g. "tp 0-7 (8 ranks)"
  std::vector<int> ranks;  // global ranks, sorted; members without a location are left out of the OTF2 group
};

// One op on one stream of one rank: a region from start to end.
struct Otf2Interval {
  int rank = -1;
  int stream = 0;          // index into Otf2Timeline::streams
  std::string region;      // region name, e.g. "qkv", "tp.reduce_scatter", "all_reduce 1 GiB"
  std::string kind;        // region description: compute, collective, send, recv
  double start_s = 0;
  double end_s = 0;
  int micro_batch = -1;    // written as attributes when >= 0
  int layer = -1;
  std::string phase = {};  // forward, backward, recompute, optimizer (attribute phase); "" not written
  // The op-graph op this region is (attribute commstack_op) and the ops it waited for
  // (attribute commstack_after, "id,id,..."), so that `replay` rebuilds the dependencies between
  // a rank's streams (a compute op waiting for a TP all-reduce); -1 / empty: not written.
  long long op = -1;
  std::vector<long long> after = {};
  // collectives (collective != none)
  Otf2Collective collective = Otf2Collective::none;
  int comm = -1;           // index into Otf2Timeline::comms
  int root = -1;           // global rank of the root (broadcast, reduce), -1 none
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

// One point-to-point message end: a send (at the time the data leaves) or a receive (at arrival).
struct Otf2Message {
  int rank = -1;
  bool send = true;
  int peer = -1;           // global rank of the other end
  std::uint32_t tag = 0;
  std::uint64_t bytes = 0;
  double time_s = 0;
  long long op = -1;  // the op-graph op (region) it belongs to, attribute commstack_op; -1 none
};

struct Otf2Timeline {
  std::string title;                  // archive description, e.g. "commstack train: gpt3-175b on ..."
  std::string machine;                // system-tree root, e.g. the cluster name
  std::vector<int> ranks;             // ranks that get locations (sorted)
  std::vector<int> node_of_rank;      // per entry of `ranks`: its node index
  std::vector<std::string> streams;   // stream names
  int message_stream = 0;             // stream whose location receives MpiSend/MpiRecv (COMM_LOCATIONS)
  std::vector<Otf2Comm> comms;        // comms[0] is the world communicator used by messages
  std::vector<Otf2Interval> intervals;
  std::vector<Otf2Message> messages;
};

// What write_otf2 wrote, for the caller's message and the tests.
struct Otf2WriteSummary {
  std::string anchor;        // DIR/traces.otf2
  long long locations = 0;
  long long events = 0;
  long long regions = 0;
};

// Writes `t` as an OTF2 archive into directory `dir` (anchor DIR/traces.otf2, DIR/traces.def,
// DIR/traces/). An earlier archive in DIR (those three paths) is replaced; nothing else in DIR
// is touched. Throws InputError when the directory cannot be written.
Otf2WriteSummary write_otf2(const Otf2Timeline& t, const std::string& dir);

// The timeline of a simulated training iteration: every generated rank, its streams, every op.
Otf2Timeline otf2_timeline(const train::TrainResult& r, const topologies::Topology& topo, const std::string& title);
// Any scheduled op graph (train, replay of an imported trace): ops of generated graphs go to their
// stream (compute, tp, ..., pp), ops of imported graphs to their traced CUDA stream or CPU thread
// ("cuda stream 7", "cpu thread 1"); imported communicators keep the trace's label.
Otf2Timeline otf2_timeline(const workloads::OpGraph& g, const train::Schedule& schedule, const topologies::Topology& topo,
                           const std::string& title);

// The timeline of a predicted nccl-tests sweep: one collective per size, back to back, on every
// GPU; `flows` (the last size's recorded flows, may be empty) become messages inside the last one.
Otf2Timeline otf2_sweep_timeline(const topologies::Topology& topo, CollectiveOp op, const std::vector<SweepPoint>& points,
                                 const std::vector<FlowRecord>& flows, const std::string& title);

}  // namespace commstack::sim
