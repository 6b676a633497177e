#include <fmt/format.h>

#include "calibration/bench/gpu_util.hpp"
#include "calibration/bench/measure.hpp"

namespace commstack::bench {
namespace {

constexpr int kTypeSize = 4;  // float, like nccl-tests' default

ncclResult_t launch_one(const Context& ctx, const LocalGpu& l, Op op, std::uint64_t count) {
  const int n = ctx.nranks;
  switch (op) {
    case Op::all_reduce: return ncclAllReduce(l.send, l.recv, count, ncclFloat, ncclSum, l.comm, l.stream);
    case Op::all_gather: return ncclAllGather(l.send, l.recv, count, ncclFloat, l.comm, l.stream);
    case Op::reduce_scatter: return ncclReduceScatter(l.send, l.recv, count, ncclFloat, ncclSum, l.comm, l.stream);
    case Op::broadcast: return ncclBroadcast(l.send, l.recv, count, ncclFloat, 0, l.comm, l.stream);
    case Op::reduce: return ncclReduce(l.send, l.recv, count, ncclFloat, ncclSum, 0, l.comm, l.stream);
    case Op::alltoall: return ncclAlltoAll(l.send, l.recv, count, ncclFloat, l.comm, l.stream);
    case Op::sendrecv: {
      // nccl-tests sendrecv: every rank sends to the next and receives from the previous one.
      ncclResult_t r = ncclSend(l.send, count, ncclFloat, (l.rank + 1) % n, l.comm, l.stream);
      if (r != ncclSuccess) return r;
      return ncclRecv(l.recv, count, ncclFloat, (l.rank - 1 + n) % n, l.comm, l.stream);
    }
  }
  return ncclInvalidArgument;
}

// Launches `calls` ops on every local GPU (one group per call) and waits for them; returns host us.
double run_calls(const Context& ctx, Op op, std::uint64_t count, int calls) {
  const double t0 = now_us();
  for (int i = 0; i < calls; ++i) {
    ncclResult_t r = ncclGroupStart();
    for (const auto& l : ctx.locals)
      if (r == ncclSuccess) r = launch_one(ctx, l, op, count);
    const ncclResult_t e = ncclGroupEnd();
    if (r == ncclSuccess) r = e;
    if (r != ncclSuccess) {
      const char* last = ctx.locals.empty() ? "" : ncclGetLastError(ctx.locals.front().comm);
      throw NcclCallError(fmt::format("{} {}", nccl_result_text(r), last ? last : ""));
    }
  }
  for (const auto& l : ctx.locals) cuda_check(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
  return now_us() - t0;
}

}  // namespace

CollectiveSeries measure_collective(Context& ctx, const SweepCase& c, const std::vector<std::uint64_t>& sizes,
                                    const Timing& t) {
  CollectiveSeries s;
  s.op = c.op;
  s.algo = c.algo;
  s.proto = c.proto;
  s.ctas = c.ctas;
  watchdog_arm(ctx.op_timeout_s, fmt::format("{} series (algo {}, proto {}, ctas {})", to_string(c.op),
                                             to_string(c.algo), to_string(c.proto), c.ctas));
  try {
    for (std::uint64_t bytes : sizes) {
      if (bytes > ctx.buffer_bytes) break;
      const std::uint64_t count = element_count(c.op, bytes, ctx.nranks, kTypeSize);
      if (count == 0) continue;
      if (t.warmup > 0) run_calls(ctx, c.op, count, t.warmup);
      std::vector<double> per_call;
      for (int r = 0; r < t.reps; ++r) {
        ctx.pg->barrier();
        const double us = run_calls(ctx, c.op, count, t.iters) / t.iters;
        per_call.push_back(ctx.pg->sum(us) / ctx.pg->size());  // mean over processes, like nccl-tests
      }
      CollectivePoint p;
      p.bytes = bytes;
      p.count = count;
      p.time_us = summarize(per_call);
      p.algbw_GBps = static_cast<double>(bytes) / (p.time_us.median * 1e3);
      p.busbw_GBps = p.algbw_GBps * bus_factor(c.op, ctx.nranks);
      s.points.push_back(p);
    }
  } catch (const NcclCallError& e) {
    s.status = e.what();
  }
  watchdog_disarm();
  return s;
}

}  // namespace commstack::bench
