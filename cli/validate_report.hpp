#pragma once
// What `commstack validate` prints: the measured-vs-predicted table (text, or CSV with the notes as
// '#' lines) with its notes and diagnoses, or all of it as one JSON document (docs/cli.md).
#include "calibration/fit/validate_run.hpp"
#include "sim/stack/profile.hpp"

namespace commstack::cli {

struct ValidateReport {
  const fit::MeasuredRun& run;
  const sim::stack::Profile& profile;
  const fit::ValidationResult& result;
  bool breakdown = false;  // each size's layers (--breakdown)
};

void print_validate_json(const ValidateReport& report);
void print_validate_table(const ValidateReport& report, bool csv);

}  // namespace commstack::cli
