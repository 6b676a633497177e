#include "workloads/parallel/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::workloads {
namespace {

// Longest layout accepted before and after expansion: a real one is tens of characters (a stage per
// pipeline rank and chunk, a few layers each); the bound keeps "t*99999999" from exhausting memory.
constexpr std::size_t kMaxExpanded = 1'000'000;

struct Expander {
  const std::string& what;
  [[noreturn]] void fail(const std::string& msg) const { throw InputError(fmt::format("{}: {}", what, msg)); }

  // The repeat count after a '*' at `pos` (digits), and the position after it.
  std::pair<std::int64_t, std::size_t> count_at(const std::string& s, std::size_t pos) const {
    std::size_t end = pos;
    std::int64_t n = 0;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) != 0) {
      n = n * 10 + (s[end] - '0');
      if (n > static_cast<std::int64_t>(kMaxExpanded))
        fail(fmt::format("repeat count at '{}' is too large", s.substr(pos)));
      ++end;
    }
    return {n, end};
  }
  void append(std::string& out, const std::string& unit, std::int64_t n) const {
    if (out.size() + unit.size() * static_cast<std::size_t>(n) > kMaxExpanded)
      fail(fmt::format("expands to more than {} characters", kMaxExpanded));
    for (std::int64_t i = 0; i < n; ++i) out += unit;
  }
  // Megatron's first rule, r'\(([^)]+)\)\*(\d+)': a parenthesised group followed by *n, groups not
  // nested. A '(' or ')' that is not part of such a group stays and is refused as a character.
  std::string groups(const std::string& s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      if (s[i] == '(') {
        const std::size_t close = s.find(')', i + 1);
        const std::size_t open = s.find('(', i + 1);
        if (close != std::string::npos && open != std::string::npos && open < close)
          fail("nested parentheses are not supported (Megatron does not expand them either)");
        if (close != std::string::npos && close > i + 1 && close + 1 < s.size() && s[close + 1] == '*') {
          const auto [n, end] = count_at(s, close + 2);
          if (end > close + 2) {
            append(out, s.substr(i + 1, close - i - 1), n);
            i = end;
            continue;
          }
        }
      }
      out += s[i++];
    }
    return out;
  }
  // Megatron's second rule, r'(.)\*(\d+)': any one character followed by *n.
  std::string singles(const std::string& s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      if (i + 1 < s.size() && s[i + 1] == '*') {
        const auto [n, end] = count_at(s, i + 2);
        if (end > i + 2) {
          append(out, std::string(1, s[i]), n);
          i = end;
          continue;
        }
      }
      out += s[i++];
    }
    return out;
  }
};

}  // namespace

PipelineLayout parse_pipeline_layout(const std::string& text, const std::string& what) {
  const Expander ex{what};
  if (text.empty()) ex.fail("is empty; expected the layers of each stage, e.g. \"Et*4|t*4|t*4|t*4L\"");
  if (text.size() > 10'000) ex.fail("longer than 10000 characters");
  std::string s = text;
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());  // commas are cosmetic
  s = ex.singles(ex.groups(s));

  std::vector<std::string> stages(1);
  for (char c : s) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'L' || c == 'm') {
      stages.back() += c;
    } else {
      const auto u = static_cast<unsigned char>(c);
      const std::string shown = u >= 0x80  ? "a non-ASCII character"
                                : u < 0x20 ? "a control character"
                                           : fmt::format("'{}'", c);
      ex.fail(
          fmt::format("{} in stage {} is not a layer character; expected E (embedding), t (transformer "
                      "layer), m (MTP layer), L (loss), '|' between stages, x*n and (...)*n repeats",
                      shown, stages.size() - 1));
    }
  }
  const auto count = [&](char c) {
    std::int64_t n = 0;
    for (const auto& st : stages) n += std::count(st.begin(), st.end(), c);
    return n;
  };
  if (count('E') != 1 || stages.front().empty() || stages.front().front() != 'E')
    ex.fail("the embedding 'E' must appear once, as the first layer of the first stage");
  if (count('L') != 1 || stages.back().empty() || stages.back().back() != 'L')
    ex.fail("the loss 'L' must appear once, as the last layer of the last stage");
  // Megatron's MTP rules (validate_layer_layout): every 'm' after every 't', all in one stage. An
  // MTP stage other than the loss's is Megatron's "standalone" MTP, whose hand-over of the decoder
  // and MTP hidden states to the loss stage is not modelled: the 'm' must share the last stage.
  const std::int64_t mtp = count('m');
  if (mtp > 0) {
    const std::string& last = stages.back();
    if (std::count(last.begin(), last.end(), 'm') != mtp)
      ex.fail(
          "every 'm' (MTP layer) must be in the last stage, before its 'L': a stage of MTP layers apart "
          "from the loss (Megatron's standalone MTP) is not modelled");
    if (last.find('t', last.find('m')) != std::string::npos)
      ex.fail("a transformer layer 't' follows an MTP layer 'm'; decoder layers come before MTP layers");
  }
  PipelineLayout out{text, {}, mtp};
  for (const auto& st : stages) out.layers_per_stage.push_back(std::count(st.begin(), st.end(), 't'));
  return out;
}

}  // namespace commstack::workloads
