#include "common/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack {
namespace {

// Splits "12.5Gbps" into 12.5 and "Gbps". Throws if there is no leading number.
std::pair<double, std::string> split_number(std::string_view text, std::string_view what, std::string_view expected) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  double value = 0;
  const char* first = s.data() + start;
  const char* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first || !std::isfinite(value)) {
    throw InputError(fmt::format("{}: '{}' is not a valid value; expected {}", what, text, expected));
  }
  std::string unit(ptr, last);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(unit.begin());
  return {value, unit};
}

}  // namespace

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  constexpr std::string_view expected = "a non-negative byte count such as 8, 64K, 16M or 2G";
  auto [value, unit] = split_number(text, what, expected);
  if (value < 0) throw InputError(fmt::format("{}: '{}' is negative; expected {}", what, text, expected));
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  double mult = 1;
  if (unit.empty()) {
    mult = 1;
  } else if (unit.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
      case 'K': mult = 1024.0; break;
      case 'M': mult = 1024.0 * 1024; break;
      case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: throw InputError(fmt::format("{}: unknown size suffix in '{}'; expected {}", what, text, expected));
    }
  } else {
    throw InputError(fmt::format("{}: unknown size suffix in '{}'; expected {}", what, text, expected));
  }
  const double bytes = value * mult;
  if (bytes != std::floor(bytes)) {
    throw InputError(fmt::format("{}: '{}' is not a whole number of bytes", what, text));
  }
  if (bytes >= 18446744073709551615.0) throw InputError(fmt::format("{}: '{}' is too large", what, text));
  return static_cast<std::uint64_t>(bytes);
}

double parse_bandwidth(std::string_view text, std::string_view what) {
  constexpr std::string_view expected = "a bandwidth such as 400Gbps, 25GB/s or 1e9 (bytes/s)";
  auto [value, unit] = split_number(text, what, expected);
  double mult = 0;
  if (unit.empty() || unit == "Bps" || unit == "B/s") mult = 1;
  else if (unit == "KBps" || unit == "KB/s" || unit == "kB/s") mult = 1e3;
  else if (unit == "MBps" || unit == "MB/s") mult = 1e6;
  else if (unit == "GBps" || unit == "GB/s") mult = 1e9;
  else if (unit == "TBps" || unit == "TB/s") mult = 1e12;
  else if (unit == "bps" || unit == "b/s") mult = 1.0 / 8;
  else if (unit == "Kbps" || unit == "Kb/s" || unit == "kbps") mult = 1e3 / 8;
  else if (unit == "Mbps" || unit == "Mb/s") mult = 1e6 / 8;
  else if (unit == "Gbps" || unit == "Gb/s") mult = 1e9 / 8;
  else if (unit == "Tbps" || unit == "Tb/s") mult = 1e12 / 8;
  else throw InputError(fmt::format("{}: unknown bandwidth unit '{}' in '{}'; expected {}", what, unit, text, expected));
  const double bw = value * mult;
  if (!(bw > 0)) throw InputError(fmt::format("{}: '{}' must be greater than zero; expected {}", what, text, expected));
  if (bw < kMinBandwidthBps || bw > kMaxBandwidthBps)
    throw InputError(fmt::format("{}: '{}' is outside 8 kb/s .. 8 Pb/s (1e3 .. 1e15 bytes/s); expected {}",
                                 what, text, expected));
  return bw;
}

double parse_latency(std::string_view text, std::string_view what) {
  constexpr std::string_view expected = "a latency such as 850ns, 2us, 1.5ms or 0 (seconds)";
  auto [value, unit] = split_number(text, what, expected);
  double mult = 0;
  if (unit.empty() || unit == "s") mult = 1;
  else if (unit == "ms") mult = 1e-3;
  else if (unit == "us") mult = 1e-6;
  else if (unit == "ns") mult = 1e-9;
  else throw InputError(fmt::format("{}: unknown latency unit '{}' in '{}'; expected {}", what, unit, text, expected));
  const double lat = value * mult;
  if (lat < 0) throw InputError(fmt::format("{}: '{}' is negative; expected {}", what, text, expected));
  if (lat > kMaxLatencyS)
    throw InputError(fmt::format("{}: '{}' is more than 1 s; expected {}", what, text, expected));
  return lat;
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::pair<std::uint64_t, char> units[] = {
      {1ULL << 40, 'T'}, {1ULL << 30, 'G'}, {1ULL << 20, 'M'}, {1ULL << 10, 'K'}};
  for (auto [size, suffix] : units) {
    if (bytes >= size && bytes % size == 0) return fmt::format("{}{}", bytes / size, suffix);
  }
  return fmt::format("{}", bytes);
}

}  // namespace commstack
