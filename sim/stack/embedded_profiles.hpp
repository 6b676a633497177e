#pragma once
// The shipped calibration profiles (calibration/profiles/*.json), compiled in by CMake
// (cmake/embed_json_files.cmake generates the definition) so that a binary built or installed
// anywhere predicts with them; sim/stack/profile.cpp looks on disk first.
#include <string_view>
#include <utility>
#include <vector>

namespace commstack::sim::stack {

// (file stem, file contents), sorted by stem: ("a100", "{...}"), ...
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_profile_files();

}  // namespace commstack::sim::stack
