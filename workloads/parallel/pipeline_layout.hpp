#pragma once
// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout, PipelineParallelLayerLayout):
// a string that lists what each virtual pipeline stage builds, stages separated by '|', in virtual-
// stage order (stage i is pipeline rank i % pp, model chunk i / pp). 'E' is the embedding, 't' one
// transformer layer, 'L' the loss (output layer), 'm' a multi-token-prediction layer; "x*n" repeats
// a character and "(...)*n" a group, commas are cosmetic. "Et*3|(tt|)*29,m|L" is Megatron-Bridge's
// DeepSeek-V3 layout (its MTP on a stage of its own); "Et*2|(tt|)*29,t|mL" the same shape with the
// MTP layer in the loss stage, the placement commstack models.
#include <cstdint>
#include <string>
#include <vector>

namespace commstack::workloads {

struct PipelineLayout {
  std::string text;                            // as given
  std::vector<std::int64_t> layers_per_stage;  // transformer layers ('t') of each virtual stage
  std::int64_t mtp_layers = 0;                 // 'm': all in the last stage, after its 't's
};

// Expands and checks the string the way Megatron parses it, and what commstack needs on top:
// only E, t, m, L, the embedding opening the first stage and the loss closing the last, each once,
// and the MTP layers in the last stage (Megatron's standalone MTP stage is refused). Throws InputError with
// `what` naming the input.
PipelineLayout parse_pipeline_layout(const std::string& text, const std::string& what);

}  // namespace commstack::workloads
