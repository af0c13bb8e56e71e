// Chat messages to prompt text: OpenAI messages validated as vLLM validates them, then rendered by the
// model's Jinja chat template (model/chat_template.hpp: the GGUF's tokenizer.chat_template, or
// --chat-template FILE, or a request's own chat_template).
//
// A model without a template gets a plain transcript a base model can continue, one line per message
// with its role capitalised, after the BOS token's text when the vocabulary adds BOS:
//   <s>System: You are terse.\nUser: Hi\nAssistant: Hello\nUser: Bye\nAssistant:
// The trailing "Assistant:" (no space: SentencePiece's next piece carries it) only with
// add_generation_prompt. The prompt is tokenized with special tokens parsed and, as vLLM does for
// chat, without adding BOS again (add_special_tokens defaults to false): the template writes it.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "http/tool_calls.hpp"
#include "model/chat_template.hpp"
#include "model/tokenizer.hpp"

namespace parley::http {

// A template for this vocabulary (its BOS and EOS text); throws jinja::ParseError naming the line.
std::shared_ptr<const ChatTemplate> make_chat_template(std::string source, const Tokenizer& tokenizer);
// The template a server renders with: the file's (override_file, --chat-template) or the model's own;
// nullptr when neither has one (the plain fallback). Throws std::runtime_error naming the template
// that cannot be read or parsed, with the construct and line.
std::shared_ptr<const ChatTemplate> served_chat_template(const std::string& model_template,
                                                         const std::string& override_file, const Tokenizer& tokenizer);

// What the template appends for the assistant's turn: one user message rendered with and without the generation
// prompt (with these chat_template_kwargs), the difference ("" when a template raises or appends nothing).
std::string generation_prompt(const ChatTemplate& chat_template,
                              const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object());

// What a chat body asks to render. Fields: messages (required), add_generation_prompt (default true),
// chat_template_kwargs (an object), tools (OpenAI function tools; tool_choice is read_tool_request's), chat_template
// (a per-request template source, vLLM's field).
struct ChatRequest {
  ChatInputs inputs;
  std::optional<std::string> chat_template;
};

}  // namespace parley::http

namespace parley::http::detail {

// Reads the chat fields of body (the raw text, parsed again keeping the client's key order, which
// templates that print tools with tojson show). Throws RequestError naming the field.
ChatRequest read_chat_request(std::string_view body, const nlohmann::json& parsed);

// What a chat body's tool_choice and parallel_tool_calls ask (tools already read by read_chat_request):
// how the output is read for calls (none: it is not), and whether the template gets the tools. The parser is
// --tool-call-parser's, else the one template_source shows. Throws RequestError naming the field.
struct ToolRequest {
  std::optional<ToolCalling> calling;
  bool render_tools = true;
};
ToolRequest read_tool_request(const nlohmann::json& body, const ToolServing& serving, std::string_view template_source);

// The prompt text: the request's template, else the served one (nullptr: the plain fallback).
// A template that raises answers 400 with its message; one that cannot be parsed, 400 naming the line.
std::string render_chat_prompt(const ChatRequest& request, const ChatTemplate* served, const Tokenizer& tokenizer);

}  // namespace parley::http::detail
