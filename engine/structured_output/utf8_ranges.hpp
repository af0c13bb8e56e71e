// Code-point sets as UTF-8 byte-range sequences: the standard split (as in Rust's regex-syntax
// Utf8Sequences) so a grammar over bytes accepts exactly the encodings of a character class.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"

namespace parley::structured {

using ByteRangeSequence = std::vector<std::pair<uint8_t, uint8_t>>;  // one inclusive range per byte

// Byte-range sequences whose concatenations are exactly the UTF-8 encodings of the set's code points
// (surrogates U+D800..U+DFFF have none).
std::vector<ByteRangeSequence> utf8_sequences(const CodepointSet& set);

}  // namespace parley::structured
