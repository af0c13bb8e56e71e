// Internal to the OpenAI protocol files: reading request JSON field by field, where every wrong type
// or value becomes an ApiError naming the field (thrown as RequestError, returned by the public API).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/openai_protocol.hpp"

namespace parley::http::detail {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;  // responses keep OpenAI's field order

struct RequestError {
  ApiError error;
};
[[noreturn]] void fail(std::string message, std::string param = "");

// The body as a JSON object: 400 for malformed JSON, nesting deeper than 64, or a non-object.
json parse_object(std::string_view body);
// 400 for the first key outside `allowed` ("user" is OpenAI metadata: callers list it and ignore it).
void reject_unknown_fields(const json& body, std::span<const std::string_view> allowed);
// The keys outside `allowed`, in the body's order.
std::vector<std::string> unknown_fields(const json& body, std::span<const std::string_view> allowed);
// Fields OpenAI's chat and completions APIs define that Parley accepts and does not act on, as vLLM does.
inline constexpr std::string_view kAcceptedNoOpFields[] = {
    "store", "metadata",           "service_tier",     "prediction",        "modalities",
    "audio", "web_search_options", "prompt_cache_key", "safety_identifier", "verbosity"};
// 404 unless `model` is absent, null or the served name.
void check_model(const json& body, const ServingContext& ctx);

// Typed getters: absent or null gives nullopt, a wrong type a 400 naming `key`.
const json* field(const json& obj, std::string_view key);
std::optional<bool> get_bool(const json& obj, std::string_view key);
std::optional<int64_t> get_int(const json& obj, std::string_view key);  // integral numbers in int64
std::optional<int> get_int32(const json& obj, std::string_view key);
std::optional<double> get_number(const json& obj, std::string_view key);  // finite
std::optional<std::string> get_string(const json& obj, std::string_view key);
[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& got);

// Request bodies of the APIs translated onto the chat path (Anthropic's Messages, OpenAI's Responses), read with
// pydantic's field paths: "messages.1.content.0.tool_use_id: ...", "input.2.call_id: ...".
std::string item_path(const std::string& path, size_t index);  // path + "." + index
[[noreturn]] void fail_at(const std::string& path, const std::string& message);
const json& required_field(const json& obj, const std::string& path, std::string_view key);  // "Field required"
std::string string_field(const json& obj, const std::string& path, std::string_view key);    // required, a string
// The API's no-op fields accepted silently; the keys outside `acted` and `no_op` returned, for the log (strict: the
// first is a 400, "key: Extra inputs are not permitted").
std::vector<std::string> checked_fields(const json& body, std::span<const std::string_view> acted,
                                        std::span<const std::string_view> no_op, bool strict);
// Another API's body run as a chat request: its fields checked, its model, then `to_chat` (given the parsed body;
// throws RequestError) writes the chat body that parse_generate_request reads. The request is `endpoint`'s.
std::variant<GenerateRequest, ApiError> parse_as_chat(Endpoint endpoint, std::string_view body,
                                                      const ServingContext& ctx,
                                                      std::span<const std::string_view> acted,
                                                      std::span<const std::string_view> no_op,
                                                      const std::function<ojson(const json&)>& to_chat);

// A token id at `param`: an integer in [0, vocab_size); else 400 "Token id X is out of vocabulary".
int token_id(const json& v, int vocab_size, const std::string& param);
std::vector<int> token_ids(const json& v, int vocab_size, const std::string& param);

// Completions' `prompt` or embeddings' `input` (param): a string, strings, token ids or lists of them, into
// req.prompts and req.prompt_texts; 400 for an empty one, an unknown token id or another type.
void read_prompts(const json& body, const ServingContext& ctx, GenerateRequest& req, const std::string& param);

// vLLM's truncate_prompt_tokens: the tokens an input keeps (-1: the context's length); none when absent. A 400
// naming it when it is 0, below -1, or past the context.
std::optional<size_t> truncation_length(const json& body, const ServingContext& ctx);

std::string py_float(double v);    // Python's repr, as vLLM's messages print floats
std::string dump(const ojson& j);  // compact; invalid UTF-8 becomes U+FFFD instead of throwing
std::string sse(const ojson& j);   // "data: <json>\n\n"
// "event: <its type>\ndata: <json>\n\n": the typed events of Anthropic's Messages and OpenAI's Responses streams.
std::string typed_event(const ojson& j);
int utf8_length(std::string_view s);  // code points (lead bytes), as Python's len() of the decoded text

}  // namespace parley::http::detail
