#pragma once
// An nccl-tests (or OSU, bench, published-table) run loaded together with the cluster it ran on:
// the run spec users write (`FILE@nodes=2,gpus_per_node=8,...`), the file read and checked, and the
// algorithm / protocol / channels each size is predicted with. docs/calibration.md.
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
  std::vector<std::string> notes;  // points the reader dropped and why (published tables' rounding rule)
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
// the modelled selection when it differs from the logged one. A logged pair the modelled
// communicator cannot run (CollNet without --collnet on, NVLS where the cluster has none) gives the
// modelled selection, and `unavailable` gets the logged pair ("CollNetChain/Simple").
sim::stack::Predictor::Choice choose_for_run(
    const MeasuredRun& run, const sim::stack::Predictor& predictor, std::uint64_t bytes,
    std::map<std::pair<int, int>, std::unique_ptr<sim::stack::Predictor>>& forced,
    std::optional<std::string>* model = nullptr, std::optional<std::string>* unavailable = nullptr);

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

}  // namespace commstack::fit
