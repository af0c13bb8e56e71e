// Anthropic's Messages API (POST /v1/messages, POST /v1/messages/count_tokens) at the edge, as vLLM and SGLang
// serve it: a Messages body becomes the chat body /v1/chat/completions parses (so sampling, templates, tool calls
// and the reasoning split are the chat path's, not a copy), and the one output is rendered back in Anthropic's
// shapes: a message, its SSE events (message_start ... message_stop), its errors. Pure: no Beast, no CAF.
#pragma once
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/openai_protocol.hpp"

namespace parley::http {

// /v1/messages and the paths below it: every error there is in Anthropic's shape.
bool is_messages_path(std::string_view path);
// {"type": "error", "error": {"type", "message"}, "request_id": null}, the type named by the HTTP status (400
// invalid_request_error, 401 authentication_error, 404 not_found_error, 503 overloaded_error, ...).
std::string anthropic_error_body(const ApiError& e);
std::string anthropic_error_event(const ApiError& e);  // "event: error\ndata: {...}\n\n"

// A Messages body validated (errors name Anthropic's fields, "messages.1.content.0.tool_use_id: ...") and
// parsed into the chat request it asks for; endpoint Messages. max_tokens is required, as Anthropic's is.
std::variant<GenerateRequest, ApiError> parse_messages_request(std::string_view body, const ServingContext& ctx);
// {"input_tokens": n}: the prompt a Messages request with this body would run, tokenized.
std::variant<std::string, ApiError> count_tokens_response(std::string_view body, const ServingContext& ctx);

// "toolu_" and the 32 hex digits of the chat tool call id: a call is named the same streamed or not.
std::string tool_use_id(std::string_view request_id, int call_index);

// The finished message (non-streamed): thinking, text and tool_use blocks, stop_reason, usage.
std::string message_response(const GenerateRequest& req, const std::string& id, const Choice& choice,
                             const Usage& usage);

// One streamed message: the ordered pieces of its output (reasoning, text, tool calls: what the reasoning and
// tool-call streams decided) become content blocks, each started, extended by deltas and stopped.
class MessageStream {
 public:
  MessageStream(std::string id, std::string model, int input_tokens);
  // message_start when first; content_block_start/delta/stop for the events; every block stopped when finished.
  std::string feed(const std::vector<ToolStreamEvent>& events, bool first, bool finished);
  // message_delta (stop_reason, stop_sequence, usage.output_tokens), then message_stop.
  std::string close(const Choice& choice, bool tools_called, int output_tokens) const;

 private:
  enum class Block { None, Text, Thinking, ToolUse };
  std::string start_block(Block kind, nlohmann::ordered_json block);
  std::string stop_block();

  std::string id_, model_;
  int input_tokens_;
  Block block_ = Block::None;  // the block open now
  int index_ = -1;             // its index in the message's content (the last one's once stopped)
};

}  // namespace parley::http

namespace parley::http::detail {

// The chat completions body a Messages body asks for (system and tool_result blocks become system and tool
// messages, tool_use blocks tool_calls, input_schema parameters, tool_choice any "required", thinking the
// template's enable_thinking). count_only: count_tokens' body (max_tokens not required). Throws RequestError.
nlohmann::ordered_json messages_to_chat(std::string_view body, const nlohmann::json& parsed, bool count_only);

}  // namespace parley::http::detail
