#pragma once
// The per-rank operation graph of one training iteration: a plain data structure the simulator
// executes. Each op belongs to one GPU rank and one stream; it starts when all its deps have
// finished (deps may point to ops of other ranks only through matching send/recv or collective
// instances, never directly). Ops of the compute stream are chained in schedule order; the
// collective streams (tp, cp, ep, dp) are chained in issue order; pp sends/recvs are not stream-
// ordered (Megatron batches them) so the cross-rank dataflow stays deadlock-free.
//
// Collective sizes follow the nccl-tests "size" convention: all_reduce = buffer bytes,
// all_gather = bytes of the gathered output, reduce_scatter = bytes of the full input,
// all_to_all = bytes each rank sends in total (its share to itself included), broadcast and
// reduce = the buffer (root: the group's first rank; imported traces only).
//
// Imported traces (workloads/importers/, docs/trace-formats.md) build the same graph: their ops
// carry the traced duration (Op::measured_s), the traced CUDA stream or CPU thread (Op::lane,
// Op::host), names owned by the graph (OpGraph::intern), and communicators that are the trace's
// own process groups (Communicator::imported) rather than Megatron group kinds. Generated graphs
// leave all of these at their defaults.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "workloads/parallel/layout.hpp"

namespace commstack::workloads {

enum class OpKind { compute, collective, send, recv };
enum class Collective { none, all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce };
enum class Stream { compute, tp, cp, ep, dp, pp };
enum class Phase { forward, backward, recompute, optimizer };
// What kind of kernel a compute op is, for the compute-time model's efficiency table.
enum class ComputeClass { none, gemm, attention, elementwise, optimizer };

std::string to_string(OpKind k);
std::string to_string(Collective c);
std::string to_string(Stream s);
std::string to_string(Phase p);
std::string to_string(ComputeClass c);

struct Op {
  int id = -1;
  int rank = -1;
  OpKind kind = OpKind::compute;
  Stream stream = Stream::compute;
  Phase phase = Phase::forward;
  const char* name = "";  // static label, e.g. "qkv", "tp.reduce_scatter", "dp.grad_bucket"
  int micro_batch = -1;  // -1 for per-iteration ops (gradient reduction, optimizer)
  int layer = -1;        // global layer index, -1 if none
  int chunk = 0;         // model chunk (virtual stage slot) on this rank
  // compute
  ComputeClass cclass = ComputeClass::none;
  double flops = 0;      // FLOPs this rank executes
  double mem_bytes = 0;  // HBM bytes moved (roofline)
  // communication
  Collective collective = Collective::none;
  std::uint64_t bytes = 0;  // see the size convention above; send/recv: message bytes
  int communicator = -1;    // index into OpGraph::communicators (collectives)
  int instance = -1;        // n-th collective this rank issues on that communicator (matches across ranks)
  int peer = -1;            // send/recv partner rank
  std::int64_t tag = -1;    // send/recv matching key: equal on the send and its recv
  std::vector<int> deps;    // op ids on the same rank
  // imported traces
  double measured_s = -1;  // traced duration in seconds; < 0: none (generated ops use the compute model)
  int lane = -1;           // traced CUDA stream id (GPU ops) or CPU thread id (host ops); -1: generated
  bool host = false;       // a CPU-side op (framework op, CUDA runtime call), not a GPU kernel
};

struct Communicator {
  int id = -1;
  GroupKind kind = GroupKind::tp;
  std::vector<int> ranks;  // global GPU ranks, sorted
  bool imported = false;   // a process group read from a trace; `kind` is then meaningless
  std::string label;       // imported: the trace's name for the group (e.g. a process group name)
};

struct OpGraph {
  std::vector<Communicator> communicators;
  std::vector<Op> ops;     // ids are indices
  std::vector<int> ranks;  // the ranks whose ops were generated (all, or representatives)
  int world = 0;

  // Returns the id of the communicator with exactly these ranks and kind, adding it if new.
  int communicator(GroupKind kind, const std::vector<int>& ranks);
  // Imported process group: the id of the imported communicator with this label and these ranks,
  // adding it if new.
  int imported_communicator(const std::string& label, const std::vector<int>& ranks);
  // A stable `const char*` for Op::name holding `text` (names read from traces). The storage is
  // shared between copies of the graph, so names stay valid as long as any copy lives.
  const char* intern(std::string_view text);

private:
  std::shared_ptr<std::set<std::string, std::less<>>> names_;
};

// Checks ids, deps (existing, same rank, earlier id => acyclic), communicator membership and
// send/recv pairing among generated ranks. Throws std::logic_error on a broken graph (a bug,
// not user input).
void check_graph(const OpGraph& g);

// Deterministic JSON dump (ordered keys) for inspection and for the simulator's tests.
nlohmann::ordered_json to_json(const OpGraph& g);

}  // namespace commstack::workloads
