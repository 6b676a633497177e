#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "common/input_file.hpp"

using namespace commstack;

namespace {

// A scratch directory of this test alone (ctest runs tests in parallel in one build folder).
std::filesystem::path scratch() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("commstack_input_file_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("input file: reads the whole file, byte for byte, larger than one read block") {
  const auto dir = scratch();
  const auto path = (dir / "big.txt").string();
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + (i % 3 == 0 ? "\r\n" : "\n");
  text.push_back('\0');  // binary content survives
  text += "end";
  { std::ofstream(path, std::ios::binary) << text; }
  CHECK(text.size() > (1U << 16));
  CHECK(read_input_file(path) == text);
  CHECK(is_input_file(path));
  const auto empty = (dir / "empty.txt").string();
  { std::ofstream out(empty); }
  CHECK(read_input_file(empty).empty());  // empty is the parser's to refuse, with its own words
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "input file: a missing path, a directory and an empty path name the path, the kind of file and why") {
  const auto dir = scratch();
  CHECK_THROWS_WITH_AS(read_input_file("/nonexistent/run.txt", "measured run"),
                       "/nonexistent/run.txt: cannot read the measured run: no such file", InputError);
  CHECK_THROWS_WITH_AS(
      read_input_file(dir.string(), "profile"),
      (dir.string() + ": cannot read the profile: it is a directory, expected a file").c_str(), InputError);
  CHECK_THROWS_WITH_AS(check_input_file(dir.string(), "trace"), doctest::Contains("it is a directory"),
                       InputError);
  CHECK_THROWS_WITH_AS(read_input_file(""), ": cannot read the file: the path is empty", InputError);
  CHECK_FALSE(is_input_file(dir.string()));
  CHECK_FALSE(is_input_file("/nonexistent/run.txt"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("input file: a device or a pipe is named by its kind, a file, a directory or a missing path not") {
  const auto dir = scratch();
  const auto file = (dir / "t.json").string();
  { std::ofstream(file) << "{}"; }
  CHECK(special_file_kind("/dev/zero") == "a character device");
  CHECK(special_file_kind("/dev/null") == "a character device");
  const auto fifo = (dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(special_file_kind(fifo) == "a pipe (FIFO)");
  CHECK(special_file_kind(file).empty());
  CHECK(special_file_kind(dir.string()).empty());
  CHECK(special_file_kind("/nonexistent/t.json").empty());
  std::filesystem::remove_all(dir);
}
