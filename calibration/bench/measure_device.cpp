// Kernel-level and GEMM measurements on one GPU (rank 0's first): what the stack model's protocol
// layer (copy/reduce throughput), launch layer (enqueue, sync) and the compute model (GEMM) need.
#include <algorithm>
#include <functional>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <fmt/format.h>

#include "calibration/bench/gpu_util.hpp"
#include "calibration/bench/kernels.hpp"
#include "calibration/bench/measure.hpp"

namespace commstack::bench {
namespace {

// Summary of per-call microseconds of `body` (which issues `n` calls and waits) over repetitions.
Summary time_per_call(const Timing& t, const std::function<double(int)>& body) {
  if (t.warmup > 0) body(t.warmup);
  std::vector<double> per_call;
  per_call.reserve(static_cast<std::size_t>(std::max(0, t.reps)));
  for (int r = 0; r < t.reps; ++r) per_call.push_back(body(t.iters) / t.iters);
  return summarize(per_call);
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw NcclCallError(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(s)));
}

}  // namespace

std::vector<KernelPoint> measure_kernels(Context& ctx, const std::vector<std::uint64_t>& sizes, const Timing& t) {
  std::vector<KernelPoint> out;
  if (ctx.pg->rank() != 0 || ctx.locals.empty()) return out;
  const LocalGpu& l = ctx.locals.front();
  cuda_check(cudaSetDevice(l.device), "cudaSetDevice");
  cudaStream_t st = l.stream;
  for (std::uint64_t bytes : sizes) {
    if (bytes > ctx.buffer_bytes || bytes < 4096) continue;  // small copies only measure launch overhead
    KernelPoint copy{"copy", l.device, bytes, {}, 0};
    copy.time_us = time_per_call(t, [&](int n) {
      const double t0 = now_us();
      for (int i = 0; i < n; ++i) cuda_check(launch_copy(l.recv, l.send, bytes, st), "copy kernel");
      cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
      return now_us() - t0;
    });
    copy.bw_GBps = 2.0 * static_cast<double>(bytes) / (copy.time_us.median * 1e3);  // read + write
    out.push_back(copy);
    KernelPoint red{"reduce_sum", l.device, bytes, {}, 0};
    red.time_us = time_per_call(t, [&](int n) {
      const double t0 = now_us();
      for (int i = 0; i < n; ++i)
        cuda_check(launch_reduce_sum(static_cast<float*>(l.recv), static_cast<const float*>(l.send), bytes / 4, st),
                   "reduce kernel");
      cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
      return now_us() - t0;
    });
    red.bw_GBps = 3.0 * static_cast<double>(bytes) / (red.time_us.median * 1e3);  // 2 reads + 1 write
    out.push_back(red);
  }
  // Launch: host time of the launch calls alone (the queue absorbs them), then drained untimed.
  Timing many = t;
  many.iters = std::max(t.iters, 1000);
  KernelPoint launch{"launch", l.device, 0, {}, 0};
  launch.time_us = time_per_call(many, [&](int n) {
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) cuda_check(launch_empty(st), "empty kernel");
    const double dt = now_us() - t0;
    cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
    return dt;
  });
  out.push_back(launch);
  KernelPoint sync{"stream_sync", l.device, 0, {}, 0};
  sync.time_us = time_per_call(many, [&](int n) {
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
    return now_us() - t0;
  });
  out.push_back(sync);
  return out;
}

