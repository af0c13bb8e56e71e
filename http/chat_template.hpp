// Chat messages to one prompt string, without a Jinja engine: as llama.cpp's llm_chat_detect_template
// did, a model's tokenizer.chat_template is recognised by marker strings and the family is rendered
// by hand (llama.cpp's llm_chat_apply_template output, byte for byte).
//
// Families: chatml, llama2, llama2-sys, llama2-sys-bos, llama2-sys-strip, mistral-v1, mistral-v3,
// mistral-v3-tekken, mistral-v7, phi3, zephyr, gemma, llama3. A template string that is exactly one
// of these names selects it (llama.cpp's --chat-template <name>).
//
// The leading BOS is never written as text: the prompt is tokenized with the vocabulary's add_bos, so
// a template that starts with bos_token gets the real BOS token instead of the characters "<s>".
// Markers inside the text ("</s>", "<|im_start|>", llama2-sys-bos's later "<s>") are written as
// llama.cpp writes them; the tokenizer encodes them as plain text (it has no special-token parsing yet).
//
// Fallback ("fallback"): no template (llama2.c files, base GGUFs) or one not recognised. A plain
// transcript a base model can continue, one line per message with its role capitalised:
//   System: You are terse.\nUser: Hi\nAssistant: Hello\nUser: Bye\nAssistant:
// The trailing "Assistant:" (no space: SentencePiece's next piece carries it) only with
// add_generation_prompt. Roles other than system/user/assistant keep their own name, capitalised.
#pragma once
#include <string>
#include <vector>

namespace parley::http {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

inline constexpr const char* kFallbackChatTemplate = "fallback";

// The family name a template is rendered as ("fallback" for "" or an unrecognised template).
std::string chat_template_family(const std::string& chat_template);

// The prompt text for `messages` under `chat_template` (the GGUF tokenizer.chat_template, or "").
std::string render_chat(const std::vector<ChatMessage>& messages, const std::string& chat_template,
                        bool add_generation_prompt);

}  // namespace parley::http
