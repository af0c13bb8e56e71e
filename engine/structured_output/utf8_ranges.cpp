#include "engine/structured_output/utf8_ranges.hpp"

#include <algorithm>

namespace parley::structured {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF, kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t* out) {
  const int n = encoded_length(cp);
  if (n == 1) { out[0] = uint8_t(cp); return; }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) out[i] = uint8_t(0x80 | (cp & 0x3F)), cp >>= 6;
  out[0] = uint8_t(kLead[n] | cp);
}

// lo..hi of one encoded length: split until every byte position is an independent range.
void split(uint32_t lo, uint32_t hi, std::vector<ByteRangeSequence>& out) {
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu})
    if (lo <= boundary && hi > boundary) {
      split(lo, boundary, out);
      split(boundary + 1, hi, out);
      return;
    }
  const int n = encoded_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  ByteRangeSequence seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

}  // namespace

CodePointRanges normalize_ranges(CodePointRanges ranges) {
  CodePointRanges clipped;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) continue;
    if (lo < kSurrogateLo && hi >= kSurrogateLo) clipped.emplace_back(lo, kSurrogateLo - 1);
    if (hi > kSurrogateHi && lo <= kSurrogateHi) clipped.emplace_back(kSurrogateHi + 1, hi);
    if (hi < kSurrogateLo || lo > kSurrogateHi) clipped.emplace_back(lo, hi);
  }
  std::sort(clipped.begin(), clipped.end());
  CodePointRanges merged;
  for (const auto& r : clipped)
    if (!merged.empty() && r.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  return merged;
}

CodePointRanges complement_ranges(const CodePointRanges& ranges) {
  CodePointRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalize_ranges(ranges)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return normalize_ranges(out);
}

std::vector<ByteRangeSequence> utf8_sequences(const CodePointRanges& normalized) {
  std::vector<ByteRangeSequence> out;
  for (const auto& [lo, hi] : normalized) split(lo, hi, out);
  return out;
}

}  // namespace parley::structured
