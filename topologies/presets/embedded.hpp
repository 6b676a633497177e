#pragma once
// The preset JSON files, compiled into the library (see embed.cmake), sorted by name.
#include <string_view>
#include <vector>

namespace commstack::topologies {

struct EmbeddedPreset {
  std::string_view name;  // file name without .json
  std::string_view json;
};

const std::vector<EmbeddedPreset>& embedded_presets();

}  // namespace commstack::topologies
