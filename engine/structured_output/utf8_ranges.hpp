// Code-point ranges as UTF-8 byte-range sequences: the standard split (as in Rust's regex-syntax
// Utf8Sequences) so a grammar over bytes accepts exactly the encodings of a character class.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace parley::structured {

using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive, any order
using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;  // one inclusive range per byte

// Sorted, merged, surrogates (U+D800..U+DFFF) and anything past U+10FFFF removed.
CodePointRanges normalize_ranges(CodePointRanges ranges);
// Everything in U+0000..U+10FFFF (minus surrogates) not in `ranges`.
CodePointRanges complement_ranges(const CodePointRanges& ranges);
// Byte-range sequences whose concatenations are exactly the UTF-8 encodings of the normalized ranges.
std::vector<ByteRangeSequence> utf8_sequences(const CodePointRanges& normalized);

}  // namespace parley::structured
