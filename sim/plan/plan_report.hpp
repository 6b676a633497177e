#pragma once
// Outputs of `commstack plan`: a ranked table for people, CSV and JSON for tools. All three are
// byte-identical across runs (no wall-clock numbers; those go to stderr from the CLI).
#include <string>

#include <nlohmann/json.hpp>

#include "sim/plan/planner.hpp"

namespace commstack::sim::plan {

struct PlanLabel {
  std::string cluster;  // "dgx-a100 x 192 nodes (1536 GPUs)"
  std::string model;
  std::string compute;  // compute profile name
  std::string batch;    // "global batch 2304, seq 2048, bf16"
};

// "N enumerated, ... simulated, ... pruned by bound" (one line, no newline).
std::string summary_line(const PlanResult& r);
std::string format_text(const PlanResult& r, const PlanLabel& label);
std::string format_csv(const PlanResult& r);
nlohmann::ordered_json to_json(const PlanResult& r, const PlanLabel& label);

}  // namespace commstack::sim::plan
