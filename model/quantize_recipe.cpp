#include "model/quantize_recipe.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace parley {

namespace {

struct FileTypeInfo {
  FileType type;
  std::string_view name;
  GgmlType default_type;
};

// llama-quantize's order: the legacy quants, the K-quants, then the float types.
constexpr FileTypeInfo kFileTypes[] = {
    {FileType::Q4_0, "q4_0", GgmlType::Q4_0},
    {FileType::Q4_1, "q4_1", GgmlType::Q4_1},
    {FileType::Q5_0, "q5_0", GgmlType::Q5_0},
    {FileType::Q5_1, "q5_1", GgmlType::Q5_1},
    {FileType::Q8_0, "q8_0", GgmlType::Q8_0},
    {FileType::Q3_K_M, "q3_k_m", GgmlType::Q3_K},
    {FileType::Q4_K_S, "q4_k_s", GgmlType::Q4_K},
    {FileType::Q4_K_M, "q4_k_m", GgmlType::Q4_K},
    {FileType::Q5_K_S, "q5_k_s", GgmlType::Q5_K},
    {FileType::Q5_K_M, "q5_k_m", GgmlType::Q5_K},
    {FileType::Q6_K, "q6_k", GgmlType::Q6_K},
    {FileType::IQ4_XS, "iq4_xs", GgmlType::IQ4_XS},
    {FileType::MXFP4_MOE, "mxfp4_moe", GgmlType::MXFP4},
    {FileType::F16, "f16", GgmlType::F16},
    {FileType::BF16, "bf16", GgmlType::BF16},
    {FileType::F32, "f32", GgmlType::F32},
};

const FileTypeInfo& info(FileType t) {
  for (const FileTypeInfo& i : kFileTypes)
    if (i.type == t) return i;
  throw std::invalid_argument("unknown file type " + std::to_string(static_cast<uint32_t>(t)));
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// llama.cpp's tensor_allows_quantization, for the names Parley writes: 2-D weights other than norms.
bool allows_quantization(const RecipeTensor& t) {
  // The router (ffn_gate_inp) stays in its type: llama.cpp never quantizes expert gating tensors, nor BERT's
  // positions and token types.
  return t.ne.size() >= 2 && t.name.ends_with("weight") && !contains(t.name, "_norm.weight") &&
         !contains(t.name, "ffn_gate_inp") && t.name != "position_embd.weight" && t.name != "token_types.weight";
}

// The layers that get more bits in the _M mixes: the first and last eighth, and every third between.
bool use_more_bits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// llama.cpp's LLM_TYPE_70B (src/models/llama.cpp, qwen2.cpp): an 80-layer Llama with GQA, or any 80-layer Qwen2.
bool is_70b(const RecipeModel& m) {
  return m.n_layers == 80 && ((m.arch == "llama" && m.n_heads != m.n_kv_heads) || m.arch == "qwen2");
}

// tensor_type_fallback: a row length the type's blocks do not divide takes a type of 32-element blocks, else F16.
GgmlType shape_fallback(GgmlType type, uint64_t row_length) {
  const auto divides = [&](GgmlType t) { return row_length % uint64_t(quant::traits(t).block_size) == 0; };
  if (divides(type)) return type;
  GgmlType fallback = type;  // a 32-element type has nothing smaller: F16 below
  if (type == GgmlType::Q4_K)
    fallback = GgmlType::Q5_0;
  else if (type == GgmlType::Q3_K)
    fallback = GgmlType::Q4_0;
  else if (type == GgmlType::IQ4_XS)
    throw std::invalid_argument(
        "iq4_xs: rows of " + std::to_string(row_length) +
        " are not whole 256-blocks, and llama.cpp's fallback (iq4_nl) is a type Parley does not "
        "write");
  else if (type == GgmlType::Q5_K)
    fallback = GgmlType::Q5_1;
  else if (type == GgmlType::Q6_K)
    fallback = GgmlType::Q8_0;
  return divides(fallback) ? fallback : GgmlType::F16;
}

// Q3_K_M's branches: attn_v Q5_K in the first two blocks then Q4_K, ffn_down Q5_K in the first sixteenth then Q4_K,
// attn_output Q4_K; an 8-expert model's attn_v and attn_k Q8_0 and attn_output Q5_K; the rest Q3_K.
GgmlType q3_k_m_type(const RecipeModel& m, const RecipeTensor& t, GgmlType type) {
  const bool eight_experts = m.n_experts == 8;
  if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight"))
    return eight_experts ? GgmlType::Q8_0 : t.layer < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
  if (contains(t.name, "attn_k.weight") && eight_experts) return GgmlType::Q8_0;
  if (contains(t.name, "ffn_down")) return t.layer < m.n_blocks / 16 ? GgmlType::Q5_K : GgmlType::Q4_K;
  if (contains(t.name, "attn_output.weight")) return eight_experts ? GgmlType::Q5_K : GgmlType::Q4_K;
  return type;
}

// llama_tensor_get_type_impl's branches that fire for these file types on a dense model; the others (the
// IQ, Q2_K and Q3_K mixes, eight experts, Falcon, MXFP4) never do. The counters llama.cpp keeps for attn_v
// and ffn_down equal the block index here, as every block has one of each, visited in block order.
GgmlType mix_type(FileType target, const RecipeModel& m, const RecipeTensor& t, GgmlType type) {
  const bool output = t.name == "output.weight", embedding = t.name == "token_embd.weight";
  if (target == FileType::MXFP4_MOE)  // experts in MXFP4, every other weight (the head too) in Q8_0
    return t.ne.size() >= 3 && t.ne[2] > 1 && !output ? GgmlType::MXFP4 : GgmlType::Q8_0;
  if (output || (embedding && !m.has_output)) {  // the output head keeps more bits
    if (t.ne[0] % uint64_t(quant::traits(type).block_size) != 0) return GgmlType::Q8_0;
    return type == GgmlType::Q8_0 ? type : GgmlType::Q6_K;
  }
  if (embedding) return type;
  if (target == FileType::Q3_K_M) return q3_k_m_type(m, t, type);
  if (target == FileType::IQ4_XS) {  // without an importance matrix, as Parley quantizes
    const bool attn_v = contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight");
    if (attn_v && m.n_kv_heads > 0 && m.n_heads / m.n_kv_heads >= 4) return GgmlType::Q5_K;
    if (contains(t.name, "ffn_down") && t.layer < m.n_blocks / 8) return GgmlType::Q5_K;
    if (contains(t.name, "attn_output.weight") && m.n_experts == 8) return GgmlType::Q5_K;
    return type;
  }
  const bool k_m = target == FileType::Q4_K_M || target == FileType::Q5_K_M;
  // attn_qkv is attn_v-like: llama.cpp's own attn_qkv branch comes after this one and is never reached.
  if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight")) {
    if (k_m && use_more_bits(t.layer, m.n_blocks))
      type = GgmlType::Q6_K;
    else if (target == FileType::Q4_K_S && t.layer < 4)
      type = GgmlType::Q5_K;
    // attn_v is 8x smaller than attn_q in a 70B model: more bits cost little there
    if (is_70b(m) && type == GgmlType::Q4_K) type = GgmlType::Q5_K;
    return type;
  }
  if (contains(t.name, "ffn_down")) {
    if (k_m && use_more_bits(t.layer, m.n_blocks)) return GgmlType::Q6_K;
    if (target == FileType::Q4_K_S && t.layer < m.n_blocks / 8) return GgmlType::Q5_K;
  }
  return type;
}

}  // namespace

