#pragma once
// The bench's one output file: a JSON document with the machine description and every measured
// series (collectives per algorithm x protocol x channel setting, point-to-point pairs, kernel
// throughput and overheads, GEMM throughput). Written by commstack-bench, read by
// calibration/fit/bench_json (commstack calibrate). Schema in docs/calibration-bench.md.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/bench/stats.hpp"
#include "calibration/bench/sweep_plan.hpp"

namespace commstack::bench {

inline constexpr int kSchemaVersion = 1;
inline constexpr const char* kSchemaName = "commstack-bench";

struct MachineInfo {
  std::string gpu_model;        // cudaDeviceProp::name of local GPU 0 on rank 0
  int sm = 0;                   // compute capability x 10
  std::string driver_version;   // "13.0" from cudaDriverGetVersion
  std::string cuda_runtime;     // "13.0" from cudaRuntimeGetVersion
  std::string nccl_version;     // "2.28.9" from ncclGetVersion
  int nodes = 1;
  int gpus_per_node = 1;
  int nranks = 1;
  std::vector<std::string> hostnames;  // per rank, in rank order
  std::string launcher;                // "mpi" or "single-process"
  std::string topo_dump_path;          // NCCL_TOPO_DUMP_FILE as used, "" if none
  std::string topo_dump_xml;           // its content (rank 0), "" if not written
  std::vector<std::string> nccl_env;   // NCCL_* variables set at start, "NAME=value", sorted
};

struct Settings {
  std::string preset;
  int warmup = 0;
  int iters = 0;
  int reps = 0;
  std::string dtype = "float";  // element type of the collectives
  std::string timing = "host wall clock around iters launches + stream sync (nccl-tests)";
};

// One size of one collective series. time_us: per call, over the repetitions.
struct CollectivePoint {
  std::uint64_t bytes = 0;  // nccl-tests "size": see bus_factor()/element_count() in sweep_plan.hpp
  std::uint64_t count = 0;  // elements per rank
  Summary time_us;
  double algbw_GBps = 0;  // bytes / median time
  double busbw_GBps = 0;  // algbw x bus_factor
};

struct CollectiveSeries {
  Op op = Op::all_reduce;
  Algo algo = Algo::default_choice;
  Proto proto = Proto::default_choice;
  int ctas = 0;
  std::string status = "ok";  // "ok", or why NCCL refused / failed the series (no points then)
  std::vector<CollectivePoint> points;
};

struct P2pPoint {
  std::uint64_t bytes = 0;
  Summary time_us;
  double bw_GBps = 0;  // bytes / median time (one direction)
};

// kind: "nccl_sendrecv" (intra-node pair), "memcpy_peer" (cudaMemcpyPeerAsync), "nccl_rail"
// (same local GPU index on two nodes: one rail of a rail-optimized fabric).
struct P2pSeries {
  std::string kind;
  int src_rank = 0;
  int dst_rank = 0;
  std::string src_host, dst_host;
  int src_device = 0, dst_device = 0;
  std::vector<P2pPoint> points;
};

// kind: "copy" (device memory copy kernel), "reduce_sum" (a += b, float), "launch" (empty kernel,
// host enqueue time per launch), "stream_sync" (cudaStreamSynchronize on an idle stream).
struct KernelPoint {
  std::string kind;
  int device = 0;
  std::uint64_t bytes = 0;  // 0 for launch / stream_sync
  Summary time_us;
  double bw_GBps = 0;       // bytes moved (read + write) / median time; 0 for overheads
};

struct GemmPoint {
  std::string dtype;  // "bf16" (cublasGemmEx, fp32 accumulate) or "fp8_e4m3" (cublasLt)
  std::int64_t m = 0, n = 0, k = 0;
  std::string status = "ok";
  Summary time_us;
  double tflops = 0;  // 2 m n k / median time
};

struct BenchReport {
  int schema_version = kSchemaVersion;
  MachineInfo machine;
  Settings settings;
  std::vector<CollectiveSeries> collectives;
  std::vector<P2pSeries> p2p;
  std::vector<KernelPoint> kernels;
  std::vector<GemmPoint> gemm;
  std::vector<std::string> skipped;  // planned combinations NCCL refuses, with the reason
};

nlohmann::json to_json(const BenchReport& report);
// Throws InputError naming `origin`, the JSON path of the field and what was expected.
BenchReport report_from_json(const nlohmann::json& j, const std::string& origin);
// The text of a report file: not JSON at all is an InputError too.
BenchReport report_from_text(const std::string& text, const std::string& origin);
BenchReport load_report(const std::string& path);
// Deterministic: sorted keys, 2-space indent, trailing newline.
std::string dump_report(const BenchReport& report);

// Transformer GEMM shapes for a hidden size h and tokens per micro-batch t: QKV (t, 3h, h), attention
// output (t, h, h), MLP up (t, 4h, h) and down (t, h, 4h), as (m, n, k) with C[m x n] = A[m x k] B[k x n].
struct GemmShape {
  std::int64_t m, n, k;
  std::string name;
};
std::vector<GemmShape> transformer_gemm_shapes(const std::vector<std::int64_t>& hidden_sizes, std::int64_t tokens);

}  // namespace commstack::bench
