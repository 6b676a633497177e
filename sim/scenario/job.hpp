#pragma once
// A training job as data (docs/scenario-format.md): cluster, node count, model, parallelism,
// compute profile and communication knobs, written as one JSON object. The what-if verb, sweeps
// and the planner build jobs, patch them with overrides and run them; every error names the input
// and the JSON path of the field, and exits 2 (InputError).
//
//   normalize_job()  resolves names (cluster preset -> its full JSON description, model name -> its
//                    JSON) and writes every default explicitly, so any field can be overridden;
//   apply_overrides() patches a normalized job (objects merge key by key; every key must already
//                    exist in the job; scalars, arrays and names replace the value);
//   prepare_job()    parses and checks everything (cluster, topology, model, parallelism, memory);
//   run_job()        simulates one iteration. It creates a SimGrid engine: call it once per
//                    process, normally inside run_isolated() (isolated_run.hpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/replay_job.hpp"
#include "sim/train/train.hpp"
#include "topologies/cluster.hpp"
#include "topologies/topology.hpp"

namespace commstack::sim::scenario {

// Where a JSON value came from, for error messages: the input (file or "built-in scenario x") and
// the JSON path of the value inside it ("$.variants[2].overrides").
struct JsonPlace {
  std::string where;
  std::string path = "$";
  JsonPlace at(const std::string& key) const { return {where, path + "." + key}; }
  JsonPlace at(std::size_t index) const { return {where, path + "[" + std::to_string(index) + "]"}; }
  std::string str() const { return where + ": " + path; }
};

// The top-level fields of a job object, in output order.
inline const std::vector<std::string>& job_fields() {
  static const std::vector<std::string> f = {"cluster", "nodes",           "model", "parallel",
                                             "replay",  "compute_profile", "comm"};
  return f;
}

// True for a replay job (a "replay" section instead of "model" and "parallel"; replay_job.hpp).
bool is_replay_job(const nlohmann::json& job);

// Resolves and completes a job object (see above). Unknown fields and wrong types are errors at `at`.
// `base_dir` is the folder a replay job's relative trace path is taken from (the scenario file's
// folder; "" = the current directory, which also leaves an already normalized job unchanged).
nlohmann::json normalize_job(const nlohmann::json& job, const JsonPlace& at, const std::string& base_dir = "");

// Returns `base` (a normalized job) patched by `overrides` (an object shaped like a job). A key of
// `overrides` that `base` does not have is an error "<path>: no such field in the baseline ...".
// The result is normalized again (a replaced cluster or model name is resolved).
nlohmann::json apply_overrides(const nlohmann::json& base, const nlohmann::json& overrides,
                               const JsonPlace& at, const std::string& base_dir = "");

// Everything parsed and checked, ready to simulate.
struct PreparedJob {
  topologies::ClusterSpec cluster;
  topologies::Topology topology;
  sim::train::TrainSetup setup;
  std::string label_cluster;       // "dgx-h100 x 128 nodes"
  std::string label_config;        // "tp 8 pp 8 dp 16 ..."
  std::vector<std::string> notes;  // e.g. the Megatron vocabulary padding
  // Replay jobs only (setup is then unused): the loaded trace and the replay options.
  std::shared_ptr<const ReplaySetup> replay;
};

// Parses a normalized job. `at` names it in errors (every message carries at.where and a path).
PreparedJob prepare_job(const nlohmann::json& job, const JsonPlace& at);

// Simulates one iteration and returns the report of `commstack train --format json`
// (sim/train/report.hpp: iteration_s, tokens_per_s, mfu, breakdown_s, memory_per_gpu_bytes, ...)
// plus "notes". A replay job returns {"kind": "replay", cluster, config, iteration_s, traced_s,
// breakdown_s: {compute, exposed_comm, idle}, notes, replay: the `commstack replay --format json`
// report}. Creates the process's SimGrid engine (once per process).
nlohmann::ordered_json run_job(const PreparedJob& job);

}  // namespace commstack::sim::scenario
