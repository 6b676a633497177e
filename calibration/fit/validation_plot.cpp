#include "calibration/fit/validation_plot.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/units.hpp"
#include "sim/algorithms/collective.hpp"

namespace commstack::fit {

namespace {

// x tics at powers of two labelled in binary units (8, 1K, 1M: nccl-tests' sizes), at most ~10.
std::string size_tics(const ValidationResult& v) {
  if (v.rows.empty()) return "";
  std::uint64_t lo = v.rows.front().bytes, hi = lo;
  for (const auto& r : v.rows) lo = std::min(lo, r.bytes), hi = std::max(hi, r.bytes);
  int first = 0, last = 0;
  while ((std::uint64_t{1} << (first + 1)) <= lo && first < 62) ++first;
  while ((std::uint64_t{1} << last) < hi && last < 62) ++last;
  const int step = std::max(1, (last - first + 9) / 10);
  std::vector<std::string> tics;
  for (int e = first; e <= last; e += step) {
    const std::string label = format_bytes(std::uint64_t{1} << e);  // "8", "2K", "1G"
    const bool binary = label.back() < '0' || label.back() > '9';
    tics.push_back(fmt::format("\"{}{}\" {}", label, binary ? "iB" : " B", std::uint64_t{1} << e));
  }
  return fmt::format("set xtics ({})\n", fmt::join(tics, ", "));
}

}  // namespace

PlotFiles write_validation_plot_files(const MeasuredRun& run, const ValidationResult& v,
                                      const std::string& png_path) {
  PlotFiles files = plot_files(png_path);
  const double bf = sim::bus_bandwidth_factor(run.op, run.nodes * run.gpus_per_node);
  // Bus bandwidth of a call of `bytes` taking `us`, GB/s (nccl-tests' busbw).
  const auto busbw = [&](std::uint64_t bytes, double us) {
    return static_cast<double>(bytes) * bf / (us * 1e3);
  };
  bool nccl_curve = false;
  {
    std::ofstream out(files.dat);
    if (!out) throw InputError(fmt::format("--plot: cannot write '{}'", files.dat.string()));
    out << "# commstack validate: " << run.file << " on " << run.cluster_name
        << " (tab-separated; '-' = NCCL has "
        << "no model of this collective)\n"
        << "#size_bytes\tmeasured_busbw_GBps\tpredicted_busbw_GBps\tnccl_model_busbw_GBps\tmeasured_us\t"
           "predicted_us\terror_percent\tnccl_model_error_percent\tchoice\n";
    for (const auto& r : v.rows) {
      const bool nccl = r.nccl_model_us > 0;
      nccl_curve = nccl_curve || nccl;
      out << fmt::format(
          "{}\t{:.6g}\t{:.6g}\t{}\t{:.6g}\t{:.6g}\t{:.4f}\t{}\t{}/{}/{}\n", r.bytes,
          busbw(r.bytes, r.measured_us), busbw(r.bytes, r.predicted_us),
          nccl ? fmt::format("{:.6g}", busbw(r.bytes, r.nccl_model_us)) : "-", r.measured_us, r.predicted_us,
          r.error_percent,
          nccl ? fmt::format("{:.4f}", 100.0 * (r.nccl_model_us - r.measured_us) / r.measured_us) : "-",
          r.prediction.algorithm, select::to_string(r.prediction.proto), r.prediction.channels);
    }
    if (!out) throw InputError(fmt::format("--plot: writing '{}' failed", files.dat.string()));
  }
  {
    std::ofstream out(files.gp);
    if (!out) throw InputError(fmt::format("--plot: cannot write '{}'", files.gp.string()));
    const std::string d = gnuplot_quote(files.dat.filename().string());
    const std::string file = std::filesystem::path(run.file).filename().string();
    const std::string title = fmt::format("{} on {} ({} x {} GPUs), {}", file, run.cluster_name, run.nodes,
                                          run.gpus_per_node, sim::to_string(run.op));
    const std::string errors =
        fmt::format("commstack MAPE {:.1f}% (>= 1 MiB {:.1f}%, < 1 MiB {:.1f}%)", v.mape_percent,
                    v.mape_large_percent, v.mape_small_percent) +
        (nccl_curve ? fmt::format("; NCCL's own model {:.1f}%", v.nccl_model_mape_percent) : "");
    // One color per series in both panels.
    const std::string measured = "lc rgb '#000000' pt 7", ours = "lc rgb '#1f77b4' pt 5",
                      nccl = "lc rgb '#ff7f0e' pt 3";
    out << "# Written by commstack validate; run `gnuplot " << files.gp.filename().string()
        << "` in this folder to redraw.\n"
        << "set terminal pngcairo size 900,800 noenhanced font ',10'\n"
        << "set output " << gnuplot_quote(files.png.filename().string()) << "\n"
        << "set datafile separator '\\t'\nset datafile missing '-'\n"
        << "set multiplot layout 2,1 title " << gnuplot_quote(title) << "\n"
        << "set logscale x 2\n"
        << size_tics(v) << "set grid\nset key top left\n"
        << "set xlabel 'message size'\nset ylabel 'bus bandwidth (GB/s)'\n"
        << "plot " << d << " using 1:2 with linespoints " << measured << " title 'measured', \\\n     " << d
        << " using 1:3 with linespoints " << ours << " title 'commstack'";
    if (nccl_curve)
      out << ", \\\n     " << d << " using 1:4 with linespoints " << nccl << " title \"NCCL's own model\"";
    out << "\nset title " << gnuplot_quote(errors)
        << "\nset ylabel 'error vs measured (%)'\nset key top right\n"
        << "plot " << d << " using 1:7 with linespoints " << ours << " title 'commstack'";
    if (nccl_curve)
      out << ", \\\n     " << d << " using 1:8 with linespoints " << nccl << " title \"NCCL's own model\"";
    out << ", \\\n     5 with lines dt 2 lc rgb 'gray' title '+-5%', -5 with lines dt 2 lc rgb 'gray' notitle"
        << ", \\\n     10 with lines dt 3 lc rgb 'gray' title '+-10%', -10 with lines dt 3 lc rgb 'gray' "
           "notitle\n"
        << "unset multiplot\n";
    if (!out) throw InputError(fmt::format("--plot: writing '{}' failed", files.gp.string()));
  }
  return files;
}

void validation_plot(const MeasuredRun& run, const ValidationResult& v, const std::string& png_path) {
  run_gnuplot(write_validation_plot_files(run, v, png_path), "--plot");
}

}  // namespace commstack::fit
