// Tool calls in model output (http/tool_calls.hpp): each format's parse as vLLM's parsers read it, the
// stream against the finished parse over every split of several outputs, call ids, parser names and
// recognising the format from the real chat templates of ../shared/chat_templates.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>

#include "http/tool_calls.hpp"
#include "tests/test_paths.hpp"

using namespace parley::http;

namespace {

struct Assembled {
  std::string content;
  std::vector<ToolCall> calls;
};

// What a client makes of the events: content concatenated, tool calls by index with arguments appended.
void assemble(const std::vector<ToolStreamEvent>& events, Assembled& out) {
  for (const auto& e : events) {
    if (!e.tool_call) {
      out.content += e.content;
      continue;
    }
    const ToolCallDelta& d = *e.tool_call;
    if (d.id) {
      REQUIRE(d.index == int(out.calls.size()));  // a call opens once, in index order
      REQUIRE(d.name);
      out.calls.push_back({*d.name, ""});
    }
    REQUIRE(d.index < int(out.calls.size()));
    out.calls[size_t(d.index)].arguments += d.arguments;
  }
}

Assembled streamed(ToolCallParser parser, const std::vector<std::string_view>& deltas, bool parallel = true) {
  ToolCallStream stream(parser, "chatcmpl-1-0", parallel);
  Assembled out;
  for (auto d : deltas) assemble(stream.feed(d), out);
  assemble(stream.finish(), out);
  return out;
}

void check_same(const ExtractedToolCalls& whole, const Assembled& got) {
  CHECK(got.content == whole.content.value_or(""));
  CHECK(got.calls == whole.calls);
}

// Outputs of each format: calls, content around them, malformed calls, markers cut off, unicode.
const std::map<ToolCallParser, std::vector<std::string>> kOutputs = {
    {ToolCallParser::Hermes,
     {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
      "Let me check. <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\", "
      "\"arguments\": {\"x\": [1, {\"y\": \"}\"}]}}</tool_call>\nDone.",
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"s\": \"</tool_call>\"}}</tool_call>",
      "<tool_call>{not json}</tool_call> then <tool_call>{\"name\": \"ok\", \"arguments\": {\"é\": "
      "\"ü🤗\"}}</tool_call>",
      "<tool_call>{\"name\": \"cut\", \"arguments\": {\"a\": 1}}", "<tool_call>{\"name\": \"cut\", \"argu",
      "a <tool_cal b <tool_call", "plain text with < and <tool and a trailing space ", "  \n", ""}},
    {ToolCallParser::Llama3Json,
     {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"x; y\"}}; {\"name\": \"b\", \"arguments\": {}}",
      "  {\"name\": \"a\", \"parameters\": {}}\n\nand then some text", "{\"answer\": 42} is JSON but no call",
      "Sure: {\"name\": \"a\", \"parameters\": {}}", "<|python_tag|>print(1)",
      "{\"name\": \"a\", \"parameters\": {\"x\"", "{\"name\": \"a\", \"parameters\": {}};", "<|pyth", ""}},
    {ToolCallParser::Mistral,
     {"[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]",
      "I will call. [TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"s\": \"]\"}}] after",
      "[TOOL_CALLS]{\"name\": \"single\", \"arguments\": {}}", "[TOOL_CALLS][{\"name\": \"a\"}]",
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}", "[TOOL_C", "no calls [TOOL at all", ""}},
    {ToolCallParser::OpenAi,
     {"<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Paris\"}<|call|>",
      "Let me look. <|channel|>commentary to=functions.a<|message|>{}<|call|><|channel|>commentary "
      "to=functions.b<|message|>{\"x\": [1, {\"y\": \"<|call|>}\"}]}<|call|> done",
      "<|channel|>commentary to=functions.a<|message|>not json<|call|>",
      "<|channel|>commentary to=functions.cut<|message|>{\"a\": 1", "<|channel|>commentary to=functions.x<|message|>{}",
      "<|channel|>comm", "plain <|chan text <|channel|>commentary to=", ""}},
};

}  // namespace

TEST_CASE("hermes calls are read from tool_call blocks with the content around them", "[tool_calls]") {
  const auto r = extract_tool_calls(ToolCallParser::Hermes, kOutputs.at(ToolCallParser::Hermes)[1]);
  REQUIRE(r.calls.size() == 2);
  CHECK(r.calls[0] == ToolCall{"a", "{}"});
  CHECK(r.calls[1] == ToolCall{"b", R"({"x":[1,{"y":"}"}]})"});
  CHECK(r.content == "Let me check.Done.");  // whitespace next to a call is the call's
  const auto one = extract_tool_calls(ToolCallParser::Hermes, kOutputs.at(ToolCallParser::Hermes)[0]);
  CHECK_FALSE(one.content);
  CHECK(one.calls == std::vector<ToolCall>{{"get_weather", R"({"city":"Paris"})"}});
}

TEST_CASE("hermes arguments keep the model's key order and unicode", "[tool_calls]") {
  const auto r = extract_tool_calls(
      ToolCallParser::Hermes, R"(<tool_call>{"name": "f", "arguments": {"z": 1, "a": "ü", "m": null}}</tool_call>)");
  REQUIRE(r.calls.size() == 1);
  CHECK(r.calls[0].arguments == R"({"z":1,"a":"ü","m":null})");
}

TEST_CASE("a malformed hermes call stays content and the well-formed one beside it is still a call", "[tool_calls]") {
  const auto r = extract_tool_calls(ToolCallParser::Hermes, kOutputs.at(ToolCallParser::Hermes)[3]);
  CHECK(r.content == "<tool_call>{not json}</tool_call> then");
  CHECK(r.calls == std::vector<ToolCall>{{"ok", R"({"é":"ü🤗"})"}});
}

TEST_CASE("hermes takes a last block the output ends inside as vLLM does but not a cut-off one", "[tool_calls]") {
  const auto& outs = kOutputs.at(ToolCallParser::Hermes);
  CHECK(extract_tool_calls(ToolCallParser::Hermes, outs[4]).calls == std::vector<ToolCall>{{"cut", R"({"a":1})"}});
  const auto cut = extract_tool_calls(ToolCallParser::Hermes, outs[5]);
  CHECK(cut.calls.empty());
  CHECK(cut.content == outs[5]);
}

TEST_CASE("quotes and brackets inside argument strings do not end a call", "[tool_calls]") {
  const std::string args = R"({"q":"a\"}] \\"})";  // the string a"}] \ : an escaped quote, then brackets
  const std::vector<std::pair<ToolCallParser, std::string>> outputs = {
      {ToolCallParser::Hermes, R"(<tool_call>{"name": "f", "arguments": {"q": "a\"}] \\"}}</tool_call> ok)"},
      {ToolCallParser::Llama3Json, R"({"name": "f", "parameters": {"q": "a\"}] \\"}} ok)"},
      {ToolCallParser::Mistral, R"([TOOL_CALLS][{"name": "f", "arguments": {"q": "a\"}] \\"}}] ok)"}};
  for (const auto& [parser, text] : outputs) {
    INFO(text);
    const auto r = extract_tool_calls(parser, text);
    CHECK(r.calls == std::vector<ToolCall>{{"f", args}});
    CHECK(r.content == "ok");
    std::vector<std::string_view> bytes;
    for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
    check_same(r, streamed(parser, bytes));
  }
}

