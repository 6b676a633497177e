#pragma once
// Plots through gnuplot: every `--plot FILE.png` writes its data (.dat) and script (.gp) next to the
// PNG, so a user can restyle and redraw without commstack, then runs gnuplot on the script.
#include <filesystem>
#include <string>

namespace commstack {

// A gnuplot single-quoted string ('' inside).
std::string gnuplot_quote(const std::string& text);

// The .dat and .gp paths next to a PNG path ("out/run.png" -> "out/run.dat", "out/run.gp").
struct PlotFiles {
  std::filesystem::path png, dat, gp;
};
PlotFiles plot_files(const std::string& png_path);

// Runs gnuplot on the script in its own folder (the script names its data and output relative to
// it). InputError naming `option` when gnuplot is missing or fails; the script and data stay.
void run_gnuplot(const PlotFiles& files, const std::string& option);

}  // namespace commstack
