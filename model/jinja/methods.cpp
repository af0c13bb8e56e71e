// Methods of str, dict, list and tuple as the sandbox exposes them: mutating ones (list.append, dict.update)
// are unsafe attributes, list.pop and list.clear are allowed, as in ImmutableSandboxedEnvironment.
#include <algorithm>

#include "model/jinja/builtins.hpp"
#include "model/jinja/objects.hpp"
#include "model/jinja/render.hpp"
#include "model/jinja/text.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

// clang-format off
constexpr std::string_view kStrMethods[] = {
    "capitalize", "casefold", "center",   "count",     "encode",    "endswith",     "expandtabs", "find",
    "format",     "format_map", "index",  "isalnum",   "isalpha",   "isascii",      "isdecimal",  "isdigit",
    "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle",    "isupper",    "join",
    "ljust",      "lower",    "lstrip",   "maketrans", "partition", "removeprefix", "removesuffix", "replace",
    "rfind",      "rindex",   "rjust",    "rpartition", "rsplit",   "rstrip",       "split",      "splitlines",
    "startswith", "strip",    "swapcase", "title",     "translate", "upper",        "zfill"};
constexpr std::string_view kDictMethods[] = {"clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem",
                                "setdefault", "update", "values"};
constexpr std::string_view kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::string_view kListMethods[] = {"append", "clear", "copy", "count", "extend", "index",
                                "insert", "pop", "remove", "reverse", "sort"};
constexpr std::string_view kListUnsafe[] = {"append", "reverse", "insert", "sort", "extend", "remove"};
constexpr std::string_view kTupleMethods[] = {"count", "index"};
// clang-format on

template <std::size_t N>
bool has(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// An optional str argument: nullopt when left out or None.
std::optional<std::string> optional_text(const BoundArgs& a, std::size_t i, std::string_view what) {
  if (!a.given(i) || a.get(i).is_none()) return std::nullopt;
  if (!a.get(i).is_string()) fail(std::string(what) + " arg must be None or str, not " + type_name(a.get(i)));
  return a.get(i).text;
}

const std::string& text_arg(const Value& v, std::string_view what) {
  if (!v.is_string()) fail(std::string(what) + " must be str, not " + type_name(v));
  return v.text;
}

Value strings(const std::vector<std::string>& parts, bool markup) {
  std::vector<Value> items;
  for (const auto& part : parts) items.push_back(Value::string(part, markup));
  return Value::sequence(std::move(items));
}

// s[start:end] for startswith/find/count's optional bounds.
std::string bounded(const Value& self, const BoundArgs& a, std::size_t start_index) {
  const long start = a.given(start_index) && !a.get(start_index).is_none() ? to_index(a.get(start_index), "start") : 0;
  const long end = a.given(start_index + 1) && !a.get(start_index + 1).is_none()
                       ? to_index(a.get(start_index + 1), "end")
                       : static_cast<long>(utf8::length(self.text)) + 1;
  return text::slice_code_points(self.text, start, end);
}

bool affix_matches(const Value& self, const BoundArgs& a, bool prefix) {
  const std::string s = bounded(self, a, 1);
  const auto matches = [&](const Value& affix) {
    const std::string& t = text_arg(affix, prefix ? "startswith first arg" : "endswith first arg");
    return s.size() >= t.size() &&
           (prefix ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0);
  };
  const Value& affix = a.get(0);
  if (affix.is_list() && affix.seq_kind() == SeqKind::Tuple)
    return std::any_of(affix.items().begin(), affix.items().end(), matches);
  return matches(affix);
}

long find_index(const Value& self, const BoundArgs& a, bool from_right) {
  const std::string& sub = text_arg(a.get(0), "substring");
  const long start = a.given(1) && !a.get(1).is_none() ? to_index(a.get(1), "start") : 0;
  const long size = static_cast<long>(utf8::length(self.text));
  const long first = start < 0 ? std::max(0L, start + size) : std::min(start, size);
  const std::string s = bounded(self, a, 1);
  const std::size_t found = from_right ? s.rfind(sub) : s.find(sub);
  if (found == std::string::npos) return -1;
  return first + static_cast<long>(utf8::length(std::string_view(s).substr(0, found)));
}

bool all_chars(const std::string& s, bool (*predicate)(char32_t)) {
  const std::u32string cps = utf8::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), predicate);
}

// islower/isupper: some cased character, and every cased one in that case.
bool cased_as(const std::string& s, bool lower) {
  bool any = false;
  for (char32_t c : utf8::decode(s)) {
    if (!utf8::is_cased(c)) continue;
    if ((lower ? utf8::to_lower(c) : utf8::to_upper(c)) != c) return false;
    any = true;
  }
  return any;
}

