// A client's string as a log line may show it: a bounded excerpt, control bytes escaped (a newline in a header
// or an id must not forge a log line), and the full length when cut.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace parley::http {

inline std::string log_excerpt(std::string_view text, size_t keep = 64) {
  std::string out;
  for (const char c : text.substr(0, keep)) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      out += c;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
    out += escaped;
  }
  if (text.size() > keep) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace parley::http
