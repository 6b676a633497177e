#include "workloads/json_fields.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"

namespace commstack::workloads {

using nlohmann::json;

JsonFields::JsonFields(const json& obj, std::string where, std::string path)
    : obj_(obj), where_(std::move(where)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    throw InputError(fmt::format("{}: {}: expected a JSON object, got {}", where_, path_, obj_.type_name()));
  }
}

bool JsonFields::has(const std::string& key) const { return obj_.contains(key); }

void JsonFields::fail(const std::string& key, const std::string& message) const {
  throw InputError(fmt::format("{}: {}: {}", where_, path_of(key), message));
}

const json& JsonFields::get(const std::string& key) {
  seen_.insert(key);
  auto it = obj_.find(key);
  if (it == obj_.end()) fail(key, "missing required field");
  return *it;
}

std::int64_t JsonFields::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  const json& v = get(key);
  // JSON numbers such as 8.0 are accepted only when integral; true/false are not numbers.
  std::int64_t out = 0;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
      fail(key, fmt::format("{} is out of range; expected an integer in [{}, {}]", v.dump(), min, max));
    }
    out = v.get<std::int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>() &&
             std::fabs(v.get<double>()) < 9e15) {
    out = static_cast<std::int64_t>(v.get<double>());
  } else {
    fail(key, fmt::format("expected an integer in [{}, {}], got {}", min, max, v.dump()));
  }
  if (out < min || out > max) fail(key, fmt::format("{} is out of range; expected an integer in [{}, {}]", out, min, max));
  return out;
}

double JsonFields::number(const std::string& key, double min, double max) {
  const json& v = get(key);
  if (!v.is_number()) fail(key, fmt::format("expected a number in [{}, {}], got {}", min, max, v.dump()));
  double out = v.get<double>();
  if (!std::isfinite(out) || out < min || out > max) {
    fail(key, fmt::format("{} is out of range; expected a number in [{}, {}]", out, min, max));
  }
  return out;
}

std::string JsonFields::string(const std::string& key) {
  const json& v = get(key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", v.dump()));
  return v.get<std::string>();
}

bool JsonFields::boolean(const std::string& key) {
  const json& v = get(key);
  if (!v.is_boolean()) fail(key, fmt::format("expected true or false, got {}", v.dump()));
  return v.get<bool>();
}

std::string JsonFields::choice(const std::string& key, const std::vector<std::string>& allowed) {
  std::string s = string(key);
  for (const auto& a : allowed) {
    if (a == s) return s;
  }
  fail(key, fmt::format("'{}' is not one of: {}", s, fmt::join(allowed, ", ")));
}

std::int64_t JsonFields::integer_or(const std::string& key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) {
  seen_.insert(key);
  return has(key) ? integer(key, min, max) : fallback;
}
std::optional<std::int64_t> JsonFields::integer_or_unset(const std::string& key, std::int64_t min,
                                                         std::int64_t max) {
  seen_.insert(key);
  if (!has(key) || obj_.at(key).is_null()) return std::nullopt;
  return integer(key, min, max);
}
std::optional<std::string> JsonFields::string_or_unset(const std::string& key) {
  seen_.insert(key);
  if (!has(key) || obj_.at(key).is_null()) return std::nullopt;
  return string(key);
}
double JsonFields::number_or(const std::string& key, double fallback, double min, double max) {
  seen_.insert(key);
  return has(key) ? number(key, min, max) : fallback;
}
std::string JsonFields::string_or(const std::string& key, const std::string& fallback) {
  seen_.insert(key);
  return has(key) ? string(key) : fallback;
}
bool JsonFields::boolean_or(const std::string& key, bool fallback) {
  seen_.insert(key);
  return has(key) ? boolean(key) : fallback;
}
std::string JsonFields::choice_or(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& allowed) {
  seen_.insert(key);
  return has(key) ? choice(key, allowed) : fallback;
}
const json* JsonFields::object_or_null(const std::string& key) {
  seen_.insert(key);
  auto it = obj_.find(key);
  if (it == obj_.end()) return nullptr;
  if (!it->is_object()) fail(key, fmt::format("expected a JSON object, got {}", it->type_name()));
  return &*it;
}

void JsonFields::reject_unknown() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!seen_.contains(it.key())) fail(it.key(), "unknown field (check the spelling; see docs/workloads.md)");
  }
}

json parse_json_text(const std::string& text, const std::string& where) {
  try {
    return parse_input_json<json>(text, where);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
}

json read_json_file(const std::string& path, std::string_view what) {
  return parse_json_text(read_input_file(path, what), path);
}

}  // namespace commstack::workloads
