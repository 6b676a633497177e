// Preset lookup and file loading for load_cluster(): a name from the embedded presets wins,
// anything else is read as a path.
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/input_file.hpp"
#include "common/json_input.hpp"
#include "topologies/cluster.hpp"
#include "topologies/presets/embedded.hpp"

namespace commstack::topologies {
namespace {

nlohmann::json parse_text(std::string_view text, const std::string& origin) {
  try {
    return parse_input_json<nlohmann::json>(text, origin);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON: {}", origin, e.what()));
  }
}

const EmbeddedPreset* find_preset(const std::string& name) {
  for (const auto& p : embedded_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : embedded_presets()) names.emplace_back(p.name);
  return names;
}

std::string preset_json(const std::string& name) {
  const auto* p = find_preset(name);
  if (!p) throw InputError(fmt::format("unknown preset '{}'; known presets: {}", name, fmt::join(preset_names(), ", ")));
  return std::string(p->json);
}

std::vector<std::pair<std::string, std::string>> preset_descriptions() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& name : preset_names()) out.emplace_back(name, load_cluster(name).description);
  return out;
}

std::optional<std::string> preset_for_gpu(const std::string& gpu_name) {
  std::string n = gpu_name;
  for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto has = [&](const char* word) { return n.find(word) != std::string::npos; };
  // Boards whose NVLink differs from the SXM / HGX part the presets describe.
  if (has("pcie") || has("nvl") || has("h20 ") || n.ends_with("h20")) return std::nullopt;
  if (has("h800")) return "hgx-h800";
  if (has("a800")) return "hgx-a800";
  if (has("gb300")) return "gb300-nvl72";
  if (has("gb200")) return "gb200-nvl72";
  if (has("gh200")) return "gh200-slingshot";
  if (has("b300")) return "hgx-b300";
  if (has("b200")) return "hgx-b200";
  if (has("h200")) return "hgx-h200";
  if (has("h100")) return "dgx-h100";
  if (has("a100")) return "dgx-a100";
  return std::nullopt;
}

nlohmann::json load_cluster_document(const std::string& preset_or_path) {
  if (const auto* p = find_preset(preset_or_path))
    return parse_text(p->json, fmt::format("preset {}", p->name));
  // Not a preset: a path. A bare word with no '/' and no ".json" was most likely a mistyped preset.
  const bool looks_like_path =
      preset_or_path.find('/') != std::string::npos || preset_or_path.find(".json") != std::string::npos;
  if (!looks_like_path && !is_input_file(preset_or_path))
    throw InputError(fmt::format("--cluster {}: neither a preset nor a readable file; known presets: {}", preset_or_path,
                                 fmt::join(preset_names(), ", ")));
  return parse_text(read_input_file(preset_or_path, "cluster file"), preset_or_path);
}

ClusterSpec load_cluster(const std::string& preset_or_path) {
  const std::string origin =
      find_preset(preset_or_path) ? fmt::format("preset {}", preset_or_path) : preset_or_path;
  return parse_cluster(load_cluster_document(preset_or_path), origin);
}

}  // namespace commstack::topologies
