// OpenAI's Responses API (POST /v1/responses, GET and DELETE /v1/responses/{id}) at the edge, as vLLM serves it: a
// Responses body (input items, instructions, flat function tools, text.format, reasoning.effort) becomes the chat
// body /v1/chat/completions parses, so templates, sampling, tool calls, structured outputs and the reasoning split
// are the chat path's; the one output is rendered back as a Response object (reasoning, message and function_call
// items) or its typed SSE events. Shapes: ../shared/openai-openapi.yaml (Response, ResponseStreamEvent). Pure.
#pragma once
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/openai_protocol.hpp"
#include "http/response_store.hpp"

namespace parley::http {

// What a Responses request carries beyond the chat request it runs as.
struct ResponsesRequest {
  nlohmann::ordered_json echo;   // the request fields its Response object shows (instructions, tools, text, ...)
  nlohmann::ordered_json input;  // the items it answers, the turns of previous_response_id's chain first
  bool store = true;             // kept for GET and previous_response_id
};

// A Responses body validated (errors name its fields, "input.2.call_id: ...") and parsed into the chat request it
// asks for; endpoint Responses. previous_response_id is looked up in `store` (unknown: a 404).
std::variant<GenerateRequest, ApiError> parse_responses_request(std::string_view body, const ServingContext& ctx,
                                                                const ResponseStore* store);

// The Response object of a finished choice: its output items, status (incomplete at max_output_tokens) and usage.
nlohmann::ordered_json response_object(const GenerateRequest& req, const std::string& id, long created,
                                       const Choice& choice, const Usage& usage);
// What the store keeps of a finished response, or nothing (store false).
std::optional<StoredResponse> response_to_store(const GenerateRequest& req, nlohmann::ordered_json response);
// DELETE /v1/responses/{id}'s answer.
std::string response_deleted(const std::string& id);
// "call_" and the 32 hex digits of the chat tool call id: the call_id of a function_call item.
std::string function_call_id(std::string_view chat_tool_call_id);

// One streamed response: response.created and response.in_progress, then per output item its added, part, delta,
// done events (reasoning_text, output_text, function_call_arguments), each with its sequence_number.
class ResponseStream {
 public:
  ResponseStream(const GenerateRequest& req, std::string id, long created);
  // incomplete: the output ended at max_output_tokens (the open item ends "incomplete").
  std::string feed(const std::vector<ToolStreamEvent>& events, bool first, bool finished, bool incomplete);
  // response.completed, or response.incomplete, with the whole response.
  std::string close(const nlohmann::ordered_json& response) const;
  std::string error(const ApiError& e) const;  // the error event

 private:
  enum class Item { None, Reasoning, Message, FunctionCall };
  std::string event(nlohmann::ordered_json data);
  std::string open_item(Item kind, nlohmann::ordered_json item);
  std::string close_item(bool incomplete);
  std::string text_event(const char* suffix, const char* key, const std::string& text);

  nlohmann::ordered_json created_;  // the response as response.created shows it
  std::string hex_;                 // the response id's digits: its items' ids
  int sequence_ = 0;                // the next event's sequence_number
  Item open_ = Item::None;
  nlohmann::ordered_json item_;  // the open item
  int output_index_ = -1;        // its index in output
  int messages_ = 0;             // message items so far (the second gets its own id)
  std::string text_;             // the open item's text or arguments so far
};

}  // namespace parley::http

namespace parley::http::detail {

// The chat completions body a Responses body asks for, and what its response echoes and stores (`out`). Input items:
// messages (system, developer, user, assistant; text parts), function_call items become an assistant message's
// tool_calls, function_call_output items tool messages, reasoning items the next assistant message's
// reasoning_content. Throws RequestError.
nlohmann::ordered_json responses_to_chat(std::string_view body, const nlohmann::json& parsed,
                                         const ResponseStore* store, ResponsesRequest& out);

}  // namespace parley::http::detail
