#include "topologies/schema/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/units.hpp"

namespace commstack::topologies::schema {

std::string describe(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return fmt::format("{} {}", value.type_name(), text);
}

namespace {
// Levenshtein distance of two short keys (insertions, deletions, substitutions).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

int to_int(const nlohmann::json& value, const std::string& origin, const std::string& path, int min, int max) {
  const std::string expected = fmt::format("an integer in [{}, {}]", min, max);
  if (!value.is_number()) throw InputError(fmt::format("{}: {}: expected {}, got {}", origin, path, expected, describe(value)));
  const double d = value.get<double>();
  if (d != std::floor(d) || d < min || d > max) {
    throw InputError(fmt::format("{}: {}: expected {}, got {}", origin, path, expected, value.dump()));
  }
  return static_cast<int>(d);
}

ObjectReader::ObjectReader(const nlohmann::json& doc, std::string origin, std::string path)
    : doc_(doc), origin_(std::move(origin)), path_(std::move(path)) {
  if (!doc_.is_object()) {
    throw InputError(fmt::format("{}: {}: expected a JSON object, got {}", origin_, path_.empty() ? "/" : path_,
                                 describe(doc_)));
  }
}

bool ObjectReader::has(const std::string& key) const { return doc_.contains(key); }

void ObjectReader::fail(const std::string& key, const std::string& expected, const nlohmann::json& got) const {
  throw InputError(fmt::format("{}: {}: expected {}, got {}", origin_, path_of(key), expected, describe(got)));
}

void ObjectReader::fail_message(const std::string& key, const std::string& message) const {
  throw InputError(fmt::format("{}: {}: {}", origin_, path_of(key), message));
}

const nlohmann::json& ObjectReader::raw(const std::string& key) {
  if (!doc_.contains(key)) {
    // A key of the object that nothing has read and that is one or two edits from the missing
    // one ("dim" for "dims", "nodse" for "nodes") is most likely it, misspelt: say so.
    for (auto it = doc_.begin(); it != doc_.end(); ++it) {
      if (!used_.contains(it.key()) && edit_distance(it.key(), key) <= 2)
        fail_message(key,
                     fmt::format("missing required field (the object has \"{}\": a misspelling of \"{}\"?)",
                                 it.key(), key));
    }
    fail_message(key, "missing required field");
  }
  used_.insert(key);
  return doc_.at(key);
}

std::string ObjectReader::string(const std::string& key) {
  const auto& v = raw(key);
  if (!v.is_string()) fail(key, "a string", v);
  return v.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

int ObjectReader::integer(const std::string& key, int min, int max) {
  return to_int(raw(key), origin_, path_of(key), min, max);
}

std::optional<int> ObjectReader::optional_integer(const std::string& key, int min, int max) {
  if (!has(key)) return std::nullopt;
  return integer(key, min, max);
}

bool ObjectReader::boolean(const std::string& key) {
  const auto& v = raw(key);
  if (!v.is_boolean()) fail(key, "true or false", v);
  return v.get<bool>();
}

std::optional<bool> ObjectReader::optional_boolean(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

double ObjectReader::bandwidth(const std::string& key) {
  const auto& v = raw(key);
  const std::string where = fmt::format("{}: {}", origin_, path_of(key));
  if (v.is_string()) return parse_bandwidth(v.get<std::string>(), where);
  if (v.is_number()) {
    const double bw = v.get<double>();
    if (!(bw >= kMinBandwidthBps && bw <= kMaxBandwidthBps))
      fail(key, "a bandwidth of 1e3 .. 1e15 bytes/s such as \"400Gbps\" or a number of bytes/s", v);
    return bw;
  }
  fail(key, "a bandwidth such as \"400Gbps\" or \"450GB/s\" or a number of bytes/s", v);
}

double ObjectReader::latency(const std::string& key) {
  const auto& v = raw(key);
  const std::string where = fmt::format("{}: {}", origin_, path_of(key));
  if (v.is_string()) return parse_latency(v.get<std::string>(), where);
  if (v.is_number()) {
    const double lat = v.get<double>();
    if (!(lat >= 0 && lat <= kMaxLatencyS))
      fail(key, "a latency of 0 .. 1 s such as \"850ns\" or a number of seconds", v);
    return lat;
  }
  fail(key, "a latency such as \"850ns\" or \"2us\" or a number of seconds", v);
}

std::vector<std::string> ObjectReader::string_list(const std::string& key) {
  const auto& v = raw(key);
  if (!v.is_array()) fail(key, "an array of strings", v);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      throw InputError(fmt::format("{}: {}/{}: expected a string, got {}", origin_, path_of(key), i, describe(v[i])));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

ObjectReader ObjectReader::object(const std::string& key) { return ObjectReader(raw(key), origin_, path_of(key)); }

void ObjectReader::finish() const {
  for (const auto& [key, value] : doc_.items()) {
    if (!used_.contains(key)) {
      throw InputError(fmt::format("{}: {}: unknown field (check the spelling; see docs/cluster-format.md)", origin_,
                                   path_of(key)));
    }
  }
}

}  // namespace commstack::topologies::schema
