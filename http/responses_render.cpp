// Response objects, their stream events and DELETE's answer in the shapes of OpenAI's OpenAPI document (Response,
// OutputItem, ResponseStreamEvent, ResponseUsage), every field its schemas require.
#include "http/openai_fields.hpp"
#include "http/responses_protocol.hpp"

namespace parley::http {
namespace {

using namespace detail;

// The digits of "resp_<digits>": the response's items are named after it.
std::string digits_of(const std::string& id) { return id.substr(id.find('_') + 1); }

const char* status_name(bool incomplete) { return incomplete ? "incomplete" : "completed"; }

ojson output_text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
}
ojson reasoning_text_part(const std::string& text) { return {{"type", "reasoning_text"}, {"text", text}}; }

ojson reasoning_item(const std::string& id, ojson content, const char* status) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", ojson::array()},
          {"content", std::move(content)},
          {"status", status}};
}
ojson message_item(const std::string& id, ojson content, const char* status) {
  return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}
// chat_id: the chat tool call id; the item is "fc_" and its digits, the call "call_" and its digits.
ojson function_call_item(const std::string& chat_id, const std::string& name, const std::string& arguments,
                         const char* status) {
  return {{"id", renamed_tool_call_id(chat_id, "fc_")},
          {"type", "function_call"},
          {"status", status},
          {"arguments", arguments},
          {"call_id", function_call_id(chat_id)},
          {"name", name}};
}

ojson usage_json(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", 0}, {"cache_write_tokens", 0}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", u.reasoning_tokens.value_or(0)}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

// The Response object around its output: the request's echoed fields after the response's own.
ojson response_json(const GenerateRequest& req, const std::string& id, long created, const char* status, ojson output,
                    ojson usage) {
  ojson r = {{"id", id},
             {"object", "response"},
             {"created_at", created},
             {"status", status},
             {"background", false},
             {"error", nullptr},
             {"incomplete_details", nullptr},
             {"model", req.model},
             {"output", std::move(output)}};
  if (std::string_view(status) == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  if (req.responses)
    for (const auto& [key, value] : req.responses->echo.items()) r[key] = value;
  if (!usage.is_null()) r["usage"] = std::move(usage);  // optional, not nullable: none until the end
  return r;
}

}  // namespace

std::string function_call_id(std::string_view chat_tool_call_id) {
  return renamed_tool_call_id(chat_tool_call_id, "call_");
}

ojson response_object(const GenerateRequest& req, const std::string& id, long created, const Choice& choice,
                      const Usage& usage) {
  const ChoiceAnswer answer = choice_answer(req, choice.text);  // the splits the streamed events come from
  const std::string digits = digits_of(id);
  ojson output = ojson::array();
  if (answer.reasoning && !answer.reasoning->empty())
    output.push_back(reasoning_item("rs_" + digits, {reasoning_text_part(*answer.reasoning)}, "completed"));
  if (answer.content && !answer.content->empty())
    output.push_back(message_item("msg_" + digits, {output_text_part(*answer.content)}, "completed"));
  for (size_t k = 0; k < answer.calls.size(); ++k)
    output.push_back(function_call_item(tool_call_id(choice_request_id(id, choice.index), int(k)), answer.calls[k].name,
                                        answer.calls[k].arguments, "completed"));
  const bool incomplete = choice.finish_reason == FinishReason::Length;
  if (incomplete && !output.empty()) output.back()["status"] = "incomplete";  // the item the limit cut
  return response_json(req, id, created, status_name(incomplete), std::move(output), usage_json(usage));
}

std::optional<StoredResponse> response_to_store(const GenerateRequest& req, ojson response) {
  if (!req.responses || !req.responses->store) return std::nullopt;
  return StoredResponse{std::move(response), req.responses->input};
}

std::string response_deleted(const std::string& id) {
  return dump({{"id", id}, {"object", "response"}, {"deleted", true}});
}

ResponseStream::ResponseStream(const GenerateRequest& req, std::string id, long created)
    : created_(response_json(req, id, created, "in_progress", ojson::array(), nullptr)), hex_(digits_of(id)) {}

std::string ResponseStream::event(ojson data) {
  data["sequence_number"] = sequence_++;
  return typed_event(data);
}

