#pragma once
// Reports of a what-if study: a table for people, CSV and JSON for tools (ordered keys, numbers
// rounded to ns, so outputs are byte-identical run to run), and a gnuplot chart.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/scenario/whatif.hpp"

namespace commstack::sim::scenario {

std::string whatif_text(const WhatifResult& w);
std::string whatif_csv(const WhatifResult& w);
nlohmann::ordered_json whatif_json(const WhatifResult& w);

// Writes PNG_PATH plus, next to it, <stem>.dat (the numbers) and <stem>.gp (the gnuplot script),
// then runs gnuplot on the script. Top panel: speedup per variant; bottom panel: iteration time
// per variant stacked by breakdown part. Throws InputError when a file cannot be written or
// gnuplot is not installed or fails.
void whatif_plot(const WhatifResult& w, const std::string& png_path);

}  // namespace commstack::sim::scenario
