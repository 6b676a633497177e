#pragma once
// Sweep planning for the GPU calibration bench (host-only, no CUDA): which collectives, which
// NCCL algorithm x protocol combinations NCCL accepts for each, which sizes, how many repetitions,
// and what a preset sweep costs in GPU-minutes before anyone books a cluster for it.
// docs/calibration-bench.md explains the presets and the legality rules.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::bench {

enum class Op { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };
// Algorithms as NCCL_ALGO names them; default_choice = leave NCCL_ALGO unset (NCCL's tuner picks).
enum class Algo { default_choice, ring, tree, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
// Protocols as NCCL_PROTO names them; default_choice = leave NCCL_PROTO unset.
enum class Proto { default_choice, ll, ll128, simple };

inline constexpr Op kAllOps[] = {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::broadcast,
                                 Op::reduce,     Op::alltoall,   Op::sendrecv};
inline constexpr Algo kForcedAlgos[] = {Algo::ring, Algo::tree, Algo::collnet_direct, Algo::collnet_chain,
                                        Algo::nvls, Algo::nvls_tree, Algo::pat};
inline constexpr Proto kForcedProtos[] = {Proto::ll, Proto::ll128, Proto::simple};

// Names used in the bench JSON: "all_reduce", "ring", "ll128", "default".
std::string to_string(Op op);
std::string to_string(Algo algo);
std::string to_string(Proto proto);
// The value NCCL_ALGO / NCCL_PROTO take for a forced choice ("Ring", "NVLSTree", "LL128");
// empty for default_choice (the variable must then stay unset).
std::string nccl_env_value(Algo algo);
std::string nccl_env_value(Proto proto);
// Parse the JSON names above (also NCCL's spellings, case-insensitive). Throw InputError naming `where`.
Op op_from_name(std::string_view name, std::string_view where);
Algo algo_from_name(std::string_view name, std::string_view where);
Proto proto_from_name(std::string_view name, std::string_view where);

// nccl-tests conventions: the "size" of a row is the per-rank buffer for all_reduce, broadcast,
// reduce and sendrecv, and the whole gathered buffer (count per rank x ranks) for all_gather,
// reduce_scatter and alltoall. Bus bandwidth factor: all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, alltoall (n-1)/n; the others 1.
double bus_factor(Op op, int nranks);
// Elements per rank for a row of `size_bytes` (0 when the size is too small for this op and rank count).
std::uint64_t element_count(Op op, std::uint64_t size_bytes, int nranks, int type_size);

// What the machine offers; decides which forced combinations NCCL would accept.
struct Machine {
  int nodes = 1;
  int gpus_per_node = 1;
  int sm = 90;               // compute capability x 10 of the GPUs
  bool nvswitch = true;      // GPUs of a node share an NVSwitch (NVLS needs it and sm >= 90)
  bool collnet = false;      // in-network reduction (SHARP) available
};

// Whether NCCL accepts `algo` x `proto` for `op` on `machine` (NCCL 2.28 rules): Tree only for
// all_reduce; NVLS, CollNet and PAT Simple-only; PAT only all_gather/reduce_scatter with one GPU per
// node; NVLSTree needs several nodes; broadcast/reduce ring-only; alltoall/sendrecv are point-to-
// point and only run with the default choice. `why` receives the reason when false.
bool combination_legal(Op op, Algo algo, Proto proto, const Machine& machine, std::string* why = nullptr);

// Powers of `factor` from min_bytes to max_bytes inclusive (nccl-tests -b/-e/-f).
std::vector<std::uint64_t> size_ladder(std::uint64_t min_bytes, std::uint64_t max_bytes, int factor);

// One measured series: an op under one algorithm x protocol x channel setting over all sizes.
struct SweepCase {
  Op op = Op::all_reduce;
  Algo algo = Algo::default_choice;
  Proto proto = Proto::default_choice;
  int ctas = 0;  // NCCL_MIN_CTAS = NCCL_MAX_CTAS = ctas; 0 = NCCL's default
  bool operator==(const SweepCase&) const = default;
};

// A communicator's fixed settings: NCCL reads NCCL_ALGO / NCCL_PROTO and the CTA bounds when the
// communicator is created, so every distinct setting needs its own communicator.
struct CommSetting {
  Algo algo = Algo::default_choice;
  Proto proto = Proto::default_choice;
  int ctas = 0;
  bool operator==(const CommSetting&) const = default;
};

struct Preset {
  std::string name;
  std::vector<Op> ops;
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 1ull << 30;
  int factor = 2;
  int warmup = 5;
  int iters = 20;  // launches per timed repetition (host wall clock around them, like nccl-tests)
  int reps = 5;    // timed repetitions: the report gives median and spread over them
  bool algo_proto_matrix = true;  // every legal forced combination besides the default choice
  std::vector<int> cta_sweep;     // channel counts forced on all_reduce with the default algo/proto
  bool p2p = true;                // per-pair NCCL send/recv and cudaMemcpyPeer
  bool kernels = true;            // copy/reduce throughput, launch and sync overhead
  bool gemm = true;               // cuBLAS GEMM on transformer shapes
};

// "smoke" (minutes, sanity), "standard" (the calibration input), "full" (every size to 8 GiB).
Preset preset_by_name(std::string_view name, std::string_view where);
std::vector<std::string> preset_names();

struct SweepPlan {
  Preset preset;
  Machine machine;
  std::vector<std::uint64_t> sizes;
  std::vector<SweepCase> cases;       // ordered: by communicator setting, then op
  std::vector<std::string> skipped;   // "all_reduce pat/simple: <why>" for combinations NCCL refuses
  std::vector<CommSetting> comm_settings() const;  // distinct, in first-use order
};

SweepPlan plan_sweep(const Preset& preset, const Machine& machine);

// Cost model for the planning estimate (deliberately pessimistic: a booking must not run short).
struct CostModel {
  double latency_us = 30;         // per collective call
  double busbw_GBps = 40;         // bus bandwidth every call reaches at least
  double comm_init_s = 3;         // per communicator, plus init_per_node_s per node
  double init_per_node_s = 0.5;
  double fixed_s = 60;            // process start, p2p/kernels/GEMM sections
};
struct CostEstimate {
  double collective_s = 0;  // timed + warm-up calls
  double init_s = 0;        // communicator creation
  double wall_s = 0;        // everything, one run
  double gpu_minutes = 0;   // wall_s x GPUs / 60
  int communicators = 0;
  std::uint64_t calls = 0;
};
// Time of one call of `size` bytes of `op` under the model: latency + size x bus_factor / busbw.
double modeled_call_us(Op op, std::uint64_t size_bytes, int nranks, const CostModel& model);
CostEstimate estimate_cost(const SweepPlan& plan, const CostModel& model = {});

}  // namespace commstack::bench
