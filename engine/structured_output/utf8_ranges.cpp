#include "engine/structured_output/utf8_ranges.hpp"

#include <string>

namespace parley::structured {
namespace {

int encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

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
  std::string a, b;
  append_utf8(a, lo);
  append_utf8(b, hi);
  ByteRangeSequence seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(uint8_t(a[size_t(i)]), uint8_t(b[size_t(i)]));
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<ByteRangeSequence> utf8_sequences(const CodepointSet& set) {
  static const CodepointSet kScalarValues = CodepointSet::all().minus(CodepointSet::range(0xD800, 0xDFFF));
  std::vector<ByteRangeSequence> out;
  const CodepointSet scalars = set.intersect(kScalarValues);  // named: a temporary's ranges() would dangle
  for (const auto& [lo, hi] : scalars.ranges()) split(uint32_t(lo), uint32_t(hi), out);
  return out;
}

}  // namespace parley::structured