Value call_str_method(Renderer& renderer, const Value& self, std::string_view name, CallArgs& args) {
  const std::string& s = self.text;
  const bool m = self.markup;
  const auto bind = [&](std::initializer_list<std::string_view> parameters) {
    return BoundArgs(name, args, parameters);
  };
  if (name == "format") return Value::string(format_string(renderer, s, args), m);
  if (name == "upper" || name == "lower" || name == "casefold" || name == "title" || name == "capitalize" ||
      name == "isdigit" || name == "isdecimal" || name == "isnumeric" || name == "isalpha" || name == "isalnum" ||
      name == "isspace" || name == "islower" || name == "isupper") {
    bind({});
    if (name == "upper") return Value::string(utf8::upper(s), m);
    if (name == "lower" || name == "casefold") return Value::string(utf8::lower(s), m);
    if (name == "title") return Value::string(text::python_title(s), m);
    if (name == "capitalize") return Value::string(text::capitalize(s), m);
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
      return Value::boolean(all_chars(s, utf8::is_digit));
    if (name == "isalpha") return Value::boolean(all_chars(s, utf8::is_alpha));
    if (name == "isalnum")
      return Value::boolean(all_chars(s, [](char32_t c) { return utf8::is_alpha(c) || utf8::is_digit(c); }));
    if (name == "isspace") return Value::boolean(all_chars(s, utf8::is_space));
    return Value::boolean(cased_as(s, name == "islower"));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const BoundArgs a = bind({"chars"});
    return Value::string(text::strip(s, optional_text(a, 0, name), name != "rstrip", name != "lstrip"), m);
  }
  if (name == "split" || name == "rsplit") {
    const BoundArgs a = bind({"sep", "maxsplit"});
    const std::optional<std::string> sep = optional_text(a, 0, name);
    if (sep && sep->empty()) fail("empty separator");
    const long max_splits = a.given(1) ? to_index(a.get(1), "maxsplit") : -1;
    return strings(text::split(s, sep, max_splits, name == "rsplit"), m);
  }
  if (name == "startswith" || name == "endswith")
    return Value::boolean(affix_matches(self, bind({"prefix", "start", "end"}), name == "startswith"));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const long i = find_index(self, bind({"sub", "start", "end"}), name[0] == 'r');
    if (i < 0 && name.find("index") != std::string_view::npos) fail("substring not found");
    return Value::of_int(i);
  }
  if (name == "count") {
    const BoundArgs a = bind({"sub", "start", "end"});
    return Value::of_int(text::count(bounded(self, a, 1), text_arg(a.get(0), "count")));
  }
  if (name == "replace") {
    const BoundArgs a = bind({"old", "new", "count"});
    const long count = a.given(2) ? to_index(a.get(2), "count") : -1;
    const std::string& old_text = text_arg(a.get(0), "replace");
    const std::string& new_text = text_arg(a.get(1), "replace");
    charge_for_replace(renderer, s, old_text, new_text);
    return Value::string(text::replace(s, old_text, new_text, count), m);
  }
  if (name == "join") {
    const BoundArgs a = bind({"iterable"});
    std::string out;
    std::size_t i = 0;
    for (const Value& item : iterate(a.get(0))) {
      if (!item.is_string())
        fail("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(item) + " found");
      if (i++) out += s;
      out += item.text;
    }
    renderer.charge_for_size(out.size());
    return Value::string(std::move(out), m);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    const BoundArgs a = bind({"width", "fillchar"});
    const std::u32string fill = utf8::decode(a.given(1) ? text_arg(a.get(1), "fillchar") : " ");
    if (fill.size() != 1) fail("The fill character must be exactly one character long");
    const long width = to_index(a.get(0), "width");
    renderer.charge_for_size(static_cast<std::size_t>(std::max(0L, width)));
    return Value::string(text::pad(s, width, fill[0], name == "center" ? '^' : name == "ljust" ? '<' : '>'), m);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const BoundArgs a = bind({"affix"});
    const std::string& affix = text_arg(a.get(0), name);
    const bool prefix = name == "removeprefix";
    if (s.size() >= affix.size() && (prefix ? s.compare(0, affix.size(), affix) == 0
                                            : s.compare(s.size() - affix.size(), affix.size(), affix) == 0))
      return Value::string(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()), m);
    return self;
  }
  if (name == "splitlines") return strings(text::split_lines(s, truthy(bind({"keepends"}).get(0))), m);
  if (name == "partition" || name == "rpartition") {
    const BoundArgs a = bind({"sep"});
    const std::string& sep = text_arg(a.get(0), name);
    if (sep.empty()) fail("empty separator");
    const std::size_t found = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (found == std::string::npos) {
      const bool left = name == "partition";
      parts = {Value::string(left ? s : "", m), Value::string("", m), Value::string(left ? "" : s, m)};
    } else {
      parts = {Value::string(s.substr(0, found), m), Value::string(sep, m),
               Value::string(s.substr(found + sep.size()), m)};
    }
    return Value::tuple(std::move(parts));
  }
  fail("str." + std::string(name) + "() is not supported");
}

