// The job layer (job.hpp): a training job as a JSON object, its normalization, overrides, checks
// and simulation. The sections reuse the strict parsers of the rest of the project
// (topologies::parse_cluster, workloads::parse_model / parse_parallel / parse_compute_profile), so
// a job accepts exactly what `commstack train` and the cluster/model files accept.
#include "sim/scenario/job.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/replay/replay.hpp"
#include "sim/train/report.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/compute/gpu_profile.hpp"
#include "workloads/json_fields.hpp"
#include "workloads/memory.hpp"
#include "workloads/model.hpp"
#include "workloads/models/embedded.hpp"
#include "workloads/parallel/parallel.hpp"

namespace commstack::sim::scenario {
namespace {

using nlohmann::json;

// NCCL environment knobs a user may expect in "comm" that the training model does not simulate:
// it runs NCCL-style rings on the fabric for every collective (sim/train/comm_costs.hpp), so a
// choice of algorithm or protocol would change nothing in the simulation. Refused, not ignored.
const std::vector<std::string>& unmodelled_nccl_knobs() {
  static const std::vector<std::string> k = {"algo",     "proto",    "nvls", "min_channels", "max_channels",
                                             "buffsize", "nthreads", "tree", "collnet",      "p2p_level"};
  return k;
}

[[noreturn]] void fail(const JsonPlace& at, const std::string& message) {
  throw InputError(fmt::format("{}: {}", at.str(), message));
}

std::string type_name(const json& v) {
  return v.type_name();
}

// A file the job names: its own errors (a directory, unreadable, malformed) say which field of
// which scenario named it.
json read_referenced_file(const std::string& path, std::string_view what, const JsonPlace& at) {
  try {
    return workloads::read_json_file(path, what);
  } catch (const InputError& e) {
    fail(at, e.what());
  }
}

// A cluster given by name (preset) or path, as its full JSON description.
json resolve_cluster(const json& v, const JsonPlace& at) {
  if (v.is_object()) return v;
  if (!v.is_string())
    fail(at, fmt::format("expected a preset name, a cluster file or a cluster object, got {}", type_name(v)));
  const std::string name = v.get<std::string>();
  const auto presets = topologies::preset_names();
  if (std::find(presets.begin(), presets.end(), name) != presets.end()) {
    return workloads::parse_json_text(topologies::preset_json(name), fmt::format("preset {}", name));
  }
  std::error_code ec;  // a name the file system refuses (too long) is no file
  if (!std::filesystem::exists(name, ec)) {
    fail(at,
         fmt::format("'{}' is neither a preset ({}) nor an existing file", name, fmt::join(presets, ", ")));
  }
  return read_referenced_file(name, "cluster file", at);
}

// A model given by built-in name or path, as its JSON description.
json resolve_model_json(const json& v, const JsonPlace& at) {
  if (v.is_object()) return v;
  if (!v.is_string())
    fail(at,
         fmt::format("expected a built-in model name, a model file or a model object, got {}", type_name(v)));
  const std::string name = v.get<std::string>();
  for (const auto& [stem, text] : workloads::embedded_model_files()) {
    if (stem == name)
      return workloads::parse_json_text(std::string(text), fmt::format("built-in model '{}'", name));
  }
  std::error_code ec;  // a name the file system refuses (too long) is no file
  if (!std::filesystem::exists(name, ec)) {
    fail(at, fmt::format("'{}' is neither a built-in model ({}) nor an existing file", name,
                         fmt::join(workloads::builtin_model_names(), ", ")));
  }
  return read_referenced_file(name, "model file", at);
}

std::string order_string(const std::vector<workloads::Dim>& order) {
  std::vector<std::string> names;
  names.reserve(order.size());
  for (workloads::Dim d : order) names.push_back(workloads::to_string(d));
  return fmt::format("{}", fmt::join(names, "-"));
}

// The parallel object with every field written out (docs/workloads.md lists the defaults), so
// that a variant can override any of them. seq becomes the model's when absent.
json complete_parallel(const json& v, const workloads::ModelSpec& model, const JsonPlace& at) {
  if (!v.is_object())
    fail(at, fmt::format("expected a parallelism object (docs/workloads.md), got {}", type_name(v)));
  const workloads::ParallelConfig p = workloads::parse_parallel(v, at.str());
  // The defaults of the fields parse_parallel() knows, written out; fields the user wrote are kept
  // as written (so a field added to the parser later passes through unchanged).
  json defaults = json::object();
  defaults["tp"] = p.tp;
  defaults["sequence_parallel"] = p.sequence_parallel;
  defaults["pp"] = p.pp;
  // null: not set, 1F1B or what a pipeline layout implies (a variant's layout then sets it).
  defaults["schedule"] = nullptr;
  defaults["virtual_stages"] = p.virtual_stages;
  // Uneven stage sizes: null is "not set" (Megatron's None), which a variant may change or restore.
  defaults["num_layers_in_first_pipeline_stage"] = nullptr;
  defaults["num_layers_in_last_pipeline_stage"] = nullptr;
  defaults["account_for_embedding_in_pipeline_split"] = p.embedding_in_split;
  defaults["account_for_loss_in_pipeline_split"] = p.loss_in_split;
  defaults["pipeline_model_parallel_layout"] = p.layout ? json(p.layout->text) : json(nullptr);
  defaults["dp"] = p.dp;
  defaults["zero"] = p.zero;
  defaults["cp"] = p.cp;
  defaults["ep"] = p.ep;
  if (model.moe) defaults["etp"] = p.etp > 0 ? json(p.etp) : json(nullptr);  // null: the tp degree
  defaults["seq"] = p.seq > 0 ? p.seq : model.seq;
  defaults["precision"] = workloads::to_string(p.precision);
  defaults["recompute"] = workloads::to_string(p.recompute);
  defaults["order"] = order_string(p.order);
  defaults["overlap_grad_reduce"] = p.overlap_grad_reduce;
  defaults["overlap_param_gather"] = p.overlap_param_gather;
  defaults["fp8_param_gather"] = p.fp8_param_gather;
  if (model.moe) defaults["moe_shared_expert_overlap"] = p.moe_shared_expert_overlap;
  if (model.moe) defaults["moe_token_dispatcher"] = workloads::to_string(p.moe_token_dispatcher);
  defaults["bucket_params"] =
      p.bucket_params > 0 ? json(p.bucket_params) : json(nullptr);  // null: Megatron's default
  defaults["grad_dtype"] = p.grad_bytes == 2 ? "bf16" : "fp32";
  json out = v;
  if (out.contains("fsdp")) {  // "fsdp": true is "zero": 3; one spelling, so that zero can be overridden
    out.erase("fsdp");
    out["zero"] = p.zero;
  }
  for (const auto& [key, val] : defaults.items()) {
    if (!out.contains(key)) out[key] = val;
  }
  return out;
}

// "comm": {"channels": "auto" | 1..64, "fidelity": "auto" | "chunk" | "step" | "edge"}.
json complete_comm(const json& v, const JsonPlace& at) {
  if (!v.is_object())
    fail(at, fmt::format("expected an object with channels and fidelity, got {}", type_name(v)));
  json out = {{"channels", "auto"}, {"fidelity", "auto"}};
  for (const auto& [key, val] : v.items()) {
    const JsonPlace here = at.at(key);
    const auto& nccl = unmodelled_nccl_knobs();
    if (std::find(nccl.begin(), nccl.end(), key) != nccl.end()) {
      fail(here,
           "this NCCL knob is not modelled in training yet (every collective is simulated as NCCL rings on "
           "the "
           "fabric); the comm knobs that change the simulation are channels and fidelity");
    }
    if (key == "channels") {
      // A whole float (2.0) is the integer, as in every other integer field.
      const bool number = val.is_number() && std::floor(val.get<double>()) == val.get<double>();
      const bool ok = (val.is_string() && val.get<std::string>() == "auto") ||
                      (number && val.get<double>() >= 1 && val.get<double>() <= 64);
      if (!ok) fail(here, fmt::format("expected \"auto\" or an integer 1..64, got {}", val.dump()));
      out["channels"] = number ? json(static_cast<int>(val.get<double>())) : val;
    } else if (key == "fidelity") {
      if (!val.is_string())
        fail(here, fmt::format("expected \"auto\", \"chunk\", \"step\" or \"edge\", got {}", val.dump()));
      try {
        (void)fidelity_from_string(val.get<std::string>());
      } catch (const InputError&) {
        fail(here, fmt::format("expected \"auto\", \"chunk\", \"step\" or \"edge\", got {}", val.dump()));
      }
      out["fidelity"] = val;
    } else {
      fail(here, "unknown field; expected channels or fidelity (see docs/scenario-format.md)");
    }
  }
  return out;
}

json complete_compute_profile(const json& v, const JsonPlace& at) {
  if (v.is_object()) {
    (void)workloads::parse_compute_profile(v, at.str());
    return v;
  }
  if (!v.is_string())
    fail(at, fmt::format("expected \"auto\", a built-in profile name, a file or a profile object, got {}",
                         type_name(v)));
  const std::string name = v.get<std::string>();
  const auto names = workloads::builtin_compute_profile_names();
  std::error_code ec;  // a name the file system refuses (too long) is no file
  if (name != "auto" && std::find(names.begin(), names.end(), name) == names.end() &&
      !std::filesystem::exists(name, ec)) {
    fail(at, fmt::format("'{}' is neither \"auto\", a built-in compute profile ({}) nor an existing file",
                         name, fmt::join(names, ", ")));
  }
  return v;
}

workloads::ComputeProfile pick_compute_profile(const json& v, const topologies::ClusterSpec& spec,
                                               const JsonPlace& at) {
  if (v.is_object()) return workloads::parse_compute_profile(v, at.str());
  const std::string name = v.get<std::string>();
  if (name != "auto") {
    const auto names = workloads::builtin_compute_profile_names();
    if (std::find(names.begin(), names.end(), name) != names.end())
      return workloads::builtin_compute_profile(name);
    return workloads::load_compute_profile_file(name);
  }
  // By GPU model, as `commstack train` does without --compute-profile (cli/verb_train.cpp).
  const std::string& g = spec.node.gpu_model;
  if (const auto builtin = workloads::builtin_compute_profile_for_gpu(g))
    return workloads::builtin_compute_profile(*builtin);
  fail(at,
       fmt::format(
           "\"auto\": the cluster's GPU model '{}' has no built-in compute profile; name one of {} or give a "
           "file or object",
           g, fmt::join(workloads::builtin_compute_profile_names(), ", ")));
}

// Fields whose null means "not set" (the parallel object's uneven stage sizes, pipeline layout,
// schedule, bucket size and expert TP, parse_parallel).
bool nullable(const std::string& key) {
  return key == "num_layers_in_first_pipeline_stage" || key == "num_layers_in_last_pipeline_stage" ||
         key == "bucket_params" || key == "etp" || key == "pipeline_model_parallel_layout" ||
         key == "schedule";
}

// Recursive patch of `base` by `patch` at `at` (the patch's place); every key must exist in base.
void merge_into(json& base, const json& patch, const JsonPlace& at, const std::string& section) {
  for (const auto& [key, val] : patch.items()) {
    const JsonPlace here = at.at(key);
    if (!base.contains(key)) {
      std::vector<std::string> have;
      for (const auto& [k, unused] : base.items()) have.push_back(k);
      fail(here,
           fmt::format(
               "no such field in the baseline {} (it has: {}); an override changes a field the baseline "
               "has; to add an optional field, write it in the baseline (see docs/scenario-format.md)",
               section, fmt::join(have, ", ")));
    }
    if (val.is_null() && !nullable(key)) fail(here, "null is not a value; give the new value of the field");
    json& target = base[key];
    if (val.is_object() && target.is_object())
      merge_into(target, val, here, section);
    else
      target = val;
  }
}

// A replay job: the trace is the workload, so no model or parallel section; nodes default to
// "auto" (just enough for the replayed world) and compute_profile to "traced" (measured times
// kept).
json normalize_replay_job(const json& job, const JsonPlace& at, const std::string& base_dir) {
  for (const char* training_only : {"model", "parallel"}) {
    if (job.contains(training_only)) {
      fail(
          at.at(training_only),
          "a replay job has no model or parallelism (the trace is the workload); remove the field, or remove "
          "'replay' for a training job");
    }
  }
  if (!job.contains("cluster")) fail(at, "missing required field 'cluster'");
  json out = json::object();
  out["cluster"] = resolve_cluster(job["cluster"], at.at("cluster"));
  (void)topologies::parse_cluster(out["cluster"], at.at("cluster").str());
  const json nodes = job.value("nodes", json("auto"));
  const bool nodes_ok =
      (nodes.is_string() && nodes.get<std::string>() == "auto") ||
      (nodes.is_number_integer() && nodes.get<long long>() >= 1 && nodes.get<long long>() <= (1 << 20));
  if (!nodes_ok) {
    fail(at.at("nodes"),
         fmt::format("expected \"auto\" (enough nodes for the replayed world) or a node count 1..{}, got {}",
                     1 << 20, nodes.dump()));
  }
  out["nodes"] = nodes;
  out["replay"] = complete_replay(job["replay"], at.at("replay"), base_dir);
  const json profile = job.value("compute_profile", json("traced"));
  out["compute_profile"] = profile.is_string() && profile.get<std::string>() == "traced"
                               ? profile
                               : complete_compute_profile(profile, at.at("compute_profile"));
  out["comm"] = complete_comm(job.value("comm", json::object()), at.at("comm"));
  return out;
}

nlohmann::ordered_json run_replay_job(const PreparedJob& job) {
  Simulator simulator(job.topology);
  const ReplaySetup& r = *job.replay;
  const auto result = sim::replay::replay(*r.trace, simulator, r.options);
  nlohmann::ordered_json out;
  out["kind"] = "replay";
  out["cluster"] = job.label_cluster;
  out["config"] = job.label_config;
  out["iteration_s"] = result.replayed_s;
  out["traced_s"] = result.traced_s;
  // The critical rank's iteration = GPU compute + exposed communication + GPU idle (unions of
  // op intervals, sim/replay/replay.hpp), so the parts add up like the training breakdown's.
  out["breakdown_s"] = {{"compute", result.replayed.compute_s},
                        {"exposed_comm", result.replayed.exposed_comm_s},
                        {"idle", result.replayed.idle_s}};
  // The job's own notes (the cluster as the trace ran it) before the replay's assumptions.
  std::vector<std::string> notes = job.notes;
  notes.insert(notes.end(), result.assumptions.begin(), result.assumptions.end());
  out["notes"] = notes;
  out["replay"] = sim::replay::to_json(*r.trace, result, job.label_cluster);
  return out;
}

}  // namespace

bool is_replay_job(const json& job) {
  return job.is_object() && job.contains("replay");
}

json normalize_job(const json& job, const JsonPlace& at, const std::string& base_dir) {
  if (!job.is_object())
    fail(at,
         fmt::format("expected a job object ({}), got {}", fmt::join(job_fields(), ", "), type_name(job)));
  for (const auto& [key, unused] : job.items()) {
    const auto& f = job_fields();
    if (std::find(f.begin(), f.end(), key) == f.end()) {
      fail(at.at(key), fmt::format("unknown field; expected one of {}", fmt::join(f, ", ")));
    }
  }
  if (is_replay_job(job)) return normalize_replay_job(job, at, base_dir);
  for (const char* required : {"cluster", "model", "parallel"}) {
    if (!job.contains(required)) fail(at, fmt::format("missing required field '{}'", required));
  }
  json out = json::object();
  out["cluster"] = resolve_cluster(job["cluster"], at.at("cluster"));
  // Parsed here (cheap) so that a bad cluster value is reported at the place it was written.
  (void)topologies::parse_cluster(out["cluster"], at.at("cluster").str());
  if (job.contains("nodes")) {
    const json& n = job["nodes"];
    if (!n.is_number_integer() || n.get<long long>() < 1 || n.get<long long>() > (1 << 20)) {
      fail(at.at("nodes"), fmt::format("expected a node count 1..{}, got {}", 1 << 20, n.dump()));
    }
    out["nodes"] = n;
  } else {
    const json& cluster = out["cluster"];
    if (!cluster.contains("nodes") || !cluster["nodes"].is_number_integer()) {
      fail(at.at("cluster"), "has no integer 'nodes' and the job gives no 'nodes'");
    }
    out["nodes"] = cluster["nodes"];
  }
  out["model"] = resolve_model_json(job["model"], at.at("model"));
  const workloads::ModelSpec model = workloads::parse_model(out["model"], at.at("model").str());
  out["parallel"] = complete_parallel(job["parallel"], model, at.at("parallel"));
  out["compute_profile"] =
      complete_compute_profile(job.value("compute_profile", json("auto")), at.at("compute_profile"));
  out["comm"] = complete_comm(job.value("comm", json::object()), at.at("comm"));
  return out;
}

json apply_overrides(const json& base, const json& overrides, const JsonPlace& at,
                     const std::string& base_dir) {
  if (!overrides.is_object())
    fail(at, fmt::format("expected an object shaped like a job, got {}", type_name(overrides)));
  json out = base;
  for (const auto& [key, val_as_written] : overrides.items()) {
    const JsonPlace here = at.at(key);
    const auto& f = job_fields();
    if (std::find(f.begin(), f.end(), key) == f.end()) {
      fail(here, fmt::format("unknown field; a variant overrides one of {}", fmt::join(f, ", ")));
    }
    if (!base.contains(key)) {
      fail(here,
           is_replay_job(base)
               ? "the baseline is a replay job, which has no model or parallelism (the trace is the workload)"
               : "the baseline is a training job; a variant cannot turn it into a replay (write a scenario "
                 "whose baseline is a replay job, docs/scenario-format.md)");
    }
    if (val_as_written.is_null()) fail(here, "null is not a value; give the new value of the field");
    json val = val_as_written;
    // A trace path written in a variant is relative to the scenario file like the baseline's
    // (which normalize_job already resolved).
    if (key == "replay" && val.is_object() && val.contains("trace") && val["trace"].is_string())
      val["trace"] = resolve_trace_path(val["trace"].get<std::string>(), base_dir);
    json& target = out[key];
    if (key == "comm" && val.is_object()) {
      // NCCL knobs that training does not model get their own message, not "no such field".
      json probe = target;
      for (const auto& [k, v] : val.items()) probe[k] = v;
      (void)complete_comm(probe, here);
    }
    if (val.is_object() && target.is_object() && key != "compute_profile")
      merge_into(target, val, here, key);
    else
      target = val;  // a name (another preset, model, profile), a number, or a whole object
    // The job's own 'nodes' (which the baseline always carries once normalized) decides the node
    // count, so a variant's cluster.nodes would change nothing: it sets the job's count instead,
    // unless the variant also gives the job's 'nodes', which then must agree.
    if (key == "cluster" && val.is_object() && val.contains("nodes")) {
      if (overrides.contains("nodes") && overrides["nodes"] != val["nodes"])
        fail(here.at("nodes"),
             fmt::format("{} disagrees with the variant's 'nodes' {}; give the node count once",
                         val["nodes"].dump(), overrides["nodes"].dump()));
      out["nodes"] = val["nodes"];
    }
  }
  return normalize_job(out, at);
}

PreparedJob prepare_job(const json& job, const JsonPlace& at) {
  PreparedJob p;
  const std::string cluster_origin = at.at("cluster").str();
  p.cluster = topologies::parse_cluster(job.at("cluster"), cluster_origin);
  if (is_replay_job(job)) {
    std::optional<workloads::ComputeProfile> target;
    const json& cp = job.at("compute_profile");
    if (!(cp.is_string() && cp.get<std::string>() == "traced"))
      target = pick_compute_profile(cp, p.cluster, at.at("compute_profile"));
    p.replay = prepare_replay(job, at, target);
    if (const std::string rule = sim::replay::apply_traced_mnnvl(*p.replay->trace, p.cluster); !rule.empty())
      p.notes.push_back(rule);
    const int world = replay_world(*p.replay);
    const json& n = job.at("nodes");
    const int gpn = std::max(p.cluster.node.gpus, 1);
    // auto: enough for the world, and one node per host the trace names (replay --nodes' default).
    const int replay_nodes =
        n.is_number_integer()
            ? n.get<int>()
            : std::max({1, (world + gpn - 1) / gpn,
                        sim::replay::place_ranks(*p.replay->trace, p.replay->options.scale_dp, gpn).nodes});
    try {
      p.topology = topologies::build_topology(p.cluster, replay_nodes);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} with nodes = {}: {}", cluster_origin, replay_nodes, e.what()));
    }
    if (p.topology.gpu_count() < world) {
      fail(at.at("nodes"),
           fmt::format("{} nodes of {} have {} GPUs but the replay needs {} (traced world {} x scale_dp {})",
                       replay_nodes, p.cluster.name, p.topology.gpu_count(), world,
                       std::max(p.replay->trace->graph.world, 1), p.replay->options.scale_dp));
    }
    p.label_cluster = fmt::format("{} x {} nodes", p.cluster.name, p.topology.nodes);
    p.label_config = p.replay->label_config;
    return p;
  }
  const int nodes = job.at("nodes").get<int>();
  try {
    p.topology = topologies::build_topology(p.cluster, nodes);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} with nodes = {}: {}", cluster_origin, nodes, e.what()));
  }
  const std::string model_where = at.at("model").str();
  workloads::ModelSpec model = workloads::parse_model(job.at("model"), model_where);
  const std::string par_where = at.at("parallel").str();
  workloads::ParallelConfig par = workloads::parse_parallel(job.at("parallel"), par_where);
  // Megatron pads the vocabulary to a multiple of 128 x TP, as `commstack train` does.
  if (const std::int64_t padded = workloads::megatron_padded_vocab(model.vocab, par.tp);
      padded != model.vocab) {
    p.notes.push_back(
        fmt::format("vocabulary of {} padded from {} to {} (a multiple of 128 x tp, as Megatron does)",
                    model.name, model.vocab, padded));
    model.vocab = padded;
  }
  workloads::validate(model, par, p.topology.gpu_count(),
                      fmt::format("{} (on {} GPUs of {} x {} nodes)", par_where, p.topology.gpu_count(),
                                  p.cluster.name, nodes));
  p.setup.model = model;
  p.setup.par = par;
  p.setup.compute = pick_compute_profile(job.at("compute_profile"), p.cluster, at.at("compute_profile"));
  if (par.precision == workloads::Precision::fp8 && p.setup.compute.peak_fp8_flops <= 0) {
    fail(at.at("parallel").at("precision"),
         fmt::format("fp8, but compute profile {} has no FP8 peak", p.setup.compute.name));
  }
  // The job's place first, then the memory sentence (check_fits names the GPU inside it).
  try {
    workloads::check_fits(
        workloads::estimate_memory(model, par), p.setup.compute.memory_bytes,
        fmt::format("{} (compute profile {})", p.cluster.node.gpu_model, p.setup.compute.name));
  } catch (const InputError& e) {
    fail(at, e.what());
  }
  const json& comm = job.at("comm");
  if (comm.at("channels").is_number_integer()) p.setup.comm.channels = comm.at("channels").get<int>();
  p.setup.comm.fidelity = fidelity_from_string(comm.at("fidelity").get<std::string>());
  p.label_cluster = fmt::format("{} x {} nodes", p.cluster.name, p.topology.nodes);
  p.label_config = fmt::format(
      "tp {} pp {} dp {} cp {} ep {} zero {} sp {} vs {} mb {} gbs {} seq {} {} recompute {}", par.tp, par.pp,
      par.dp, par.cp, par.ep, par.zero, par.sequence_parallel ? "on" : "off", par.virtual_stages,
      par.micro_batch, par.global_batch, par.seq, to_string(par.precision), to_string(par.recompute));
  p.label_config += workloads::describe_expert_tp(model, par) +
                    workloads::describe_token_dispatcher(model, par) + workloads::describe_mtp(model) +
                    workloads::describe_uneven_split(model, par);
  return p;
}

nlohmann::ordered_json run_job(const PreparedJob& job) {
  if (job.replay) return run_replay_job(job);
  Simulator simulator(job.topology);
  const auto result = sim::train::simulate_training(simulator, job.setup);
  sim::train::RunLabel label;
  label.cluster = job.label_cluster;
  label.model = job.setup.model.name;
  label.compute = job.setup.compute.name;
  label.config = job.label_config;
  nlohmann::ordered_json out = sim::train::to_json(result, label);
  out["notes"] = job.notes;
  return out;
}

}  // namespace commstack::sim::scenario
