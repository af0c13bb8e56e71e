// Streams token bytes out as whole UTF-8, replacing ill-formed sequences by U+FFFD.
#include "model/detokenizer.hpp"

#include <cstddef>
#include <string_view>

namespace parley {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the sequence a lead byte announces and the allowed range of its second byte
// (Unicode Table 3-7, which excludes overlongs, surrogates and code points above U+10FFFF).
struct LeadInfo {
  int length;  // 0: the byte can never start a sequence
  unsigned char lo, hi;
};

LeadInfo lead_info(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Moves the whole-UTF-8 prefix of `pending` to the result, each maximal ill-formed subpart
// replaced by one U+FFFD (the W3C/Unicode practice). A tail that may still become valid stays in
// `pending` unless `at_end`, when it too becomes U+FFFD.
std::string take_complete(std::string& pending, bool at_end) {
  std::string out;
  std::size_t i = 0;
  const std::size_t n = pending.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(pending[i]);
    const LeadInfo info = lead_info(b);
    if (info.length == 1) {
      out.push_back(pending[i++]);
      continue;
    }
    if (info.length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    // Count how many following bytes are valid continuations for this lead.
    std::size_t j = i + 1;
    bool broken = false;
    for (int k = 1; k < info.length && j < n; ++k, ++j) {
      const auto c = static_cast<unsigned char>(pending[j]);
      const unsigned char lo = k == 1 ? info.lo : 0x80, hi = k == 1 ? info.hi : 0xBF;
      if (c < lo || c > hi) {
        broken = true;
        break;
      }
    }
    if (!broken && j - i == static_cast<std::size_t>(info.length)) {
      out.append(pending, i, j - i);
    } else if (!broken && !at_end) {
      break;  // incomplete but still possibly valid: wait for more bytes
    } else {
      out += kReplacement;  // the offending byte (if any) is examined afresh at j
    }
    i = j;
  }
  pending.erase(0, i);
  return out;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, int prev_token, bool special_text)
    : tokenizer_(&tokenizer), prev_(prev_token), special_text_(special_text) {}

std::string IncrementalDetokenizer::push(int token) {
  pending_ += tokenizer_->token_bytes(prev_, token, special_text_);
  prev_ = token;
  return take_complete(pending_, false);
}

std::string IncrementalDetokenizer::flush() {
  std::string out = take_complete(pending_, true);
  pending_.clear();
  return out;
}

}  // namespace parley