TEST_CASE("output without calls is its own content exactly", "[tool_calls]") {
  for (const auto& [parser, outputs] : kOutputs)
    for (const std::string text : {"plain answer \n", "", "  "}) {
      const auto r = extract_tool_calls(parser, text);
      CHECK(r.calls.empty());
      CHECK(r.content == text);
    }
}

TEST_CASE("llama3_json reads parameters calls separated by semicolons after an optional python tag", "[tool_calls]") {
  const auto& outs = kOutputs.at(ToolCallParser::Llama3Json);
  const auto one = extract_tool_calls(ToolCallParser::Llama3Json, outs[0]);
  CHECK_FALSE(one.content);
  CHECK(one.calls == std::vector<ToolCall>{{"get_weather", R"({"city":"Paris"})"}});
  const auto two = extract_tool_calls(ToolCallParser::Llama3Json, outs[1]);
  CHECK(two.calls == std::vector<ToolCall>{{"a", R"({"q":"x; y"})"}, {"b", "{}"}});
  const auto then = extract_tool_calls(ToolCallParser::Llama3Json, outs[2]);
  CHECK(then.calls.size() == 1);
  CHECK(then.content == "and then some text");
  CHECK(extract_tool_calls(ToolCallParser::Llama3Json, outs[7]).content == std::nullopt);  // a trailing ';'
}

