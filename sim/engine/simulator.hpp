#pragma once
// The SimGrid engine for one Topology. SimGrid's s4u::Engine is a process-wide singleton whose
// platform cannot be rebuilt, so a process holds at most one Simulator; it builds the platform
// once and then runs any number of FlowGraphs one after another, each measured as a difference
// of the simulated clock.
//
// Model (docs/simulator.md): CM02 max-min fair sharing, no cross-traffic, no TCP window cap;
// links carry bandwidth only; a flow transfers its bytes at its fair share of every link on its
// route, then its data arrives after the route latency (plus the flow's extra latency).
#include <memory>
#include <vector>

#include "sim/engine/flow_graph.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim {

// One executed flow (see Flow): ready, transfer start, transfer end (sent), arrival (end).
struct FlowRecord {
  int id = -1;
  int src = -1;
  int dst = -1;
  double bytes = 0;
  double ready_s = 0;
  double start_s = 0;
  double sent_s = 0;
  double end_s = 0;
  int group = 0;
};

struct RunResult {
  double duration_s = 0;                  // first flow ready -> last flow done
  std::vector<double> group_duration_s;   // per FlowGraph group: run start -> last flow of the group done
  std::vector<FlowRecord> flows;          // only when recording; times relative to the run start
  long long flow_count = 0;
  long long comm_count = 0;  // SimGrid comms that carried them (fewer when identical flows coalesce)
};

class Simulator {
public:
  // Builds the SimGrid platform of `topo` (which must outlive the Simulator). Throws
  // std::logic_error when a Simulator was already created in this process (SimGrid 3.32 cannot
  // restart its engine); tests get a fresh process per TEST_CASE.
  explicit Simulator(const topologies::Topology& topo);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Runs every flow of `graph` (dependencies respected) and returns when the last one is done.
  RunResult run(const FlowGraph& graph, bool record_flows = false);

  const topologies::Topology& topology() const { return topo_; }

  // Flows ready at the start of a run are started by SimGrid actors instead of host-to-host
  // comms when there are at least this many (SimGrid 3.32's per-completion cost is linear in the
  // host-to-host comms in flight). Both paths give identical times (test_sim_actor_path.cpp).
  void set_actor_threshold(long long flows) { actor_threshold_ = flows; }
  // Flows that become ready during a run while at least this many host-to-host comms are in
  // flight go as mailbox comms between two actors of their own (the same per-completion cost);
  // identical times too (test_sim_actor_path.cpp).
  void set_maestro_comms_limit(long long comms) { maestro_comms_limit_ = comms; }
  // Identical independent flows share one SimGrid comm where that is exact (simulator.cpp,
  // coalesce_identical_flows); off gives one comm per flow (tests compare the two).
  void set_coalescing(bool on) { coalesce_ = on; }
  // One-way latency of the route between two GPU ranks (0 when equal).
  double route_latency(int src_gpu, int dst_gpu) const;

  struct Impl;

private:
  const topologies::Topology& topo_;
  std::unique_ptr<Impl> impl_;
  long long actor_threshold_ = 2048;
  // 1024: a PAT all-gather over 16384 GPUs (16384 flows per step, each ready when the step before
  // it arrived) 36.8 s -> 9.4 s; an actor pair costs a few microseconds and two 16 KiB stacks.
  long long maestro_comms_limit_ = 1024;
  bool coalesce_ = true;
};

}  // namespace commstack::sim
