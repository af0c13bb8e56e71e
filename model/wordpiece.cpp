// BERT's normalizer and pre-tokenizer on utf8proc's Unicode tables, and WordPiece's greedy longest match, as
// Hugging Face's tokenizers (normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece) define them.
#include "model/wordpiece.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace parley {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581: llama.cpp's mark of a word's first piece

utf8proc_category_t category(utf8proc_int32_t cp) { return static_cast<utf8proc_category_t>(utf8proc_category(cp)); }

// Rust's char::is_whitespace (the White_Space property), which BERT's pre-tokenizer splits on.
bool is_whitespace(utf8proc_int32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// BERT's control characters (categories Cc, Cf, Co), which its normalizer drops; tab and newlines are spaces.
bool is_control(utf8proc_int32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO;
}

// Every ASCII symbol counts as punctuation ("$", "+", "^"), as BERT's original tokenizer had it.
bool is_punctuation(utf8proc_int32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  const utf8proc_category_t c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The CJK Unified Ideographs blocks BERT isolates (Hugging Face's ranges, 0x2B920 start included).
bool is_cjk(utf8proc_int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void append_utf8(std::string& out, utf8proc_int32_t cp) {
  utf8proc_uint8_t buf[4];
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(utf8proc_encode_char(cp, buf)));
}

// Calls f on each code point of valid UTF-8 text.
template <typename F>
void for_each_code_point(std::string_view text, F f) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (std::size_t at = 0; at < text.size();) {
    utf8proc_int32_t cp = -1;
    const utf8proc_ssize_t n = utf8proc_iterate(p + at, static_cast<utf8proc_ssize_t>(text.size() - at), &cp);
    if (n <= 0) {  // an invalid byte: skipped, as the cleaning drops U+FFFD
      ++at;
      continue;
    }
    f(cp);
    at += static_cast<std::size_t>(n);
  }
}

// The first two normalizer steps: controls dropped, whitespace made ' ', CJK ideographs set apart by spaces.
std::string clean_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_code_point(text, [&](utf8proc_int32_t cp) {
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) return;
    if (is_whitespace(cp)) {
      out += ' ';
    } else if (is_cjk(cp)) {
      out += ' ';
      append_utf8(out, cp);
      out += ' ';
    } else {
      append_utf8(out, cp);
    }
  });
  return out;
}

// Canonical decomposition (NFD) of valid UTF-8.
std::string nfd(const std::string& text) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
  if (n < 0) return text;  // unreachable: clean_text wrote valid UTF-8
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(n));
}

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::size_t char_count(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return !is_continuation_byte(c); }));
}

}  // namespace

std::vector<std::string> bert_words(std::string_view text, const BertNormalizerOptions& options) {
  std::string normalized = clean_text(text);
  if (options.strip_accents) normalized = nfd(normalized);
  std::vector<std::string> words;
  std::string word;
  auto finish_word = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  auto split = [&](utf8proc_int32_t cp) {
    if (is_whitespace(cp)) {
      finish_word();
    } else if (is_punctuation(cp)) {
      finish_word();
      append_utf8(word, cp);
      finish_word();
    } else {
      append_utf8(word, cp);
    }
  };
  for_each_code_point(normalized, [&](utf8proc_int32_t cp) {
    if (options.strip_accents && category(cp) == UTF8PROC_CATEGORY_MN) return;
    if (!options.lowercase) return split(cp);
    if (cp == 0x130) {  // İ is the one letter whose full lowercase mapping is two code points (i, U+0307)
      split('i');
      return split(0x307);
    }
    split(utf8proc_tolower(cp));
  });
  finish_word();
  return words;
}

WordPiece::WordPiece(const Vocab& vocab) : normalizer_{vocab.lowercase, vocab.strip_accents}, unk_id_(vocab.unk_id) {
  piece_to_id_.reserve(vocab.pieces.size());
  for (int id = 0; id < vocab.size(); ++id) {
    const std::string& piece = vocab.pieces[id];
    if (piece.empty()) continue;
    piece_to_id_.try_emplace(piece, id);
    longest_piece_ = std::max(longest_piece_, piece.size());
  }
}

void WordPiece::encode(std::string_view text, std::vector<int>& out) const {
  for (const std::string& word : bert_words(text, normalizer_)) encode_word(word, out);
}

void WordPiece::encode_word(const std::string& word, std::vector<int>& out) const {
  const std::size_t first = out.size();
  auto unknown = [&] {
    out.resize(first);
    if (unk_id_ >= 0) out.push_back(unk_id_);
  };
  if (char_count(word) > kMaxWordChars) return unknown();
  std::string key;
  for (std::size_t start = 0; start < word.size();) {
    const std::string_view prefix = start == 0 ? kWordStart : std::string_view();
    if (longest_piece_ <= prefix.size()) return unknown();
    // Continuing with a U+2581 would find a word's first piece ("x▁x" is not "▁x" twice), where BERT finds no "##▁x".
    if (start > 0 && std::string_view(word).substr(start).starts_with(kWordStart)) return unknown();
    // The longest piece that starts here, trying ends from the farthest a piece can reach, on character boundaries.
    std::size_t stop = std::min(word.size(), start + (longest_piece_ - prefix.size()));
    int id = -1;
    for (; stop > start; --stop) {
      if (stop < word.size() && is_continuation_byte(word[stop])) continue;
      key.assign(prefix);
      key.append(word, start, stop - start);
      if (auto it = piece_to_id_.find(key); it != piece_to_id_.end()) {
        id = it->second;
        break;
      }
    }
    if (id < 0) return unknown();
    out.push_back(id);
    start = stop;
  }
}

std::string WordPiece::piece_text(std::string_view piece) {
  std::string text(piece);
  for (std::size_t at = text.find(kWordStart); at != std::string::npos; at = text.find(kWordStart, at + 1))
    text.replace(at, kWordStart.size(), " ");
  return text;
}

}  // namespace parley
