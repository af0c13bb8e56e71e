// Chat template families: detection by markers and the exact prompt text each renders (llama.cpp's
// llm_chat_apply_template output), the documented fallback, and tokenizer.chat_template from GGUF.
#include <catch2/catch.hpp>

#include "http/chat_template.hpp"
#include "model_test_util.hpp"

using namespace parley;
using namespace parley::http;

namespace {

// Exercises every rule at once: a system turn, an assistant turn with spaces to trim, a second user turn.
const std::vector<ChatMessage> kChat = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "  Hello there  "}, {"user", "Bye"}};

// Hand-written templates carrying each family's markers (real ones are long; only the markers matter).
struct Case {
  const char* family;
  std::string tmpl;
  std::string expected;
};
const std::vector<Case> kCases = {
    {"chatml", "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}{% endfor %}",
     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n  Hello there  "
     "<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n"},
    {"llama2", "{{ bos_token }}{% for m in messages %}{{ '[INST] ' + m['content'] + ' [/INST]' }}{% endfor %}",
     "[INST] Be brief.\nHi [/INST]  Hello there  </s>[INST] Bye [/INST]"},
    {"llama2-sys", "{% if system %}{{ '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }}{% endif %}",
     "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]  Hello there  </s>[INST] Bye [/INST]"},
    {"llama2-sys-bos", "{{ bos_token + '[INST] ' + m['content'] }}{{ '<<SYS>>\\n' }}",
     "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]  Hello there  </s><s>[INST] Bye [/INST]"},
    {"llama2-sys-strip", "{{ '[INST] ' + content.strip() + ' [/INST]' }}{{ '<<SYS>>' }}",
     "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]Hello there</s>[INST] Bye [/INST]"},
    {"mistral-v1", "{{ ' [INST] ' + system_message + '\\n\\n' + m['content'] + ' [/INST]' }}",
     " [INST] Be brief.\n\nHi [/INST]   Hello there  </s> [INST] Bye [/INST]"},
    {"mistral-v3", "{{ '[AVAILABLE_TOOLS]' }}{{ '[INST]' + m['content'] + '[/INST]' }}",
     "[INST] Be brief.\n\nHi[/INST] Hello there</s>[INST] Bye[/INST]"},
    {"mistral-v3-tekken", "{{- \"[AVAILABLE_TOOLS][\" }}{{- \"[INST]\" + m[\"content\"] + \"[/INST]\" }}",
     "[INST]Be brief.\n\nHi[/INST]  Hello there  </s>[INST]Bye[/INST]"},
    {"mistral-v7", "{{ '[SYSTEM_PROMPT] ' + s + '[/SYSTEM_PROMPT]' }}{{ '[INST] ' + u + '[/INST]' }}",
     "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST]   Hello there  </s>[INST] Bye[/INST]"},
    {"phi3", "{{'<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n'}}{{ '<|assistant|>\\n' }}",
     "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n  Hello there  <|end|>\n<|user|>\nBye<|end|>\n"
     "<|assistant|>\n"},
    {"zephyr", "{% if m['role'] == 'user' %}{{ '<|user|>\\n' + m['content'] + eos_token }}{% endif %}",
     "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\n  Hello there  <|endoftext|>\n"
     "<|user|>\nBye<|endoftext|>\n<|assistant|>\n"},
    {"gemma", "{{ '<start_of_turn>' + role + '\\n' + m['content'] | trim + '<end_of_turn>\\n' }}",
     "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello there<end_of_turn>\n"
     "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"},
    {"llama3", "{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}",
     "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi"
     "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello there<|eot_id|><|start_header_id|>user"
     "<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"fallback", "{{ messages[0]['content'] }}",
     "System: Be brief.\nUser: Hi\nAssistant:   Hello there  \nUser: Bye\nAssistant:"},
};

}  // namespace

TEST_CASE("chat templates: each family is detected by its markers and renders its exact prompt", "[openai]") {
  for (const auto& c : kCases) {
    INFO(c.family);
    CHECK(chat_template_family(c.tmpl) == c.family);
    CHECK(render_chat(kChat, c.tmpl, true) == c.expected);
    // A family name given as the template selects that family (llama.cpp's --chat-template <name>).
    CHECK(chat_template_family(c.family) == c.family);
    CHECK(render_chat(kChat, c.family, true) == c.expected);
  }
}

TEST_CASE("chat templates: no template falls back to a plain transcript", "[openai]") {
  CHECK(chat_template_family("") == "fallback");
  CHECK(render_chat({{"user", "Once upon a time"}}, "", true) == "User: Once upon a time\nAssistant:");
  CHECK(render_chat({{"user", "Once upon a time"}}, "", false) == "User: Once upon a time\n");
  CHECK(render_chat({{"system", "S"}, {"user", "U"}}, "", true) == "System: S\nUser: U\nAssistant:");
}

TEST_CASE("chat templates: add_generation_prompt only adds the assistant header", "[openai]") {
  const std::vector<ChatMessage> chat = {{"user", "Hi"}};
  CHECK(render_chat(chat, "chatml", false) == "<|im_start|>user\nHi<|im_end|>\n");
  CHECK(render_chat(chat, "chatml", true) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render_chat(chat, "gemma", false) == "<start_of_turn>user\nHi<end_of_turn>\n");
  CHECK(render_chat(chat, "llama3", false) == "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  // [INST] families end on [/INST] either way.
  CHECK(render_chat(chat, "llama2", false) == "[INST] Hi [/INST]");
  CHECK(render_chat(chat, "llama2", true) == "[INST] Hi [/INST]");
}

TEST_CASE("chat templates: llama.cpp's reference conversation renders as its test expects", "[openai]") {
  const std::vector<ChatMessage> conv = {{"system", "You are a helpful assistant"}, {"user", "Hello"},
                                         {"assistant", "Hi there"},                  {"user", "Who are you"},
                                         {"assistant", "   I am an assistant   "},   {"user", "Another question"}};
  CHECK(render_chat(conv, "mistral-v7", true) ==
        "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>[INST] Who are "
        "you[/INST]    I am an assistant   </s>[INST] Another question[/INST]");
  CHECK(render_chat(conv, "llama2", true) ==
        "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an assistant   "
        "</s>[INST] Another question [/INST]");
}

TEST_CASE("ModelFile carries the GGUF tokenizer.chat_template, empty without one", "[openai]") {
  using namespace parley_test;
  TempDir tmp;
  const std::string path = tmp / "templated.gguf";
  const std::string tmpl = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
  rewrite(kGguf, path, [&](GgufWriter& w) { w.set_string("tokenizer.chat_template", tmpl); });
  const ModelFile m = load_model_file(path);
  CHECK(m.chat_template == tmpl);
  CHECK(chat_template_family(m.chat_template) == "chatml");
  CHECK(load_model_file(kGguf).chat_template.empty());
  CHECK(load_model_file(kBin).chat_template.empty());

  rewrite(kGguf, path, [&](GgufWriter& w) { w.set_u32("tokenizer.chat_template", 7); });
  REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("tokenizer.chat_template"));
}
