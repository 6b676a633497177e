// Relative comparison for the tests. doctest::Approx(x) accepts |a - x| < epsilon * (scale +
// max(|a|, |x|)) with scale 1, which turns epsilon into an absolute tolerance for values far below 1,
// and most values here are seconds (1e-6 .. 1e-2): Approx(3e-6) with its default epsilon (1.2e-5)
// accepts anything within 12 us, Approx(t).epsilon(0.01) anything within 10 ms. approx() leaves a
// scale of 1e-300 (so that equal values, zeros included, still compare equal), which makes epsilon
// relative to the larger of the two values at every magnitude.
#pragma once

#include <doctest/doctest.h>

inline doctest::Approx approx(double value) {
  return doctest::Approx(value).scale(1e-300);
}

// Relative `epsilon` plus an absolute slack `abs` (e.g. the whole-byte rounding of simulated flows):
// |a - value| < epsilon * max(|a|, |value|) + abs, give or take epsilon * abs.
inline doctest::Approx approx(double value, double epsilon, double abs) {
  return doctest::Approx(value).epsilon(epsilon).scale(abs / epsilon);
}