TEST_CASE("llama3_json output that does not open with a call is content as vLLM reads it", "[tool_calls]") {
  for (size_t i : {3, 4, 5, 6}) {
    const std::string& text = kOutputs.at(ToolCallParser::Llama3Json)[i];
    INFO(text);
    const auto r = extract_tool_calls(ToolCallParser::Llama3Json, text);
    CHECK(r.calls.empty());
    CHECK(r.content == text);
  }
}

TEST_CASE("mistral reads the JSON list after TOOL_CALLS", "[tool_calls]") {
  const auto& outs = kOutputs.at(ToolCallParser::Mistral);
  const auto two = extract_tool_calls(ToolCallParser::Mistral, outs[0]);
  CHECK_FALSE(two.content);
  CHECK(two.calls == std::vector<ToolCall>{{"a", R"({"x":1})"}, {"b", "{}"}});
  const auto around = extract_tool_calls(ToolCallParser::Mistral, outs[1]);
  CHECK(around.content == "I will call.after");
  CHECK(around.calls == std::vector<ToolCall>{{"a", R"({"s":"]"})"}});
  CHECK(extract_tool_calls(ToolCallParser::Mistral, outs[2]).calls == std::vector<ToolCall>{{"single", "{}"}});
  for (size_t i : {3, 4, 5}) {  // no arguments, cut off, a marker cut off: content
    const auto r = extract_tool_calls(ToolCallParser::Mistral, outs[i]);
    CHECK(r.calls.empty());
    CHECK(r.content == outs[i]);
  }
}

TEST_CASE("parallel_tool_calls false keeps the first call only", "[tool_calls]") {
  const auto r = extract_tool_calls(ToolCallParser::Mistral, kOutputs.at(ToolCallParser::Mistral)[0], false);
  CHECK(r.calls == std::vector<ToolCall>{{"a", R"({"x":1})"}});
  check_same(r, streamed(ToolCallParser::Mistral, {kOutputs.at(ToolCallParser::Mistral)[0]}, false));
}

TEST_CASE("a stream split anywhere assembles to the finished parse", "[tool_calls]") {
  for (const auto& [parser, outputs] : kOutputs)
    for (const std::string& text : outputs) {
      INFO(tool_call_parser_name(parser) << ": " << text);
      const ExtractedToolCalls whole = extract_tool_calls(parser, text);
      check_same(whole, streamed(parser, {text}));
      for (size_t cut = 0; cut <= text.size(); ++cut) {  // two deltas, every split point
        const std::string_view t(text);
        check_same(whole, streamed(parser, {t.substr(0, cut), t.substr(cut)}));
      }
      std::vector<std::string_view> bytes;  // one byte per delta (UTF-8 split too)
      for (size_t i = 0; i < text.size(); ++i) bytes.push_back(std::string_view(text).substr(i, 1));
      check_same(whole, streamed(parser, bytes));
      std::mt19937 rng(7);
      for (int trial = 0; trial < 20; ++trial) {  // random splits into up to 8 pieces
        std::vector<std::string_view> pieces;
        for (size_t at = 0; at < text.size();) {
          const size_t len = std::min(text.size() - at, size_t(rng() % 9));
          pieces.push_back(std::string_view(text).substr(at, len));
          at += len;
        }
        check_same(whole, streamed(parser, pieces));
      }
    }
}

TEST_CASE("a stream holds back what may open a call and sends content before it at once", "[tool_calls]") {
  ToolCallStream stream(ToolCallParser::Hermes, "r");
  Assembled out;
  assemble(stream.feed("Checking the weather <tool_"), out);
  CHECK(out.content == "Checking the weather");
  assemble(stream.feed("call>{\"name\": \"w\", \"arguments\": {\"c\": 1}}"), out);
  CHECK(out.calls.empty());  // not complete until the block closes
  const auto events = stream.feed("</tool_call>");
  REQUIRE(events.size() == 2);  // the call's first delta (id, name), then its arguments
  CHECK(events[0].tool_call->id == tool_call_id("r", 0));
  CHECK(events[0].tool_call->name == "w");
  CHECK(events[0].tool_call->arguments.empty());
  CHECK_FALSE(events[1].tool_call->id);
  CHECK(events[1].tool_call->arguments == R"({"c":1})");
  CHECK(stream.tools_called());
  assemble(events, out);
  assemble(stream.feed(" <toolbox"), out);               // not a marker after all
  CHECK(out.content == "Checking the weather<toolbox");  // the space after a call is the call's
}

