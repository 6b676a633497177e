#include "workloads/model.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "workloads/json_fields.hpp"
#include "workloads/models/embedded.hpp"

namespace commstack::workloads {

std::string to_string(MlpKind k) {
  return k == MlpKind::gelu ? "gelu" : "swiglu";
}

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1}
                                 << 24;     // 16M: far above any real width, keeps products in int64
constexpr std::int64_t kMaxMtpLayers = 16;  // DeepSeek-V3 trains 1; Megatron sets no bound

std::int64_t mlp_params(MlpKind kind, std::int64_t h, std::int64_t f, bool bias) {
  if (kind == MlpKind::gelu) return 2 * h * f + (bias ? f + h : 0);
  return 3 * h * f + (bias ? 2 * f + h : 0);
}

}  // namespace

ParamCount count_params(const ModelSpec& m) {
  const std::int64_t h = m.hidden;
  const std::int64_t norm = m.norm == NormKind::layernorm ? 2 * h : h;  // LayerNorm has a bias
  ParamCount p;
  p.embedding = m.vocab * h + (m.position == PositionKind::learned ? m.seq * h : 0);
  p.output = m.tied_embeddings ? 0 : m.vocab * h;
  p.final_norm = norm;
  p.attention_per_layer =
      2 * h * m.q_width() + 2 * h * m.kv_width() + (m.bias ? m.q_width() + 2 * m.kv_width() + h : 0) + norm;
  p.dense_mlp_per_layer = mlp_params(m.mlp, h, m.ffn_hidden, m.bias) + norm;
  std::int64_t one_expert = 0;
  if (m.moe) {
    one_expert = mlp_params(m.mlp, h, m.moe->ffn_hidden, m.bias);
    p.expert_per_layer = m.moe->experts * one_expert;
    p.moe_mlp_per_layer = p.expert_per_layer + m.moe->shared_experts * one_expert + h * m.moe->experts + norm;
  }
  const bool mtp_moe = m.is_moe_layer(m.layers);  // MTP layers repeat the last decoder layer's kind
  p.mtp_per_layer =
      p.attention_per_layer + (mtp_moe ? p.moe_mlp_per_layer : p.dense_mlp_per_layer) + 3 * norm + 2 * h * h;
  p.total = p.embedding + p.output + p.final_norm + m.layers * p.attention_per_layer +
            m.dense_layers() * p.dense_mlp_per_layer + m.moe_layers() * p.moe_mlp_per_layer +
            m.mtp_layers * p.mtp_per_layer;
  const std::int64_t routed_layers = m.moe_layers() + (mtp_moe ? m.mtp_layers : 0);
  p.active = p.total - (m.moe ? routed_layers * (m.moe->experts - m.moe->top_k) * one_expert : 0);
  return p;
}

std::int64_t megatron_padded_vocab(std::int64_t vocab, int tp) {
  const std::int64_t multiple = 128LL * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

ModelSpec parse_model(const nlohmann::json& j, const std::string& where) {
  JsonFields f(j, where, "$");
  ModelSpec m;
  m.name = f.string("name");
  if (m.name.empty()) f.fail("name", "must not be empty");
  m.source = f.string("source");
  if (m.source.empty()) f.fail("source", "must name the paper or model card the numbers come from");
  m.layers = f.integer("layers", 1, 100000);
  m.hidden = f.integer("hidden", 1, kMaxDim);
  m.heads = f.integer("heads", 1, kMaxDim);
  // Absent kv_heads means plain multi-head attention (one K/V head per query head).
  m.kv_heads = f.integer_or("kv_heads", m.heads, 1, kMaxDim);
  if (m.heads % m.kv_heads != 0) {
    f.fail("kv_heads",
           fmt::format("{} does not divide heads = {} (grouped-query attention needs whole groups)",
                       m.kv_heads, m.heads));
  }
  if (f.has("head_dim")) {
    m.head_dim = f.integer("head_dim", 1, kMaxDim);
  } else {
    // Absent head_dim means the usual d = h / a, which must then be whole.
    if (m.hidden % m.heads != 0) {
      f.fail("heads",
             fmt::format("{} does not divide hidden = {}; give head_dim explicitly", m.heads, m.hidden));
    }
    m.head_dim = m.hidden / m.heads;
  }
  m.ffn_hidden = f.integer("ffn_hidden", 1, kMaxDim);
  m.vocab = f.integer("vocab", 1, kMaxDim);
  m.seq = f.integer("seq", 1, kMaxDim);
  m.mlp = f.choice("mlp", {"gelu", "swiglu"}) == "gelu" ? MlpKind::gelu : MlpKind::swiglu;
  m.norm =
      f.choice("norm", {"layernorm", "rmsnorm"}) == "layernorm" ? NormKind::layernorm : NormKind::rmsnorm;
  m.position =
      f.choice("position", {"learned", "rope"}) == "learned" ? PositionKind::learned : PositionKind::rope;
  m.bias = f.boolean("bias");
  m.tied_embeddings = f.boolean("tied_embeddings");
  m.dropout = f.boolean("dropout");
  if (const nlohmann::json* moe = f.object_or_null("moe")) {
    JsonFields g(*moe, where, "$.moe");
    MoeSpec s;
    s.experts = static_cast<int>(g.integer("experts", 1, 1 << 20));
    s.top_k = static_cast<int>(g.integer("top_k", 1, s.experts));
    s.shared_experts = static_cast<int>(g.integer("shared_experts", 0, 1 << 20));
    s.ffn_hidden = g.integer("ffn_hidden", 1, kMaxDim);
    s.first_dense_layers = static_cast<int>(g.integer("first_dense_layers", 0, m.layers - 1));
    g.reject_unknown();
    m.moe = s;
  }
  m.mtp_layers = f.integer_or("mtp_num_layers", 0, 0, kMaxMtpLayers);
  f.reject_unknown();
  return m;
}

ModelSpec load_model_file(const std::string& path) {
  return parse_model(read_json_file(path, "model file"), path);
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& [stem, text] : embedded_model_files()) names.emplace_back(stem);
  std::sort(names.begin(), names.end());
  return names;
}

ModelSpec builtin_model(const std::string& name) {
  for (const auto& [stem, text] : embedded_model_files()) {
    if (stem == name) {
      std::string where = fmt::format("built-in model '{}' (workloads/models/{}.json)", name, name);
      ModelSpec m = parse_model(parse_json_text(std::string(text), where), where);
      if (m.name != name)
        throw InputError(fmt::format("{}: $.name: '{}' differs from the file name", where, m.name));
      return m;
    }
  }
  throw InputError(fmt::format("model '{}': no built-in model of that name; known: {}", name,
                               fmt::join(builtin_model_names(), ", ")));
}

ModelSpec resolve_model(const std::string& name_or_path) {
  for (const auto& [stem, text] : embedded_model_files()) {
    if (stem == name_or_path) return builtin_model(name_or_path);
  }
  std::error_code ec;  // a name the file system refuses (too long) is no file: the built-in lookup names it
  if (std::filesystem::exists(name_or_path, ec)) return load_model_file(name_or_path);
  return builtin_model(name_or_path);  // throws with the list of names
}

}  // namespace commstack::workloads
