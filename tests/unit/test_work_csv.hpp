#pragma once
// Reads the published tables in shared data (comma-separated, '#' comment lines, one header row).
// Test helper only; cells with embedded commas are not used by the workloads tests.
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace work_test {

using Row = std::map<std::string, std::string>;

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

// Rows of the first table of `path` (stops at the next comment line after data).
inline std::vector<Row> read_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#' || line[0] == '"') {
      if (!rows.empty()) break;
      continue;
    }
    auto cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    Row r;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

// Copies of shared/data/training/*.csv (with their SOURCE headers) live in workloads/reference/.
inline std::string data_dir() { return std::string(COMMSTACK_SOURCE_DIR) + "/workloads/reference/"; }

}  // namespace work_test
