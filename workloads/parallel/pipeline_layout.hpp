#pragma once
// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout, PipelineParallelLayerLayout):
// a string that lists what each virtual pipeline stage builds, stages separated by '|', in virtual-
// stage order (stage i is pipeline rank i % pp, model chunk i / pp). 'E' is the embedding, 't' one
// transformer layer, 'L' the loss (output layer), 'm' a multi-token-prediction layer; "x*n" repeats
// a character and "(...)*n" a group, commas are cosmetic. "Et*3|(tt|)*29,m|L" is DeepSeek-V3's.
#include <cstdint>
#include <string>
#include <vector>

namespace commstack::workloads {

struct PipelineLayout {
  std::string text;                            // as given
  std::vector<std::int64_t> layers_per_stage;  // transformer layers ('t') of each virtual stage
};

// Expands and checks the string the way Megatron parses it, and what commstack needs on top:
// only E, t, L (commstack's models have no MTP layers), the embedding opening the first stage and
// the loss closing the last, each once. Throws InputError with `what` naming the input.
PipelineLayout parse_pipeline_layout(const std::string& text, const std::string& what);

}  // namespace commstack::workloads
