// common/error.hpp: a user value echoed in an error message is capped at 80 characters with its length.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/error.hpp"

using namespace commstack;

TEST_CASE("error echo: a value up to 80 characters is echoed whole, a longer one capped with its length") {
  CHECK(echo_value("dgx-h100") == "dgx-h100");
  const std::string exact(80, 'a');
  CHECK(echo_value(exact) == exact);
  const std::string longer = std::string(80, 'a') + "b";
  CHECK(echo_value(longer) == std::string(80, 'a') + "... (81 characters)");
  CHECK(echo_value("abcdef", 3) == "abc... (6 characters)");
}

TEST_CASE("error echo: the command line's long values are capped wherever a message echoes them") {
  const std::string path = "/data/" + std::string(300, 'p') + ".json";
  const std::string op(200, 'o');
  const std::vector<std::string> args{"collective", "--cluster", path, "--op", op, "--nodes", "2"};
  const std::string message =
      "--cluster " + path + ": cannot read; --op '" + op + "' ('" + op + "'); --nodes 2";
  CHECK(cap_echoed_values(message, args) == "--cluster " + echo_value(path) + ": cannot read; --op '" +
                                                echo_value(op) + "' ('" + echo_value(op) + "'); --nodes 2");
  // Short values and messages without long values are left as they are.
  CHECK(cap_echoed_values("--nodes 2: expected 1..8", args) == "--nodes 2: expected 1..8");
  // A long value that contains another is replaced whole.
  const std::string inner(100, 'i');
  const std::string outer = inner + "@nodes=2";
  CHECK(cap_echoed_values("x " + outer + " y " + inner, {outer, inner}) ==
        "x " + echo_value(outer) + " y " + echo_value(inner));
}

TEST_CASE("error echo: control characters a value brought in are written out, so the error is one line") {
  CHECK(escape_control_chars("--recompute: unknown 'fu\nll'") == "--recompute: unknown 'fu\\nll'");
  CHECK(escape_control_chars("a\tb\rc") == "a\\tb\\rc");
  CHECK(escape_control_chars("\x1b[31mred") == "\\x1b[31mred");
  CHECK(escape_control_chars(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(escape_control_chars("del\x7f") == "del\\x7f");
  // Printable text, UTF-8 included, is left as it is.
  CHECK(escape_control_chars("$.tp: 16 does not divide 24 — µs") == "$.tp: 16 does not divide 24 — µs");
}
