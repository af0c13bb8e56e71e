// Messages, stream events and errors in Anthropic's shapes, every field the SDK's types declare (Message, Usage,
// RawMessageStreamEvent), the ones Parley has no value for null.
#include "http/anthropic_protocol.hpp"
#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

using namespace detail;

// The SDK's ErrorType names (413 has none of its own there).
const char* error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
  }
  return status >= 500 ? "api_error" : "invalid_request_error";
}

ojson error_json(const ApiError& e) {
  return {
      {"type", "error"}, {"error", {{"type", error_type(e.status)}, {"message", e.message}}}, {"request_id", nullptr}};
}

// Parley counts the prompt and the output; the cache, server tool and tier fields have no value here.
ojson usage_json(int input_tokens, int output_tokens) {
  return {{"input_tokens", input_tokens},
          {"output_tokens", output_tokens},
          {"cache_creation_input_tokens", nullptr},
          {"cache_read_input_tokens", nullptr},
          {"cache_creation", nullptr},
          {"inference_geo", nullptr},
          {"output_tokens_details", nullptr},
          {"server_tool_use", nullptr},
          {"service_tier", nullptr},
          {"speed", nullptr}};
}

ojson message_json(const std::string& id, const std::string& model, ojson content, const ojson& stop, ojson usage) {
  return {{"id", id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model},
          {"content", std::move(content)},
          {"stop_reason", stop["stop_reason"]},
          {"stop_sequence", stop["stop_sequence"]},
          {"stop_details", nullptr},
          {"container", nullptr},
          {"diagnostics", nullptr},
          {"usage", std::move(usage)}};
}

// A call ends the turn as tool_use; a stop string as stop_sequence (naming it); the length as max_tokens.
ojson stop_json(const Choice& c, bool tools_called) {
  ojson reason = nullptr, sequence = nullptr;
  if (c.finish_reason == FinishReason::Length) {
    reason = "max_tokens";
  } else if (c.finish_reason != FinishReason::None) {
    const std::string* stop_string = std::get_if<std::string>(&c.stop_reason);
    reason = tools_called ? "tool_use" : stop_string ? "stop_sequence" : "end_turn";
    if (stop_string && !tools_called) sequence = *stop_string;
  }
  return {{"stop_reason", reason}, {"stop_sequence", sequence}};
}

// No citations: an empty list (the SDK's type takes a list or null; the Vercel AI SDK's schema only a list).
ojson text_block(const std::string& text) { return {{"type", "text"}, {"text", text}, {"citations", ojson::array()}}; }
ojson thinking_block(const std::string& thinking) {
  return {{"type", "thinking"}, {"thinking", thinking}, {"signature", ""}};  // no signature: nothing to verify here
}
ojson tool_use_block(const std::string& id, const std::string& name, ojson input) {
  return {
      {"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}, {"caller", {{"type", "direct"}}}};
}

}  // namespace

std::string anthropic_error_body(const ApiError& e) { return dump(error_json(e)); }
std::string anthropic_error_event(const ApiError& e) { return typed_event(error_json(e)); }

std::string tool_use_id(std::string_view request_id, int call_index) {
  return renamed_tool_call_id(tool_call_id(request_id, call_index), "toolu_");
}

std::string message_response(const GenerateRequest& req, const std::string& id, const Choice& choice,
                             const Usage& usage) {
  const ChoiceAnswer answer = choice_answer(req, choice.text);  // the splits the streamed events come from
  ojson content = ojson::array();
  if (answer.reasoning) content.push_back(thinking_block(*answer.reasoning));
  if (answer.content && !answer.content->empty()) content.push_back(text_block(*answer.content));
  for (size_t k = 0; k < answer.calls.size(); ++k)
    content.push_back(tool_use_block(tool_use_id(choice_request_id(id, choice.index), int(k)), answer.calls[k].name,
                                     ojson::parse(answer.calls[k].arguments)));
  const ojson stop = stop_json(choice, !answer.calls.empty());
  return dump(
      message_json(id, req.model, std::move(content), stop, usage_json(usage.prompt_tokens, usage.completion_tokens)));
}

MessageStream::MessageStream(std::string id, std::string model, int input_tokens)
    : id_(std::move(id)), model_(std::move(model)), input_tokens_(input_tokens) {}

std::string MessageStream::start_block(Block kind, ojson block) {
  std::string out = stop_block();
  block_ = kind;
  ++index_;
  return out + typed_event({{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
}

std::string MessageStream::stop_block() {
  if (block_ == Block::None) return "";
  block_ = Block::None;
  return typed_event({{"type", "content_block_stop"}, {"index", index_}});
}

std::string MessageStream::feed(const std::vector<ToolStreamEvent>& events, bool first, bool finished) {
  std::string out;
  if (first) {
    const ojson stop = {{"stop_reason", nullptr}, {"stop_sequence", nullptr}};
    out += typed_event({{"type", "message_start"},
                        {"message", message_json(id_, model_, ojson::array(), stop, usage_json(input_tokens_, 0))}});
  }
  auto delta = [&](ojson d) {
    out += typed_event({{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(d)}});
  };
  for (const ToolStreamEvent& e : events) {
    if (e.tool_call && e.tool_call->id) {  // a call's first piece names it: a tool_use block of its own
      out += start_block(Block::ToolUse, tool_use_block(renamed_tool_call_id(*e.tool_call->id, "toolu_"),
                                                        e.tool_call->name.value_or(""), ojson::object()));
    }
    if (e.tool_call) {
      if (!e.tool_call->arguments.empty())
        delta({{"type", "input_json_delta"}, {"partial_json", e.tool_call->arguments}});
      continue;
    }
    if (e.content.empty()) continue;
    const Block kind = e.reasoning ? Block::Thinking : Block::Text;
    if (block_ != kind) out += start_block(kind, e.reasoning ? thinking_block("") : text_block(""));
    delta(e.reasoning ? ojson{{"type", "thinking_delta"}, {"thinking", e.content}}
                      : ojson{{"type", "text_delta"}, {"text", e.content}});
  }
  if (finished) out += stop_block();
  return out;
}

std::string MessageStream::close(const Choice& choice, bool tools_called, int output_tokens) const {
  ojson usage = usage_json(input_tokens_, output_tokens);
  for (const char* key : {"cache_creation", "inference_geo", "service_tier", "speed"})
    usage.erase(key);  // MessageDeltaUsage's
  ojson delta = stop_json(choice, tools_called);
  delta["stop_details"] = nullptr;
  delta["container"] = nullptr;
  return typed_event({{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", std::move(usage)}}) +
         typed_event({{"type", "message_stop"}});
}

}  // namespace parley::http
