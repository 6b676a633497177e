#pragma once
// Structure-aware mutation of JSON fuzz seeds, shared by the fuzzers in tests/fuzz.
#include <cstdint>
#include <iterator>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

namespace commstack::fuzz {

// Structure-aware mutation of a JSON seed: a few leaves (or whole objects / arrays) replaced by
// values of the wrong type, sign or size, or removed, so the reader's field checks run instead of
// the JSON syntax error most byte mutations give.
inline std::string mutate_json_values(const std::string& seed, std::mt19937_64& rng) {
  nlohmann::json j = nlohmann::json::parse(seed);
  const nlohmann::json replacements[] = {
      nullptr, -1,   0, 1.5, "x", nlohmann::json::array(), nlohmann::json::object(), std::int64_t{1} << 62,
      -1e300,  true, ""};
  const int ops = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < ops; ++k) {
    nlohmann::json* at = &j;
    // Walk down a random path; stop at a leaf or by chance.
    while ((at->is_object() || at->is_array()) && !at->empty() && rng() % 5 != 0) {
      auto it = at->begin();
      std::advance(it, static_cast<long>(rng() % at->size()));
      at = &*it;
    }
    if (rng() % 4 == 0 && (at->is_object() || at->is_array()) && !at->empty()) {
      if (at->is_object())
        at->erase(at->begin());
      else
        at->erase(at->begin() + static_cast<long>(rng() % at->size()));
    } else {
      *at = replacements[rng() % (sizeof(replacements) / sizeof(replacements[0]))];
    }
  }
  return j.dump();
}

}  // namespace commstack::fuzz