Value call_dict_method(const Value& self, std::string_view name, CallArgs& args) {
  const auto& entries = self.dict->items;
  if (name == "get") {
    const BoundArgs a(name, args, {"key", "default"});
    if (!is_hashable(a.get(0))) fail("unhashable type: '" + type_name(a.get(0)) + "'");
    const Value* found = self.dict->find(a.get(0));
    return found ? *found : a.get_or(1, Value::none());
  }
  BoundArgs(name, args, {});
  if (name == "copy") return Value::mapping(entries);
  std::vector<Value> out;
  for (const auto& [key, value] : entries) {
    if (name == "keys")
      out.push_back(key);
    else if (name == "values")
      out.push_back(value);
    else if (name == "items")
      out.push_back(Value::tuple({key, value}));
    else
      fail("dict." + std::string(name) + "() is not supported");
  }
  return Value::sequence(std::move(out), name == "keys"     ? SeqKind::KeysView
                                         : name == "values" ? SeqKind::ValuesView
                                                            : SeqKind::ItemsView);
}

Value call_list_method(const Value& self, std::string_view name, CallArgs& args) {
  std::vector<Value>& items = self.list->items;
  if (name == "pop") {
    const BoundArgs a(name, args, {"index"});
    if (items.empty()) fail("pop from empty list");
    const auto size = static_cast<std::int64_t>(items.size());
    std::int64_t i = a.given(0) ? to_index(a.get(0), "index") : -1;
    if (i < 0) i += size;
    if (i < 0 || i >= size) fail("pop index out of range");
    Value popped = std::move(items[i]);
    items.erase(items.begin() + i);
    return popped;
  }
  if (name == "count" || name == "index") {
    const BoundArgs a(name, args, {"value"});
    const auto it = std::find_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a.get(0)); });
    if (name == "index") {
      if (it == items.end()) fail(repr(a.get(0)) + " is not in " + type_name(self));
      return Value::of_int(it - items.begin());
    }
    return Value::of_int(
        std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, a.get(0)); }));
  }
  BoundArgs(name, args, {});
  if (name == "copy") return Value::sequence(items);
  if (name == "clear") {
    items.clear();
    return Value::none();
  }
  fail("list." + std::string(name) + "() is not supported");
}

}  // namespace

void charge_for_replace(Renderer& renderer, std::string_view s, std::string_view old_text, std::string_view new_text) {
  const std::size_t matches = old_text.empty() ? s.size() + 1 : s.size() / old_text.size();
  renderer.charge_for_size(s.size() + matches * new_text.size());
}

std::optional<Value> builtin_attribute(const Value& self, std::string_view name) {
  const auto unsafe = [&] {
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + type_name(self) +
                            "' object is unsafe.");
  };
  switch (self.kind) {
    case Kind::String:
      if (has(kStrMethods, name)) return Value::of_object(std::make_shared<BoundMethod>(self, std::string(name)));
      return std::nullopt;
    case Kind::Dict:
      if (has(kDictUnsafe, name)) return unsafe();
      if (has(kDictMethods, name)) return Value::of_object(std::make_shared<BoundMethod>(self, std::string(name)));
      return std::nullopt;
    case Kind::List:
      if (self.seq_kind() == SeqKind::List) {
        if (has(kListUnsafe, name)) return unsafe();
        if (has(kListMethods, name)) return Value::of_object(std::make_shared<BoundMethod>(self, std::string(name)));
      }
      if (self.seq_kind() == SeqKind::Tuple && has(kTupleMethods, name))
        return Value::of_object(std::make_shared<BoundMethod>(self, std::string(name)));
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

Value call_method(Renderer& renderer, const Value& self, std::string_view name, CallArgs& args) {
  switch (self.kind) {
    case Kind::String:
      return call_str_method(renderer, self, name, args);
    case Kind::Dict:
      return call_dict_method(self, name, args);
    case Kind::List:
      return call_list_method(self, name, args);
    default:
      fail(type_name(self) + "." + std::string(name) + "() is not supported");
  }
}

Value BoundMethod::call(Renderer& renderer, CallArgs& args) const { return call_method(renderer, self_, name_, args); }

std::string BoundMethod::repr() const {
  return "<built-in method " + name_ + " of " + jinja::type_name(self_) + " object>";
}

}  // namespace parley::jinja
