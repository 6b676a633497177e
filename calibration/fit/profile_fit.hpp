#pragma once
// From measurements to a calibration profile and back: loading an nccl-tests run together with the
// cluster it ran on, validating a profile against it (per-size error, MAPE, hardware-bound check),
// and fitting a profile's parameters to a set of runs (robust least squares on log time with a
// prior on every parameter). docs/calibration.md describes the objective and its choices.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/algorithms/collective.hpp"
#include "sim/stack/predict.hpp"
#include "sim/stack/profile.hpp"
#include "topologies/cluster.hpp"

namespace commstack::fit {

// One nccl-tests run and everything needed to predict it.
struct MeasuredRun {
  std::string file;
  std::string cluster_name;  // preset name or path, as given
  topologies::ClusterSpec cluster;
  int nodes = 1;
  int gpus_per_node = 1;
  sim::CollectiveOp op = sim::CollectiveOp::allreduce;
  sim::stack::Knobs knobs;  // NCCL_* settings the run used (from the input spec)
  std::string knob_text;    // as given, for provenance
  std::vector<std::uint64_t> bytes;
  std::vector<double> measured_us;  // out-of-place time column (in-place with in_place=1)
  bool in_place = false;            // measured_us is the in-place column
  std::uint64_t min_bytes = 0;      // window applied (0 = none)
  std::uint64_t max_bytes = 0;
  std::vector<std::string> notes;   // points the reader dropped and why (published tables' rounding rule)
  // What NCCL ran, per size, from its TUNING lines in the log (NCCL_DEBUG=INFO with
  // NCCL_DEBUG_SUBSYS=TUNING, "AllReduce: 16777216 Bytes -> Algo TREE proto LL128 ..."): those sizes
  // are predicted with NCCL's algorithm and protocol, so the error left is the cost layers'.
  struct LoggedChoice {
    select::Algo algo = select::Algo::ring;
    select::Proto proto = select::Proto::simple;
    int line = 0;
  };
  std::map<std::uint64_t, LoggedChoice> logged_choices;
};

// The Choice for one measured size: NCCL's logged algorithm and protocol where the log has them
// (`forced` caches one Predictor per pair), else the modelled selection of `predictor`. `model` gets
// the modelled selection when it differs from the logged one.
sim::stack::Predictor::Choice choose_for_run(
    const MeasuredRun& run, const sim::stack::Predictor& predictor, std::uint64_t bytes,
    std::map<std::pair<int, int>, std::unique_ptr<sim::stack::Predictor>>& forced,
    std::optional<std::string>* model = nullptr);

struct RunSpec {
  std::string file;
  std::optional<std::string> cluster;
  std::optional<int> nodes, gpus_per_node;
  std::optional<int> gpus_per_thread;  // nccl-tests -g (else the log header's nGpus, else 1)
  std::optional<bool> cuda_graph;      // nccl-tests -G > 0 (else the log header's "graph:", else off)
  // The in-place time column (a published table: its numbers are in-place). The stack model predicts
  // both the same: only the column read changes.
  bool in_place = false;
  // Whose tuning model selects (nccl_version=2.29.3); else the version the log printed, else 2.28.9.
  std::optional<select::NcclVersion> nccl_version;
  std::optional<std::string> op;
  // Which nccl-tests run of a log that holds several (1-based); else the one run of `op`.
  std::optional<int> run;
  std::uint64_t min_bytes = 0, max_bytes = 0;  // inclusive size window; 0 = unbounded
  sim::stack::Knobs knobs;
  std::string knob_text;
  // Published tables (calibration/fit/published_table.hpp): the value column (busbw-series) and the
  // row group (multi-op config, peak-summary scope) to read.
  std::optional<std::string> series, config;
};

// "FILE[@key=value,key=value...]" with keys cluster, nodes, gpus_per_node, op, run, min_bytes,
// max_bytes, algo, proto, min_ctas, max_ctas, nvls (0/1), collnet (0/1), gpus_per_thread (nccl-tests -g),
// cuda_graph (0/1, nccl-tests -G > 0), in_place (0/1: the in-place column), nccl_version (a modeled
// NCCL release whose tuning model selects). Throws InputError naming `flag`.
RunSpec parse_run_spec(const std::string& text, const std::string& flag);

// Reads the file, resolves the cluster (spec.cluster, else `default_cluster`), nodes and GPUs per
// node (spec, else the log's rank lines), the op (spec, else the log) and keeps rows inside the
// window with size > 0. Refuses, with the reason, a run it cannot use.
MeasuredRun load_measured_run(const RunSpec& spec, const std::optional<std::string>& default_cluster);

struct ValidationRow {
  std::uint64_t bytes = 0;
  double measured_us = 0;
  double predicted_us = 0;
  double error_percent = 0;  // 100 (predicted - measured) / measured
  sim::stack::Prediction prediction;
  // The measured time is more than kDisturbedRatio x that of the next size of the sweep (at most
  // twice as large): a larger message cannot take that much less time, so one slow iteration
  // disturbed the average. Reported, still counted in the MAPE.
  bool disturbed = false;
  std::uint64_t next_bytes = 0;  // the next size (when disturbed)
  double next_measured_us = 0;
  // The size was predicted with NCCL's logged algorithm / protocol and the modelled selection
  // picks another: that one ("Tree/LL128"), for the report.
  std::optional<std::string> model_choice;
  bool logged_choice = false;  // predicted with NCCL's logged algorithm / protocol
  // NCCL's own estimate for the same call (ncclTopoGetAlgoTime for the algorithm / protocol it runs:
  // the number its tuner minimises), in us; < 0 where NCCL has no model (alltoall, sendrecv). The
  // baseline commstack is judged against: unfitted, no launch, no fabric, no per-step transport.
  double nccl_model_us = -1;
};

// Which side of the model a run's error sits on: the sizes whose prediction is nearly all fixed
// cost (launch, algorithm and fabric latency) against the sizes whose prediction is nearly all
// moving bytes (fabric bandwidth, transport, protocol). "Nearly all": the other side is below
// kRegimeShare of the prediction. docs/calibration.md "Where the error is".
struct ErrorSplit {
  int n_latency = 0;                      // latency-bound sizes
  std::uint64_t latency_max_bytes = 0;    // the largest of them
  double latency_excess_us = 0;           // median of measured - predicted over them
  double latency_layers_us = 0;           // median predicted launch + latency layers over them
  int n_bandwidth = 0;                    // bandwidth-bound sizes
  std::uint64_t bandwidth_min_bytes = 0;  // the smallest of them
  // Median over them of predicted byte-moving layers / (measured - predicted fixed layers): the rate
  // the run reached as a fraction of the modeled one (1 = as modeled, 0.8 = 20% slower).
  double bandwidth_rate_ratio = 0;
};

inline constexpr double kRegimeShare = 0.1;

// The sizes whose predicted time is the host's: nccl-tests -g G > 1 (one thread launches G kernels
// per call) where G x launch_us exceeds the device time, or every size of a run whose calls are
// timed one at a time (OSU). Says whether the profile's own runs measured launch_us.
struct HostFloor {
  int sizes = 0;
  std::uint64_t max_bytes = 0;     // the largest host-bound size
  int launches = 1;                // kernels one host thread launches per call
  double launch_us = 0;            // the profile's launch_us
  bool synchronized = false;       // calls timed one at a time: the host time adds at every size
  bool measured = false;           // the profile's inputs constrain launch_us
  bool other_generations = false;  // else: taken from other generations' fits (calibrate --host-from)
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  ErrorSplit split;
  HostFloor host_floor;
  double mape_percent = 0;
  double mape_large_percent = 0;  // sizes >= 1 MiB
  double mape_small_percent = 0;  // sizes < 1 MiB
  int n_large = 0;
  int n_small = 0;
  // The largest size: measured bus bandwidth and what the model allows there.
  double measured_busbw_GBps = 0;
  double predicted_busbw_GBps = 0;
  bool below_hardware = false;  // measured < kBelowHardwareRatio x predicted at the largest size
  select::CommShape comm;       // the communicator the predictions ran on (channels, graphs)
  // NCCL's own model (ValidationRow::nccl_model_us) on the sizes it covers: every size of an
  // all-reduce / all-gather / reduce-scatter / broadcast / reduce run, none of alltoall / sendrecv.
  double nccl_model_mape_percent = 0;
  double nccl_model_mape_large_percent = 0;
  double nccl_model_mape_small_percent = 0;
  int nccl_model_n_large = 0;
  int nccl_model_n_small = 0;
  // NCCL settings that systems often run with silently and that explain this run at least twice as
  // well at >= 1 MiB (validate prints them as hints): NVLS off (no fabric-manager multicast),
  // MNNVL off (no IMEX channel on an NVL72 domain), CollNet on (a SHARP plugin loaded). Looked for
  // when the run is flagged below_hardware or misses by more than kAlternativeTrigger at >= 1 MiB;
  // never used for the MAPE.
  struct Alternative {
    enum class Setting { mnnvl_off, nvls_off, collnet_on } setting = Setting::mnnvl_off;
    std::string flag;                 // "--nvls off"
    std::string nccl_env;             // "NCCL_NVLS_ENABLE=0"
    double predicted_busbw_GBps = 0;  // at the largest size
    double mape_percent = 0;
    double mape_large_percent = 0;
  };
  std::vector<Alternative> alternatives;
  // Sizes where the measured time follows another algorithm / protocol than the one NCCL's modelled
  // selection picks: consecutive sizes (at least kOtherChoiceMinSizes) that the modelled choice
  // misses by more than kOtherChoiceTrigger and that one other pair the communicator allows predicts
  // within kOtherChoiceMatch, at most half the error. Where NCCL's choice is logged (TUNING lines) or
  // forced (algo= and proto=) nothing is looked for. Never used for the MAPE.
  struct OtherChoice {
    std::uint64_t min_bytes = 0, max_bytes = 0;
    int sizes = 0;
    std::string modelled;              // the modelled choices over these sizes: "Ring/LL, Ring/LL128"
    std::string other;                 // "Ring/Simple"
    double modelled_mape_percent = 0;  // over these sizes
    double other_mape_percent = 0;
  };
  std::vector<OtherChoice> other_choices;
};

// ValidationResult::other_choices: a size counts when the modelled choice is off by more than this
// (percent), another pair is within kOtherChoiceMatch and at most half as far off, over this many
// consecutive sizes.
inline constexpr double kOtherChoiceTrigger = 25.0;
inline constexpr double kOtherChoiceMatch = 10.0;
inline constexpr int kOtherChoiceMinSizes = 2;

// A run whose error at >= 1 MiB exceeds this (percent) is also predicted under the settings of
// ValidationResult::alternatives.
inline constexpr double kAlternativeTrigger = 15.0;

// A run whose largest message reaches less than this fraction of the predicted bus bandwidth is
// flagged as far below what its hardware allows (docs/calibration.md).
inline constexpr double kBelowHardwareRatio = 0.6;

// A size whose measured time exceeds the next size's (at most 2x larger) by this factor is marked
// disturbed. NCCL switching protocol or algorithm between two sizes moves the time by less (largest
// drop in the shared logs: 11%, Vultr B200 2-node reduce-scatter 8 -> 16 MiB); every point above it
// there is a lone spike 1.4-4.6x its neighbours (docs/calibration.md).
inline constexpr double kDisturbedRatio = 1.25;

ValidationResult validate_run(const MeasuredRun& run, const sim::stack::Profile& profile);

struct FitOptions {
  double robust_scale = 0.1;    // loss scale on ln(pred/meas): 10% errors are "normal"
  // "cauchy": c^2 ln(1 + (r/c)^2), saturates, so a run whose structure the model misses cannot drag
  // the others; "soft_l1": 2 c^2 (sqrt(1 + (r/c)^2) - 1), linear tail, never gives up on an error
  // many sizes share (docs/calibration.md compares the two on results/validation).
  std::string loss = "cauchy";
  // Weight of one prior standard deviation relative to one run's mean loss; 0.01 had the lowest mean
  // leave-one-out MAPE of {0.001, 0.01, 0.1} on results/validation (docs/calibration.md).
  double prior_weight = 1e-2;
  int max_sweeps = 40;
  std::string name = "fitted";
};

// Fits every parameter of `prior` (its values are the start and the prior means) to `runs`.
// Deterministic. Fills inputs, residuals and provenance: a parameter the runs constrain gets
// kFittedProvenance + its files, one they leave at the prior says so.
inline constexpr std::string_view kFittedProvenance = "fitted on ";
sim::stack::Profile fit_profile(const std::vector<MeasuredRun>& runs, const sim::stack::Profile& prior,
                                const FitOptions& options = {});

}  // namespace commstack::fit
