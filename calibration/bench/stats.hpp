#pragma once
// Summary statistics over timed repetitions (host-only). Percentiles interpolate linearly between
// order statistics (the "type 7" rule of R and numpy), so the median of an even count is the mean
// of the two middle values.
#include <span>
#include <vector>

namespace commstack::bench {

struct Summary {
  int n = 0;
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for n = 1
  double cv = 0;      // stddev / mean: the spread the fit weighs a point by; 0 when mean is 0
};

// p in [0, 100]. Throws std::invalid_argument on an empty sample or p outside [0, 100].
double percentile(std::span<const double> values, double p);
// Throws std::invalid_argument on an empty sample or a non-finite value.
Summary summarize(std::span<const double> values);

}  // namespace commstack::bench
