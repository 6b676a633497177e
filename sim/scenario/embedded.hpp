#pragma once
// The built-in scenario files (sim/scenario/scenarios/*.json), compiled in by
// sim/scenario/embed.cmake so the binary finds them from any directory.
#include <string_view>
#include <utility>
#include <vector>

namespace commstack::sim::scenario {

// (file stem, file contents), sorted by stem.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_scenario_files();

}  // namespace commstack::sim::scenario
