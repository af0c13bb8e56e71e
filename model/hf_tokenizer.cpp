// tokenizer.json -> Vocab, as llama.cpp's convert_hf_to_gguf.py maps a byte-level BPE tokenizer.
#include "model/hf_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "model/pretokenizer.hpp"

namespace parley {
namespace {

using json = nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error("'" + path + "' is not valid JSON: " + e.what());
  }
}

// A special token as tokenizer_config.json writes it: "text", {"content": "text"} or null.
std::string token_text(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// The Split patterns a pre_tokenizer applies, in order; ByteLevel(use_regex) adds GPT-2's.
void collect_patterns(const json& pre, const std::string& file, std::vector<std::string>& out) {
  if (pre.is_null()) return;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    for (const json& p : pre.at("pretokenizers")) collect_patterns(p, file, out);
  } else if (type == "Split") {
    const json& pattern = pre.at("pattern");
    if (!pattern.contains("Regex") || pre.value("behavior", "") != "Isolated" || pre.value("invert", false))
      throw std::runtime_error("'" + file + "': only Split pre-tokenizers with an isolated Regex are supported");
    out.push_back(pattern["Regex"].get<std::string>());
  } else if (type == "Digits") {
    if (!pre.value("individual_digits", false))
      throw std::runtime_error("'" + file + "': Digits(individual_digits = false) is not supported");
    out.push_back(R"(\p{N})");
  } else if (type == "ByteLevel") {
    if (pre.value("use_regex", true))
      out.push_back(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  } else {
    throw std::runtime_error("'" + file + "': pre-tokenizer type '" + type + "' is not supported");
  }
}

bool has_byte_level(const json& pre) {
  if (pre.is_null()) return false;
  if (pre.value("type", "") == "ByteLevel") return true;
  if (pre.value("type", "") == "Sequence")
    for (const json& p : pre.at("pretokenizers"))
      if (has_byte_level(p)) return true;
  return false;
}

}  // namespace

HfTokenizer import_hf_tokenizer(const std::string& dir, const std::string& pre) {
  const std::string tok_path = dir + "/tokenizer.json", config_path = dir + "/tokenizer_config.json";
  const json tok = read_json(tok_path);
  const json config = read_json(config_path);
  const json& model = tok.at("model");
  const json pre_tokenizer = tok.value("pre_tokenizer", json());
  if (model.value("type", "") != "BPE" || !has_byte_level(pre_tokenizer))
    throw std::runtime_error("'" + tok_path + "' is not a byte-level BPE tokenizer (model " + model.value("type", "?") +
                             "); SentencePiece vocabularies come from the model's own GGUF");
  const json normalizer = tok.value("normalizer", json());
  if (!normalizer.is_null() && normalizer.value("type", "") != "NFC")
    throw std::runtime_error("'" + tok_path + "': normalizer '" + normalizer.value("type", "?") + "' is not supported");

  HfTokenizer out;
  Vocab& v = out.vocab;
  v.kind = TokenizerKind::Gpt2Bpe;
  if (!pre.empty()) {
    if (!find_pretokenizer(pre)) throw std::runtime_error("unknown --pre '" + pre + "' (known: " + known_pretokenizers() + ")");
    v.pre = pre;
  } else {
    std::vector<std::string> patterns;
    collect_patterns(pre_tokenizer, tok_path, patterns);
    const PreTokenizerSpec* spec = pretokenizer_with_patterns(patterns);
    if (!spec) throw std::runtime_error("'" + tok_path + "': its pre-tokenizer patterns match no known type; name one with --pre");
    if (spec->nfc != !normalizer.is_null())
      throw std::runtime_error("'" + tok_path + "': the pre-tokenizer is '" + std::string(spec->names[0]) +
                               "' but the NFC normalizer does not match it; name the type with --pre");
    v.pre = spec->names[0];
  }

  // Ids: the model's vocab, then added tokens (special ones are control tokens); gaps are unused.
  int n = 0;
  for (const auto& [piece, id] : model.at("vocab").items()) n = std::max(n, id.get<int>() + 1);
  for (const json& t : tok.value("added_tokens", json::array())) n = std::max(n, t.at("id").get<int>() + 1);
  v.pieces.assign(n, "");
  v.types.assign(n, TokenType::Unused);
  v.scores.assign(n, 0.0f);
  for (const auto& [piece, id] : model.at("vocab").items()) {
    v.pieces[id.get<int>()] = piece;
    v.types[id.get<int>()] = TokenType::Normal;
  }
  for (const json& t : tok.value("added_tokens", json::array())) {
    const int id = t.at("id").get<int>();
    v.pieces[id] = t.at("content").get<std::string>();
    v.types[id] = t.value("special", false) ? TokenType::Control : TokenType::UserDefined;
  }
  for (int id = 0; id < n; ++id)
    if (v.types[id] == TokenType::Unused) v.pieces[id] = "[PAD" + std::to_string(id) + "]";  // llama.cpp's filler

  for (const json& m : model.at("merges")) {
    if (m.is_string()) v.merges.push_back(m.get<std::string>());
    else v.merges.push_back(m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());  // ["a", "b"] form
  }

  auto id_of = [&](const std::string& text) {
    if (text.empty()) return -1;
    for (int id = 0; id < n; ++id)
      if (v.pieces[id] == text) return id;
    throw std::runtime_error("'" + config_path + "' names the token '" + text + "', which is not in the vocabulary");
  };
  v.bos_id = id_of(token_text(config, "bos_token"));
  v.eos_id = id_of(token_text(config, "eos_token"));
  v.unk_id = model.contains("unk_token") && model["unk_token"].is_string() ? id_of(model["unk_token"]) : -1;
  // add_bos as the config says, else as the post-processor does (a template that starts with BOS).
  bool post_adds_bos = false;
  const json post = tok.value("post_processor", json());
  if (!post.is_null() && v.bos_id >= 0) post_adds_bos = post.dump().find("\"" + v.pieces[v.bos_id] + "\"") != std::string::npos;
  v.add_bos = config.contains("add_bos_token") && config["add_bos_token"].is_boolean() ? config["add_bos_token"].get<bool>()
                                                                                         : post_adds_bos;
  v.add_eos = config.value("add_eos_token", false);
  if (v.add_bos && v.bos_id < 0) throw std::runtime_error("'" + config_path + "' adds a BOS token but names none");
  v.add_space_prefix = pre_tokenizer.dump().find("\"add_prefix_space\":true") != std::string::npos;

  if (config.contains("chat_template")) {
    const json& t = config["chat_template"];
    if (t.is_string()) out.chat_template = t.get<std::string>();
    else if (t.is_array())
      for (const json& named : t)
        if (named.value("name", "") == "default") out.chat_template = named.value("template", "");
  }
  return out;
}

}  // namespace parley
