#include "http/openai_fields.hpp"

#include <algorithm>

#include <charconv>
#include <climits>
#include <cmath>

#include "http/json_brackets.hpp"

namespace parley::http::detail {
namespace {

constexpr int kMaxJsonDepth = 64;  // requests nest 4 deep; this bounds work on hostile bodies

// Depth of [ and { outside strings, scanned before parsing so a hostile body cannot recurse far.
bool nesting_within(std::string_view body, int limit) {
  JsonBrackets brackets;
  int depth = 0;
  for (char c : body)
    if ((depth += brackets.feed(c)) > limit) return false;
  return true;
}

const char* type_phrase(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a decimal";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "null";
  }
}

}  // namespace

void fail(std::string message, std::string param) {
  throw RequestError{ApiError{400, std::move(message), "BadRequestError", std::move(param), ""}};
}

json parse_object(std::string_view body) {
  if (!nesting_within(body, kMaxJsonDepth))
    fail("Invalid JSON body: nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels.");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for 1e999
    fail(std::string("Invalid JSON body: ") + e.what());
  }
  if (!j.is_object()) fail(std::string("The request body must be a JSON object, got ") + type_phrase(j) + ".");
  return j;
}

std::vector<std::string> unknown_fields(const json& body, std::span<const std::string_view> allowed) {
  std::vector<std::string> out;
  for (const auto& [key, value] : body.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) out.push_back(key);
  return out;
}

void reject_unknown_fields(const json& body, std::span<const std::string_view> allowed) {
  for (const std::string& key : unknown_fields(body, allowed))
    fail("Unrecognized request argument supplied: " + key, key);
}

std::string item_path(const std::string& path, size_t index) { return path + "." + std::to_string(index); }

void fail_at(const std::string& path, const std::string& message) { fail(path + ": " + message, path); }

const json& required_field(const json& obj, const std::string& path, std::string_view key) {
  const json* v = field(obj, key);
  if (!v) fail_at(path.empty() ? std::string(key) : path + "." + std::string(key), "Field required");
  return *v;
}

std::string string_field(const json& obj, const std::string& path, std::string_view key) {
  const json& v = required_field(obj, path, key);
  if (!v.is_string())
    fail_at(path.empty() ? std::string(key) : path + "." + std::string(key), "Input should be a valid string");
  return v;
}

std::vector<std::string> checked_fields(const json& body, std::span<const std::string_view> acted,
                                        std::span<const std::string_view> no_op, bool strict) {
  std::vector<std::string> ignored;
  for (std::string& key : unknown_fields(body, acted)) {
    if (strict) fail_at(key, "Extra inputs are not permitted");
    if (std::find(no_op.begin(), no_op.end(), key) == no_op.end()) ignored.push_back(std::move(key));
  }
  return ignored;
}

void check_model(const json& body, const ServingContext& ctx) {
  const auto model = get_string(body, "model");
  if (model && *model != ctx.model_name)
    throw RequestError{
        ApiError{404, "The model `" + *model + "` does not exist.", "NotFoundError", "model", "model_not_found"}};
}

const json* field(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

void wrong_type(const std::string& param, const char* expected, const json& got) {
  fail("Invalid type for '" + param + "': expected " + expected + ", but got " + type_phrase(got) + " instead.", param);
}

std::optional<bool> get_bool(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(std::string(key), "a boolean", *v);
  return v->get<bool>();
}

std::optional<int64_t> get_int(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  const std::string param(key);
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > uint64_t(INT64_MAX)) fail("Invalid value for '" + param + "': it is too large.", param);
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  // pydantic's lax mode takes 5.0 for an int; 5.5 is a type error.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  wrong_type(param, "an integer", *v);
}

std::optional<int> get_int32(const json& obj, std::string_view key) {
  const auto v = get_int(obj, key);
  if (!v) return std::nullopt;
  if (*v > INT_MAX || *v < INT_MIN)
    fail("Invalid value for '" + std::string(key) + "': " + std::to_string(*v) + " is out of range.", std::string(key));
  return static_cast<int>(*v);
}

std::optional<double> get_number(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(std::string(key), "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d))
    fail("Invalid value for '" + std::string(key) + "': the number is out of range.", std::string(key));
  return d;
}

std::optional<std::string> get_string(const json& obj, std::string_view key) {
  const json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(std::string(key), "a string", *v);
  return v->get<std::string>();
}

int token_id(const json& v, int vocab_size, const std::string& param) {
  if (!v.is_number_integer()) wrong_type(param, "an integer token id", v);
  const bool in_vocab = v.is_number_unsigned() ? v.get<uint64_t>() < uint64_t(vocab_size)
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() < vocab_size;
  if (!in_vocab) fail("Token id " + v.dump() + " is out of vocabulary", param);
  return v.get<int>();
}

std::vector<int> token_ids(const json& v, int vocab_size, const std::string& param) {
  if (!v.is_array()) wrong_type(param, "an array of token ids", v);
  std::vector<int> ids;
  ids.reserve(v.size());
  for (const auto& t : v) ids.push_back(token_id(t, vocab_size, param));
  return ids;
}

std::string py_float(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 2 -> "2.0"; keeps 1e+20, inf, nan
  return s;
}

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string sse(const ojson& j) { return "data: " + dump(j) + "\n\n"; }

std::string typed_event(const ojson& j) {
  return "event: " + j["type"].get<std::string>() + "\ndata: " + dump(j) + "\n\n";
}

int utf8_length(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::optional<size_t> truncation_length(const json& body, const ServingContext& ctx) {
  const std::optional<int> keep = get_int32(body, "truncate_prompt_tokens");
  if (!keep) return std::nullopt;
  if (*keep < -1 || *keep == 0)
    fail("truncate_prompt_tokens must be a positive integer or -1, got " + std::to_string(*keep) + ".",
         "truncate_prompt_tokens");
  if (*keep > ctx.max_model_len)
    fail("truncate_prompt_tokens value (" + std::to_string(*keep) + ") is greater than max_model_len (" +
             std::to_string(ctx.max_model_len) + "). Please, select a smaller truncation size.",
         "truncate_prompt_tokens");
  return size_t(*keep == -1 ? ctx.max_model_len : *keep);
}

}  // namespace parley::http::detail
