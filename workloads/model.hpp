#pragma once
// Transformer model description (the "model zoo" entries): the shapes that determine FLOPs,
// parameter count, activation memory and collective sizes. Built-in models are the JSON files in
// workloads/models/, compiled into the library; users may pass their own file with the same
// schema (docs/workloads.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace commstack::workloads {

enum class MlpKind { gelu, swiglu };  // gelu: 2 matrices h->f->h; swiglu: 3 (gate, up, down)
enum class NormKind { layernorm, rmsnorm };
enum class PositionKind { learned, rope };  // learned adds an s x h embedding table

// Mixture-of-experts feed-forward (Mixtral, DeepSeek-V3 style). Every layer at index >=
// first_dense_layers replaces its dense MLP by `experts` routed experts of width `ffn_hidden`
// (top_k of them active per token) plus `shared_experts` always-active experts of the same width.
struct MoeSpec {
  int experts = 0;
  int top_k = 0;
  int shared_experts = 0;
  std::int64_t ffn_hidden = 0;
  int first_dense_layers = 0;
};

struct ModelSpec {
  std::string name;             // e.g. "llama3-70b"
  std::string source;           // paper / model card the numbers come from
  std::int64_t layers = 0;      // transformer blocks l
  std::int64_t hidden = 0;      // h
  std::int64_t heads = 0;       // query heads a
  std::int64_t kv_heads = 0;    // key/value heads (== heads for MHA, < heads for GQA)
  std::int64_t head_dim = 0;    // d; h == a*d except for models that say otherwise
  std::int64_t ffn_hidden = 0;  // dense MLP width f
  std::int64_t vocab = 0;       // V (padded size when the training code pads it)
  std::int64_t seq = 0;         // training sequence length s
  MlpKind mlp = MlpKind::gelu;
  NormKind norm = NormKind::layernorm;
  PositionKind position = PositionKind::learned;
  bool bias = true;             // linear layers carry biases (GPT) or not (Llama)
  bool tied_embeddings = true;  // output layer shares the input embedding matrix
  bool dropout = true;          // dropout masks are stored (Korthikanti's 34 sbh counts them)
  std::optional<MoeSpec> moe;
  // Multi-token prediction depths (DeepSeek-V3: 1; Megatron-Core --mtp-num-layers). Depth k is
  // layer index layers + k: the last decoder layer's kind (MoE for an MoE model) plus its
  // embedding and hidden-state norms, the 2h -> h projection and a final norm; its logits use the
  // output layer. They run on the last pipeline stage, after the decoder.
  std::int64_t mtp_layers = 0;

  bool is_moe_layer(std::int64_t layer) const { return moe && layer >= moe->first_dense_layers; }
  bool is_mtp_layer(std::int64_t layer) const { return layer >= layers; }
  std::int64_t moe_layers() const { return moe ? layers - moe->first_dense_layers : 0; }
  std::int64_t dense_layers() const { return layers - moe_layers(); }
  std::int64_t q_width() const { return heads * head_dim; }      // a*d
  std::int64_t kv_width() const { return kv_heads * head_dim; }  // kv*d
};

// Parameter counts (exact, from the shapes).
struct ParamCount {
  std::int64_t embedding = 0;  // V*h (+ s*h learned positions)
  std::int64_t output = 0;     // V*h when untied, else 0
  std::int64_t final_norm = 0;
  std::int64_t attention_per_layer = 0;  // Q, K, V, O (+ biases) + the norm before it
  std::int64_t dense_mlp_per_layer = 0;  // MLP + its norm
  std::int64_t moe_mlp_per_layer = 0;    // all experts + shared + router + norm
  std::int64_t expert_per_layer = 0;     // routed experts only (sharded by EP)
  std::int64_t mtp_per_layer = 0;        // one MTP depth: its layer + 3 norms + the 2h x h projection
  std::int64_t total = 0;
  std::int64_t active = 0;  // parameters touched by one token (top_k routed experts)
};
ParamCount count_params(const ModelSpec& m);

// Megatron's --make-vocab-size-divisible-by 128 (its default, and NeMo's): the embedding and the
// output layer are sized to the vocabulary rounded up to a multiple of 128 x TP, whatever TP is
// (Llama-3's 128256 becomes 129024 at TP 8, GPT-3's 50257 becomes 50304 at TP 1).
std::int64_t megatron_padded_vocab(std::int64_t vocab, int tp);

// Parses one model object. `where` names the input in error messages (file or built-in name).
ModelSpec parse_model(const nlohmann::json& j, const std::string& where);
// Loads a model from a JSON file.
ModelSpec load_model_file(const std::string& path);
// A built-in model by name ("gpt3-175b", "llama3-70b", ...); unknown names throw InputError
// listing the available ones.
ModelSpec builtin_model(const std::string& name);
// Sorted names of all built-in models.
std::vector<std::string> builtin_model_names();
// A built-in name, or else a path to a JSON file.
ModelSpec resolve_model(const std::string& name_or_path);

std::string to_string(MlpKind k);

}  // namespace commstack::workloads
