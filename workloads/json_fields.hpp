#pragma once
// Strict reading of one JSON object from a user file: every field is looked up by name, its type
// and range checked, and unknown fields are refused at the end (a typo such as "hiden" must not
// silently fall back to a default). Errors are InputError naming the file, the JSON path and
// what was expected.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace commstack::workloads {

class JsonFields {
public:
  // `where` names the input (file path or "built-in model x"), `path` the JSON path of `obj`
  // (e.g. "$" or "$.moe"). Throws if obj is not an object.
  JsonFields(const nlohmann::json& obj, std::string where, std::string path);

  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const { return path_ + "." + key; }
  const std::string& where() const { return where_; }

  // Required fields.
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  double number(const std::string& key, double min, double max);
  std::string string(const std::string& key);
  bool boolean(const std::string& key);
  // One of `allowed`; the error lists them.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);

  // Optional fields: the default is documented next to each use.
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max);
  double number_or(const std::string& key, double fallback, double min, double max);
  std::string string_or(const std::string& key, const std::string& fallback);
  bool boolean_or(const std::string& key, bool fallback);
  std::string choice_or(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
  // An optional integer whose JSON null means "not set", as Python's None in the Megatron config
  // it mirrors (nullopt when absent or null).
  std::optional<std::int64_t> integer_or_unset(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<std::string> string_or_unset(const std::string& key);
  // A nested object, or nullptr when absent (marks the key as known).
  const nlohmann::json* object_or_null(const std::string& key);

  // Throws for any key not read above.
  void reject_unknown() const;

  // "<where>: <path.key>: <message>" as an InputError.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

private:
  const nlohmann::json& get(const std::string& key);
  const nlohmann::json& obj_;
  std::string where_;
  std::string path_;
  std::set<std::string> seen_;
};

// Parses text as JSON; a syntax error becomes an InputError naming `where`.
nlohmann::json parse_json_text(const std::string& text, const std::string& where);
// Reads and parses a file; a missing file or a directory (common/input_file.hpp: "cannot read the
// WHAT") or a syntax error becomes an InputError.
nlohmann::json read_json_file(const std::string& path, std::string_view what);

}  // namespace commstack::workloads
