#include "engine/structured_output/gbnf_text.hpp"

#include <algorithm>
#include <cstdio>

#include "engine/structured_output/grammar.hpp"

namespace parley::structured {
namespace {

constexpr char32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

std::string hex_escape(char32_t c) {
  char buf[16];
  if (c < 0x80)
    std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
  else if (c < 0x10000)
    std::snprintf(buf, sizeof buf, "\\u%04X", unsigned(c));
  else
    std::snprintf(buf, sizeof buf, "\\U%08X", unsigned(c));
  return buf;
}

// Inside a class, letters, digits and harmless punctuation stay readable; the class's own syntax
// characters ([ ] \ ^ -) and the quote are escaped so no parser can misread them.
std::string class_char(char32_t c) {
  const bool plain = c > 0x20 && c < 0x7F && c != '[' && c != ']' && c != '\\' && c != '^' && c != '-' && c != '"';
  if (plain) return std::string(1, char(c));
  return hex_escape(c);
}

void append_class_ranges(std::string& out, const CodepointSet& set) {
  for (auto [lo, hi] : set.ranges()) {
    // Surrogates are not characters: a range across them is split so no escape names one.
    std::vector<std::pair<char32_t, char32_t>> parts;
    if (hi < kSurrogateLo || lo > kSurrogateHi) {
      parts.push_back({lo, hi});
    } else {
      if (lo < kSurrogateLo) parts.push_back({lo, kSurrogateLo - 1});
      if (hi > kSurrogateHi) parts.push_back({kSurrogateHi + 1, hi});
    }
    for (auto [a, b] : parts) {
      out += class_char(a);
      if (b > a) out += (b == a + 1 ? "" : "-") + class_char(b);
    }
  }
}

}  // namespace

CodepointSet CodepointSet::range(char32_t lo, char32_t hi) {
  CodepointSet s;
  s.add(lo, hi);
  return s;
}

void CodepointSet::add(char32_t lo, char32_t hi) {
  if (lo > hi) return;
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<char32_t, char32_t>> merged;
  for (auto r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

void CodepointSet::add(const CodepointSet& other) {
  for (auto [lo, hi] : other.ranges_) add(lo, hi);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  char32_t next = 0;
  for (auto [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.push_back({next, kMaxCodepoint});
  return out;
}

CodepointSet CodepointSet::intersect(const CodepointSet& other) const {
  CodepointSet out;
  for (auto [a, b] : ranges_) {
    for (auto [c, d] : other.ranges_) {
      const char32_t lo = std::max(a, c), hi = std::min(b, d);
      if (lo <= hi) out.ranges_.push_back({lo, hi});
    }
  }
  std::sort(out.ranges_.begin(), out.ranges_.end());
  return out;
}

bool CodepointSet::contains(char32_t c) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [c](auto r) { return r.first <= c && c <= r.second; });
}

std::string gbnf_class(const CodepointSet& set) {
  const CodepointSet surrogates = CodepointSet::range(kSurrogateLo, kSurrogateHi);
  const CodepointSet missing = set.complement().minus(surrogates);
  if (missing.empty()) return ".";
  std::string out = "[";
  if (set.contains(kMaxCodepoint)) {
    out += "^";
    append_class_ranges(out, missing);
  } else {
    append_class_ranges(out, set);
  }
  return out + "]";
}

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F)
      out += hex_escape(c);
    else
      out += char(c);
  }
  return out + "\"";
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::vector<DecodedChar> decode_utf8(std::string_view text, std::string_view what) {
  std::vector<DecodedChar> out;
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int extra = lead < 0x80 ? 0 : (lead >> 5) == 0x6 ? 1 : (lead >> 4) == 0xE ? 2 : (lead >> 3) == 0x1E ? 3 : -1;
    bool ok = extra >= 0 && i + extra < text.size();
    char32_t c = extra == 0 ? lead : extra == 1 ? (lead & 0x1F) : extra == 2 ? (lead & 0x0F) : (lead & 0x07);
    for (int k = 1; ok && k <= extra; ++k) {
      const auto cont = static_cast<unsigned char>(text[i + k]);
      ok = (cont >> 6) == 0x2;
      c = (c << 6) | (cont & 0x3F);
    }
    static constexpr char32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (!ok || c < kMinForLength[extra] || c > kMaxCodepoint || (c >= kSurrogateLo && c <= kSurrogateHi)) {
      throw GrammarError(std::string(what) + ": malformed UTF-8 at byte offset " + std::to_string(i));
    }
    out.push_back({c, i});
    i += extra + 1;
  }
  return out;
}

std::string sanitize_rule_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    out += ok ? c : '-';
  }
  return out;
}

}  // namespace parley::structured