std::vector<GemmPoint> measure_gemm(Context& ctx, const std::vector<GemmShape>& shapes, int sm, const Timing& t) {
  std::vector<GemmPoint> out;
  if (ctx.pg->rank() != 0 || ctx.locals.empty()) return out;
  const LocalGpu& l = ctx.locals.front();
  cuda_check(cudaSetDevice(l.device), "cudaSetDevice");
  cublasHandle_t handle = nullptr;
  cublas_check(cublasCreate(&handle), "cublasCreate");
  cublasSetStream(handle, l.stream);
  cublasLtHandle_t lt = nullptr;
  cublas_check(cublasLtCreate(&lt), "cublasLtCreate");
  const std::size_t ws_bytes = 64u << 20;
  void* ws = nullptr;
  cuda_check(cudaMalloc(&ws, ws_bytes), "cudaMalloc (cuBLAS workspace)");
  for (const auto& shape : shapes) {
    const auto m = shape.m, n = shape.n, k = shape.k;
    for (const char* dtype : {"bf16", "fp8_e4m3"}) {
      GemmPoint g;
      g.dtype = dtype;
      g.m = m;
      g.n = n;
      g.k = k;
      const bool fp8 = g.dtype == "fp8_e4m3";
      if (fp8 && sm < 89) {
        g.status = "fp8 needs sm_89 or newer";
        out.push_back(g);
        continue;
      }
      const std::size_t in_size = fp8 ? 1 : 2;
      void *a = nullptr, *b = nullptr, *c = nullptr;
      try {
        cuda_check(cudaMalloc(&a, static_cast<std::size_t>(m * k) * in_size), "cudaMalloc (GEMM A)");
        cuda_check(cudaMalloc(&b, static_cast<std::size_t>(k * n) * in_size), "cudaMalloc (GEMM B)");
        cuda_check(cudaMalloc(&c, static_cast<std::size_t>(m * n) * 2), "cudaMalloc (GEMM C)");
        // Non-zero inputs: 0x3C is 1.5 in e4m3 and ~0.0115 (0x3C3C) in bf16.
        cuda_check(launch_fill(a, 0x3C, static_cast<std::size_t>(m * k) * in_size, l.stream), "fill");
        cuda_check(launch_fill(b, 0x3C, static_cast<std::size_t>(k * n) * in_size, l.stream), "fill");
        const float alpha = 1.0f, beta = 0.0f;
        std::function<void()> call;
        cublasLtMatmulDesc_t op = nullptr;
        cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
        cublasLtMatmulPreference_t pref = nullptr;
        cublasLtMatmulHeuristicResult_t heur{};
        if (!fp8) {
          call = [&] {
            cublas_check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n),
                                      static_cast<int>(k), &alpha, a, CUDA_R_16BF, static_cast<int>(m), b, CUDA_R_16BF,
                                      static_cast<int>(k), &beta, c, CUDA_R_16BF, static_cast<int>(m),
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                         "cublasGemmEx");
          };
        } else {
          // cublasLt FP8 wants A transposed ("TN"): A stored k x m, B k x n, C/D bf16 m x n.
          cublas_check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
          const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
          cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
          cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
          cublas_check(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(k),
                                                  static_cast<std::uint64_t>(m), k),
                       "layout A");
          cublas_check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(k),
                                                  static_cast<std::uint64_t>(n), k),
                       "layout B");
          cublas_check(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, static_cast<std::uint64_t>(m),
                                                  static_cast<std::uint64_t>(n), m),
                       "layout C");
          cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                               sizeof ws_bytes);
          int found = 0;
          cublas_check(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found),
                       "cublasLtMatmulAlgoGetHeuristic");
          if (found == 0) throw NcclCallError("cublasLt found no FP8 algorithm for this shape");
          call = [&] {
            cublas_check(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &heur.algo, ws, ws_bytes,
                                        l.stream),
                         "cublasLtMatmul");
          };
        }
        Timing gt = t;
        gt.iters = std::max(1, std::min(t.iters, 20));
        g.time_us = time_per_call(gt, [&](int calls) {
          const double t0 = now_us();
          for (int i = 0; i < calls; ++i) call();
          cuda_check(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
          return now_us() - t0;
        });
        g.tflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
                   (g.time_us.median * 1e6);
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (la) cublasLtMatrixLayoutDestroy(la);
        if (lb) cublasLtMatrixLayoutDestroy(lb);
        if (lc) cublasLtMatrixLayoutDestroy(lc);
        if (op) cublasLtMatmulDescDestroy(op);
      } catch (const std::exception& e) {
        g.status = e.what();
      }
      cudaFree(a);
      cudaFree(b);
      cudaFree(c);
      cudaGetLastError();
      out.push_back(g);
    }
  }
  cudaFree(ws);
  cublasLtDestroy(lt);
  cublasDestroy(handle);
  return out;
}

}  // namespace commstack::bench
