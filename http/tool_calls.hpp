// OpenAI tool calling on /v1/chat/completions, as vLLM's tool parsers (vllm/entrypoints/openai/tool_parsers):
// the model writes calls as text in its template's format; this file finds them in the finished text
// (extract_tool_calls) or in the text as it streams (ToolCallStream), names the formats (--tool-call-parser)
// and recognises them in chat templates, reads tool_choice, and builds the GBNF that `required` and a
// named tool_choice constrain the output with. Pure: no Beast, no CAF.
//
// Formats:
//   llama3_json  [<|python_tag|>]{"name": "f", "parameters": {...}}; {"name": ...}   (Llama 3.1-3.3 JSON)
//   hermes       <tool_call>{"name": "f", "arguments": {...}}</tool_call>            (Hermes 2 Pro, Qwen 2.5/3)
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]                (Mistral 7B v0.3, Nemo)
// Text outside the calls is content; whitespace next to a call belongs to the call. A call that does not
// parse (bad JSON, no name, arguments not an object, cut off) stays in the content as written, as vLLM
// leaves a malformed output as content; unlike vLLM, well-formed calls beside it are still calls, so that
// a stream can send each call once it is complete and still agree with the non-streamed answer.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace parley::http {

// OpenAi: gpt-oss's Harmony calls as the openai_gptoss reasoning parser passes them on,
// <|channel|>commentary to=functions.NAME<|message|>ARGUMENTS<|call|> (vLLM's "openai").
enum class ToolCallParser { Llama3Json, Hermes, Mistral, OpenAi };

std::string_view tool_call_parser_name(ToolCallParser parser);  // vLLM's --tool-call-parser name
std::string known_tool_call_parsers();                          // "llama3_json, hermes, mistral"
// A --tool-call-parser value; throws std::invalid_argument listing the known names.
ToolCallParser parse_tool_call_parser(std::string_view name);
// The format a chat template teaches its model, from the template's source; nullopt when it shows none
// of these (or another format with the same marker, e.g. Qwen3-Coder's <tool_call><function=...>).
std::optional<ToolCallParser> detect_tool_call_parser(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object as compact text, its keys in the model's order
  bool operator==(const ToolCall&) const = default;
};
struct ExtractedToolCalls {
  std::optional<std::string> content;  // without calls: the whole text; with calls: the text outside them, or none
  std::vector<ToolCall> calls;
};
// A finished output's calls. parallel_tool_calls false keeps the first call only (vLLM drops the others).
ExtractedToolCalls extract_tool_calls(ToolCallParser parser, std::string_view output, bool parallel_tool_calls = true);

// "chatcmpl-tool-" and 32 hex digits, a hash of the engine request id (one per choice) and the call's index.
std::string tool_call_id(std::string_view request_id, int call_index);
// The same call's id in another API: `prefix` and the 32 hex digits ("toolu_" Anthropic's, "call_" the Responses').
std::string renamed_tool_call_id(std::string_view chat_tool_call_id, std::string_view prefix);

// One streamed delta.tool_calls entry: the first for a call has id, type "function" and the name, the
// next ones argument text to append.
struct ToolCallDelta {
  int index = 0;
  std::optional<std::string> id, name;  // the call's first delta only
  std::string arguments;
};
// What a stream owes the client, in order: content text or one tool-call delta.
struct ToolStreamEvent {
  std::string content;
  std::optional<ToolCallDelta> tool_call;
  bool reasoning = false;  // content is reasoning (--reasoning-parser), sent as reasoning_content
};

// The text of one choice as it streams. Text that could still become a call (a marker's first characters,
// a call not yet complete, whitespace before one) is held back until it is known; each call goes out
// when complete. Property (tests/test_tool_calls.cpp): for every split of an output into deltas, the
// events assembled (content concatenated, arguments by index) equal extract_tool_calls on the whole text.
class ToolCallStream {
 public:
  ToolCallStream(ToolCallParser parser, std::string request_id, bool parallel_tool_calls = true);
  std::vector<ToolStreamEvent> feed(std::string_view text);
  std::vector<ToolStreamEvent> finish();  // the output ended: what was held back is decided
  bool tools_called() const { return calls_ > 0; }

 private:
  std::vector<ToolStreamEvent> advance(bool final);

  ToolCallParser parser_;
  std::string request_id_;
  bool parallel_;
  std::string text_;           // the output so far
  size_t decided_ = 0;         // text_[0, decided_) is sent or dropped
  bool after_call_ = false;    // the last decided text was a call (whitespace after it is dropped)
  bool content_only_ = false;  // llama3_json: calls only lead the output; after other text, none
  int calls_ = 0;
};

// tool_choice (vLLM's ChatCompletionRequest): none, auto (the default with tools), required, or one named
// function ({"type": "function", "function": {"name": ...}}).
enum class ToolChoice { None, Auto, Required, Named };
// How a request's output is read for calls (GenerateRequest::tool_calling; absent: it is not).
struct ToolCalling {
  ToolCallParser parser = ToolCallParser::Hermes;
  ToolChoice choice = ToolChoice::Auto;
  std::string function;             // Named: the function
  bool parallel_tool_calls = true;  // false: one call at most
};

// The server's tool-call flags (ServingContext::tools).
struct ToolServing {
  std::optional<ToolCallParser> parser;  // --tool-call-parser; none: recognised from the chat template
  bool enable_auto_tool_choice = false;  // --enable-auto-tool-choice: "auto" (the default with tools) allowed
  bool exclude_tools_when_tool_choice_none = false;  // --exclude-tools-when-tool-choice-none
};

// The GBNF (engine/structured_output/grammar.hpp) for what `required` (one or more calls of the tools,
// one with parallel_tool_calls false) or a named choice (exactly one call of it) lets the model write, in
// the parser's format, each call's arguments constrained by its function's JSON Schema `parameters`.
// Throws ToolGrammarError for parameters the grammar cannot express (structured::JsonSchemaConverter's refusal).
std::string tool_call_grammar(const ToolCalling& calling, const nlohmann::ordered_json& tools);
struct ToolGrammarError : std::invalid_argument {
  ToolGrammarError(std::string field, const std::string& message)
      : std::invalid_argument(message), param(std::move(field)) {}
  std::string param;  // "tools[i].function.parameters"
};

}  // namespace parley::http
