#include "common/error.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace commstack {

std::string echo_value(std::string_view value, std::size_t max) {
  if (value.size() <= max) return std::string(value);
  return fmt::format("{}... ({} characters)", value.substr(0, max), value.size());
}

std::string cap_echoed_values(std::string message, const std::vector<std::string>& values, std::size_t max) {
  std::vector<std::string_view> longs;
  for (const auto& v : values)
    if (v.size() > max) longs.emplace_back(v);
  // The longest first: a value that contains another is replaced whole.
  std::sort(longs.begin(), longs.end(),
            [](std::string_view a, std::string_view b) { return a.size() > b.size(); });
  for (const std::string_view v : longs) {
    const std::string shown = echo_value(v, max);
    for (std::size_t at = message.find(v); at != std::string::npos; at = message.find(v, at + shown.size()))
      message.replace(at, v.size(), shown);
  }
  return message;
}

std::string escape_control_chars(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

}  // namespace commstack
