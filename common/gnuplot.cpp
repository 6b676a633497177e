#include "common/gnuplot.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "common/error.hpp"

namespace commstack {
namespace {

// A POSIX shell single-quoted word.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string gnuplot_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

PlotFiles plot_files(const std::string& png_path) {
  PlotFiles f;
  f.png = png_path;
  std::filesystem::path stem = f.png;
  stem.replace_extension();
  f.dat = stem.string() + ".dat";
  f.gp = stem.string() + ".gp";
  return f;
}

void run_gnuplot(const PlotFiles& files, const std::string& option) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0)
    throw InputError(
        fmt::format("{}: gnuplot is not installed (apt-get install gnuplot-nox); the data and script "
                    "are in {} and {}",
                    option, files.dat.string(), files.gp.string()));
  const std::filesystem::path dir =
      files.gp.has_parent_path() ? files.gp.parent_path() : std::filesystem::path(".");
  const std::string cmd = fmt::format("cd {} && gnuplot {}", shell_quote(dir.string()),
                                      shell_quote(files.gp.filename().string()));
  if (std::system(cmd.c_str()) != 0)
    throw InputError(
        fmt::format("{}: gnuplot failed on {} (the script and data are kept)", option, files.gp.string()));
}

}  // namespace commstack
