#pragma once
// Reports of a simulated training iteration: a text summary, a JSON document (ordered keys, so
// the output is byte-for-byte deterministic) and a Perfetto / Chrome trace of the timeline.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/train/train.hpp"

namespace commstack::sim::train {

// What the report says the run was (names only; the numbers come from the result).
struct RunLabel {
  std::string cluster;   // e.g. "dgx-a100 x 4 nodes"
  std::string model;     // e.g. "gpt3-175b"
  std::string compute;   // compute profile name
  std::string config;    // e.g. "tp 8 pp 8 dp 2 cp 1 ep 1 zero 0 mb 1 gbs 64 seq 2048 bf16 recompute full"
};

std::string format_text(const TrainResult& r, const RunLabel& label);
nlohmann::ordered_json to_json(const TrainResult& r, const RunLabel& label);
// Chrome trace JSON (Perfetto opens it): one process per simulated rank, one thread per stream,
// one complete event ("X") per op, times in microseconds.
nlohmann::ordered_json perfetto_trace(const TrainResult& r, const RunLabel& label);

}  // namespace commstack::sim::train
