#pragma once
// The model zoo JSON files, compiled in by CMake (cmake/embed_json_files.cmake generates the
// definition) so the binary works from any directory.
#include <string_view>
#include <utility>
#include <vector>

namespace commstack::workloads {

// (file stem, file contents), sorted by stem.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_files();

}  // namespace commstack::workloads
