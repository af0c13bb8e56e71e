// OpenAI chat messages to a prompt through the model's own Jinja chat template (model/jinja), with the
// message preparation vLLM applies before rendering, so that the prompt is the one vLLM would build.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"

namespace parley {

struct ChatInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // OpenAI messages, as the client sent them
  nlohmann::ordered_json tools;                                       // null or an array of OpenAI tool objects
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs, e.g. enable_thinking
};

// vLLM's preparation of messages: an assistant's tool_calls[].function.arguments given as a JSON string
// becomes the parsed value (a string that does not parse stays; an empty or missing one becomes {}, as in
// vLLM); null or missing content becomes "" ([] for a template that takes parts); content given as parts
// stays as it is for a template that takes parts (`content_as_parts`), else becomes the parts' text joined
// with "\n".
nlohmann::ordered_json prepare_messages(const nlohmann::ordered_json& messages, bool content_as_parts);

class ChatTemplate {
 public:
  // Throws jinja::ParseError for a template that cannot be parsed.
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token, jinja::Options options = {});
  std::string apply(const ChatInputs& inputs) const;  // throws jinja::RenderError

  // What apply() renders with, in transformers' order: render(messages=..., tools=..., add_generation_prompt=...,
  // **{**special_tokens, **chat_template_kwargs}): kwargs may replace bos_token and eos_token, never messages,
  // tools or add_generation_prompt. `tools` is left out when null.
  nlohmann::ordered_json render_context(const ChatInputs& inputs) const;
  // vLLM's --chat-template-content-format auto: true ("openai") when the template loops over message content.
  bool takes_content_parts() const { return takes_content_parts_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_, bos_token_, eos_token_;
  jinja::Template template_;
  bool takes_content_parts_;
};

}  // namespace parley
