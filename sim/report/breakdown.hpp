#pragma once
// A stack-model prediction's layers (sim::stack::Breakdown) as `collective --breakdown` and
// `validate --breakdown` print them: one text, CSV and JSON form for both verbs (docs/cli.md).
#include <string>

#include <nlohmann/json.hpp>

#include "sim/stack/predict.hpp"

namespace commstack::sim {

// "launch 6.84 alg-lat 57.40 fab-lat 12.80 fab-bw 4.66 transport 1.07 protocol 0.38 contention 0.00"
// (microseconds, two decimals).
std::string breakdown_text(const stack::Breakdown& b);

// The CSV columns ("launch_us,...,contention_us", no leading comma) and one row's values in them
// (microseconds, four decimals).
extern const char* const kBreakdownCsvColumns;
std::string breakdown_csv(const stack::Breakdown& b);

// The JSON object {"launch_us": ..., ..., "contention_us": ...} (microseconds); Json is
// nlohmann::json or nlohmann::ordered_json.
template <class Json>
Json breakdown_json(const stack::Breakdown& b) {
  return Json{{"launch_us", b.launch_s * 1e6},
              {"algorithm_latency_us", b.algorithm_latency_s * 1e6},
              {"fabric_latency_us", b.fabric_latency_s * 1e6},
              {"fabric_bandwidth_us", b.fabric_bandwidth_s * 1e6},
              {"transport_us", b.transport_s * 1e6},
              {"protocol_us", b.protocol_s * 1e6},
              {"contention_us", b.contention_s * 1e6}};
}

}  // namespace commstack::sim
