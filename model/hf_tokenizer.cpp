// tokenizer.json -> Vocab, as llama.cpp's convert_hf_to_gguf.py maps a byte-level BPE tokenizer.
#include "model/hf_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <unordered_map>
#include <stdexcept>

#include "model/pretokenizer.hpp"
#include "model/wordpiece.hpp"

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
    // Removed + invert keeps the matches and drops the rest: Isolated for a pattern that matches every
    // character, as gpt-4o's does (the pattern must then be a known type's, which is checked below).
    const std::string behavior = pre.value("behavior", "");
    const bool isolated = behavior == "Isolated" && !pre.value("invert", false);
    const bool kept_matches = behavior == "Removed" && pre.value("invert", false);
    if (!pattern.contains("Regex") || !(isolated || kept_matches))
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

// SentencePiece-style BPE (byte_fallback, "▁" for space: Llama 2, Mistral, Gemma): a normalizer that
// replaces ' ' with '▁' (after prepending one: the dummy prefix), and no pre-tokenizer that splits.
bool read_sentencepiece_normalizer(const json& normalizer, const std::string& file) {
  auto is_replace = [](const json& n) {
    return n.value("type", "") == "Replace" && n.at("pattern").value("String", "") == " " &&
           n.value("content", "") == "\xE2\x96\x81";
  };
  if (is_replace(normalizer)) return false;
  if (normalizer.value("type", "") == "Sequence") {
    const json& steps = normalizer.at("normalizers");
    if (steps.size() == 2 && steps[0].value("type", "") == "Prepend" &&
        steps[0].value("prepend", "") == "\xE2\x96\x81" && is_replace(steps[1]))
      return true;
  }
  throw std::runtime_error("'" + file +
                           "': a SentencePiece-style normalizer other than Replace(' ', '▁') with an "
                           "optional Prepend('▁') is not supported");
}

void read_sentencepiece(const json& tok, const std::string& file, Vocab& v) {
  v.kind = TokenizerKind::SentencePiece;
  v.add_space_prefix = read_sentencepiece_normalizer(tok.value("normalizer", json()), file);
  const json pre = tok.value("pre_tokenizer", json());
  const bool no_op_split =
      !pre.is_null() && pre.value("type", "") == "Split" && pre.at("pattern").value("String", "") == " ";
  if (!pre.is_null() && !no_op_split)  // after the normalizer there are no spaces left to split on
    throw std::runtime_error("'" + file + "': pre-tokenizer '" + pre.value("type", "?") +
                             "' is not supported for a SentencePiece-style vocabulary");
  static constexpr std::string_view kSpace = "\xE2\x96\x81";
  std::unordered_map<std::string, int> id_of;
  for (int id = 0; id < v.size(); ++id) id_of.emplace(v.pieces[id], id);
  // A merged piece scores minus its merge's rank, so SentencePiece's highest-score-first order is the
  // merges' order; a piece no merge makes never forms from a pair (scored below run.c's floor).
  std::fill(v.scores.begin(), v.scores.end(), -1e30f);
  int rank = 0;
  for (const json& m : tok.at("model").at("merges")) {
    const std::string joined = m.is_string()
                                   ? std::string(m.get<std::string>()).erase(m.get<std::string>().find(' '), 1)
                                   : m.at(0).get<std::string>() + m.at(1).get<std::string>();
    if (auto it = id_of.find(joined); it != id_of.end() && v.scores[it->second] < -1e29f)
      v.scores[it->second] = -static_cast<float>(rank);
    ++rank;
  }
  for (int id = 0; id < v.size(); ++id) {
    std::string& p = v.pieces[id];
    if (v.types[id] == TokenType::Normal && p.size() == 6 && p.starts_with("<0x") && p.back() == '>')
      v.types[id] = TokenType::Byte;
    if (v.types[id] == TokenType::Normal)
      for (size_t at = p.find(kSpace); at != std::string::npos; at = p.find(kSpace, at + 1))
        p.replace(at, kSpace.size(), " ");
  }
}

