#include <algorithm>

#include <fmt/format.h>

#include "calibration/bench/gpu_util.hpp"
#include "calibration/bench/measure.hpp"

namespace commstack::bench {
namespace {

// One NCCL transfer of `bytes` from rank src to rank dst, `calls` times; host us on this process
// (0 when this process holds neither end).
double pair_calls(const Context& ctx, int src, int dst, std::uint64_t bytes, int calls) {
  const double t0 = now_us();
  bool involved = false;
  for (int i = 0; i < calls; ++i) {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (const auto& l : ctx.locals) {
      if (l.rank == src) nccl_check(ncclSend(l.send, bytes, ncclChar, dst, l.comm, l.stream), "ncclSend");
      if (l.rank == dst) nccl_check(ncclRecv(l.recv, bytes, ncclChar, src, l.comm, l.stream), "ncclRecv");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
  for (const auto& l : ctx.locals)
    if (l.rank == src || l.rank == dst) {
      cuda_check(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
      involved = true;
    }
  return involved ? now_us() - t0 : 0.0;
}

P2pSeries nccl_pair(Context& ctx, const char* kind, int src, int dst, const std::vector<std::uint64_t>& sizes,
                    const Timing& t) {
  P2pSeries s;
  s.kind = kind;
  s.src_rank = src;
  s.dst_rank = dst;
  s.src_host = ctx.hostnames[static_cast<std::size_t>(src)];
  s.dst_host = ctx.hostnames[static_cast<std::size_t>(dst)];
  s.src_device = ctx.local_index[static_cast<std::size_t>(src)];
  s.dst_device = ctx.local_index[static_cast<std::size_t>(dst)];
  for (std::uint64_t bytes : sizes) {
    if (bytes > ctx.buffer_bytes) break;
    if (t.warmup > 0) pair_calls(ctx, src, dst, bytes, t.warmup);
    std::vector<double> per_call;
    for (int r = 0; r < t.reps; ++r) {
      ctx.pg->barrier();
      per_call.push_back(ctx.pg->max(pair_calls(ctx, src, dst, bytes, t.iters) / t.iters));  // slower end
    }
    P2pPoint p;
    p.bytes = bytes;
    p.time_us = summarize(per_call);
    p.bw_GBps = static_cast<double>(bytes) / (p.time_us.median * 1e3);
    s.points.push_back(p);
  }
  return s;
}

std::vector<P2pSeries> memcpy_peer(Context& ctx, const std::vector<std::uint64_t>& sizes, const Timing& t) {
  std::vector<P2pSeries> out;
  int count = 0;
  cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (ctx.pg->rank() != 0 || count < 2) return out;
  std::uint64_t max_bytes = 0;
  for (auto b : sizes) max_bytes = std::max(max_bytes, std::min<std::uint64_t>(b, ctx.buffer_bytes));
  std::vector<void*> bufs(static_cast<std::size_t>(count), nullptr);
  for (int d = 0; d < count; ++d) {
    cuda_check(cudaSetDevice(d), "cudaSetDevice");
    cuda_check(cudaMalloc(&bufs[static_cast<std::size_t>(d)], max_bytes), "cudaMalloc (memcpy_peer buffer)");
    for (int p = 0; p < count; ++p) {
      int can = 0;
      if (p != d && cudaDeviceCanAccessPeer(&can, d, p) == cudaSuccess && can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) cuda_check(e, "cudaDeviceEnablePeerAccess");
        cudaGetLastError();  // clear a sticky "already enabled"
      }
    }
  }
  const std::string host = ctx.hostnames.front();
  for (int a = 0; a < count; ++a)
    for (int b = a + 1; b < count; ++b) {
      P2pSeries s;
      s.kind = "memcpy_peer";
      s.src_host = s.dst_host = host;
      s.src_device = a;
      s.dst_device = b;
      cuda_check(cudaSetDevice(a), "cudaSetDevice");
      cudaStream_t st = nullptr;
      cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
      for (std::uint64_t bytes : sizes) {
        if (bytes > max_bytes) break;
        auto calls = [&](int n) {
          const double t0 = now_us();
          for (int i = 0; i < n; ++i)
            cuda_check(cudaMemcpyPeerAsync(bufs[static_cast<std::size_t>(b)], b, bufs[static_cast<std::size_t>(a)], a,
                                           bytes, st),
                       "cudaMemcpyPeerAsync");
          cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
          return now_us() - t0;
        };
        if (t.warmup > 0) calls(t.warmup);
        std::vector<double> per_call;
        per_call.reserve(static_cast<std::size_t>(std::max(0, t.reps)));
        for (int r = 0; r < t.reps; ++r) per_call.push_back(calls(t.iters) / t.iters);
        P2pPoint p;
        p.bytes = bytes;
        p.time_us = summarize(per_call);
        p.bw_GBps = static_cast<double>(bytes) / (p.time_us.median * 1e3);
        s.points.push_back(p);
      }
      cudaStreamDestroy(st);
      out.push_back(std::move(s));
    }
  for (int d = 0; d < count; ++d) {
    cudaSetDevice(d);
    cudaFree(bufs[static_cast<std::size_t>(d)]);
  }
  return out;
}

}  // namespace

std::vector<P2pSeries> measure_p2p(Context& ctx, const std::vector<std::uint64_t>& sizes, const Timing& t) {
  std::vector<P2pSeries> out;
  watchdog_arm(ctx.op_timeout_s * 4, "point-to-point section");
  const int n = ctx.nranks;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (ctx.hostnames[static_cast<std::size_t>(a)] == ctx.hostnames[static_cast<std::size_t>(b)])
        out.push_back(nccl_pair(ctx, "nccl_sendrecv", a, b, sizes, t));
  // One rail: local index i on the first host to local index i on the second host.
  const std::string& h0 = ctx.hostnames.front();
  for (int a = 0; a < n; ++a) {
    if (ctx.hostnames[static_cast<std::size_t>(a)] != h0) continue;
    for (int b = 0; b < n; ++b) {
      if (ctx.hostnames[static_cast<std::size_t>(b)] == h0) continue;
      if (ctx.local_index[static_cast<std::size_t>(b)] != ctx.local_index[static_cast<std::size_t>(a)]) continue;
      out.push_back(nccl_pair(ctx, "nccl_rail", a, b, sizes, t));
      break;  // the first other host only: one rail pair per local index
    }
  }
  ctx.pg->barrier();
  auto peer = memcpy_peer(ctx, sizes, t);
  ctx.pg->barrier();
  out.insert(out.end(), peer.begin(), peer.end());
  watchdog_disarm();
  return out;
}

}  // namespace commstack::bench
