#include "calibration/fit/text_lines.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack::fit::detail {

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  int number = 1;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::size_t next = end == std::string_view::npos ? text.size() : end + 1;
    std::string_view line = text.substr(start, (end == std::string_view::npos ? text.size() : end) - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({number++, line});
    start = next;
  }
  return lines;
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Number of leading decimal digits of text from position i.
std::size_t digits_at(std::string_view text, std::size_t i) {
  std::size_t n = 0;
  while (i + n < text.size() && is_digit(text[i + n])) ++n;
  return n;
}

// RFC 3339 timestamp and one space: 2025-01-31T12:00:00[.123456789](Z|+01:00|+0100) .
std::size_t timestamp_prefix(std::string_view s) {
  const char* shape = "dddd-dd-ddTdd:dd:dd";
  std::size_t i = 0;
  for (; shape[i] != 0; ++i) {
    if (i >= s.size()) return 0;
    if (shape[i] == 'd' ? !is_digit(s[i]) : s[i] != shape[i]) return 0;
  }
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    const std::size_t n = digits_at(s, i + 1);
    if (n == 0) return 0;
    i += 1 + n;
  }
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    if (digits_at(s, i + 1) == 2 && i + 3 < s.size() && s[i + 3] == ':' && digits_at(s, i + 4) == 2)
      i += 6;
    else if (digits_at(s, i + 1) == 4)
      i += 5;
    else
      return 0;
  }
  return i < s.size() && s[i] == ' ' ? i + 1 : 0;
}

// Open MPI --tag-output / --output tag: [job,rank]<stdout>: or <stderr>: (Open MPI 5 adds a space).
std::size_t ompi_tag_prefix(std::string_view s) {
  if (s.empty() || s[0] != '[') return 0;
  std::size_t i = 1, n = digits_at(s, i);
  if (n == 0 || i + n >= s.size() || s[i + n] != ',') return 0;
  i += n + 1;
  n = digits_at(s, i);
  if (n == 0 || i + n >= s.size() || s[i + n] != ']') return 0;
  i += n + 1;
  for (std::string_view tag : {std::string_view("<stdout>:"), std::string_view("<stderr>:")})
    if (s.substr(i, tag.size()) == tag) {
      i += tag.size();
      return i < s.size() && s[i] == ' ' ? i + 1 : i;
    }
  return 0;
}

// Slurm srun --label: the task id right-aligned, a colon and a space ("  3: ", "12: ").
std::size_t slurm_label_prefix(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  const std::size_t n = digits_at(s, i);
  if (n == 0 || i + n + 1 >= s.size() || s[i + n] != ':' || s[i + n + 1] != ' ') return 0;
  return i + n + 2;
}

// MPICH -prepend-rank, Intel MPI -l: "[3] ".
std::size_t rank_bracket_prefix(std::string_view s) {
  if (s.empty() || s[0] != '[') return 0;
  const std::size_t n = digits_at(s, 1);
  if (n == 0 || 1 + n + 1 >= s.size() || s[1 + n] != ']' || s[2 + n] != ' ') return 0;
  return n + 3;
}

}  // namespace

std::string_view strip_launcher_prefix(std::string_view line) {
  line.remove_prefix(timestamp_prefix(line));
  // A bracketed prefix may come indented (a log pasted into a page or an issue): the indentation goes
  // with it. A data row never starts with '['.
  std::string_view indented = line;
  while (!indented.empty() && (indented.front() == ' ' || indented.front() == '\t'))
    indented.remove_prefix(1);
  if (const std::size_t n = ompi_tag_prefix(indented)) return indented.substr(n);
  if (const std::size_t n = slurm_label_prefix(line)) return line.substr(n);
  if (const std::size_t n = rank_bracket_prefix(indented)) return indented.substr(n);
  return line;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<std::string_view> split_ws(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    std::size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

static char lower_char(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower_char(a[i]) != lower_char(b[i])) return false;
  return true;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && equals_ci(text.substr(0, prefix.size()), prefix);
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower_char(c);
  return out;
}

std::string printable(std::string_view token) {
  std::string out;
  for (char c : token.substr(0, 40)) out += (std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  if (token.size() > 40) out += "...";
  return out;
}

void fail(std::string_view origin, int line, std::string_view message) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, message));
}

bool to_double(std::string_view token, double& out) {
  if (token.empty()) return false;
  if (token.front() == '+') token.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size() && std::isfinite(out);
}

bool to_int64(std::string_view token, std::int64_t& out) {
  if (token.empty()) return false;
  if (token.front() == '+') token.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size();
}

double need_double(std::string_view token, std::string_view origin, int line, std::string_view field) {
  double v = 0;
  if (!to_double(token, v)) fail(origin, line, fmt::format("{}: expected a number, got '{}'", field, printable(token)));
  return v;
}

bool plausible_time_us(double us) {
  return us >= kMinTimeUs && us <= kMaxTimeUs;
}

std::string plausible_time_text() {
  return fmt::format("a time per call of {:g} us to {:g} us (the row has a size > 0)", kMinTimeUs,
                     kMaxTimeUs);
}

double need_nonneg(std::string_view token, std::string_view origin, int line, std::string_view field) {
  double v = need_double(token, origin, line, field);
  if (v < 0) fail(origin, line, fmt::format("{}: expected a number >= 0, got '{}'", field, printable(token)));
  return v;
}

std::int64_t need_int(std::string_view token, std::string_view origin, int line, std::string_view field) {
  std::int64_t v = 0;
  if (!to_int64(token, v)) fail(origin, line, fmt::format("{}: expected an integer, got '{}'", field, printable(token)));
  return v;
}

std::uint64_t need_uint(std::string_view token, std::string_view origin, int line, std::string_view field) {
  std::int64_t v = need_int(token, origin, line, field);
  if (v < 0) fail(origin, line, fmt::format("{}: expected an integer >= 0, got '{}'", field, printable(token)));
  return static_cast<std::uint64_t>(v);
}

}  // namespace commstack::fit::detail