TEST_CASE("openai (gpt-oss) calls are read from Harmony messages to functions", "[tool_calls]") {
  const ExtractedToolCalls two =
      extract_tool_calls(ToolCallParser::OpenAi,
                         "Let me look. <|channel|>commentary to=functions.a<|message|>{}<|call|><|channel|>commentary "
                         "to=functions.b<|message|> {\"x\": [1, {\"y\": \"<|call|>}\"}]} <|call|>");
  CHECK(two.calls == std::vector<ToolCall>{{"a", "{}"}, {"b", R"({"x":[1,{"y":"<|call|>}"}]})"}});
  CHECK(two.content == "Let me look.");
  const ExtractedToolCalls bad =
      extract_tool_calls(ToolCallParser::OpenAi, "<|channel|>commentary to=functions.a<|message|>[1]<|call|>");
  CHECK(bad.calls.empty());  // arguments that are not an object stay content
  CHECK(bad.content == "<|channel|>commentary to=functions.a<|message|>[1]<|call|>");
}

TEST_CASE("tool call ids are chatcmpl-tool- and 32 hex digits from the request and index", "[tool_calls]") {
  const std::string id = tool_call_id("chatcmpl-abc-0", 0);
  CHECK(std::regex_match(id, std::regex("chatcmpl-tool-[0-9a-f]{32}")));
  CHECK(id == tool_call_id("chatcmpl-abc-0", 0));
  CHECK(id != tool_call_id("chatcmpl-abc-0", 1));
  CHECK(id != tool_call_id("chatcmpl-abc-1", 0));
}

TEST_CASE("tool call parsers have vLLM's names and an unknown one lists them", "[tool_calls]") {
  for (auto p : {ToolCallParser::Llama3Json, ToolCallParser::Hermes, ToolCallParser::Mistral, ToolCallParser::OpenAi})
    CHECK(parse_tool_call_parser(tool_call_parser_name(p)) == p);
  CHECK(tool_call_parser_name(ToolCallParser::Llama3Json) == "llama3_json");
  try {
    parse_tool_call_parser("pythonic");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "unknown tool call parser 'pythonic'; known: llama3_json, hermes, mistral, openai");
  }
}

TEST_CASE("the format is recognised from the real chat templates that teach one", "[tool_calls]") {
  using P = ToolCallParser;
  const std::map<std::string, std::optional<P>> expected = {
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", P::Hermes},
      {"Qwen-Qwen2.5-7B-Instruct", P::Hermes},
      {"Qwen-Qwen3-0.6B", P::Hermes},
      {"Qwen-QwQ-32B", P::Hermes},
      {"ibm-granite-granite-4.1", P::Hermes},
      {"meta-llama-Llama-3.1-8B-Instruct", P::Llama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct", P::Llama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct", P::Llama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407", P::Mistral},
      {"Qwen3.5-4B", std::nullopt},
      {"GLM-4.7-Flash", std::nullopt},
      {"MiniMax-M3", std::nullopt},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", std::nullopt},
      {"unsloth-mistral-Devstral-Small-2507", std::nullopt},
      {"meetkai-functionary-medium-v3.1", std::nullopt},
      {"google-gemma-4-31B-it", std::nullopt},
      {"deepseek-ai-DeepSeek-V3.2", std::nullopt},
      {"llama-cpp-rwkv-world", std::nullopt},
      {"openai-gpt-oss-120b", P::OpenAi}};
  const auto folder = std::filesystem::path(parley::test::shared_dir()) / "chat_templates";
  for (const auto& [name, parser] : expected) {
    INFO(name);
    std::ifstream in(folder / (name + ".jinja"));
    REQUIRE(in);
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(detect_tool_call_parser(source) == parser);
  }
}
