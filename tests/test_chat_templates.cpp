// The 50 chat templates of ../shared/chat_templates over a table of conversations: ChatTemplate::apply must
// equal Python's Jinja2 (tests/jinja2_oracle.py, transformers' environment) rendering the same prepared
// context byte for byte, or both must raise. Also vLLM's message preparation, exactly.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/chat_template.hpp"
#include "tests/jinja2_oracle.hpp"
#include "tests/test_paths.hpp"

using namespace parley;
using Json = nlohmann::ordered_json;

namespace {

struct NamedTemplate {
  std::string name, source;
};

std::vector<NamedTemplate> chat_templates() {
  const std::filesystem::path folder = std::filesystem::path(test::shared_dir()) / "chat_templates";
  std::vector<NamedTemplate> templates;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    templates.push_back({entry.path().filename().string(), text.str()});
  }
  std::sort(templates.begin(), templates.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return templates;
}

// Two OpenAI function tools with JSON-schema parameters (an enum, an integer, an array of strings).
const Json kTools = Json::parse(R"j([
  {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city, e.g. Paris"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}},
      "required": ["city"]}}},
  {"type": "function", "function": {"name": "search_web", "description": "Search the web and return the top results.",
    "parameters": {"type": "object", "properties": {
      "query": {"type": "string", "description": "What to search for"},
      "max_results": {"type": "integer", "description": "How many results, 1 to 10"},
      "sites": {"type": "array", "items": {"type": "string"}, "description": "Sites to restrict the search to"}},
      "required": ["query"]}}}
])j");

// An assistant turn calling a tool (arguments as a JSON string, as OpenAI clients send them), its result, the answer.
// The id has Mistral's nine alphanumerics, which its templates insist on.
Json tool_round_trip(const Json& assistant_content) {
  return Json::array({
      {{"role", "user"}, {"content", "What is the weather in Paris?"}},
      {{"role", "assistant"},
       {"content", assistant_content},
       {"tool_calls", Json::parse(R"j([{"id": "a1b2c3d4e", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}])j")}},
      {{"role", "tool"}, {"tool_call_id", "a1b2c3d4e"}, {"content", "{\"temperature\": 18, \"sky\": \"clear\"}"}},
      {{"role", "assistant"}, {"content", "It is 18°C and clear in Paris."}},
  });
}

struct Conversation {
  std::string name;
  ChatInputs inputs;
};

std::vector<Conversation> conversations() {
  const auto chat = [](std::string name, Json messages, Json tools = nullptr, bool add_generation_prompt = true,
                       Json kwargs = Json::object()) {
    return Conversation{std::move(name),
                        ChatInputs{std::move(messages), std::move(tools), add_generation_prompt, std::move(kwargs)}};
  };
  const Json multi_turn = Json::parse(R"j([
    {"role": "user", "content": "Hi! Can you help me plan a trip?"},
    {"role": "assistant", "content": "Of course. Where would you like to go?"},
    {"role": "user", "content": "Somewhere warm in March."}])j");
  return {
      chat("one user turn", Json::parse(R"j([{"role": "user", "content": "What is the capital of France?"}])j")),
      chat("system and user", Json::parse(R"j([{"role": "system", "content": "You are a concise assistant."},
                                               {"role": "user", "content": "Name three prime numbers."}])j")),
      chat("multi-turn", multi_turn),
      chat("no generation prompt", multi_turn, nullptr, false),
      chat("unicode", Json::parse(R"j([{"role": "system", "content": "Réponds en français. 日本語も可。"},
        {"role": "user", "content": "你好，世界！🌍 مرحبا بالعالم — naïve café"},
        {"role": "assistant", "content": "こんにちは 👋 שלום"},
        {"role": "user", "content": "Ёжик в тумане? ✨"}])j")),
      chat("content parts", Json::parse(R"j([
        {"role": "system", "content": [{"type": "text", "text": "You describe things."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe a sunset"},
                                     {"type": "text", "text": "in one line."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Gold melting into the sea."}]},
        {"role": "user", "content": [{"type": "text", "text": "Now a sunrise."}]}])j")),
      chat("tools offered", Json::parse(R"j([{"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "Find vegan restaurants in Berlin."}])j"),
           kTools),
      chat("tool call and result, content null", tool_round_trip(nullptr), kTools),
      chat("tool call and result, content empty", tool_round_trip(""), kTools),
      chat("whitespace at the edges", Json::parse(R"j([{"role": "system", "content": "  \n spaced system \n"},
        {"role": "user", "content": "\n\n  padded question?  \n"},
        {"role": "assistant", "content": "  answer with spaces \n\n"},
        {"role": "user", "content": "\tlast one\t"}])j")),
      chat("enable_thinking false", Json::parse(R"j([{"role": "system", "content": "Think carefully."},
        {"role": "user", "content": "Is 91 prime?"}])j"),
           nullptr, true, Json{{"enable_thinking", false}}),
  };
}

