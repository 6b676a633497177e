#pragma once
// A calibration profile: the stack model's parameters for one GPU generation, each with its unit,
// physical meaning, prior (where the starting value comes from) and provenance (fitted from which
// files, or kept at the prior). JSON format "commstack-profile/1", described in docs/calibration.md.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace commstack::sim::stack {

// Parameter indices. Latencies in microseconds, efficiencies as fractions of a line rate,
// per-channel caps in GB/s (1e9 B/s) of user data.
enum class Param {
  launch_us,            // host time of one call (enqueue + kernel launch); overlaps the previous call's device time
  lat_nvlink_ll_us,     // per algorithm step over NVLink/PCIe, LL protocol (flag poll + copy start)
  lat_nvlink_ll128_us,
  lat_nvlink_simple_us,
  lat_net_ll_us,        // per algorithm step that crosses the network (proxy thread, NIC, switches)
  lat_net_ll128_us,
  lat_net_simple_us,
  nvls_latency_us,      // one NVLink SHARP (multimem reduce + multicast) round inside the switch
  eta_nvlink,           // achieved / line rate for GPU-to-GPU copies over NVLink (P2P transport)
  eta_nvls,             // achieved / line rate for NVLS multimem loads/stores
  eta_nic,              // achieved / line rate of a NIC (NET transport, GPUDirect RDMA)
  cap_ll_GBps,          // what one channel's thread block can copy/reduce with LL
  cap_ll128_GBps,
  cap_simple_GBps,
  chunk_sync_us,        // per chunk a channel waits on the FIFO flags of one slot (Simple/LL128/LL)
  kernel_us,            // device-side fixed cost of one call (kernel start, work fetch, completion flag)
  eta_nvlstree,         // eta_nvls inside NVLSTree, whose kernel shares its warps with the network tree
};
inline constexpr int kNumParams = 17;

struct ParamInfo {
  const char* name;
  const char* unit;
  const char* meaning;
  double min;  // physical range accepted from a file
  double max;
};
const ParamInfo& param_info(Param p);
const ParamInfo& param_info(int index);

struct ParamValue {
  double value = 0;
  double prior = 0;
  double prior_sigma_log = 1;  // std-dev of ln(value) around ln(prior) in the fit's prior term
  std::string provenance;      // "fitted: <files>" or "prior: <source>"
};

struct FitResidual {
  std::string file;
  std::string settings;  // the run's `@keys` within the file (InputRun::settings)
  std::uint64_t bytes = 0;
  double measured_us = 0;
  double predicted_us = 0;
  double error_percent = 0;
};

struct InputRun {
  std::string file;
  std::string settings;  // the run's `@key=value,...` as calibrate was given it (which table, column, knobs)
  std::string cluster;
  std::string op;
  int nodes = 0;
  int gpus_per_node = 0;
  int points = 0;
  std::uint64_t min_bytes = 0;  // size window used (inclusive); 0/0 = all
  std::uint64_t max_bytes = 0;
};

struct Profile {
  std::string name;
  std::string origin;  // file or "built-in <name>", for error messages
  int sm = 90;         // compute capability x10 of the generation (80 A100, 90 H100/H200/GH200, 100 B200/GB200)
  std::string description;
  std::array<ParamValue, kNumParams> params{};
  std::vector<InputRun> inputs;
  std::vector<FitResidual> residuals;
  double fit_rms_log_residual = 0;
  double fit_mape_percent = 0;

  double operator[](Param p) const { return params[static_cast<std::size_t>(p)].value; }
  double& at(Param p) { return params[static_cast<std::size_t>(p)].value; }
};

// The prior profile of a generation: NCCL's tuning constants (src/graph/tuning.cc) for the
// latencies and caps, NCCL maintainers' statements for the efficiencies (docs/calibration.md).
Profile prior_profile(int sm);

// GPU model name ("H100-SXM5-80GB", "NVIDIA A100-SXM4-40GB", "B200 (GB200)", "GH200") -> sm x10;
// 0 when unknown.
int sm_of_gpu_model(const std::string& model);

nlohmann::json profile_to_json(const Profile& p);
// Validates every field (units, ranges, unknown keys); errors name `origin` and the JSON path.
Profile profile_from_json(const nlohmann::json& doc, const std::string& origin);
// A path to a JSON profile, or a shipped name ("a100", "h100", "b200", "gh200", "gb200"): looked up
// in a calibration/profiles directory ($COMMSTACK_PROFILE_DIR, the working directory's, the one
// next to the binary), then in the copy compiled into the binary.
// `option` names the command-line option in the error for an unknown name.
Profile load_profile(const std::string& name_or_path, std::string_view option = "--profile");
void save_profile(const Profile& p, const std::string& path);
// The shipped profile for a generation, or prior_profile(sm) when none is shipped.
Profile default_profile(int sm);
// The shipped profile of a cluster's GPU: the Grace-Blackwell NVL72 racks (GB200, GB300) and GH200
// have their own (fitted on those systems, results/validation/runs.tsv), every other GPU its
// generation's (default_profile).
Profile default_profile_for_gpu(const std::string& gpu_model);

}  // namespace commstack::sim::stack
