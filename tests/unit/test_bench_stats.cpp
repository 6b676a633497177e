// Bench statistics: closed-form values on small samples.
#include <cmath>
#include <stdexcept>
#include <vector>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/bench/stats.hpp"

using namespace commstack::bench;

TEST_CASE("bench: median and percentiles interpolate between order statistics") {
  const std::vector<double> v{5, 1, 4, 2, 3};
  CHECK(percentile(v, 50) == 3.0);
  CHECK(percentile(v, 0) == 1.0);
  CHECK(percentile(v, 100) == 5.0);
  CHECK(percentile(v, 25) == 2.0);
  CHECK(percentile(v, 10) == approx(1.4));  // pos 0.4 between 1 and 2
  const std::vector<double> even{10, 20, 30, 40};
  CHECK(percentile(even, 50) == 25.0);
  CHECK(percentile(even, 90) == approx(37.0));  // pos 2.7
}

TEST_CASE("bench: summary mean, sample stddev and coefficient of variation") {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  const Summary s = summarize(v);
  CHECK(s.n == 8);
  CHECK(s.mean == 5.0);
  CHECK(s.median == 4.5);
  CHECK(s.min == 2.0);
  CHECK(s.max == 9.0);
  CHECK(s.stddev == approx(std::sqrt(32.0 / 7.0)));
  CHECK(s.cv == approx(std::sqrt(32.0 / 7.0) / 5.0));
  const std::vector<double> one{3.5};
  const Summary s1 = summarize(one);
  CHECK(s1.stddev == 0.0);
  CHECK(s1.cv == 0.0);
  CHECK(s1.p10 == 3.5);
  CHECK(s1.p90 == 3.5);
}

TEST_CASE("bench: statistics refuse empty samples, non-finite values and bad percentiles") {
  const std::vector<double> empty;
  CHECK_THROWS_AS(summarize(empty), std::invalid_argument);
  CHECK_THROWS_AS(percentile(empty, 50), std::invalid_argument);
  const std::vector<double> nan{1.0, std::nan("")};
  CHECK_THROWS_AS(summarize(nan), std::invalid_argument);
  const std::vector<double> v{1, 2};
  CHECK_THROWS_AS(percentile(v, 101), std::invalid_argument);
  CHECK_THROWS_AS(percentile(v, -1), std::invalid_argument);
}