jinja::Options test_options() {
  jinja::Options options;
  options.now = parley::test::fixed_now;
  return options;
}

}  // namespace

TEST_CASE("Every chat template renders every conversation as Jinja2 does, or both raise", "[chat_template][oracle]") {
  const std::vector<NamedTemplate> templates = chat_templates();
  REQUIRE(templates.size() >= 50);  // ../shared's README counts them (51 since gpt-oss's joined)
  const std::vector<Conversation> table = conversations();
  struct Pair {
    std::string template_name, conversation;
    bool ok;
    std::string text;
  };
  std::vector<Pair> pairs;
  Json cases = Json::array();
  std::vector<bool> takes_parts;
  for (const NamedTemplate& t : templates) {
    const ChatTemplate chat_template(t.source, "<s>", "</s>", test_options());
    takes_parts.push_back(chat_template.takes_content_parts());
    cases.push_back({{"template", t.source}, {"content_format", true}});
    for (const Conversation& c : table) {
      cases.push_back({{"template", t.source}, {"context", chat_template.render_context(c.inputs)}});
      try {
        pairs.push_back({t.name, c.name, true, chat_template.apply(c.inputs)});
      } catch (const jinja::RenderError& e) {
        pairs.push_back({t.name, c.name, false, e.what()});
      }
    }
  }
  const Json expected = parley::test::run_jinja2_oracle(cases);
  int equal = 0, both_raised = 0, openai_format = 0;
  std::size_t next = 0;
  for (std::size_t t = 0; t < templates.size(); ++t) {
    INFO("template: " << templates[t].name);
    const std::string vllm_format = expected[next++]["text"];
    CHECK((takes_parts[t] ? "openai" : "string") == vllm_format);
    openai_format += takes_parts[t];
    for (std::size_t c = 0; c < table.size(); ++c) {
      const Pair& ours = pairs[t * table.size() + c];
      const Json& theirs = expected[next++];
      INFO("conversation: " << ours.conversation);
      INFO("Jinja2: " << theirs.dump());
      INFO("engine: " << (ours.ok ? "" : "(error) ") << ours.text);
      CHECK(ours.ok == theirs["ok"].get<bool>());
      if (ours.ok && theirs["ok"].get<bool>()) {
        CHECK(ours.text == theirs["text"].get<std::string>());
        equal += ours.text == theirs["text"].get<std::string>();
      }
      if (!ours.ok && !theirs["ok"].get<bool>()) {
        ++both_raised;
        std::printf("  raised in both: %s, %s: %s\n", ours.template_name.c_str(), ours.conversation.c_str(),
                    theirs["error"].get<std::string>().c_str());
      }
    }
  }
  std::printf(
      "chat templates: %zu templates x %zu conversations: %d render equal to Jinja2, %d raise in both; "
      "%d templates take content parts\n",
      templates.size(), table.size(), equal, both_raised, openai_format);
}

