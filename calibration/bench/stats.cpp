#include "calibration/bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace commstack::bench {
namespace {

double sorted_percentile(const std::vector<double>& sorted, double p) {
  const double pos = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

double percentile(std::span<const double> values, double p) {
  if (values.empty()) throw std::invalid_argument("percentile of an empty sample");
  if (!(p >= 0 && p <= 100)) throw std::invalid_argument("percentile outside [0, 100]");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted_percentile(sorted, p);
}

Summary summarize(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("summary of an empty sample");
  for (double v : values)
    if (!std::isfinite(v)) throw std::invalid_argument("summary of a sample with a non-finite value");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.n = static_cast<int>(sorted.size());
  s.median = sorted_percentile(sorted, 50);
  s.p10 = sorted_percentile(sorted, 10);
  s.p90 = sorted_percentile(sorted, 90);
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / s.n;
  if (s.n > 1) {
    double ss = 0;
    for (double v : sorted) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / (s.n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  return s;
}

}  // namespace commstack::bench
