#include "sim/report/breakdown.hpp"

#include <fmt/format.h>

namespace commstack::sim {

std::string breakdown_text(const stack::Breakdown& b) {
  return fmt::format(
      "launch {:.2f} alg-lat {:.2f} fab-lat {:.2f} fab-bw {:.2f} transport {:.2f} protocol {:.2f} "
      "contention {:.2f}",
      b.launch_s * 1e6, b.algorithm_latency_s * 1e6, b.fabric_latency_s * 1e6, b.fabric_bandwidth_s * 1e6,
      b.transport_s * 1e6, b.protocol_s * 1e6, b.contention_s * 1e6);
}

const char* const kBreakdownCsvColumns =
    "launch_us,algorithm_latency_us,fabric_latency_us,fabric_bandwidth_us,transport_us,protocol_us,"
    "contention_us";

std::string breakdown_csv(const stack::Breakdown& b) {
  return fmt::format("{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}", b.launch_s * 1e6,
                     b.algorithm_latency_s * 1e6, b.fabric_latency_s * 1e6, b.fabric_bandwidth_s * 1e6,
                     b.transport_s * 1e6, b.protocol_s * 1e6, b.contention_s * 1e6);
}

}  // namespace commstack::sim
