#pragma once
// Shared checks for the topology tests: a routed path must be a simple walk from the source
// GPU's vertex to the destination GPU's vertex, each hop in the direction it claims.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topologies/cluster.hpp"
#include "topologies/topology.hpp"

namespace topo_test {

// Returns "" when valid, else what is wrong.
inline std::string path_problem(const commstack::topologies::Topology& t, int src, int dst,
                                const commstack::topologies::Path& p) {
  int cur = t.gpu_vertex(src);
  std::set<int> seen{cur};
  for (const auto& h : p) {
    const auto& l = t.link(h.link);
    const int from = h.forward ? l.a : l.b;
    if (from != cur) return "hop " + std::to_string(h.link) + " does not start at " + t.vertex(cur).name;
    cur = h.forward ? l.b : l.a;
    if (!seen.insert(cur).second) return "vertex repeated: " + t.vertex(cur).name;
  }
  if (cur != t.gpu_vertex(dst)) return "ends at " + t.vertex(cur).name;
  return "";
}

// Vertex names along a path, starting at the source GPU.
inline std::vector<std::string> path_names(const commstack::topologies::Topology& t, int src,
                                           const commstack::topologies::Path& p) {
  std::vector<std::string> out{t.vertex(t.gpu_vertex(src)).name};
  int cur = t.gpu_vertex(src);
  for (const auto& h : p) {
    const auto& l = t.link(h.link);
    cur = h.forward ? l.b : l.a;
    out.push_back(t.vertex(cur).name);
  }
  return out;
}

// A preset's JSON with edits applied (for building small variants in tests).
inline commstack::topologies::ClusterSpec preset_with(const std::string& name, const nlohmann::json& patch) {
  auto doc = nlohmann::json::parse(commstack::topologies::preset_json(name));
  doc.merge_patch(patch);
  return commstack::topologies::parse_cluster(doc, "test");
}

}  // namespace topo_test