std::string_view file_type_name(FileType t) { return info(t).name; }

std::string file_type_names() {
  std::string names;
  for (const FileTypeInfo& i : kFileTypes) names += (names.empty() ? "" : ", ") + std::string(i.name);
  return names;
}

FileType parse_file_type(std::string_view name) {
  const auto same = [](std::string_view a, std::string_view b) {  // llama-quantize ignores case too: Q4_K_M
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const FileTypeInfo& i : kFileTypes)
    if (same(i.name, name)) return i.type;
  throw std::invalid_argument("unknown type '" + std::string(name) + "' (expected one of " + file_type_names() + ")");
}

GgmlType default_tensor_type(FileType t) { return info(t).default_type; }

bool is_quantized(FileType t) {
  const GgmlType d = default_tensor_type(t);
  return d != GgmlType::F32 && d != GgmlType::F16 && d != GgmlType::BF16;
}

RecipeModel recipe_model(const LlamaConfig& c, bool has_mtp) {
  return {c.arch, c.n_layers + (has_mtp ? 1 : 0), c.n_layers, c.n_heads, c.n_kv_heads, !c.tied_output, c.moe.n_experts};
}

int block_index(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int index = 0;
  size_t i = 4;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) index = index * 10 + (name[i] - '0');
  return i > 4 && i < name.size() && name[i] == '.' ? index : -1;
}

GgmlType recipe_tensor_type(FileType target, const RecipeModel& model, const RecipeTensor& tensor) {
  if (!allows_quantization(tensor)) return GgmlType::F32;  // llama.cpp keeps their type: Parley writes them F32
  const GgmlType type = default_tensor_type(target);
  if (!is_quantized(target)) return type;  // llama.cpp picks mixes and fallbacks only for quantized targets
  if (tensor.layer < 0 && tensor.name.starts_with("blk."))
    throw std::invalid_argument("recipe_tensor_type: " + std::string(tensor.name) + " has no layer index");
  return shape_fallback(mix_type(target, model, tensor, type), tensor.ne[0]);
}

}  // namespace parley
