#include "common/input_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack {

namespace {

// Why the path cannot be read, or "" when it can be opened. A directory opens on Linux and fails
// only at the first read (EISDIR), so it is refused by its type first.
std::string unreadable_reason(const std::string& path) {
  if (path.empty()) return "the path is empty";
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return "no such file";
  if (std::filesystem::is_directory(st)) return "it is a directory, expected a file";
  errno = 0;  // set by the failing open below, not left over from an earlier call
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno != 0 ? std::strerror(errno) : "it cannot be opened";
  return "";
}

[[noreturn]] void fail(const std::string& path, std::string_view what, std::string_view reason) {
  throw InputError(fmt::format("{}: cannot read the {}: {}", path, what, reason));
}

// A device or a pipe that never ends (/dev/zero, `yes |`) would otherwise grow memory until the
// process is killed; no stream input read whole (a measured run, a cluster, a profile) comes near
// this. A regular file is bounded by its size and read whole however large (a long sweep's journal).
constexpr std::size_t kMaxStreamBytes = std::size_t{256} << 20;

}  // namespace

void check_input_file(const std::string& path, std::string_view what) {
  if (const std::string reason = unreadable_reason(path); !reason.empty()) fail(path, what, reason);
}

bool is_input_file(const std::string& path) {
  return unreadable_reason(path).empty();
}

std::string special_file_kind(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st) || fs::is_regular_file(st) || fs::is_directory(st)) return "";
  if (fs::is_character_file(st)) return "a character device";
  if (fs::is_block_file(st)) return "a block device";
  if (fs::is_fifo(st)) return "a pipe (FIFO)";
  if (fs::is_socket(st)) return "a socket";
  return "a special file";
}

std::string read_input_file(const std::string& path, std::string_view what) {
  check_input_file(path, what);
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, what, "it cannot be opened");
  // istream::read turns a failing read (EIO, or a path that changed under us) into badbit, where
  // `out << in.rdbuf()` would report it like an empty file.
  std::string text;
  std::string block(1 << 16, '\0');
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    if (!regular && text.size() > kMaxStreamBytes)
      fail(path, what,
           fmt::format("more than {0} MiB from a device or a pipe (an endless one?); expected a file, or a "
                       "stream of at most {0} MiB",
                       kMaxStreamBytes >> 20));
    if (!in) break;
  }
  if (in.bad()) fail(path, what, "read error");
  return text;
}

}  // namespace commstack
