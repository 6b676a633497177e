#pragma once
// Small helpers shared by the measurement parsers: split text into numbered lines and
// whitespace tokens, convert tokens to numbers strictly, and raise InputError messages of one
// shape ("<origin>:<line>: <what was expected>, got '<token>'") so every parser reports bad
// input the same way. Internal to calibration/fit; not a public header of the library.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace commstack::fit::detail {

struct Line {
  int number = 0;         // 1-based line number in the original text
  std::string_view text;  // without the line terminator (\n or \r\n)
};

std::vector<Line> split_lines(std::string_view text);

// The line without what a launcher or log collector put in front of each output line, so a
// benchmark's output parses the same whether it was captured plainly or through
// `mpirun --tag-output` ("[1,0]<stdout>:"), `srun --label` ("  3: "), MPICH / Intel MPI
// `-prepend-rank` / `-l` ("[3] ") or `kubectl logs --timestamps` ("2025-01-31T12:00:00.123Z ").
// Only these exact shapes are removed (one of each, timestamp first); any other line is returned
// unchanged. Used by the parsers of benchmark output, not by the table or XML readers.
std::string_view strip_launcher_prefix(std::string_view line);
std::vector<std::string_view> split_ws(std::string_view text);
std::string_view trim(std::string_view text);
bool starts_with_ci(std::string_view text, std::string_view prefix);
bool equals_ci(std::string_view a, std::string_view b);
std::string lower(std::string_view text);

// A token shown in an error message: at most 40 characters, non-printable bytes as '?'.
std::string printable(std::string_view token);

[[noreturn]] void fail(std::string_view origin, int line, std::string_view message);

// Strict conversions: the whole token must be a finite number (no trailing characters).
bool to_double(std::string_view token, double& out);
bool to_int64(std::string_view token, std::int64_t& out);

double need_double(std::string_view token, std::string_view origin, int line, std::string_view field);
double need_nonneg(std::string_view token, std::string_view origin, int line, std::string_view field);
std::int64_t need_int(std::string_view token, std::string_view origin, int line, std::string_view field);
std::uint64_t need_uint(std::string_view token, std::string_view origin, int line, std::string_view field);

// A measured time per call of a row that moves data (size > 0): 1 ns to 1e12 us (11.6 days). A 0,
// or a value no call can take (1e-300, 1e300), is a corrupt or mistyped row; taken as measured it
// gives an error of 1e300 % (or, at 0, was dropped unseen). The parsers refuse it, naming the line.
inline constexpr double kMinTimeUs = 1e-3, kMaxTimeUs = 1e12;
bool plausible_time_us(double us);
// What such a time must be, for the error message.
std::string plausible_time_text();

}  // namespace commstack::fit::detail
