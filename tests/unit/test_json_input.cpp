// parse_input_json (common/json_input.hpp): what nlohmann::json accepts but a user never means.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_input.hpp"

using namespace commstack;

TEST_CASE("input JSON: a key written twice is refused, naming the key and the object") {
  CHECK_THROWS_WITH_AS(
      parse_input_json<nlohmann::json>(R"({"nodes": 16, "nodes": 4})", "c.json"),
      "c.json: key \"nodes\" appears twice in the top-level object; JSON keeps only the last one, "
      "so remove the other",
      InputError);
  CHECK_THROWS_WITH_AS(parse_input_json<nlohmann::ordered_json>(
                           R"({"a": [{"x": 1}, {"b": {"tp": 8, "dp": 2, "tp": 4}}]})", "s.json"),
                       doctest::Contains("key \"tp\" appears twice in the object at /a/*/b"), InputError);
  // The same key in sibling objects, or at two levels, is no repetition.
  const auto ok =
      parse_input_json<nlohmann::json>(R"({"a": {"n": 1}, "b": {"n": 2}, "n": {"n": 3}})", "ok.json");
  CHECK(ok["n"]["n"] == 3);
  CHECK(ok["b"]["n"] == 2);
}

TEST_CASE("input JSON: nesting deeper than kMaxJsonDepth is refused before anything recurses over it") {
  const auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
  };
  CHECK(parse_input_json<nlohmann::json>(nested(kMaxJsonDepth), "ok.json").is_array());
  CHECK_THROWS_WITH_AS(parse_input_json<nlohmann::json>(nested(100000), "deep.json"),
                       doctest::Contains("deep.json: JSON nested more than 256 levels deep"), InputError);
  // Syntax errors stay nlohmann's, for the caller to word.
  CHECK_THROWS_AS(parse_input_json<nlohmann::json>("{\"a\": ", "t.json"), nlohmann::json::parse_error);
}
