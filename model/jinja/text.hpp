// Python str operations on UTF-8 text, shared by string methods and filters.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parley::jinja::text {

// str.strip/lstrip/rstrip: `chars` null strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split/rsplit: `separator` null splits on runs of whitespace; max_splits < 0 is unlimited.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& separator, long max_splits,
                               bool from_right);
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, long max_count);
std::vector<std::string> split_lines(std::string_view s, bool keep_ends);    // str.splitlines
std::string python_title(std::string_view s);                                // str.title
std::string capitalize(std::string_view s);                                  // str.capitalize
std::string pad(std::string_view s, long width, char32_t fill, char align);  // center '^', ljust '<', rjust '>'
long count(std::string_view s, std::string_view sub);
std::string slice_code_points(std::string_view s, long start, long stop);  // s[start:stop], Python's clamping

}  // namespace parley::jinja::text
