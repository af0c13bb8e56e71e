#include "model/jinja/text.hpp"

#include <algorithm>

#include "model/jinja/utf8.hpp"

namespace parley::jinja::text {

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string code_points = utf8::decode(s);
  const std::u32string strip_set = chars ? utf8::decode(*chars) : std::u32string();
  const auto strips = [&](char32_t c) { return chars ? strip_set.find(c) != std::u32string::npos : utf8::is_space(c); };
  std::size_t begin = 0, end = code_points.size();
  if (left)
    while (begin < end && strips(code_points[begin])) ++begin;
  if (right)
    while (end > begin && strips(code_points[end - 1])) --end;
  return utf8::encode(std::u32string_view(code_points).substr(begin, end - begin));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, long max_splits, bool from_right) {
  std::u32string cps = utf8::decode(s);
  if (from_right) std::reverse(cps.begin(), cps.end());
  std::vector<std::u32string> parts;
  std::size_t i = 0;
  while (true) {
    while (i < cps.size() && utf8::is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (max_splits >= 0 && static_cast<long>(parts.size()) == max_splits) {
      std::size_t end = cps.size();  // the rest, its trailing whitespace kept
      parts.push_back(cps.substr(i, end - i));
      break;
    }
    const std::size_t start = i;
    while (i < cps.size() && !utf8::is_space(cps[i])) ++i;
    parts.push_back(cps.substr(start, i - start));
  }
  std::vector<std::string> out;
  for (auto& part : parts) {
    if (from_right) std::reverse(part.begin(), part.end());
    out.push_back(utf8::encode(part));
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& separator, long max_splits,
                               bool from_right) {
  if (!separator) return split_whitespace(s, max_splits, from_right);
  const std::string& sep = *separator;
  std::vector<std::string> out;
  if (!from_right) {
    std::size_t start = 0;
    for (std::size_t found; (max_splits < 0 || static_cast<long>(out.size()) < max_splits) &&
                            (found = s.find(sep, start)) != std::string_view::npos;
         start = found + sep.size())
      out.emplace_back(s.substr(start, found - start));
    out.emplace_back(s.substr(start));
    return out;
  }
  std::size_t end = s.size();
  while (max_splits < 0 || static_cast<long>(out.size()) < max_splits) {
    if (end < sep.size()) break;
    const std::size_t found = s.rfind(sep, end - sep.size());
    if (found == std::string_view::npos) break;
    out.emplace_back(s.substr(found + sep.size(), end - found - sep.size()));
    end = found;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, long max_count) {
  std::string out;
  long replaced = 0;
  const auto may_replace = [&] { return max_count < 0 || replaced < max_count; };
  if (old_text.empty()) {  // Python inserts the new text before every character and at the end
    const std::u32string cps = utf8::decode(s);
    for (char32_t c : cps) {
      if (may_replace()) {
        out += new_text;
        ++replaced;
      }
      utf8::append(out, c);
    }
    if (may_replace()) out += new_text;
    return out;
  }
  std::size_t start = 0;
  for (std::size_t found; may_replace() && (found = s.find(old_text, start)) != std::string_view::npos;
       start = found + old_text.size()) {
    out += s.substr(start, found - start);
    out += new_text;
    ++replaced;
  }
  out += s.substr(start);
  return out;
}

std::vector<std::string> split_lines(std::string_view s, bool keep_ends) {
  const std::u32string cps = utf8::decode(s);
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < cps.size(); ++i) {
    if (!utf8::is_line_break(cps[i])) continue;
    std::size_t end = i + 1;
    if (cps[i] == '\r' && end < cps.size() && cps[end] == '\n') ++end;
    out.push_back(utf8::encode(std::u32string_view(cps).substr(start, (keep_ends ? end : i) - start)));
    start = end;
    i = end - 1;
  }
  if (start < cps.size()) out.push_back(utf8::encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string python_title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : utf8::decode(s)) {
    utf8::append(out, previous_cased ? utf8::to_lower(c) : utf8::to_upper(c));
    previous_cased = utf8::is_cased(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t c : utf8::decode(s)) {
    utf8::append(out, first ? utf8::to_upper(c) : utf8::to_lower(c));
    first = false;
  }
  return out;
}

std::string pad(std::string_view s, long width, char32_t fill, char align) {
  const long length = static_cast<long>(utf8::length(s));
  if (width <= length) return std::string(s);
  const long margin = width - length;
  // CPython's centering: the odd space goes left when the width is odd.
  long left = align == '<' ? 0 : align == '>' ? margin : margin / 2 + (margin & width & 1);
  std::string fill_text;
  utf8::append(fill_text, fill);
  std::string out;
  for (long i = 0; i < left; ++i) out += fill_text;
  out += s;
  for (long i = 0; i < margin - left; ++i) out += fill_text;
  return out;
}

long count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<long>(utf8::length(s)) + 1;
  long n = 0;
  for (std::size_t found = s.find(sub); found != std::string_view::npos; found = s.find(sub, found + sub.size())) ++n;
  return n;
}

std::string slice_code_points(std::string_view s, long start, long stop) {
  const std::u32string cps = utf8::decode(s);
  const long size = static_cast<long>(cps.size());
  const auto clamp = [size](long i) { return i < 0 ? std::max(0L, i + size) : std::min(i, size); };
  start = clamp(start);
  stop = clamp(stop);
  if (stop <= start) return "";
  return utf8::encode(std::u32string_view(cps).substr(start, stop - start));
}

}  // namespace parley::jinja::text
