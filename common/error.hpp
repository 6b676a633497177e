#pragma once
// One error type for everything a user gave us that we cannot use. The CLI prints what() and
// exits with status 2; the message must name the input (file or flag), the field, and what was
// expected, in plain words.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace commstack {

class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The most characters of one user value an error message echoes.
inline constexpr std::size_t kMaxEchoedChars = 80;

// A user value as an error message shows it: whole up to `max` characters, else its first `max`
// characters, "..." and its length ("xxxx... (300 characters)"), so a pasted file or a runaway
// shell expansion does not bury the message.
std::string echo_value(std::string_view value, std::size_t max = kMaxEchoedChars);

// `message` with every occurrence of each value longer than `max` (the command line's arguments,
// as an error message may echo them from anywhere) replaced by echo_value's form. The CLI applies
// it to every message it prints, so no message needs its own cap.
std::string cap_echoed_values(std::string message, const std::vector<std::string>& values,
                              std::size_t max = kMaxEchoedChars);

// `message` with its control characters written out (\n, \r, \t, \xNN for the others and DEL): an
// error is one line, and a value echoed from the command line or a file cannot break it or send
// escape sequences to the terminal. No message of commstack's own contains one.
std::string escape_control_chars(std::string_view message);

}  // namespace commstack
