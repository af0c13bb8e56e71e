// Chat request fields, message validation, and rendering with the Jinja template or the fallback.
#include "http/chat_prompt.hpp"

#include <cctype>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "http/openai_fields.hpp"

namespace parley::http {

std::shared_ptr<const ChatTemplate> make_chat_template(std::string source, const Tokenizer& tokenizer) {
  const Vocab& v = tokenizer.vocab();
  auto text = [&](int id) { return id >= 0 ? v.pieces[id] : std::string(); };
  return std::make_shared<const ChatTemplate>(std::move(source), text(v.bos_id), text(v.eos_id));
}

std::shared_ptr<const ChatTemplate> served_chat_template(const std::string& model_template,
                                                         const std::string& override_file, const Tokenizer& tokenizer) {
  std::string source = model_template, where = "the model's tokenizer.chat_template";
  if (!override_file.empty()) {
    std::ifstream in(override_file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the chat template file '" + override_file + "'");
    source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    where = "the chat template '" + override_file + "'";
  }
  if (source.empty()) return nullptr;
  try {
    return make_chat_template(std::move(source), tokenizer);
  } catch (const jinja::ParseError& e) {
    throw std::runtime_error(where + " cannot be parsed: " + e.what() +
                             (override_file.empty() ? " (--chat-template FILE serves another)" : ""));
  }
}

}  // namespace parley::http

namespace parley::http {

std::string generation_prompt(const ChatTemplate& chat_template, const nlohmann::ordered_json& kwargs) {
  ChatInputs inputs;
  inputs.kwargs = kwargs;
  inputs.messages.push_back({{"role", "user"}, {"content", "Hi"}});
  try {
    const std::string with = chat_template.apply(inputs);
    inputs.add_generation_prompt = false;
    const std::string without = chat_template.apply(inputs);
    return with.starts_with(without) ? with.substr(without.size()) : "";
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace parley::http

namespace parley::http::detail {
namespace {

void reject_keys(const json& obj, const std::string& at, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : obj.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      fail("Unrecognized request argument supplied: " + at + "." + key, at + "." + key);
}

void check_string(const json& obj, const std::string& at, std::string_view key, bool required) {
  const json* v = field(obj, key);
  const std::string param = at + "." + std::string(key);
  if (!v) {
    if (required) fail("Missing required parameter: '" + param + "'.", param);
    return;
  }
  if (!v->is_string()) wrong_type(param, "a string", *v);
}

void check_content_parts(const json& content, const std::string& at) {
  for (size_t p = 0; p < content.size(); ++p) {
    const json& part = content[p];
    const std::string pat = at + ".content[" + std::to_string(p) + "]";
    if (!part.is_object()) wrong_type(pat, "an object", part);
    reject_keys(part, pat, {"type", "text"});
    const json* type = field(part, "type");
    if (!type || !type->is_string() || *type != "text")
      fail("Invalid value for '" + pat + ".type': content parts of type " + (type ? type->dump() : "null") +
               " are not supported; only \"text\" is.",
           pat + ".type");
    check_string(part, pat, "text", true);
  }
}

void check_tool_calls(const json& calls, const std::string& at) {
  const std::string param = at + ".tool_calls";
  if (!calls.is_array()) wrong_type(param, "an array", calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string c = param + "[" + std::to_string(i) + "]";
    if (!calls[i].is_object()) wrong_type(c, "an object", calls[i]);
    reject_keys(calls[i], c, {"id", "type", "function"});
    check_string(calls[i], c, "id", true);
    const json* type = field(calls[i], "type");
    if (type && *type != "function")
      fail("Invalid value for '" + c + ".type': only \"function\" is supported.", c + ".type");
    const json* fn = field(calls[i], "function");
    if (!fn) fail("Missing required parameter: '" + c + ".function'.", c + ".function");
    if (!fn->is_object()) wrong_type(c + ".function", "an object", *fn);
    reject_keys(*fn, c + ".function", {"name", "arguments"});
    check_string(*fn, c + ".function", "name", true);
    check_string(*fn, c + ".function", "arguments", true);
  }
}

// OpenAI messages: roles system/developer/user/assistant/tool; content a string, text parts, or null on
// an assistant message that calls tools; tool_calls on assistant messages, tool_call_id on tool results.
void check_messages(const json& body) {
  const json* msgs = field(body, "messages");
  if (!msgs) fail("Missing required parameter: 'messages'.", "messages");
  if (!msgs->is_array()) wrong_type("messages", "an array", *msgs);
  if (msgs->empty())
    fail("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
         "messages");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(at, "an object", m);
    reject_keys(m, at, {"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "refusal"});
    check_string(m, at, "role", true);
    const std::string role = m["role"];
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      fail("Invalid value for '" + at + ".role': '" + role +
               "' is not supported; expected 'system', 'developer', 'user', 'assistant' or 'tool'.",
           at + ".role");
    check_string(m, at, "name", false);
    const json* calls = field(m, "tool_calls");
    if (calls && role != "assistant")
      fail("'" + at + ".tool_calls' is only allowed on assistant messages.", at + ".tool_calls");
    if (calls) check_tool_calls(*calls, at);
    if (field(m, "reasoning_content") && role != "assistant")
      fail("'" + at + ".reasoning_content' is only allowed on assistant messages.", at + ".reasoning_content");
    check_string(m, at, "reasoning_content", false);
    // A response's message sent back as it came (OpenAI's assistant message param has refusal).
    if (field(m, "refusal") && role != "assistant")
      fail("'" + at + ".refusal' is only allowed on assistant messages.", at + ".refusal");
    check_string(m, at, "refusal", false);
    if (role == "tool")
      check_string(m, at, "tool_call_id", true);
    else if (field(m, "tool_call_id"))
      fail("'" + at + ".tool_call_id' is only allowed on tool messages.", at + ".tool_call_id");
    const json* content = field(m, "content");
    if (!content) {
      if (calls) continue;  // an assistant turn that only calls tools
      fail("Missing required parameter: '" + at + ".content'.", at + ".content");
    }
    if (content->is_array())
      check_content_parts(*content, at);
    else if (!content->is_string())
      wrong_type(at + ".content", "a string or an array of content parts", *content);
  }
}

void check_tools(const json& tools) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!tools[i].is_object()) wrong_type(at, "an object", tools[i]);
    const json* type = field(tools[i], "type");
    if (!type || *type != "function")
      fail("Invalid value for '" + at + ".type': only \"function\" is supported.", at + ".type");
    const json* fn = field(tools[i], "function");
    if (!fn || !fn->is_object()) fail("Missing required parameter: '" + at + ".function'.", at + ".function");
    check_string(*fn, at + ".function", "name", true);
  }
}

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// The plain transcript for a model without a template (see the header).
std::string render_fallback(const ChatInputs& in, const Tokenizer& tokenizer) {
  const Vocab& v = tokenizer.vocab();
  std::string out = v.add_bos && v.bos_id >= 0 ? v.pieces[v.bos_id] : "";
  for (const auto& m : in.messages) {
    std::string role = m["role"];
    if (role == "developer") role = "system";  // OpenAI's newer name for system
    std::string content;
    const auto c = m.find("content");
    if (c != m.end() && c->is_string()) content = *c;
    if (c != m.end() && c->is_array())  // vLLM joins the text parts of one message with newlines
      for (size_t p = 0; p < c->size(); ++p) content += (p ? "\n" : "") + (*c)[p]["text"].get<std::string>();
    out += capitalised(role) + ": " + content + "\n";
  }
  if (in.add_generation_prompt) out += "Assistant:";
  return out;
}

}  // namespace

ChatRequest read_chat_request(std::string_view body, const json& parsed) {
  check_messages(parsed);
  ChatRequest out;
  const ojson ordered = ojson::parse(body);  // parsed once already: it is valid JSON
  out.inputs.messages = ordered.at("messages");
  out.inputs.add_generation_prompt = get_bool(parsed, "add_generation_prompt").value_or(true);
  if (const json* kwargs = field(parsed, "chat_template_kwargs")) {
    if (!kwargs->is_object()) wrong_type("chat_template_kwargs", "an object", *kwargs);
    out.inputs.kwargs = ordered.at("chat_template_kwargs");
  }
  // OpenAI's reasoning_effort reaches the template as the variable gpt-oss's reads (as vLLM passes it), unless
  // chat_template_kwargs sets it.
  if (const auto effort = get_string(parsed, "reasoning_effort")) {
    if (*effort != "minimal" && *effort != "low" && *effort != "medium" && *effort != "high")
      fail("reasoning_effort must be one of minimal, low, medium, high; got '" + *effort + "'.", "reasoning_effort");
    if (!out.inputs.kwargs.is_object()) out.inputs.kwargs = ojson::object();
    if (!out.inputs.kwargs.contains("reasoning_effort")) out.inputs.kwargs["reasoning_effort"] = *effort;
  }
  if (const json* tools = field(parsed, "tools")) {
    check_tools(*tools);
    out.inputs.tools = ordered.at("tools");
  }
  out.chat_template = get_string(parsed, "chat_template");
  return out;
}

std::string render_chat_prompt(const ChatRequest& request, const ChatTemplate* served, const Tokenizer& tokenizer) {
  std::shared_ptr<const ChatTemplate> own;
  try {
    if (request.chat_template) own = make_chat_template(*request.chat_template, tokenizer);
  } catch (const jinja::ParseError& e) {
    fail(std::string("The chat template cannot be parsed: ") + e.what(), "chat_template");
  }
  const ChatTemplate* tmpl = own ? own.get() : served;
  if (!tmpl) return render_fallback(request.inputs, tokenizer);
  try {
    return tmpl->apply(request.inputs);
  } catch (const jinja::RenderError& e) {
    // raise_exception's text is the template's own message (vLLM returns it as is).
    fail(e.raised_by_template ? e.what() : std::string("The chat template failed to render: ") + e.what(), "messages");
  }
}

}  // namespace parley::http::detail
