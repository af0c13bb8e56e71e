// JSON's brackets outside strings, one character at a time: enough to bound a body's nesting before it is
// parsed, or to find where an object ends in a stream of text, without parsing. Strings and their escapes are
// followed so that a bracket inside one does not count.
#pragma once

namespace parley::http {

class JsonBrackets {
 public:
  // The change of depth that c makes: +1 for [ or {, -1 for ] or }, 0 for anything else or inside a string.
  int feed(char c) {
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      return 0;
    }
    if (c == '"') in_string_ = true;
    return c == '[' || c == '{' ? 1 : c == ']' || c == '}' ? -1 : 0;
  }

 private:
  bool in_string_ = false, escaped_ = false;
};

}  // namespace parley::http