void read_byte_level(const json& tok, const std::string& file, const std::string& pre, Vocab& v) {
  v.kind = TokenizerKind::Gpt2Bpe;
  const json pre_tokenizer = tok.value("pre_tokenizer", json());
  json normalizer = tok.value("normalizer", json());
  if (normalizer.is_object() && normalizer.value("type", "") == "Sequence" && normalizer.at("normalizers").empty())
    normalizer = json();  // a no-op
  if (!normalizer.is_null() && normalizer.value("type", "") != "NFC")
    throw std::runtime_error("'" + file + "': normalizer '" + normalizer.value("type", "?") + "' is not supported");
  if (!pre.empty()) {
    if (!find_pretokenizer(pre))
      throw std::runtime_error("unknown --pre '" + pre + "' (known: " + known_pretokenizers() + ")");
    v.pre = pre;
  } else {
    std::vector<std::string> patterns;
    collect_patterns(pre_tokenizer, file, patterns);
    const PreTokenizerSpec* spec = pretokenizer_with_patterns(patterns);
    if (!spec)
      throw std::runtime_error("'" + file + "': its pre-tokenizer patterns match no known type; name one with --pre");
    if (spec->nfc != !normalizer.is_null())
      throw std::runtime_error("'" + file + "': the pre-tokenizer is '" + std::string(spec->names[0]) +
                               "' but the NFC normalizer does not match it; name the type with --pre");
    v.pre = spec->names[0];
  }
  for (const json& m : tok.at("model").at("merges")) {
    if (m.is_string())
      v.merges.push_back(m.get<std::string>());
    else
      v.merges.push_back(m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());  // ["a", "b"] form
  }
  v.add_space_prefix = pre_tokenizer.dump().find("\"add_prefix_space\":true") != std::string::npos;
}

// A BERT special token the config names, else BertTokenizer's default ("[CLS]" for cls_token).
std::string bert_special(const json& config, const std::string& key) {
  if (config.contains(key)) return token_text(config, key.c_str());
  std::string text = key.substr(0, key.find('_'));
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "[" + text + "]";
}

// BERT's normalizer flags, as llama.cpp carries them: its WPM tokenizer always cleans the text and isolates CJK.
void read_bert_normalizer(const json& normalizer, const std::string& file, Vocab& v) {
  if (normalizer.value("type", "") != "BertNormalizer" || !normalizer.value("clean_text", true) ||
      !normalizer.value("handle_chinese_chars", true))
    throw std::runtime_error("'" + file + "': a WordPiece vocabulary needs a BertNormalizer that cleans the text and " +
                             "isolates CJK characters");
  v.lowercase = normalizer.value("lowercase", true);
  const json strip = normalizer.value("strip_accents", json());
  v.strip_accents = strip.is_boolean() ? strip.get<bool>() : v.lowercase;  // null: as lowercase
}

// A WordPiece vocabulary (BERT, BGE, MiniLM, E5) as llama.cpp's converter writes it: a word's first piece gets
// the U+2581 prefix, a "##" continuation loses its "##"; [CLS] text [SEP] with add_special.
void read_wordpiece(const json& tok, const json& config, const std::string& file, Vocab& v) {
  v.kind = TokenizerKind::WordPiece;
  read_bert_normalizer(tok.value("normalizer", json()), file, v);
  const json pre = tok.value("pre_tokenizer", json());
  if (pre.value("type", "") != "BertPreTokenizer")
    throw std::runtime_error("'" + file + "': a WordPiece vocabulary needs the BertPreTokenizer");
  const json& model = tok.at("model");
  if (model.value("continuing_subword_prefix", "##") != "##" ||
      model.value("max_input_chars_per_word", 100) != static_cast<int>(WordPiece::kMaxWordChars))
    throw std::runtime_error("'" + file + "': WordPiece needs the prefix '##' and words of at most 100 characters");
  auto id_of = [&](const char* key) {
    const std::string text = bert_special(config, key);
    for (int id = 0; id < v.size() && !text.empty(); ++id)
      if (v.pieces[id] == text) return id;
    return -1;
  };
  v.bos_id = v.bos_id >= 0 ? v.bos_id : id_of("cls_token");
  v.sep_id = id_of("sep_token");
  if (v.bos_id < 0 || v.sep_id < 0)
    throw std::runtime_error("'" + file +
                             "': a WordPiece vocabulary needs its [CLS] and [SEP] tokens (cls_token, sep_token)");
  v.eos_id = v.eos_id >= 0 ? v.eos_id : v.sep_id;  // as the converter makes [SEP] the EOS
  v.add_bos = true;
  v.add_eos = false;
  v.add_sep = true;
  v.add_space_prefix = false;
  for (int id = 0; id < v.size(); ++id) {
    std::string& p = v.pieces[id];
    if (v.types[id] != TokenType::Normal) continue;
    p = p.starts_with("##") ? p.substr(2) : "\xE2\x96\x81" + p;
  }
}

