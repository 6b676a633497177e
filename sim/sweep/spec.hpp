#pragma once
// A sweep file (docs/sweep-format.md): a base job plus a grid of overrides. The points are the
// Cartesian product of the grid axes (and of each zip group, whose axes vary together), in a
// deterministic order, each with a stable id derived from its overrides alone.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace commstack::sim::sweep {

// One swept field: where it lives in the job and the values it takes.
struct Axis {
  std::string path;              // as written in the sweep file ("parallel.tp" or "/parallel/tp")
  nlohmann::json::json_pointer pointer;  // the same place as an RFC 6901 pointer into the job
  std::vector<nlohmann::json> values;
};

// A set of axes that vary together (equal lengths): the k-th values of all of them form one step.
struct AxisGroup {
  std::vector<Axis> axes;
  std::size_t size() const { return axes.front().values.size(); }
};

// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct SweepSpec {
  std::string origin;             // the sweep file, for messages
  std::string base_origin;        // where the base job came from (the sweep file or the referenced file)
  nlohmann::json base;            // the base job (as resolved), before any override
  std::vector<AxisGroup> groups;  // grid axes (one axis each) first, then zip groups, in file order
};

// One grid point: the overrides of every axis, in axis order.
// The implicit moves are noexcept; clang-tidy 14 follows nlohmann::json's asserts into them.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct Point {
  std::size_t index = 0;  // position in the deterministic order (first axis varies slowest)
  std::string id;         // 16 hex digits, a hash of the overrides only (stable across grid edits)
  nlohmann::ordered_json overrides;  // {"parallel.tp": 4, ...}, keys as written in the sweep file
};

// The base job as written (an object, or a string naming a job) -> the job that grid paths are
// checked against and points patch, plus where it came from. The default takes an object as it
// is and a string as the path of a JSON file (relative to the sweep file's directory).
struct ResolvedBase {
  nlohmann::json job;
  std::string origin;
};
using BaseResolver = std::function<ResolvedBase(const nlohmann::ordered_json& base, const std::string& where,
                                                const std::filesystem::path& base_dir)>;

// Reads and checks a sweep file. Every grid path must name a field present in the base job
// (strict, so a typo fails before anything runs); errors name the file and the JSON path.
SweepSpec load_sweep(const std::filesystem::path& file, const BaseResolver& resolve = {});
// The same from parsed JSON (origin names it in messages; base_dir resolves a base file reference).
SweepSpec parse_sweep(const nlohmann::ordered_json& doc, const std::string& origin, const std::filesystem::path& base_dir,
                      const BaseResolver& resolve = {});

// "parallel.tp" -> /parallel/tp; "/a/b" is taken as an RFC 6901 pointer. Numeric segments index arrays.
nlohmann::json::json_pointer to_pointer(const std::string& path, const std::string& where);

// All points in order: the product of the groups, the last group varying fastest.
std::vector<Point> expand(const SweepSpec& spec);

// The base job with one point's overrides applied.
nlohmann::json apply_point(const SweepSpec& spec, const Point& point);

// 64-bit FNV-1a of some bytes as 16 lowercase hex digits (stable across platforms and runs).
std::string stable_hash(const std::string& bytes);
// A fingerprint of the base job: results computed from another base are not reused.
std::string base_fingerprint(const SweepSpec& spec);

}  // namespace commstack::sim::sweep
