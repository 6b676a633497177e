#pragma once
// `validate --plot FILE.png`: a measured run against its prediction, as results/validation draws
// every shared run. Top panel: bus bandwidth over size (measured, commstack, NCCL's own model where
// NCCL models the collective); bottom panel: the error per size, both models, with the issue's
// 5% / 10% bands. The .dat and .gp files are written next to the PNG (common/gnuplot.hpp).
#include <string>

#include "calibration/fit/validate_run.hpp"
#include "common/gnuplot.hpp"

namespace commstack::fit {

// Writes the .dat and .gp for `png_path` (no gnuplot needed); returns their paths.
PlotFiles write_validation_plot_files(const MeasuredRun& run, const ValidationResult& v,
                                      const std::string& png_path);

// write_validation_plot_files, then gnuplot on the script (InputError when gnuplot is missing).
void validation_plot(const MeasuredRun& run, const ValidationResult& v, const std::string& png_path);

}  // namespace commstack::fit
