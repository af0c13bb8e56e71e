// Code points for Python's str semantics (len, indexing, case, whitespace) over UTF-8 text.
#pragma once
#include <string>
#include <string_view>

namespace parley::jinja::utf8 {

// Invalid bytes decode to U+DC80..U+DCFF (Python's surrogateescape) and encode back to the same byte,
// so text that is not UTF-8 survives a round trip unchanged.
std::u32string decode(std::string_view text);
// The code point at text[pos] and the bytes it takes (an invalid byte: its escape, 1 byte); pos < text.size().
std::size_t decode_one(std::string_view text, std::size_t pos, char32_t& code_point);
std::string encode(std::u32string_view code_points);
void append(std::string& out, char32_t code_point);

bool is_ascii(std::string_view text);
std::size_t length(std::string_view text);  // in code points

bool is_space(char32_t c);       // Python's str.isspace (also re's \s)
bool is_line_break(char32_t c);  // Python's str.splitlines boundaries
bool is_digit(char32_t c);
bool is_alpha(char32_t c);  // letters of the scripts upper/lower know, and any other non-ASCII letter-like code point
// Simple case mappings for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; other code points map to themselves.
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
inline bool is_cased(char32_t c) { return to_upper(c) != c || to_lower(c) != c; }

std::string upper(std::string_view text);
std::string lower(std::string_view text);

}  // namespace parley::jinja::utf8
