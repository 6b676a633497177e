// Drives libnccl-profiler-commstack.so the way NCCL does (dlopen, dlsym "ncclProfiler_v5", init,
// start/state/stop with parents, finalize) with a synthetic all_reduce, then folds the stream it
// wrote and checks the layer times. Needs no GPU: it tests the plugin's ABI use and its output.
// Usage: plugin_selftest <plugin.so> <output dir>. Exit 0 on success.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibration/bench/plugin/nccl_profiler_v5.h"
#include "calibration/bench/profiler_events.hpp"

namespace prof = commstack::bench::prof;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plugin_selftest <plugin.so> <output dir>\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto* p = static_cast<ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  if (!p || !p->init || !p->startEvent || !p->stopEvent || !p->recordEventState || !p->finalize) {
    std::fprintf(stderr, "ncclProfiler_v5 missing or incomplete\n");
    return 1;
  }
  std::filesystem::create_directories(argv[2]);
  setenv("COMMSTACK_PROFILE_DIR", argv[2], 1);
  void* ctx = nullptr;
  int mask = 0;
  if (p->init(&ctx, 0xabcULL, &mask, "selftest", 1, 2, 1, nullptr) != ncclSuccess) return 1;
  if (!(mask & prof::kColl) || !(mask & prof::kKernelCh)) {
    std::fprintf(stderr, "default mask %d lacks Coll or KernelCh\n", mask);
    return 1;
  }
  ncclProfilerEventDescr_v5_t coll{};
  coll.type = prof::kColl;
  coll.rank = 1;
  coll.coll.func = "AllReduce";
  coll.coll.algo = "RING";
  coll.coll.proto = "LL128";
  coll.coll.nChannels = 2;
  coll.coll.seqNumber = 42;
  void* hc = nullptr;
  p->startEvent(ctx, &hc, &coll);
  p->stopEvent(hc);
  void* hk[2] = {};
  for (int ch = 0; ch < 2; ++ch) {
    ncclProfilerEventDescr_v5_t k{};
    k.type = prof::kKernelCh;
    k.parentObj = hc;
    k.kernelCh.channelId = static_cast<uint8_t>(ch);
    k.kernelCh.pTimer = 1000000 + 1000 * static_cast<uint64_t>(ch);
    p->startEvent(ctx, &hk[ch], &k);
  }
  ncclProfilerEventDescr_v5_t op{};
  op.type = prof::kProxyOp;
  op.parentObj = hc;
  op.proxyOp.pid = getpid();
  op.proxyOp.channelId = 0;
  op.proxyOp.peer = 0;
  op.proxyOp.isSend = 1;
  void* ho = nullptr;
  p->startEvent(ctx, &ho, &op);
  ncclProfilerEventDescr_v5_t step{};
  step.type = prof::kProxyStep;
  step.parentObj = ho;
  void* hs = nullptr;
  p->startEvent(ctx, &hs, &step);
  ncclProfilerEventStateArgs_v5_t a{};
  a.proxyStep.transSize = 65536;
  p->recordEventState(hs, static_cast<ncclProfilerEventState_v5_t>(prof::kProxyStepSendWait), &a);
  p->stopEvent(hs);
  p->stopEvent(ho);
  for (int ch = 0; ch < 2; ++ch) {
    ncclProfilerEventStateArgs_v5_t s{};
    s.kernelCh.pTimer = 1000000 + 20000 + 5000 * static_cast<uint64_t>(ch);
    p->recordEventState(hk[ch], static_cast<ncclProfilerEventState_v5_t>(prof::kKernelChStop), &s);
    p->stopEvent(hk[ch]);
  }
  p->finalize(ctx);
  // Find the stream and fold it.
  std::string path;
  for (const auto& e : std::filesystem::directory_iterator(argv[2]))
    if (e.path().filename().string().find("comm0000000000000abc-rank1.jsonl") != std::string::npos) path = e.path();
  if (path.empty()) {
    std::fprintf(stderr, "no stream file written in %s\n", argv[2]);
    return 1;
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto agg = prof::aggregate(prof::parse_event_stream(ss.str(), path));
  std::filesystem::remove(path);
  if (agg.collectives.size() != 1 || agg.open_events != 0 || agg.unmatched_stops != 0) {
    std::fprintf(stderr, "expected 1 collective, all events closed\n");
    return 1;
  }
  const auto& c = agg.collectives[0];
  const bool ok = c.func == "AllReduce" && c.algo == "RING" && c.proto == "LL128" && c.seq == 42 &&
                  c.n_channels == 2 && c.channels.size() == 2 && c.channels[0].kernel_us == 20.0 &&
                  c.channels[1].kernel_us == 24.0 && c.proxy_steps == 1 && c.net_bytes == 65536;
  std::printf("plugin selftest: %s (channels %.1f us, %.1f us; %d proxy step, %llu bytes)\n", ok ? "ok" : "FAILED",
              c.channels.empty() ? 0.0 : c.channels[0].kernel_us, c.channels.size() < 2 ? 0.0 : c.channels[1].kernel_us,
              c.proxy_steps, static_cast<unsigned long long>(c.net_bytes));
  return ok ? 0 : 1;
}
