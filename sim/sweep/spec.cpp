#include "sim/sweep/spec.hpp"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"

namespace commstack::sim::sweep {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// RFC 6901 escaping of one reference token, for messages that quote a sweep-file key as a pointer.
std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

ojson read_json_file(const std::filesystem::path& file, const std::string& what) {
  const std::string text = read_input_file(file.string(), what);
  try {
    return parse_input_json<ojson>(text, file.string());
  } catch (const ojson::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

// One axis (path -> non-empty array of values), checked against the base job.
// unique: a grid axis must not repeat a value; a zip axis may (its steps, the tuples, must differ).
Axis read_axis(const std::string& path, const ojson& values, const json& base, const std::string& where,
               const std::string& base_origin, bool unique) {
  Axis axis;
  axis.path = path;
  axis.pointer = to_pointer(path, where);
  if (!values.is_array() || values.empty()) {
    throw InputError(fmt::format("{}: expected a non-empty array of values, got {}", where,
                                 values.is_array() ? "an empty array" : values.type_name()));
  }
  if (!base.contains(axis.pointer)) {
    throw InputError(fmt::format("{}: '{}' ({}) is not a field of the base job ({}); only fields present in the base "
                                 "can be swept (add the field with its default value to the base job)",
                                 where, path, axis.pointer.to_string(), base_origin));
  }
  std::set<std::string> seen;
  for (const auto& v : values) {
    const json value(v);  // the job is unordered JSON; values compare by content
    // 2 and 2.0 are one value: integer fields take a whole float as that integer.
    const bool whole = value.is_number_float() && std::isfinite(value.get<double>()) &&
                       std::floor(value.get<double>()) == value.get<double>() &&
                       std::fabs(value.get<double>()) < 9e15;
    const std::string key =
        whole ? std::to_string(static_cast<long long>(value.get<double>())) : value.dump();
    if (unique && !seen.insert(key).second) {
      throw InputError(fmt::format("{}: the value {} appears twice (each point must be distinct)", where, value.dump()));
    }
    axis.values.push_back(value);
  }
  return axis;
}

// The axes read so far: field pointer -> the JSON path of its axis in the sweep file ("/grid/comm").
using SweptFields = std::map<std::string, std::string>;

// An axis must not set a field that another axis sets: neither the same field nor, since an axis
// replaces everything below its field, a field inside the other's or one that contains it.
void check_unique_path(SweptFields& paths, const Axis& axis, const std::string& where, const std::string& axis_at) {
  const std::string field = axis.pointer.to_string();
  if (paths.contains(field)) {
    throw InputError(fmt::format("{}: the field {} is already swept by another axis", where, field));
  }
  // Pointer tokens have '/' escaped, so "/a" is an ancestor of "/a/b" exactly when "/a/" starts it.
  for (const auto& [other, other_at] : paths) {
    const bool inside = field.starts_with(other + "/");
    if (inside || other.starts_with(field + "/")) {
      throw InputError(fmt::format("{}: the field {} {} {}, which the axis {} already sweeps (the same field in two "
                                   "axes: an axis replaces the whole value of its field); sweep either the section or "
                                   "its fields",
                                   where, field, inside ? "is inside" : "contains", other, other_at));
    }
  }
  paths.emplace(field, axis_at);
}

// Without a resolver: an inline object, or a JSON file relative to the sweep file.
ResolvedBase plain_base(const ojson& base, const std::string& origin, const std::filesystem::path& base_dir) {
  if (base.is_string()) {
    std::filesystem::path file = base.get<std::string>();
    if (file.is_relative()) file = base_dir / file;
    return {json(read_json_file(file, "base job referenced by " + origin + " /base")), file.string()};
  }
  if (base.is_object()) return {json(base), origin + " /base"};
  throw InputError(fmt::format("{}: /base: expected an object (the job) or a string (a job file), got {}", origin,
                               base.type_name()));
}

}  // namespace

json::json_pointer to_pointer(const std::string& path, const std::string& where) {
  if (path.empty()) throw InputError(fmt::format("{}: an empty field path; expected e.g. \"parallel.tp\"", where));
  if (path.front() == '/') {
    try {
      return json::json_pointer(path);
    } catch (const json::parse_error& e) {
      throw InputError(fmt::format("{}: '{}' is not a valid JSON pointer ({})", where, path, e.what()));
    }
  }
  std::string pointer;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string token = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (token.empty()) {
      throw InputError(fmt::format("{}: '{}' has an empty segment; expected dot-separated field names like "
                                   "\"parallel.tp\" (or a JSON pointer \"/parallel/tp\" for names with dots)",
                                   where, path));
    }
    pointer += "/" + escape_token(token);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return json::json_pointer(pointer);
}

SweepSpec parse_sweep(const ojson& doc, const std::string& origin, const std::filesystem::path& base_dir,
                      const BaseResolver& resolve) {
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", origin, doc.type_name()));
  static const std::set<std::string> known = {"description", "base", "grid", "zip"};
  for (const auto& [key, value] : doc.items()) {
    if (!known.contains(key)) {
      throw InputError(fmt::format("{}: /{}: unknown field; expected description, base, grid, zip", origin,
                                   escape_token(key)));
    }
  }
  if (doc.contains("description") && !doc["description"].is_string()) {
    throw InputError(fmt::format("{}: /description: expected a string", origin));
  }
  SweepSpec spec;
  spec.origin = origin;
  if (!doc.contains("base")) {
    throw InputError(fmt::format("{}: /base: missing; expected the base job (an object) or the path of a job file",
                                 origin));
  }
  const ResolvedBase resolved = resolve ? resolve(doc["base"], origin + ": /base", base_dir)
                                        : plain_base(doc["base"], origin, base_dir);
  spec.base = resolved.job;
  spec.base_origin = resolved.origin;
  if (!spec.base.is_object()) {
    throw InputError(fmt::format("{}: expected a JSON object (the base job), got {}", spec.base_origin,
                                 spec.base.type_name()));
  }

  SweptFields paths;
  if (doc.contains("grid")) {
    const auto& grid = doc["grid"];
    if (!grid.is_object()) throw InputError(fmt::format("{}: /grid: expected an object of field: [values]", origin));
    for (const auto& [path, values] : grid.items()) {
      const std::string axis_at = "/grid/" + escape_token(path);
      const std::string where = fmt::format("{}: {}", origin, axis_at);
      AxisGroup group;
      group.axes.push_back(read_axis(path, values, spec.base, where, spec.base_origin, true));
      check_unique_path(paths, group.axes.back(), where, axis_at);
      spec.groups.push_back(std::move(group));
    }
  }
  if (doc.contains("zip")) {
    const auto& zip = doc["zip"];
    if (!zip.is_array()) {
      throw InputError(fmt::format("{}: /zip: expected an array of groups, each an object of field: [values] "
                                   "with equal lengths",
                                   origin));
    }
    for (std::size_t g = 0; g < zip.size(); ++g) {
      if (!zip[g].is_object() || zip[g].empty()) {
        throw InputError(fmt::format("{}: /zip/{}: expected a non-empty object of field: [values]", origin, g));
      }
      AxisGroup group;
      for (const auto& [path, values] : zip[g].items()) {
        const std::string axis_at = fmt::format("/zip/{}/{}", g, escape_token(path));
        const std::string where = fmt::format("{}: {}", origin, axis_at);
        group.axes.push_back(read_axis(path, values, spec.base, where, spec.base_origin, false));
        check_unique_path(paths, group.axes.back(), where, axis_at);
        if (group.axes.back().values.size() != group.axes.front().values.size()) {
          throw InputError(fmt::format("{}: has {} values but '{}' in the same zip group has {}; the axes of a zip "
                                       "group vary together and need equal lengths",
                                       where, group.axes.back().values.size(), group.axes.front().path,
                                       group.axes.front().values.size()));
        }
      }
      std::set<std::string> steps;
      for (std::size_t k = 0; k < group.size(); ++k) {
        json step = json::array();
        for (const auto& a : group.axes) step.push_back(a.values[k]);
        if (!steps.insert(step.dump()).second) {
          throw InputError(fmt::format("{}: /zip/{}: step {} repeats the values {} of an earlier step (each point must "
                                       "be distinct)",
                                       origin, g, k, step.dump()));
        }
      }
      spec.groups.push_back(std::move(group));
    }
  }
  if (spec.groups.empty()) {
    throw InputError(fmt::format("{}: /grid: no axes; expected at least one field: [values] in grid or zip", origin));
  }
  return spec;
}

SweepSpec load_sweep(const std::filesystem::path& file, const BaseResolver& resolve) {
  return parse_sweep(read_json_file(file, "sweep file"), file.string(), file.parent_path(), resolve);
}

std::vector<Point> expand(const SweepSpec& spec) {
  std::size_t total = 1;
  for (const auto& g : spec.groups) {
    if (total > (std::size_t{1} << 24) / g.size()) {
      throw InputError(fmt::format("{}: the grid has more than {} points; split the sweep", spec.origin, 1 << 24));
    }
    total *= g.size();
  }
  std::vector<Point> points;
  points.reserve(total);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < total; ++i) {
    Point p;
    p.index = i;
    p.overrides = ojson::object();
    // Mixed-radix digits of i, the last group least significant (like nested loops in file order).
    std::vector<std::size_t> digit(spec.groups.size());
    std::size_t rest = i;
    for (std::size_t g = spec.groups.size(); g-- > 0;) {
      digit[g] = rest % spec.groups[g].size();
      rest /= spec.groups[g].size();
    }
    for (std::size_t g = 0; g < spec.groups.size(); ++g) {
      for (const auto& axis : spec.groups[g].axes) p.overrides[axis.path] = ojson(axis.values[digit[g]]);
    }
    // Keyed by pointer with sorted keys: the id does not depend on axis order or path spelling.
    json canonical = json::object();
    for (const auto& g : spec.groups) {
      for (const auto& axis : g.axes) canonical[axis.pointer.to_string()] = json(p.overrides[axis.path]);
    }
    p.id = stable_hash(canonical.dump());
    if (!ids.insert(p.id).second) {
      throw InputError(fmt::format("{}: point {} has the same id as an earlier point (a hash collision); change the "
                                   "grid slightly",
                                   spec.origin, i));
    }
    points.push_back(std::move(p));
  }
  return points;
}

json apply_point(const SweepSpec& spec, const Point& point) {
  json job = spec.base;
  for (const auto& g : spec.groups) {
    for (const auto& axis : g.axes) job[axis.pointer] = json(point.overrides[axis.path]);
  }
  return job;
}

std::string stable_hash(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;  // FNV prime
  }
  return fmt::format("{:016x}", h);
}

std::string base_fingerprint(const SweepSpec& spec) { return stable_hash(spec.base.dump()); }

}  // namespace commstack::sim::sweep
