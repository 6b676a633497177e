#pragma once
// A replay job (docs/scenario-format.md "Replay jobs"): a what-if run that replays a recorded
// trace (sim/replay/replay.hpp) on a cluster instead of simulating a generated training job.
//
//   {"cluster": "dgx-a100", "nodes": "auto",
//    "replay": {"trace": "run1/", "iteration": "last", "scale_dp": 1, "traced_gpu": "auto", "scale_pp": 1},
//    "compute_profile": "traced", "comm": {"channels": "auto", "fidelity": "auto"}}
//
// The trace path is taken relative to the folder of the scenario file (a scenario ships next to
// its traces); cluster and profile paths stay relative to the current directory, as for
// training jobs. Same strictness as the training jobs: unknown fields, a missing trace, a bad
// scale are InputErrors at their JSON path.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/replay/replay.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/importers/imported_trace.hpp"

namespace commstack::sim::scenario {

struct JsonPlace;

// The fields of the "replay" object, in output order.
const std::vector<std::string>& replay_fields();

// The trace path as the replay will open it: `written` unchanged when absolute or when
// `base_dir` is empty, else base_dir / written.
std::string resolve_trace_path(const std::string& written, const std::string& base_dir);

// Checks a "replay" object and writes every default out. `base_dir` resolves a relative trace
// path ("" = the current directory: an already normalized job).
nlohmann::json complete_replay(const nlohmann::json& v, const JsonPlace& at, const std::string& base_dir);

// What a replay job needs to run; shared by the parent's check and the forked child.
struct ReplaySetup {
  // Shared between the runs of a scenario that replay the same trace and iteration (read once).
  std::shared_ptr<const workloads::ImportedTrace> trace;
  replay::ReplayOptions options;
  std::string trace_path;
  std::string label_config;  // "replay of <source>, scale-dp K, compute ..."
};

// Loads the trace and fills the options from a normalized job's "replay" and "comm" sections.
// `target` is the compute profile to rescale the measured GPU time to (nullopt: compute_profile
// "traced", durations kept); the traced GPU's profile then comes from replay.traced_gpu.
std::shared_ptr<const ReplaySetup> prepare_replay(const nlohmann::json& job, const JsonPlace& at,
                                                  const std::optional<workloads::ComputeProfile>& target);

// The GPUs the replay occupies: the traced world (x scale_pp when deepened) x scale_dp.
int replay_world(const ReplaySetup& r);

}  // namespace commstack::sim::scenario
