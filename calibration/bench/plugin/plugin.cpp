// libnccl-profiler-commstack.so: an NCCL profiler plugin (interface v5) that records every
// start/stop/state call as a RecordedEvent in a per-communicator, per-rank stream and writes it as
// JSON Lines at finalize. calibration/bench/profiler_events.hpp folds a stream into layer times.
// Environment: COMMSTACK_PROFILE_DIR (default "."), COMMSTACK_PROFILE_MASK (event bits, default
// Coll|P2p|ProxyOp|ProxyStep|KernelCh), COMMSTACK_PROFILE_MAX_EVENTS (default 4000000 per stream).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calibration/bench/plugin/nccl_profiler_v5.h"
#include "calibration/bench/profiler_events.hpp"

namespace {

using commstack::bench::prof::RecordedEvent;
namespace prof = commstack::bench::prof;

struct Context;

struct Handle {
  Context* ctx = nullptr;
  std::uint64_t id = 0;
};

struct Context {
  std::mutex m;
  std::uint64_t comm_id = 0;
  int rank = 0;
  std::uint64_t next_id = 1;
  std::deque<Handle> handles;  // stable addresses: NCCL keeps the pointers we hand out
  std::vector<RecordedEvent> events;
  std::size_t max_events = 4000000;
  std::uint64_t dropped = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  // Caller holds m.
  bool push(RecordedEvent e) {
    if (events.size() >= max_events) {
      ++dropped;
      return false;
    }
    events.push_back(std::move(e));
    return true;
  }
};

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 0);
  return (end && *end == '\0') ? x : fallback;
}

std::string str(const char* s) { return s ? s : ""; }

ncclResult_t init(void** context, uint64_t commId, int* eActivationMask, const char*, int, int, int rank,
                  ncclDebugLogger_t) {
  auto* ctx = new Context();
  ctx->comm_id = commId;
  ctx->rank = rank;
  ctx->max_events = env_u64("COMMSTACK_PROFILE_MAX_EVENTS", 4000000);
  *eActivationMask = static_cast<int>(env_u64(
      "COMMSTACK_PROFILE_MASK", prof::kColl | prof::kP2p | prof::kProxyOp | prof::kProxyStep | prof::kKernelCh));
  *context = ctx;
  return ncclSuccess;
}

ncclResult_t start_event(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* d) {
  *eHandle = nullptr;
  auto* ctx = static_cast<Context*>(context);
  if (!ctx || !d) return ncclSuccess;
  RecordedEvent e;
  e.kind = RecordedEvent::Kind::start;
  e.type = d->type;
  // A parent pointer is one of our handles, except for proxy ops created in another process (PXN).
  const bool parent_usable = d->parentObj && (d->type != prof::kProxyOp || d->proxyOp.pid == getpid());
  if (parent_usable) e.parent = static_cast<Handle*>(d->parentObj)->id;
  switch (d->type) {
    case prof::kColl:
      e.func = str(d->coll.func);
      e.algo = str(d->coll.algo);
      e.proto = str(d->coll.proto);
      e.seq = d->coll.seqNumber;
      e.count = d->coll.count;
      e.n_channels = d->coll.nChannels;
      break;
    case prof::kP2p:
      e.func = str(d->p2p.func);
      e.count = d->p2p.count;
      e.peer = d->p2p.peer;
      e.n_channels = d->p2p.nChannels;
      break;
    case prof::kProxyOp:
      e.channel = d->proxyOp.channelId;
      e.peer = d->proxyOp.peer;
      e.is_send = d->proxyOp.isSend != 0;
      break;
    case prof::kKernelCh:
      e.channel = d->kernelCh.channelId;
      e.ptimer = d->kernelCh.pTimer;
      break;
    default: break;
  }
  std::lock_guard<std::mutex> lock(ctx->m);
  e.id = ctx->next_id++;
  e.t_us = ctx->now_us();
  const std::uint64_t id = e.id;
  if (!ctx->push(std::move(e))) return ncclSuccess;  // over the cap: no handle, NCCL skips the rest
  ctx->handles.push_back({ctx, id});
  *eHandle = &ctx->handles.back();
  return ncclSuccess;
}

ncclResult_t stop_event(void* eHandle) {
  auto* h = static_cast<Handle*>(eHandle);
  if (!h) return ncclSuccess;
  std::lock_guard<std::mutex> lock(h->ctx->m);
  RecordedEvent e;
  e.kind = RecordedEvent::Kind::stop;
  e.id = h->id;
  e.t_us = h->ctx->now_us();
  h->ctx->push(std::move(e));
  return ncclSuccess;
}

ncclResult_t record_state(void* eHandle, ncclProfilerEventState_v5_t state, ncclProfilerEventStateArgs_v5_t* args) {
  auto* h = static_cast<Handle*>(eHandle);
  if (!h) return ncclSuccess;
  RecordedEvent e;
  e.kind = RecordedEvent::Kind::state;
  e.id = h->id;
  e.state = static_cast<int>(state);
  if (args) {
    if (e.state >= prof::kProxyStepSendGPUWait && e.state <= prof::kProxyStepRecvGPUWait) e.trans_size = args->proxyStep.transSize;
    if (e.state == prof::kProxyStepSendPeerWait) e.trans_size = args->proxyStep.transSize;
    if (e.state == prof::kKernelChStop) e.ptimer = args->kernelCh.pTimer;
  }
  std::lock_guard<std::mutex> lock(h->ctx->m);
  e.t_us = h->ctx->now_us();
  h->ctx->push(std::move(e));
  return ncclSuccess;
}

ncclResult_t finalize(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (!ctx) return ncclSuccess;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const char* dir = std::getenv("COMMSTACK_PROFILE_DIR");
  const std::string path = fmt::format("{}/commstack-prof-{}-{}-comm{:016x}-rank{}.jsonl", dir && *dir ? dir : ".",
                                       host, static_cast<long>(getpid()), ctx->comm_id, ctx->rank);
  {
    std::lock_guard<std::mutex> lock(ctx->m);
    std::ofstream out(path, std::ios::binary);
    if (out) out << prof::dump_event_stream(ctx->events);
    if (!out || ctx->dropped)
      std::fprintf(stderr, "commstack profiler: %s: %s%llu events dropped over COMMSTACK_PROFILE_MAX_EVENTS\n",
                   path.c_str(), out ? "" : "cannot write; ", static_cast<unsigned long long>(ctx->dropped));
  }
  delete ctx;
  return ncclSuccess;
}

}  // namespace

// The symbol NCCL looks up with dlsym.
extern "C" {
__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {"commstack", init, start_event, stop_event,
                                                                             record_state, finalize};
}
