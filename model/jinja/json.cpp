// Python's json.dumps byte for byte (transformers' tojson is json.dumps, not Jinja2's HTML-safe one), and
// the render context from nlohmann JSON.
#include <algorithm>
#include <cmath>

#include "model/jinja/builtins.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

constexpr int kMaxJsonDepth = 200;  // Python raises RecursionError (or ValueError for a cycle) about here

void append_hex4(std::string& out, unsigned value) {
  static const char* kHex = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(value >> shift) & 0xF]);
}

void dump_string(std::string_view s, bool ensure_ascii, std::string& out) {
  out.push_back('"');
  const auto escape = [&](char32_t c) {
    switch (c) {
      case '"':
        out += "\\\"";
        return true;
      case '\\':
        out += "\\\\";
        return true;
      case '\n':
        out += "\\n";
        return true;
      case '\r':
        out += "\\r";
        return true;
      case '\t':
        out += "\\t";
        return true;
      case '\b':
        out += "\\b";
        return true;
      case '\f':
        out += "\\f";
        return true;
      default:
        if (c < 0x20) {
          append_hex4(out, c);
          return true;
        }
        return false;
    }
  };
  if (utf8::is_ascii(s)) {
    for (char c : s)
      if (!escape(static_cast<unsigned char>(c))) out.push_back(c);
  } else {
    for (char32_t c : utf8::decode(s)) {
      if (escape(c)) continue;
      if (!ensure_ascii || c < 0x80) {
        utf8::append(out, c);
      } else if (c < 0x10000) {
        append_hex4(out, c);
      } else {
        append_hex4(out, 0xD800 + ((c - 0x10000) >> 10));
        append_hex4(out, 0xDC00 + ((c - 0x10000) & 0x3FF));
      }
    }
  }
  out.push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return format_float(d);
}

std::string key_text(const Value& key) {
  switch (key.kind) {
    case Kind::String:
      return key.text;
    case Kind::Bool:
      return key.integer ? "true" : "false";
    case Kind::None:
      return "null";
    case Kind::Int:
      return std::to_string(key.integer);
    case Kind::Float:
      return float_json(key.real);
    default:
      fail("keys must be str, int, float, bool or None, not " + type_name(key));
  }
}

void newline(const JsonStyle& style, int depth, std::string& out) {
  out.push_back('\n');
  for (int i = 0; i < depth; ++i) out += *style.indent;
}

void dump(const Value& v, const JsonStyle& style, int depth, std::string& out) {
  if (depth > kMaxJsonDepth) fail("maximum recursion depth exceeded while encoding a JSON object");
  switch (v.kind) {
    case Kind::None:
      out += "null";
      return;
    case Kind::Bool:
      out += v.integer ? "true" : "false";
      return;
    case Kind::Int:
      out += std::to_string(v.integer);
      return;
    case Kind::Float:
      out += float_json(v.real);
      return;
    case Kind::String:
      dump_string(v.text, style.ensure_ascii, out);
      return;
    case Kind::List:
      if (v.seq_kind() == SeqKind::List || v.seq_kind() == SeqKind::Tuple) break;
      [[fallthrough]];
    case Kind::Undefined:
    case Kind::Object:
      fail("Object of type " + type_name(v) + " is not JSON serializable");
    case Kind::Dict:
      break;
  }
  const bool is_dict = v.is_dict();
  const std::size_t size = is_dict ? v.dict->items.size() : v.items().size();
  if (size == 0) {
    out += is_dict ? "{}" : "[]";
    return;
  }
  out.push_back(is_dict ? '{' : '[');
  std::vector<const std::pair<Value, Value>*> entries;
  if (is_dict) {
    for (const auto& entry : v.dict->items) entries.push_back(&entry);
    if (style.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return compare(a->first, b->first, "<"); });
  }
  for (std::size_t i = 0; i < size; ++i) {
    if (i) out += style.item_separator;
    if (style.indent) newline(style, depth + 1, out);
    if (is_dict) {
      dump_string(key_text(entries[i]->first), style.ensure_ascii, out);
      out += style.key_separator;
      dump(entries[i]->second, style, depth + 1, out);
    } else {
      dump(v.items()[i], style, depth + 1, out);
    }
  }
  if (style.indent) newline(style, depth, out);
  out.push_back(is_dict ? '}' : ']');
}

}  // namespace

std::string dump_json(const Value& v, const JsonStyle& style) {
  std::string out;
  dump(v, style, 0, out);
  return out;
}

namespace {

Value from_json_at(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxJsonDepth) fail("the context nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
      return Value::none();
    case Type::boolean:
      return Value::boolean(json.get<bool>());
    case Type::number_integer:
      return Value::of_int(json.get<std::int64_t>());
    case Type::number_unsigned: {
      const auto u = json.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::of_float(static_cast<double>(u));  // past int64
      return Value::of_int(static_cast<std::int64_t>(u));
    }
    case Type::number_float:
      return Value::of_float(json.get<double>());
    case Type::string:
      return Value::string(json.get<std::string>());
    case Type::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1));
      return Value::sequence(std::move(items));
    }
    case Type::object: {
      std::vector<std::pair<Value, Value>> items;
      items.reserve(json.size());
      for (const auto& [key, value] : json.items())
        items.emplace_back(Value::string(key), from_json_at(value, depth + 1));
      return Value::mapping(std::move(items));
    }
    default:
      fail("the context holds a JSON value of a type templates cannot use");
  }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& json) { return from_json_at(json, 0); }

}  // namespace parley::jinja
