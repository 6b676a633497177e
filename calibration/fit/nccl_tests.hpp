#pragma once
// Parser for the text output of NVIDIA nccl-tests (all_reduce_perf, all_gather_perf, ...):
// the "# nThread ..." run header, the "#  Rank r Group g Pid p on host device d [busid] name"
// device lines, the column header, the result rows (out-of-place and in-place time / algbw /
// busbw / #wrong, optional -I per-iteration columns i_min i_max i_p99 i_cv%) and the footer.
// Formats and inference rules are described in docs/measurement-formats.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::sim {
enum class CollectiveOp;  // sim/algorithms/collective.hpp
}

namespace commstack::fit {

enum class NcclTestsOp {
  unknown,
  all_reduce,
  all_gather,
  reduce_scatter,
  alltoall,
  broadcast,
  reduce,
  sendrecv,
  gather,
  scatter,
  hypercube,
  alltoallv  // nccl-tests 2.18+: per-peer counts spread by distance; not modelled
};
std::string to_string(NcclTestsOp op);
// "all_reduce", "all_reduce_perf", "allreduce", "AllReduce" -> all_reduce; unknown names -> unknown.
NcclTestsOp nccl_tests_op_from_name(std::string_view name);
// The simulator's collective for an nccl-tests op; nullopt for those it does not model (gather,
// scatter, hypercube, unknown).
std::optional<sim::CollectiveOp> collective_op_of(NcclTestsOp op);

// One timed half of a row (out-of-place or in-place).
struct NcclTestsTiming {
  double time_us = 0;                  // mean time per call, microseconds (host wall clock)
  std::optional<double> algbw_GBps;    // bytes / time, GB/s (1e9)
  std::optional<double> busbw_GBps;    // algbw x the op's bus factor
  std::optional<std::int64_t> wrong;   // #wrong elements; empty when printed as N/A (-c 0)
  std::optional<double> max_error;     // old format "error" column (max relative error)
  // -I per-iteration statistics (CUDA events), microseconds / percent.
  std::optional<double> i_min_us, i_max_us, i_p99_us, i_cv_percent;
};

struct NcclTestsRow {
  int line = 0;                      // line in the input
  std::uint64_t size_bytes = 0;      // "size (B)" column
  std::optional<std::uint64_t> count;  // elements
  std::string type;                  // float, half, uint8, ...
  std::string redop;                 // sum, none, ...
  std::optional<std::int64_t> root;  // -1 when not rooted
  std::optional<NcclTestsTiming> out_of_place;
  std::optional<NcclTestsTiming> in_place;
};

struct NcclTestsRank {
  int rank = 0;
  int group = 0;
  std::int64_t pid = 0;
  std::string host;
  int device = 0;
  std::string busid;     // text between the brackets
  std::string gpu_name;  // e.g. "NVIDIA H100 80GB HBM3"
};

// "# nThread 1 nGpus 1 minBytes 8 maxBytes ... warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"
struct NcclTestsRunHeader {
  bool present = false;
  std::optional<int> n_thread, n_gpus, warmup_iters, iters, agg_iters, validation, graph;
  std::optional<std::uint64_t> min_bytes, max_bytes;
};

// An NCCL environment variable the output shows set for the run, and the line that shows it.
struct NcclTestsEnvSetting {
  std::string value;
  int line = 0;
};

struct NcclTestsResult {
  std::string origin;
  NcclTestsOp op = NcclTestsOp::unknown;
  std::string op_source;  // "explicit", "test-start line", "OP line", "command line", "filename", "table
                          // columns", "unknown"
  // The op the output itself gives (test-start line, OP line, command line, file name, table
  // columns, as op_source says), also when an explicit op overrides it.
  NcclTestsOp logged_op = NcclTestsOp::unknown;
  std::string logged_op_source = "unknown";
  // What the result table's columns say about the op (fit/nccl_tests_table_op), whatever the other
  // sources say: the op (unknown where they cannot tell) and why.
  NcclTestsOp table_op = NcclTestsOp::unknown;
  std::string op_table_reason;
  std::vector<NcclTestsOp> table_ops;       // the ops the columns allow (empty: they say nothing)
  std::optional<std::string> nccl_version;  // "2.26.2" from "NCCL version 2.26.2+cuda12.8" or nccl-library=22903
  NcclTestsRunHeader run;
  std::vector<NcclTestsRank> ranks;  // as printed
  // Derived from the rank lines (0 when there are none): ranks printed, distinct hosts, and
  // GPUs per host when every host has the same number of ranks (0 when hosts differ).
  int n_ranks = 0;
  int n_hosts = 0;
  int gpus_per_node = 0;
  bool ranks_complete = false;  // rank numbers are exactly 0..n_ranks-1
  std::string gpu_model;        // GPU name of rank 0 (first rank line), "" when none
  std::vector<std::string> columns;  // column names of the result table, as printed
  std::vector<NcclTestsRow> rows;
  bool elided = false;  // "..." lines: a published excerpt left rows or rank lines out
  // A "..." line before the result table: rank lines may be missing, so the ones printed give no
  // rank count (ranks_complete stays false).
  bool rank_lines_elided = false;
  std::optional<double> avg_busbw_GBps;      // footer "# Avg bus bandwidth"
  std::optional<std::int64_t> out_of_bounds;  // footer "# Out of bounds values"
  // NCCL_* variables set for this run, as the output shows them before its table ends: NCCL's own
  // "NCCL INFO <VAR> set by environment to <value>" lines (NCCL_DEBUG=INFO) and VAR=value words
  // on launcher lines before the table (mpirun -x, srun --export=..., env / export prefixes).
  // The first mention of a variable is kept (every rank prints the same line).
  std::map<std::string, NcclTestsEnvSetting> env;
  // The communicator NCCL built, from its init line "NCCL INFO 16 coll channels, 16 collnet
  // channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer" (NCCL_DEBUG=INFO; the
  // first such line, every rank prints its own).
  std::optional<int> coll_channels, nvls_channels;
  int channels_line = 0;
  // NCCL's communicator line "NCCL INFO comm 0x.. rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0
  // MNNVL 0" (the first one with an MNNVL field): whether NCCL used a multi-node NVLink domain, and
  // the NCCL nodes it counted.
  std::optional<int> comm_mnnvl, comm_nodes;
  int comm_line = 0;
  // Lines of the result table: its column header and its last row (0 when none). NCCL's per-call
  // TUNING lines of this run's sizes print between the two.
  int table_first_line = 0, table_last_line = 0;
  // What the reader left out or assumed, for the user (validate and calibrate print them as notes):
  // a last row cut short, lines inside the table that are not result rows.
  std::vector<std::string> notes;
};

// The fields every nccl-tests reader derives the same way (text output, nccl-tests -J JSON): the
// shape from the rank lines (n_ranks, n_hosts, gpus_per_node, ranks_complete, gpu_model), then the
// op: `op_hint` if given, else `logged_op` (what the output says, `logged_source` naming where),
// else the result table's columns (fit/nccl_tests_table_op), all three kept for the caller.
void finish_nccl_tests_result(NcclTestsResult& res, NcclTestsOp op_hint, NcclTestsOp logged_op,
                              const std::string& logged_source);
// NCCL's version code as nccl-tests prints it (nccl-library=22807, JSON "nccl_version") as
// "2.28.7"; nullopt for codes <= 0.
std::optional<std::string> nccl_version_from_code(std::int64_t code);
// The op a file name mentions ("nccl-tests_all_reduce_h100.txt"), longest name first so
// reduce_scatter is not read as reduce; unknown when none.
NcclTestsOp nccl_tests_op_in_text(std::string_view text);

// nccl-tests runs in the output: one per result table, ended by its "# Avg bus bandwidth" footer
// (or by the next table when the footer is lost). A job that ran several *_perf binaries into one
// log holds several; docs/measurement-formats.md.
int count_nccl_tests_runs(std::string_view text);

// Parses the `run`-th (0-based) nccl-tests run of the output. `origin` names the input in error
// messages (a path). `op_hint` overrides inference when it is not unknown. Throws InputError on
// anything it cannot use.
NcclTestsResult parse_nccl_tests(std::string_view text, const std::string& origin,
                                 NcclTestsOp op_hint = NcclTestsOp::unknown, int run = 0);
NcclTestsResult parse_nccl_tests_file(const std::string& path, NcclTestsOp op_hint = NcclTestsOp::unknown,
                                      int run = 0);

}  // namespace commstack::fit
