#include "cli/output_paths.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/gnuplot.hpp"

namespace commstack::cli {
namespace {

namespace fs = std::filesystem;

// The absolute, symlink-free form of a path that may not exist yet; the path itself when even
// that fails (a component that cannot be read).
fs::path canonical_or_self(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);
  return ec ? fs::path(path) : p;
}

// True when `path` is `dir` or lies below it.
bool within(const std::string& path, const std::string& dir) {
  const fs::path rel = canonical_or_self(path).lexically_relative(canonical_or_self(dir));
  return !rel.empty() && *rel.begin() != "..";
}

// How writing `w` destroys the input `in`, or "" when it does not.
std::string_view overwrites(const WrittenPath& w, const InputArg& in) {
  if (w.path.empty() || in.path.empty()) return "";
  std::error_code ec;
  if (in.or_name && !fs::is_regular_file(in.path, ec)) return "";  // a preset or shipped name, not a file
  if (same_file(w.path, in.path)) return "the same file as";
  if (w.tree && within(in.path, w.path)) return "a directory holding";
  // A file of a directory read whole (replay --trace DIR of per-rank files).
  if (fs::is_directory(in.path, ec) && fs::is_regular_file(w.path, ec) && within(w.path, in.path))
    return "a file read from";
  return "";
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b;
  if (fs::exists(a, ec_a) && fs::exists(b, ec_b)) {
    std::error_code ec;
    const bool same = fs::equivalent(a, b, ec);
    return !ec && same;
  }
  return canonical_or_self(a) == canonical_or_self(b);
}

void refuse_overwriting_inputs(std::string_view out_flag, const std::string& out,
                               const std::vector<WrittenPath>& written, const std::vector<InputArg>& inputs) {
  if (out.empty()) return;
  for (const auto& w : written)
    for (const auto& in : inputs)
      if (const std::string_view how = overwrites(w, in); !how.empty())
        throw InputError(fmt::format(
            "{} {}: {}{} {} {}; writing it would destroy that input: choose another output path", out_flag,
            out, w.path == out ? "" : fmt::format("writes {}, ", w.path), how, in.flag, in.path));
}

void refuse_overwriting_inputs(std::string_view out_flag, const std::string& out,
                               const std::vector<InputArg>& inputs) {
  refuse_overwriting_inputs(out_flag, out, {{out}}, inputs);
}

std::vector<WrittenPath> plot_written_paths(const std::string& png) {
  if (png.empty()) return {};
  const PlotFiles f = plot_files(png);
  return {{f.png.string()}, {f.dat.string()}, {f.gp.string()}};
}

std::vector<WrittenPath> otf2_written_paths(const std::string& dir) {
  if (dir.empty()) return {};
  const fs::path d(dir);
  return {
      {dir}, {(d / "traces.otf2").string()}, {(d / "traces.def").string()}, {(d / "traces").string(), true}};
}

}  // namespace commstack::cli