TEST_CASE("Tool call arguments given as a JSON string reach the template parsed, and unparseable ones stay strings",
          "[chat_template]") {
  const Json messages = Json::parse(R"j([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1, \"y\": [true, null]}"}},
      {"id": "b", "type": "function", "function": {"name": "g", "arguments": "not json"}},
      {"id": "c", "type": "function", "function": {"name": "h", "arguments": ""}},
      {"id": "d", "type": "function", "function": {"name": "i", "arguments": {"already": "parsed"}}}]},
    {"role": "user", "tool_calls": [{"function": {"arguments": "{\"kept\": 1}"}}]}])j");
  const Json prepared = prepare_messages(messages, false);
  const Json& calls = prepared[0]["tool_calls"];
  CHECK(calls[0]["function"]["arguments"] == Json::parse(R"j({"x": 1, "y": [true, null]})j"));
  CHECK(calls[1]["function"]["arguments"] == "not json");
  CHECK(calls[2]["function"]["arguments"] == Json::object());
  CHECK(calls[3]["function"]["arguments"] == Json{{"already", "parsed"}});
  CHECK(prepared[1]["tool_calls"][0]["function"]["arguments"] == "{\"kept\": 1}");  // only assistant turns
  const ChatTemplate t("{% for c in messages[0].tool_calls %}{{ c.function.arguments.x }};{% endfor %}", "", "");
  CHECK(t.apply({messages, nullptr, false, Json::object()}) == "1;;;;");
}

TEST_CASE("Content parts become their texts joined by newlines, unless the template loops over content",
          "[chat_template]") {
  const Json messages = Json::parse(R"j([{"role": "user", "content": [{"type": "text", "text": "one"},
      {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "two"}]}])j");
  const ChatTemplate as_string("{% for m in messages %}[{{ m.content }}]{% endfor %}", "", "");
  CHECK_FALSE(as_string.takes_content_parts());
  CHECK(as_string.apply({messages, nullptr, false, Json::object()}) == "[one\ntwo]");
  const ChatTemplate as_parts(
      "{% for m in messages %}{% for p in m['content'] %}<{{ p.type }}>{% endfor %}{% endfor %}", "", "");
  CHECK(as_parts.takes_content_parts());
  CHECK(as_parts.apply({messages, nullptr, false, Json::object()}) == "<text><image_url><text>");
  // vLLM follows variables set from messages, through filters and slices.
  const ChatTemplate via_set(
      "{% set loop_messages = messages[1:] | list %}{% for m in loop_messages %}"
      "{% for p in m.content | default([]) %}{% endfor %}{% endfor %}",
      "", "");
  CHECK(via_set.takes_content_parts());
}

TEST_CASE("The context holds messages, tools when given, add_generation_prompt, the special tokens, then the kwargs",
          "[chat_template]") {
  const ChatTemplate t(
      "{{ bos_token }}|{{ eos_token }}|{{ tools is defined }}|{{ add_generation_prompt }}|"
      "{{ enable_thinking }}|{{ messages | length }}",
      "<s>", "</s>");
  const Json one = Json::parse(R"j([{"role": "user", "content": "hi"}])j");
  CHECK(t.apply({one, nullptr, true, Json::object()}) == "<s>|</s>|False|True||1");
  CHECK(t.apply({one, Json::array(), false, {{"enable_thinking", false}}}) == "<s>|</s>|True|False|False|1");
  // transformers renders with {**special_tokens, **kwargs}: kwargs replace bos_token, never messages or tools.
  const Json kwargs = {{"bos_token", "[BOS]"}, {"messages", "ignored"}, {"add_generation_prompt", false}};
  CHECK(t.apply({one, nullptr, true, kwargs}) == "[BOS]|</s>|False|True||1");
  const Json context = t.render_context({one, nullptr, true, {{"enable_thinking", true}}});
  std::vector<std::string> keys;
  for (const auto& [key, value] : context.items()) keys.push_back(key);
  CHECK(keys ==
        std::vector<std::string>{"messages", "add_generation_prompt", "bos_token", "eos_token", "enable_thinking"});
}
