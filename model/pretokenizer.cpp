// Pre-tokenizer regexes per tokenizer.ggml.pre value, run with PCRE2's JIT.
#include "model/pretokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>
#include <stdexcept>

namespace parley {
namespace {

// The patterns as the models' tokenizer.json files spell them (llama.cpp rewrites some for its own
// regex engine; PCRE2 runs the originals).
constexpr std::string_view kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|)"
    R"(\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek V3's tokenizer.json spells CR and LF as the characters themselves (so its patterns compare equal).
constexpr std::string_view kDeepseekV3Words = R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^)"
                                              "\r\n"
                                              R"(\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[)"
                                              "\r\n"
                                              R"(]*|\s*[)"
                                              "\r\n"
                                              R"(]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDeepseekLlmLatin =
    R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝ)"
    R"(Ὗ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ)"
    R"(𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";
constexpr std::string_view kCjkHangul = R"([一-龥ࠀ-一가-퟿]+)";
constexpr std::string_view kGpt2NoTail = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

const std::vector<PreTokenizerSpec>& specs() {
  static const std::vector<PreTokenizerSpec> table = {
      {{"llama-bpe", "llama3", "llama-v3", "falcon3"}, {kLlama3}, true, false},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}, false, false},
      {{"qwen2", "deepseek-r1-qwen", "megrez"}, {kQwen2}, false, true},
      {{"stablelm2"}, {kQwen2}, false, false},
      {{"gpt-2", "phi-2", "roberta-bpe", "mpt", "olmo", "jais", "gigachat", "jina-es", "jina-de"},
       {kGpt2},
       false,
       false},
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2},
       false,
       false},
      {{"tekken"}, {kTekken}, true, false},
      {{"gpt-4o", "llama4"}, {kGpt4o}, false, false},
      {{"deepseek-v3"}, {R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", kDeepseekV3Words}, false, false},
      {{"deepseek-llm"},
       {R"([\r\n])", kDeepseekLlmLatin, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", kCjkHangul, R"(\p{N}+)"},
       false,
       false},
      {{"deepseek-coder"}, {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjkHangul, R"(\p{N})"}, false, false},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2NoTail, "[0-9][0-9][0-9]"}, false, false},
      {{"bloom", "poro-chat", "gpt3-finnish"}, {kBloom}, false, false},
      {{"viking"}, {kBloom, R"(\p{N})"}, false, false},
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2NoTail, R"(\p{N}+)", "[0-9][0-9][0-9]"}, false, false},
  };
  return table;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

const PreTokenizerSpec* find_pretokenizer(std::string_view pre) {
  for (const auto& s : specs())
    for (auto name : s.names)
      if (name == pre) return &s;
  return nullptr;
}

std::string known_pretokenizers() {
  std::string out;
  for (const auto& s : specs())
    for (auto name : s.names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

const PreTokenizerSpec* pretokenizer_with_patterns(const std::vector<std::string>& patterns) {
  for (const auto& s : specs()) {
    if (s.patterns.size() != patterns.size()) continue;
    bool same = true;
    for (size_t i = 0; i < patterns.size() && same; ++i) same = s.patterns[i] == patterns[i];
    if (same) return &s;
  }
  return nullptr;
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(std::string_view pre) : spec_(find_pretokenizer(pre)) {
  if (!spec_)
    throw std::invalid_argument("unknown pre-tokenizer type '" + std::string(pre) +
                                "' (tokenizer.ggml.pre; known: " + known_pretokenizers() + ")");
  for (auto pattern : spec_->patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto compiled = std::make_unique<Compiled>();
    // MATCH_INVALID_UTF: invalid bytes never match and never fail the match, so any bytes split.
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
    if (!compiled->code)
      throw std::invalid_argument("pre-tokenizer '" + std::string(pre) + "': PCRE2 refuses pattern at offset " +
                                  std::to_string(offset) + ": " + pcre2_message(error));
    pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported CPU) it still matches
    regexes_.push_back(std::move(compiled));
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<std::string> PreTokenizer::split(std::string_view input) const {
  std::vector<std::string> words;
  const std::string text = spec_->nfc ? nfc_normalize(input) : std::string(input);
  if (text.empty()) return words;
  words.push_back(text);
  for (const auto& regex : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    std::vector<std::string> next;
    next.reserve(words.size() * 2);
    for (const std::string& word : words) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(word.data());
      size_t pos = 0, start = 0;
      while (start < word.size()) {
        const int rc = pcre2_match(regex->code, subject, word.size(), start, 0, md, nullptr);
        if (rc < 0) break;  // no more matches (or a match limit: the rest stays one piece)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t begin = ov[0], end = ov[1];
        if (end == begin) {  // an empty match splits nothing; move one byte on
          start = begin + 1;
          continue;
        }
        if (begin > pos) next.emplace_back(word, pos, begin - pos);
        next.emplace_back(word, begin, end - begin);
        pos = start = end;
      }
      if (pos < word.size()) next.emplace_back(word, pos);
    }
    pcre2_match_data_free(md);
    words = std::move(next);
  }
  return words;
}

std::string nfc_normalize(std::string_view text) {
  utf8proc_uint8_t* out = nullptr;
  const auto n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(text);  // not valid UTF-8: nothing to normalize
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

}  // namespace parley