// The tokenizer.json that Hugging Face's BertTokenizerFast builds from a vocab.txt (one piece a line, ids in line
// order) and the config's do_lower_case, strip_accents, tokenize_chinese_chars and special tokens.
json bert_tokenizer_json(const std::string& vocab_path, const json& config) {
  std::ifstream in(vocab_path);
  if (!in) throw std::runtime_error("cannot open '" + vocab_path + "'");
  json vocab = json::object();
  int id = 0;
  for (std::string line; std::getline(in, line); ++id) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    vocab[line] = id;
  }
  json added = json::array();
  for (const char* key : {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"}) {
    const std::string text = bert_special(config, key);
    if (vocab.contains(text)) added.push_back({{"id", vocab[text]}, {"content", text}, {"special", true}});
  }
  const bool lowercase = config.value("do_lower_case", true);
  return {{"added_tokens", added},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"lowercase", lowercase},
            {"strip_accents", config.value("strip_accents", json())},
            {"handle_chinese_chars", config.value("tokenize_chinese_chars", true)}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model", {{"type", "WordPiece"}, {"unk_token", bert_special(config, "unk_token")}, {"vocab", vocab}}}};
}

// tokenizer_config.json's chat_template: a string, or the "default" of a list of named ones; "" if none.
std::string chat_template_of(const json& config) {
  const json t = config.value("chat_template", json());
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array())
    for (const json& named : t)
      if (named.value("name", "") == "default") return named.value("template", "");
  return "";
}

}  // namespace

HfTokenizer import_hf_tokenizer(const std::string& dir, const std::string& pre) {
  const std::string config_path = dir + "/tokenizer_config.json";
  const json config = read_json(config_path);
  // An older BERT folder has a vocab.txt and no tokenizer.json.
  const bool vocab_txt = !std::ifstream(dir + "/tokenizer.json") && std::ifstream(dir + "/vocab.txt");
  const std::string tok_path = dir + (vocab_txt ? "/vocab.txt" : "/tokenizer.json");
  const json tok = vocab_txt ? bert_tokenizer_json(tok_path, config) : read_json(tok_path);
  const json& model = tok.at("model");
  const bool wordpiece = model.value("type", "") == "WordPiece";
  const bool byte_level = !wordpiece && has_byte_level(tok.value("pre_tokenizer", json()));
  const bool sentencepiece = !wordpiece && !byte_level && model.value("byte_fallback", false);
  if (!wordpiece && (model.value("type", "") != "BPE" || (!byte_level && !sentencepiece)))
    throw std::runtime_error("'" + tok_path +
                             "' is neither a WordPiece nor a byte-level or SentencePiece-style BPE tokenizer (model " +
                             model.value("type", "?") + ")");
  if (!byte_level && !pre.empty()) throw std::runtime_error("--pre applies to byte-level BPE vocabularies only");

  HfTokenizer out;
  Vocab& v = out.vocab;
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
    const std::string content = t.at("content").get<std::string>();
    const bool special = t.value("special", false);
    // Added tokens match the raw text (normalized: false), where no '▁' occurs: one spelled with it that is
    // also the model's own piece (Gemma's "▁▁") stays a piece only merges make.
    if (!special && v.types[id] == TokenType::Normal && v.pieces[id] == content &&
        content.find("\xE2\x96\x81") != std::string::npos)
      continue;
    v.pieces[id] = content;
    v.types[id] = special ? TokenType::Control : TokenType::UserDefined;
  }
  for (int id = 0; id < n; ++id)
    if (v.types[id] == TokenType::Unused) v.pieces[id] = "[PAD" + std::to_string(id) + "]";  // llama.cpp's filler

  auto id_of = [&](const std::string& text) {
    if (text.empty()) return -1;
    for (int id = 0; id < n; ++id)
      if (v.pieces[id] == text) return id;
    throw std::runtime_error("'" + config_path + "' names the token '" + text + "', which is not in the vocabulary");
  };
  v.bos_id = id_of(token_text(config, "bos_token"));
  v.eos_id = id_of(token_text(config, "eos_token"));
  v.unk_id = model.contains("unk_token") && model["unk_token"].is_string() ? id_of(model["unk_token"]) : -1;
  if (v.unk_id >= 0 && !wordpiece) v.types[v.unk_id] = TokenType::Unknown;  // BERT's [UNK] stays a control token
  // add_bos as the config says, else as the post-processor does (a template that starts with BOS).
  bool post_adds_bos = false;
  const json post = tok.value("post_processor", json());
  if (!post.is_null() && v.bos_id >= 0)
    post_adds_bos = post.dump().find("\"" + v.pieces[v.bos_id] + "\"") != std::string::npos;
  v.add_bos = config.contains("add_bos_token") && config["add_bos_token"].is_boolean()
                  ? config["add_bos_token"].get<bool>()
                  : post_adds_bos;
  v.add_eos = config.value("add_eos_token", false);
  if (v.add_bos && v.bos_id < 0) throw std::runtime_error("'" + config_path + "' adds a BOS token but names none");

  if (wordpiece)
    read_wordpiece(tok, config, tok_path, v);
  else if (sentencepiece)
    read_sentencepiece(tok, tok_path, v);
  else
    read_byte_level(tok, tok_path, pre, v);

  out.chat_template = chat_template_of(config);
  return out;
}

}  // namespace parley
