#include "model/gguf_vocab.hpp"

#include <stdexcept>
#include <string_view>

#include "model/pretokenizer.hpp"

namespace parley {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Pieces, scores and token types; SentencePiece pieces get real spaces.
void read_tokens(const GgufFile& f, int model_vocab, Vocab& v) {
  v.pieces = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.pieces.size();
  if (n == 0 || n > static_cast<size_t>(model_vocab))
    f.fail("tokenizer.ggml.tokens has " + std::to_string(n) + " tokens for a model vocab of " +
           std::to_string(model_vocab));
  if (v.kind == TokenizerKind::SentencePiece)
    for (auto& p : v.pieces) replace_all(p, kSpmSpace, " ");
  v.scores = f.has("tokenizer.ggml.scores") ? f.get_float_array("tokenizer.ggml.scores") : std::vector<float>(n);
  if (v.scores.size() != n) f.fail("tokenizer.ggml.scores and tokenizer.ggml.tokens differ in length");
  v.types.assign(n, TokenType::Normal);
  if (f.has("tokenizer.ggml.token_type")) {
    auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n) f.fail("tokenizer.ggml.token_type and tokenizer.ggml.tokens differ in length");
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > 6)
        f.fail("tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(types[i]) + " is unknown");
      v.types[i] = static_cast<TokenType>(types[i]);
    }
  }
}

// The special token ids, with llama.cpp's defaults for files without the keys (a default outside the vocabulary
// means none).
void read_special_ids(const GgufFile& f, Vocab& v) {
  const int64_t n = v.size();
  auto id = [&](const char* key, int32_t fallback) {
    if (!f.has(key)) return fallback < n ? fallback : -1;
    int64_t x = f.get_int(key);
    if (x < 0 || x >= n) f.fail(std::string("key '") + key + "' = " + std::to_string(x) + " is not a token id");
    return static_cast<int32_t>(x);
  };
  // SentencePiece files without the keys mean llama2's <unk>, <s>, </s>; BERT's [UNK], [CLS], [SEP] are 100-102.
  const bool spm = v.kind == TokenizerKind::SentencePiece, bert = v.kind == TokenizerKind::WordPiece;
  v.bos_id = id("tokenizer.ggml.bos_token_id", spm ? 1 : bert ? 101 : -1);
  v.eos_id = id("tokenizer.ggml.eos_token_id", spm ? 2 : -1);
  v.unk_id = id("tokenizer.ggml.unknown_token_id", spm ? 0 : bert ? 100 : -1);
  v.sep_id = id("tokenizer.ggml.seperator_token_id", bert ? 102 : -1);  // llama.cpp's spelling of the key
  v.eot_id = id("tokenizer.ggml.eot_token_id", -1);
  v.eom_id = id("tokenizer.ggml.eom_token_id", -1);
}

// What each kind reads beyond the tokens: merges and pre type, the normalizer, where special tokens go.
void read_kind_keys(const GgufFile& f, Vocab& v) {
  switch (v.kind) {
    case TokenizerKind::SentencePiece:
      v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", true);
      v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
      v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
      break;
    case TokenizerKind::Gpt2Bpe:
      v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", false);
      v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
      v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", false);
      if (f.has("tokenizer.ggml.merges")) v.merges = f.get_string_array("tokenizer.ggml.merges");
      if (v.merges.empty())
        f.fail("a gpt2 (byte-level BPE) vocabulary needs tokenizer.ggml.merges, which is missing or empty");
      v.pre = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "default";
      if (!find_pretokenizer(v.pre))
        f.fail("unknown pre-tokenizer type '" + v.pre + "' (tokenizer.ggml.pre; known: " + known_pretokenizers() + ")");
      break;
    case TokenizerKind::WordPiece:
      // llama.cpp's WPM tokenizer puts [CLS] before and [SEP] after the text whatever add_*_token say.
      v.add_bos = true;
      v.add_eos = false;
      v.add_sep = true;
      v.add_space_prefix = false;
      v.lowercase = f.get_bool("tokenizer.ggml.normalizer.lowercase", true);
      v.strip_accents = f.get_bool("tokenizer.ggml.normalizer.strip_accents", v.lowercase);
      v.pre = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "default";
      if (v.sep_id < 0) f.fail("a bert (WordPiece) vocabulary needs a [SEP] token (tokenizer.ggml.seperator_token_id)");
      break;
  }
  if (v.add_bos && v.bos_id < 0) f.fail("tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token");
}

const char* model_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::SentencePiece:
      return "llama";
    case TokenizerKind::Gpt2Bpe:
      return "gpt2";
    case TokenizerKind::WordPiece:
      return "bert";
  }
  return "llama";
}

}  // namespace

std::optional<Vocab> read_gguf_vocab(const GgufFile& f, int model_vocab) {
  if (!f.has("tokenizer.ggml.model")) return std::nullopt;
  const std::string& model = f.get_string("tokenizer.ggml.model");
  Vocab v;
  if (model == "llama")
    v.kind = TokenizerKind::SentencePiece;
  else if (model == "gpt2")
    v.kind = TokenizerKind::Gpt2Bpe;
  else if (model == "bert")
    v.kind = TokenizerKind::WordPiece;
  else if (model == "none" || model == "no_vocab")
    return std::nullopt;
  else
    f.fail("unsupported tokenizer model '" + model + "' (supported: llama, gpt2, bert)");
  read_tokens(f, model_vocab, v);
  read_special_ids(f, v);
  read_kind_keys(f, v);
  return v;
}

void write_gguf_vocab(GgufWriter& g, const Vocab& v) {
  if (v.scores.size() != v.pieces.size() || v.types.size() != v.pieces.size())
    throw std::invalid_argument("write_model_gguf: vocab pieces, scores and types differ in length");
  std::vector<std::string> tokens = v.pieces;
  if (v.kind == TokenizerKind::SentencePiece)  // SentencePiece files spell the space as U+2581
    for (auto& t : tokens) replace_all(t, " ", kSpmSpace);
  std::vector<int32_t> types;
  for (TokenType t : v.types) types.push_back(static_cast<int32_t>(t));
  g.set_string("tokenizer.ggml.model", model_name(v.kind));
  g.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  g.set("tokenizer.ggml.scores", GgufValue::floats(v.scores));
  g.set("tokenizer.ggml.token_type", GgufValue::int32s(types));
  if (v.kind != TokenizerKind::SentencePiece) g.set_string("tokenizer.ggml.pre", v.pre);
  if (v.kind == TokenizerKind::Gpt2Bpe) g.set("tokenizer.ggml.merges", GgufValue::strings(v.merges));
  auto set_id = [&](const char* key, int32_t id) {  // a token the vocabulary lacks has no key
    if (id >= 0) g.set_u32(key, static_cast<uint32_t>(id));
  };
  set_id("tokenizer.ggml.bos_token_id", v.bos_id);
  set_id("tokenizer.ggml.eos_token_id", v.eos_id);
  set_id("tokenizer.ggml.unknown_token_id", v.unk_id);
  set_id("tokenizer.ggml.seperator_token_id", v.sep_id);
  set_id("tokenizer.ggml.eot_token_id", v.eot_id);
  set_id("tokenizer.ggml.eom_token_id", v.eom_id);
  g.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  g.set_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  g.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (v.kind == TokenizerKind::WordPiece) {
    g.set_bool("tokenizer.ggml.add_sep_token", v.add_sep);
    g.set_bool("tokenizer.ggml.normalizer.lowercase", v.lowercase);
    g.set_bool("tokenizer.ggml.normalizer.strip_accents", v.strip_accents);
  }
}

}  // namespace parley
