#pragma once
// Strict, path-aware access to a JSON object: every read knows its JSON pointer, so each error
// names origin + path + expectation, and finish() rejects fields nobody read (typos such as
// "nodse" must not silently fall back to a default).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace commstack::topologies::schema {

class ObjectReader {
public:
  // `doc` must outlive the reader. Throws InputError if it is not an object.
  ObjectReader(const nlohmann::json& doc, std::string origin, std::string path);

  bool has(const std::string& key) const;
  const nlohmann::json& raw(const std::string& key);  // marks the key used; throws if missing
  std::string path_of(const std::string& key) const { return path_ + "/" + key; }
  const std::string& origin() const { return origin_; }

  std::string string(const std::string& key);
  std::optional<std::string> optional_string(const std::string& key);
  int integer(const std::string& key, int min, int max);
  std::optional<int> optional_integer(const std::string& key, int min, int max);
  bool boolean(const std::string& key);
  std::optional<bool> optional_boolean(const std::string& key);
  double bandwidth(const std::string& key);  // "400Gbps" or a number of bytes/s, > 0
  double latency(const std::string& key);    // "850ns" or a number of seconds, >= 0
  std::vector<std::string> string_list(const std::string& key);
  ObjectReader object(const std::string& key);

  // Throws for every key present in the object but never read.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& expected, const nlohmann::json& got) const;
  [[noreturn]] void fail_message(const std::string& key, const std::string& message) const;

private:
  const nlohmann::json& doc_;
  std::string origin_;
  std::string path_;
  std::set<std::string> used_;
};

// Renders a JSON value for an error message, shortened.
std::string describe(const nlohmann::json& value);

// Reads an integer from a JSON value at `path`, within [min, max].
int to_int(const nlohmann::json& value, const std::string& origin, const std::string& path, int min, int max);

}  // namespace commstack::topologies::schema
