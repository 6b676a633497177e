#pragma once
// Bookkeeping for the NCCL profiler plugin (host-only, no NCCL needed): the plugin appends one
// RecordedEvent per startEvent / stopEvent / recordEventState call to a per-rank stream; this file
// pairs starts with stops, follows parents (Coll -> ProxyOp -> ProxyStep, Coll -> KernelCh) and
// folds each collective's children into layer times: host enqueue, kernel (per channel, GPU
// timer), proxy/transport, and network / GPU waits of the proxy steps.
// Event bits and states follow NCCL's profiler interface v5 (docs/calibration-bench.md).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace commstack::bench::prof {

// ncclProfileGroup ... ncclProfileKernelLaunch bit values of the v5 interface.
enum EventType : std::uint64_t {
  kGroup = 1,
  kColl = 2,
  kP2p = 4,
  kProxyOp = 8,
  kProxyStep = 16,
  kProxyCtrl = 32,
  kKernelCh = 64,
  kNetPlugin = 128,
  kGroupApi = 256,
  kCollApi = 512,
  kP2pApi = 1024,
  kKernelLaunch = 2048,
};

// ncclProfilerEventState_v5_t values that the bookkeeping uses.
enum State : int {
  kProxyStepSendGPUWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGPUWait = 12,
  kProxyStepSendPeerWait = 20,
  kKernelChStop = 22,
};

struct RecordedEvent {
  enum class Kind { start, stop, state };
  Kind kind = Kind::start;
  std::uint64_t id = 0;      // unique per stream, > 0
  std::uint64_t parent = 0;  // id of the parent event, 0 = none (start only)
  std::uint64_t type = 0;    // EventType (start only)
  double t_us = 0;           // host clock, microseconds
  int state = 0;             // State (state only)
  // Descriptor fields (start) and state arguments (state); unused ones stay empty / 0.
  std::string func, algo, proto;
  std::uint64_t seq = 0;
  std::uint64_t count = 0;
  int channel = -1;
  int peer = -1;
  int n_channels = 0;
  bool is_send = false;
  std::uint64_t trans_size = 0;  // ProxyStep state: bytes of this step
  std::uint64_t ptimer = 0;      // KernelCh start/stop: GPU timer (ns)
};

// One JSON object per line (JSON Lines). Throws InputError naming `origin` and the line.
nlohmann::json to_json(const RecordedEvent& e);
std::vector<RecordedEvent> parse_event_stream(std::string_view text, const std::string& origin);
std::string dump_event_stream(const std::vector<RecordedEvent>& events);

struct ChannelTime {
  int channel = 0;
  double kernel_us = 0;  // GPU timer difference when both ptimers are known, else host stamps
};

// Layer times of one Coll (or P2p) event.
struct CollectiveTimes {
  std::uint64_t id = 0;
  std::uint64_t seq = 0;
  std::string func, algo, proto;
  int n_channels = 0;
  std::uint64_t count = 0;
  double start_us = 0;        // Coll start (host)
  double enqueue_us = 0;      // Coll start -> Coll stop: host enqueue (launch layer)
  double kernel_us = 0;       // first KernelCh start -> last KernelCh stop (host stamps)
  std::vector<ChannelTime> channels;  // per channel, ordered by channel id
  double proxy_us = 0;        // first ProxyOp start -> last ProxyOp stop (transport layer)
  double net_wait_us = 0;     // sum over ProxySteps of SendWait + RecvWait (wire)
  double gpu_wait_us = 0;     // SendGPUWait + RecvGPUWait + RecvFlushWait (GPU-side waits)
  double peer_wait_us = 0;    // SendPeerWait (credits from the receiver)
  std::uint64_t net_bytes = 0;  // sum of ProxyStep transfer sizes
  int proxy_steps = 0;
  double end_us = 0;          // latest stop of the event or any descendant
  double total_us = 0;        // end_us - start_us
};

struct Aggregate {
  std::vector<CollectiveTimes> collectives;  // in start order
  int unmatched_stops = 0;   // stop/state for an id never started, or stopped twice
  int open_events = 0;       // started, never stopped
};

// Pairs and folds a recorded stream. Robust to events from several threads interleaving (it orders
// nothing itself: the stream order is the record order) and to PXN children whose parent is unknown.
Aggregate aggregate(const std::vector<RecordedEvent>& events);

}  // namespace commstack::bench::prof
