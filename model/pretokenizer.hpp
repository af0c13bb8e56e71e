// Byte-level BPE pre-tokenization: the text is split into words by the regexes of a GGUF
// `tokenizer.ggml.pre` type (llama.cpp's names, Hugging Face's tokenizer.json patterns), then each
// word is merged on its own. Unicode classes (\p{L}, \p{N}, ...) come from PCRE2 (UTF + UCP, JIT).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace parley {

// One row per family of pre values: its regexes, applied in turn as Hugging Face's Sequence of
// Split(behavior = Isolated) does (each splits every piece the previous one left, keeping the text
// between matches as pieces of its own).
struct PreTokenizerSpec {
  std::vector<std::string_view> names;  // tokenizer.ggml.pre values (first: the canonical one)
  std::vector<std::string_view> patterns;
  bool ignore_merges = false;  // a word that is already a token is that token (Llama 3, Tekken)
  bool nfc = false;            // Hugging Face normalizes to NFC first (Qwen2's normalizer)
};

// The spec for a pre value, nullptr when unknown.
const PreTokenizerSpec* find_pretokenizer(std::string_view pre);
// The known pre values, comma-separated, for error messages.
std::string known_pretokenizers();
// The spec whose patterns are exactly these (a tokenizer.json's Split regexes), nullptr if none.
const PreTokenizerSpec* pretokenizer_with_patterns(const std::vector<std::string>& patterns);

class PreTokenizer {
 public:
  // Throws std::invalid_argument naming an unknown pre value or a pattern PCRE2 refuses.
  explicit PreTokenizer(std::string_view pre);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // The words of text, in order; they concatenate back to text (after NFC when the spec asks).
  // Invalid UTF-8 never matches a pattern, so its bytes become words of their own.
  std::vector<std::string> split(std::string_view text) const;

  const PreTokenizerSpec& spec() const { return *spec_; }

 private:
  struct Compiled;
  const PreTokenizerSpec* spec_;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

// NFC normalization (utf8proc); text that is not valid UTF-8 is returned unchanged.
std::string nfc_normalize(std::string_view text);

}  // namespace parley
