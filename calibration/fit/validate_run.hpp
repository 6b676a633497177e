#pragma once
// A profile checked against one measured run: per-size error, MAPE, where the error is (latency- or
// bandwidth-bound sizes), the host floor, disturbed sizes, the hardware-bound check, and the
// settings and algorithm/protocol pairs that explain a miss. docs/calibration.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/fit/measured_run.hpp"
#include "sim/stack/profile.hpp"

namespace commstack::fit {

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
  // NCCL's TUNING line names a pair the modelled communicator cannot run ("CollNetChain/Simple":
  // SHARP was on, or NVLS where the preset has none); predicted with the model's selection instead.
  std::optional<std::string> logged_unavailable;
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

}  // namespace commstack::fit
