#include "http/chat_template.hpp"

#include <cctype>
#include <string_view>

namespace parley::http {
namespace {

enum class Family {
  Fallback, ChatMl, Llama2, Llama2Sys, Llama2SysBos, Llama2SysStrip,
  MistralV1, MistralV3, MistralV3Tekken, MistralV7, Phi3, Zephyr, Gemma, Llama3,
};

struct Named {
  std::string_view name;
  Family family;
};
constexpr Named kNames[] = {
    {"fallback", Family::Fallback},       {"chatml", Family::ChatMl},
    {"llama2", Family::Llama2},           {"llama2-sys", Family::Llama2Sys},
    {"llama2-sys-bos", Family::Llama2SysBos}, {"llama2-sys-strip", Family::Llama2SysStrip},
    {"mistral-v1", Family::MistralV1},    {"mistral-v3", Family::MistralV3},
    {"mistral-v3-tekken", Family::MistralV3Tekken}, {"mistral-v7", Family::MistralV7},
    {"phi3", Family::Phi3},               {"zephyr", Family::Zephyr},
    {"gemma", Family::Gemma},             {"llama3", Family::Llama3},
};

// llama.cpp's llm_chat_detect_template, restricted to the families above and in its order.
Family detect(const std::string& tmpl) {
  for (const auto& n : kNames)
    if (tmpl == n.name) return n.family;
  auto has = [&](std::string_view marker) { return tmpl.find(marker) != std::string::npos; };
  if (has("<|im_start|>")) return Family::ChatMl;
  if (tmpl.starts_with("mistral") || has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) return Family::MistralV7;
    if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
      if (has(" [INST]")) return Family::MistralV1;
      if (has("\"[INST]\"")) return Family::MistralV3Tekken;
      return Family::MistralV3;
    }
    if (has("content.strip()")) return Family::Llama2SysStrip;
    if (has("bos_token + '[INST]")) return Family::Llama2SysBos;
    if (has("<<SYS>>")) return Family::Llama2Sys;
    return Family::Llama2;
  }
  if (has("<|assistant|>") && has("<|end|>")) return Family::Phi3;
  if (has("<|user|>")) return Family::Zephyr;
  if (has("<start_of_turn>")) return Family::Gemma;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return Family::Llama3;
  return Family::Fallback;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

void render_llama2(const std::vector<ChatMessage>& messages, Family f, std::string& out) {
  const bool system_block = f != Family::Llama2;
  const bool bos_inside = f == Family::Llama2SysBos;
  const bool strip = f == Family::Llama2SysStrip;
  bool inside_turn = true;  // the opening [INST] follows the tokenizer's BOS
  out += "[INST] ";
  for (const auto& m : messages) {
    const std::string content = strip ? trim(m.content) : m.content;
    if (!inside_turn) {
      inside_turn = true;
      out += bos_inside ? "<s>[INST] " : "[INST] ";
    }
    if (m.role == "system") out += system_block ? "<<SYS>>\n" + content + "\n<</SYS>>\n\n" : content + "\n";
    else if (m.role == "user") out += content + " [/INST]";
    else {
      out += content + "</s>";
      inside_turn = false;
    }
  }
}

void render_mistral(const std::vector<ChatMessage>& messages, Family f, std::string& out) {
  if (f == Family::MistralV7) {
    for (const auto& m : messages) {
      if (m.role == "system") out += "[SYSTEM_PROMPT] " + m.content + "[/SYSTEM_PROMPT]";
      else if (m.role == "user") out += "[INST] " + m.content + "[/INST]";
      else out += " " + m.content + "</s>";
    }
    return;
  }
  const std::string lead = f == Family::MistralV1 ? " " : "";
  const std::string trail = f == Family::MistralV3Tekken ? "" : " ";
  bool inside_turn = false;
  for (const auto& m : messages) {
    if (!inside_turn) {
      out += lead + "[INST]" + trail;
      inside_turn = true;
    }
    if (m.role == "system") out += m.content + "\n\n";
    else if (m.role == "user") out += m.content + lead + "[/INST]";
    else {
      out += trail + (f == Family::MistralV3 ? trim(m.content) : m.content) + "</s>";
      inside_turn = false;
    }
  }
}

void render_gemma(const std::vector<ChatMessage>& messages, bool gen, std::string& out) {
  std::string system;  // gemma has no system turn: it is merged into the next user turn
  for (const auto& m : messages) {
    if (m.role == "system") {
      system += trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += "<start_of_turn>" + role + "\n";
    if (!system.empty() && role != "model") {
      out += system + "\n\n";
      system.clear();
    }
    out += trim(m.content) + "<end_of_turn>\n";
  }
  if (gen) out += "<start_of_turn>model\n";
}

}  // namespace

std::string chat_template_family(const std::string& chat_template) {
  const Family f = detect(chat_template);
  for (const auto& n : kNames)
    if (n.family == f) return std::string(n.name);
  return kFallbackChatTemplate;
}

std::string render_chat(const std::vector<ChatMessage>& messages, const std::string& chat_template,
                        bool add_generation_prompt) {
  const Family f = detect(chat_template);
  const bool gen = add_generation_prompt;
  std::string out;
  switch (f) {
    case Family::ChatMl:
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (gen) out += "<|im_start|>assistant\n";
      break;
    case Family::Llama2: case Family::Llama2Sys: case Family::Llama2SysBos: case Family::Llama2SysStrip:
      render_llama2(messages, f, out);
      break;
    case Family::MistralV1: case Family::MistralV3: case Family::MistralV3Tekken: case Family::MistralV7:
      render_mistral(messages, f, out);
      break;
    case Family::Phi3:
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      if (gen) out += "<|assistant|>\n";
      break;
    case Family::Zephyr:
      for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|endoftext|>\n";
      if (gen) out += "<|assistant|>\n";
      break;
    case Family::Gemma:
      render_gemma(messages, gen, out);
      break;
    case Family::Llama3:
      for (const auto& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
      if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case Family::Fallback:
      for (const auto& m : messages) out += capitalised(m.role) + ": " + m.content + "\n";
      if (gen) out += "Assistant:";
      break;
  }
  return out;
}

}  // namespace parley::http