std::string ResponseStream::open_item(Item kind, ojson item) {
  std::string out = close_item(false);
  open_ = kind;
  item_ = std::move(item);
  ++output_index_;
  text_.clear();
  out += event({{"type", "response.output_item.added"}, {"output_index", output_index_}, {"item", item_}});
  if (kind == Item::FunctionCall) return out;
  return out + event({{"type", "response.content_part.added"},
                      {"item_id", item_["id"]},
                      {"output_index", output_index_},
                      {"content_index", 0},
                      {"part", kind == Item::Reasoning ? reasoning_text_part("") : output_text_part("")}});
}

// The open item's done events: its text's (or arguments'), its part's, its own.
std::string ResponseStream::close_item(bool incomplete) {
  const Item kind = std::exchange(open_, Item::None);
  if (kind == Item::None) return "";
  std::string out;
  const ojson where = {{"item_id", item_["id"]}, {"output_index", output_index_}};
  if (kind == Item::FunctionCall) {
    out += event({{"type", "response.function_call_arguments.done"},
                  {"item_id", item_["id"]},
                  {"name", item_["name"]},
                  {"output_index", output_index_},
                  {"arguments", text_}});
    item_["arguments"] = text_;
  } else {
    const bool reasoning = kind == Item::Reasoning;
    ojson done = {{"type", reasoning ? "response.reasoning_text.done" : "response.output_text.done"}};
    done.update(where);
    done["content_index"] = 0;
    done["text"] = text_;
    if (!reasoning) done["logprobs"] = ojson::array();
    out += event(std::move(done));
    const ojson part = reasoning ? reasoning_text_part(text_) : output_text_part(text_);
    ojson part_done = {{"type", "response.content_part.done"}};
    part_done.update(where);
    part_done["content_index"] = 0;
    part_done["part"] = part;
    out += event(std::move(part_done));
    item_["content"] = ojson::array({part});
  }
  item_["status"] = status_name(incomplete);
  return out + event({{"type", "response.output_item.done"}, {"output_index", output_index_}, {"item", item_}});
}

std::string ResponseStream::feed(const std::vector<ToolStreamEvent>& events, bool first, bool finished,
                                 bool incomplete) {
  std::string out;
  if (first) {
    out += event({{"type", "response.created"}, {"response", created_}});
    out += event({{"type", "response.in_progress"}, {"response", created_}});
  }
  for (const ToolStreamEvent& e : events) {
    if (e.tool_call && e.tool_call->id)  // a call's first piece names it: a function_call item of its own
      out += open_item(Item::FunctionCall,
                       function_call_item(*e.tool_call->id, e.tool_call->name.value_or(""), "", "in_progress"));
    if (e.tool_call) {
      if (e.tool_call->arguments.empty()) continue;
      text_ += e.tool_call->arguments;
      out += event({{"type", "response.function_call_arguments.delta"},
                    {"item_id", item_["id"]},
                    {"output_index", output_index_},
                    {"delta", e.tool_call->arguments}});
      continue;
    }
    if (e.content.empty()) continue;
    const Item kind = e.reasoning ? Item::Reasoning : Item::Message;
    if (open_ != kind) {
      const std::string id = e.reasoning   ? "rs_" + hex_
                             : messages_++ ? "msg_" + hex_ + "_" + std::to_string(messages_ - 1)
                                           : "msg_" + hex_;
      out += open_item(kind, e.reasoning ? reasoning_item(id, ojson::array(), "in_progress")
                                         : message_item(id, ojson::array(), "in_progress"));
    }
    text_ += e.content;
    ojson delta = {{"type", e.reasoning ? "response.reasoning_text.delta" : "response.output_text.delta"},
                   {"item_id", item_["id"]},
                   {"output_index", output_index_},
                   {"content_index", 0},
                   {"delta", e.content}};
    if (!e.reasoning) delta["logprobs"] = ojson::array();
    out += event(std::move(delta));
  }
  if (finished) out += close_item(incomplete);
  return out;
}

std::string ResponseStream::close(const ojson& response) const {
  const bool incomplete = response["status"] == "incomplete";
  return typed_event({{"type", incomplete ? "response.incomplete" : "response.completed"},
                      {"response", response},
                      {"sequence_number", sequence_}});
}

std::string ResponseStream::error(const ApiError& e) const {
  return typed_event({{"type", "error"},
                      {"code", e.code.empty() ? ojson() : ojson(e.code)},
                      {"message", e.message},
                      {"param", e.param.empty() ? ojson() : ojson(e.param)},
                      {"sequence_number", sequence_}});
}

}  // namespace parley::http
