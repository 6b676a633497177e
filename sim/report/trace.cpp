#include "sim/report/trace.hpp"

#include <nlohmann/json.hpp>

namespace commstack::sim {

std::string format_trace(const topologies::Topology& topo, const std::vector<FlowRecord>& flows) {
  nlohmann::ordered_json doc;
  auto& events = doc["traceEvents"] = nlohmann::ordered_json::array();
  std::vector<bool> named(static_cast<std::size_t>(topo.endpoint_count()), false);
  for (const auto& f : flows) {
    if (!named[static_cast<std::size_t>(f.src)]) {
      named[static_cast<std::size_t>(f.src)] = true;
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", f.src},
                        {"args", {{"name", topo.endpoint_vertex(f.src).name}}}});
    }
    events.push_back({{"name", topo.endpoint_vertex(f.dst).name},
                      {"cat", "flow"},
                      {"ph", "X"},
                      {"ts", f.ready_s * 1e6},
                      {"dur", (f.end_s - f.ready_s) * 1e6},
                      {"pid", f.src},
                      {"tid", f.dst},
                      {"args",
                       {{"bytes", f.bytes},
                        {"wire_start_us", f.start_s * 1e6},
                        {"flow", f.id},
                        {"collective", f.group}}}});
  }
  doc["displayTimeUnit"] = "ns";
  return doc.dump() + "\n";
}

}  // namespace commstack::sim
