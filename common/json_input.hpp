#pragma once
// JSON a user hands us (a cluster, a scenario, a sweep, a profile, a measured log) is parsed through
// here. nlohmann::json accepts two things a user never means and the rest of the program cannot
// take:
//  * a key written twice in one object: the last one silently wins ("nodes": 16, "nodes": 4 runs
//    4 nodes), so the file says two things and we would act on one;
//  * nesting thousands of levels deep: the parse succeeds, then copying, printing or walking the
//    value recurses once per level and overflows the stack (a 200 KB file of '[' crashed the CLI).
// Both are refused with an InputError naming the file and the key or the depth. Syntax errors stay
// nlohmann's parse_error, which each caller words for its file kind.
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace commstack {

// Deeper than any file format of the project (a few levels) by far, and far below what recursion
// over the value can take.
inline constexpr int kMaxJsonDepth = 256;

// Json is nlohmann::json or nlohmann::ordered_json. `where` starts the error message (the file).
template <class Json>
Json parse_input_json(std::string_view text, const std::string& where) {
  struct Open {
    bool object = false;
    std::string segment;  // its key in the parent object, "*" in a parent array, "" at the top
    std::unordered_set<std::string> keys;
  };
  std::vector<Open> open;
  std::string last_key;
  typename Json::parser_callback_t check = [&](int depth, typename Json::parse_event_t event, Json& parsed) {
    using Event = typename Json::parse_event_t;
    if (depth > kMaxJsonDepth)
      throw InputError(
          fmt::format("{}: JSON nested more than {} levels deep; expected a configuration file "
                      "of a few levels",
                      where, kMaxJsonDepth));
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        open.push_back({.object = event == Event::object_start,
                        .segment = open.empty() ? "" : (open.back().object ? last_key : "*"),
                        .keys = {}});
        break;
      case Event::key: {
        const auto& key = parsed.template get_ref<const typename Json::string_t&>();
        if (!open.back().keys.insert(key).second) {
          std::string at;
          for (std::size_t i = 1; i < open.size(); ++i) at += "/" + open[i].segment;
          throw InputError(
              fmt::format("{}: key \"{}\" appears twice in {}; JSON keeps only the last one, so "
                          "remove the other",
                          where, key, at.empty() ? "the top-level object" : "the object at " + at));
        }
        last_key = key;
        break;
      }
      case Event::object_end:
      case Event::array_end: open.pop_back(); break;
      case Event::value: break;
    }
    return true;
  };
  return Json::parse(text.begin(), text.end(), check);
}

}  // namespace commstack
