#pragma once
// One predicted nccl-tests sweep and its renderings: the nccl-tests text table (same header
// lines and columns as nccl-tests' *_perf binaries), CSV and JSON.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/algorithms/collective.hpp"
#include "sim/stack/predict.hpp"

namespace commstack::sim {

// nccl-tests' size and count columns for a requested size. nccl-tests works in whole elements:
// allgather / reducescatter / alltoall take count / n elements per rank (per peer), rounded down
// to a multiple of 16 bytes (its GetCollByteCount: (count/nranks) & -(16/eltSize)), so the size
// is a multiple of n x 16 bytes (0 below it).
struct SweepSize {
  std::uint64_t bytes = 0;  // the size column (what the collective moves, nccl-tests convention)
  std::uint64_t count =
      0;  // the count column (elements; per rank for allgather / reducescatter, per peer for alltoall)
};
SweepSize sweep_size(CollectiveOp op, std::uint64_t requested_bytes, int nranks, int type_size);

// min, min*f, min*f^2, ... while <= max (nccl-tests -b/-e/-f). A zero minimum is reported once
// and the sweep continues from 1 byte.
std::vector<std::uint64_t> size_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor);

struct SweepPoint {
  SweepSize size;
  double time_s = 0;
  double algbw_GBps = 0;  // size / time / 1e9
  double busbw_GBps = 0;  // algbw * bus_bandwidth_factor
  Fidelity fidelity = Fidelity::chunk;
  long long flows = 0;
  int chunks = 1;
  // Stack-model points (`stack_model`): NCCL's algorithm, protocol and channels for the call and the
  // layers of its time (empty / 0 for a zero-byte call, which NCCL returns at once, and for a
  // SimGrid fabric simulation, whose fidelity, flows and chunks are the ones above).
  bool stack_model = false;
  std::string algorithm;
  std::string protocol;
  int nccl_channels = 0;
  stack::Breakdown breakdown;
};

struct SweepInfo {
  CollectiveOp op = CollectiveOp::allreduce;
  std::string cluster;      // topology name
  int nranks = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int channels = 1;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  std::uint64_t step_factor = 2;
  std::string type = "float";
  int type_size = 4;
  int root = 0;
  std::string model;  // what predicted the sweep, for the header ("calibrated stack model, profile ...")
  // nccl-tests' -g (the header's nGpus) and -G (its "graph:" count) the prediction models, which
  // validate reads back from the header.
  int gpus_per_thread = 1;
  int graph = 0;
  bool breakdown = false;  // CSV and JSON: each point's layers (--breakdown; docs/cli.md)
};

// Fills algbw/busbw from time (0 when time is 0).
void set_bandwidths(SweepPoint& p, CollectiveOp op, int nranks);

std::string format_nccl_tests(const SweepInfo& info, const std::vector<SweepPoint>& points);
std::string format_csv(const SweepInfo& info, const std::vector<SweepPoint>& points);
std::string format_json(const SweepInfo& info, const std::vector<SweepPoint>& points);

}  // namespace commstack::sim
