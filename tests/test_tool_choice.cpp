// Tool calling on /v1/chat/completions as a request meets it: tool_choice and parallel_tool_calls read with
// vLLM's errors, what they ask of sampling (the grammar, special tokens kept), and the response a choice's
// output becomes, whole and streamed (http/tool_choice.cpp, http/openai_render.cpp, http/generation.cpp).
#include "engine/structured_output/grammar.hpp"
#include "http/generation.hpp"
#include "http/ws_protocol.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::openai_test;

namespace {

const std::string kTools = R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
                           R"("properties":{"city":{"type":"string"}},"required":["city"]}}},)"
                           R"({"type":"function","function":{"name":"get_time"}}])";
const std::string kUsage = "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`";

std::variant<GenerateRequest, ApiError> chat(const std::string& fields, const ServingContext& ctx = tool_context()) {
  return parse_generate_request(Endpoint::ChatCompletions,
                                R"({"messages":[{"role":"user","content":"Hi"}])" + fields + "}", ctx);
}
GenerateRequest chat_ok(const std::string& fields, const ServingContext& ctx = tool_context()) {
  INFO(fields);
  auto r = chat(fields, ctx);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}
ApiError chat_error(const std::string& fields, const ServingContext& ctx = tool_context()) {
  INFO(fields);
  auto r = chat(fields, ctx);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

// One choice's output, whole or in deltas, through a Generation; returns the JSON body or the SSE events.
std::string run(const GenerateRequest& req, Transport transport, const std::vector<std::string>& deltas,
                FinishReason finish = FinishReason::Stop) {
  Generation g(req, "chatcmpl-t", kCreated, tok512(), transport);
  std::string out;
  for (size_t i = 0; i < deltas.size(); ++i) {
    RequestOutput o;
    o.req_id = "chatcmpl-t-0";
    o.text = deltas[i];
    if (i + 1 == deltas.size()) o.finish_reason = finish;
    out += g.on_output(o);
  }
  REQUIRE(g.done());
  return out + g.closing_text();
}

// The streamed message as the openai client assembles it.
nlohmann::json assemble_stream(const std::string& sse) {
  const std::string body = sse.substr(0, sse.size() - std::string(kStreamDone).size());
  nlohmann::json message = {{"content", ""}, {"tool_calls", nlohmann::json::array()}}, finish = nullptr;
  for (const auto& chunk : events(body)) {
    const auto& c = chunk["choices"][0];
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    const auto& d = c["delta"];
    if (d.contains("content"))
      message["content"] = message["content"].get<std::string>() + d["content"].get<std::string>();
    for (const auto& t : d.value("tool_calls", nlohmann::json::array())) {
      auto& calls = message["tool_calls"];
      if (t.contains("id"))
        calls.push_back(
            {{"id", t["id"]}, {"type", t["type"]}, {"function", {{"name", t["function"]["name"]}, {"arguments", ""}}}});
      auto& args = calls[t["index"].get<size_t>()]["function"]["arguments"];
      args = args.get<std::string>() + t["function"]["arguments"].get<std::string>();
    }
  }
  message["finish_reason"] = finish;
  return message;
}

}  // namespace

TEST_CASE("tool_choice without tools is a 400 naming tool_choice", "[tool_calls]") {
  for (const char* choice : {"\"auto\"", "\"required\"", R"({"type":"function","function":{"name":"f"}})"})
    check_error(chat_error(std::string(R"(,"tool_choice":)") + choice), 400, "BadRequestError", "tool_choice",
                "When using `tool_choice`, `tools` must be set.");
  CHECK_FALSE(chat_ok(R"(,"tool_choice":"none")").tool_calling);
}

TEST_CASE("a tool_choice naming no tool in tools is a 400", "[tool_calls]") {
  check_error(chat_error(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})"),
              400, "BadRequestError", "tool_choice",
              "The tool specified in `tool_choice` does not match any of the specified `tools`");
}

TEST_CASE("a tool_choice of a bad shape is a 400 with vLLM's message", "[tool_calls]") {
  const std::string tools = R"(,"tools":)" + kTools + R"(,"tool_choice":)";
  const std::string only = "! Only named tools, \"none\", \"auto\" or \"required\" are supported.";
  check_error(chat_error(tools + R"("sometimes")"), 400, "BadRequestError", "tool_choice",
              "Invalid value for `tool_choice`: sometimes" + only);
  check_error(chat_error(tools + "7"), 400, "BadRequestError", "tool_choice",
              "Invalid value for `tool_choice`: 7" + only);
  check_error(chat_error(tools + R"({"type":"function"})"), 400, "BadRequestError", "tool_choice.function",
              "Invalid value for `function`: `None` in `tool_choice`! " + kUsage);
  check_error(chat_error(tools + R"({"function":{}})"), 400, "BadRequestError", "tool_choice.function.name",
              "Expected field `name` in `function` in `tool_choice`! " + kUsage);
  check_error(chat_error(tools + R"({"function":{"name":""}})"), 400, "BadRequestError", "tool_choice.function.name",
              "Invalid `name` in `function`: `` in `tool_choice`! " + kUsage);
  CHECK(chat_error(tools + R"({"type":"custom","function":{"name":"get_time"}})").param == "tool_choice.type");
  CHECK(chat_error(R"(,"tools":)" + kTools + R"(,"parallel_tool_calls":"yes")").param == "parallel_tool_calls");
}

TEST_CASE("auto needs --enable-auto-tool-choice and any call needs a known format", "[tool_calls]") {
  const ApiError no_auto = chat_error(R"(,"tools":)" + kTools, tool_context(ToolCallParser::Hermes, false));
  CHECK(no_auto.param == "tool_choice");
  CHECK(no_auto.message.starts_with("\"auto\" tool choice requires --enable-auto-tool-choice"));
  CHECK(chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")", tool_context(ToolCallParser::Hermes, false))
            .tool_calling);
  const ApiError no_format =
      chat_error(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")", tool_context(std::nullopt));
  CHECK(no_format.message.find("--tool-call-parser (llama3_json, hermes, mistral, openai)") != std::string::npos);
}

TEST_CASE("the parser comes from the request's chat template when no flag names one", "[tool_calls]") {
  const std::string tmpl = R"(,"chat_template":"{{ messages[0].content }} Respond in the format {\"name\": function )"
                           R"(name, \"parameters\": dictionary}")";
  const GenerateRequest req =
      chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")" + tmpl, tool_context(std::nullopt));
  REQUIRE(req.tool_calling);
  CHECK(req.tool_calling->parser == ToolCallParser::Llama3Json);
  CHECK(req.params.skip_special_tokens);  // llama3_json reads text only, as vLLM's
}

TEST_CASE("tool_choice none and auto leave sampling unconstrained", "[tool_calls]") {
  const GenerateRequest none = chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"none")");
  CHECK_FALSE(none.tool_calling);
  CHECK_FALSE(none.params.structured_outputs);
  CHECK(none.params.skip_special_tokens);
  const GenerateRequest automatic = chat_ok(R"(,"tools":)" + kTools);
  REQUIRE(automatic.tool_calling);
  CHECK(automatic.tool_calling->choice == ToolChoice::Auto);
  CHECK_FALSE(automatic.params.structured_outputs);
  CHECK_FALSE(automatic.params.skip_special_tokens);  // hermes: the markers may be special tokens
}

TEST_CASE("required constrains the output to one or more calls of the tools in the format", "[tool_calls]") {
  const GenerateRequest req = chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")");
  REQUIRE(req.params.structured_outputs);
  CHECK(req.params.structured_outputs->kind == StructuredOutputsParams::Kind::Grammar);
  CHECK(req.params.structured_outputs->grammar);  // compiled once, here, and carried to the worker
  const std::string& g = req.params.structured_outputs->spec;
  INFO(g);
  CHECK(g.starts_with(
      "root ::= ( \"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", \\\"arguments\\\": \" tool-0-arguments "
      "\"}\\n</tool_call>\" | \"<tool_call>\\n{\\\"name\\\": \\\"get_time\\\""));
  CHECK(g.find(") ( \"\\n\" ( ") != std::string::npos);  // more calls, one per line
  const GenerateRequest single =
      chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"required","parallel_tool_calls":false)");
  const std::string& one = single.params.structured_outputs->spec;
  CHECK(one.substr(0, one.find('\n')).find(")*") == std::string::npos);  // the root rule repeats nothing
}

TEST_CASE("a named tool_choice constrains the output to exactly one call of it", "[tool_calls]") {
  const ToolCalling named{ToolCallParser::Mistral, ToolChoice::Named, "get_time", true};
  const std::string g = tool_call_grammar(named, nlohmann::ordered_json::parse(kTools));
  INFO(g);
  CHECK(g.starts_with(
      R"(root ::= "[TOOL_CALLS][" ( "{\"name\": \"get_time\", \"arguments\": " tool-1-arguments "}" ) "]")"));
  CHECK(g.find("get_weather") == std::string::npos);
  const ToolCalling llama{ToolCallParser::Llama3Json, ToolChoice::Required, "", true};
  CHECK(tool_call_grammar(llama, nlohmann::ordered_json::parse(kTools)).find(R"("; ")") != std::string::npos);
}

TEST_CASE("a response with calls has tool_calls and null content and finish_reason tool_calls", "[tool_calls]") {
  const GenerateRequest req = chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")");
  const std::string out = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const auto body = nlohmann::json::parse(run(req, Transport::Json, {out}));
  const auto& choice = body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  CHECK(choice["message"]["tool_calls"] ==
        nlohmann::json::parse(
            R"([{"id":")" + tool_call_id("chatcmpl-t-0", 0) +
            R"(","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}])"));
  // Streamed in pieces the client assembles the same message.
  std::vector<std::string> deltas;
  for (size_t i = 0; i < out.size(); i += 5) deltas.push_back(out.substr(i, 5));
  const auto streamed = assemble_stream(run(req, Transport::Sse, deltas));
  CHECK(streamed["tool_calls"] == choice["message"]["tool_calls"]);
  CHECK(streamed["content"] == "");
  CHECK(streamed["finish_reason"] == "tool_calls");
}

TEST_CASE("a named choice finishes with stop and output without calls is plain content", "[tool_calls]") {
  const std::string call = R"(<tool_call>{"name": "get_time", "arguments": {}}</tool_call>)";
  const GenerateRequest named =
      chat_ok(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}})");
  const auto body = nlohmann::json::parse(run(named, Transport::Json, {call}));
  CHECK(body["choices"][0]["finish_reason"] == "stop");  // OpenAI's answer for a forced function
  CHECK(body["choices"][0]["message"]["tool_calls"].size() == 1);
  const GenerateRequest automatic = chat_ok(R"(,"tools":)" + kTools);
  const auto plain = nlohmann::json::parse(run(automatic, Transport::Json, {"It is ", "sunny."}));
  CHECK(plain["choices"][0]["message"]["content"] == "It is sunny.");
  CHECK_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
  CHECK(plain["choices"][0]["finish_reason"] == "stop");
  const auto cut = assemble_stream(run(automatic, Transport::Sse, {"Hi ", call.substr(0, 20)}, FinishReason::Length));
  CHECK(cut["content"] == "Hi " + call.substr(0, 20));  // a call cut short goes out as text
  CHECK(cut["finish_reason"] == "length");
}

TEST_CASE("the websocket refuses a request whose calls would be parsed", "[tool_calls]") {
  const WsSessionState session{[](const std::string&) { return false; }, 0, 8};
  const std::string msg = R"({"type":"request","id":"a","endpoint":"chat.completions","body":{"messages":)"
                          R"([{"role":"user","content":"Hi"}],"tools":)" +
                          kTools + R"(,"tool_choice":"required"}})";
  const WsMessage m = parse_ws_message(msg, tool_context(), session);
  REQUIRE(std::holds_alternative<WsError>(m));
  CHECK(std::get<WsError>(m).error.param == "tool_choice");
}

TEST_CASE("the tool-call grammar of each format takes its calls and nothing else", "[tool_calls]") {
  const auto tools = nlohmann::ordered_json::parse(kTools);
  struct Case {
    ToolCallParser parser;
    std::string one, two;  // one call; two calls (get_time, then get_weather)
  };
  const std::vector<Case> cases = {
      {ToolCallParser::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
       "\"get_weather\", \"arguments\": {\"city\": \"Lima\"}}\n</tool_call>"},
      {ToolCallParser::Llama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
       "{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": "
       "\"Lima\"}}"},
      {ToolCallParser::Mistral, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
       "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Lima\"}}]"},
      {ToolCallParser::OpenAi, "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Oslo\"}<|call|>",
       "<|channel|>commentary to=functions.get_time<|message|>{}<|call|><|channel|>commentary "
       "to=functions.get_weather<|message|>{\"city\": \"Lima\"}<|call|>"},
  };
  for (const Case& c : cases) {
    INFO(tool_call_parser_name(c.parser));
    using structured::Grammar;
    const Grammar required = Grammar::parse(tool_call_grammar({c.parser, ToolChoice::Required, "", true}, tools));
    const Grammar single = Grammar::parse(tool_call_grammar({c.parser, ToolChoice::Required, "", false}, tools));
    const Grammar named = Grammar::parse(tool_call_grammar({c.parser, ToolChoice::Named, "get_time", true}, tools));
    CHECK(required.matches(c.one));
    CHECK(required.matches(c.two));
    CHECK(single.matches(c.one));
    CHECK_FALSE(single.matches(c.two));
    CHECK_FALSE(named.matches(c.one));
    CHECK_FALSE(required.matches(""));
    std::string no_city = c.one, unknown = c.one;
    no_city.replace(no_city.find("{\"city\": \"Oslo\"}"), 16, "{}");  // city is required
    unknown.replace(unknown.find("get_weather"), 11, "get_wether");
    CHECK_FALSE(required.matches(no_city));
    CHECK_FALSE(required.matches(unknown));
    // What the grammar lets the model write, the parser reads back as the calls.
    CHECK(extract_tool_calls(c.parser, c.two).calls ==
          std::vector<ToolCall>{{"get_time", "{}"}, {"get_weather", R"({"city":"Lima"})"}});
  }
}

TEST_CASE("parameters the grammar cannot express are a 400 naming the tool", "[tool_calls]") {
  const std::string tools = R"(,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
                            R"("patternProperties":{"a":{}}}}}],"tool_choice":"required")";
  const ApiError e = chat_error(tools);
  CHECK(e.param == "tools[0].function.parameters");
  CHECK(e.message.find("patternProperties") != std::string::npos);
  CHECK(chat_error(R"(,"tools":)" + kTools + R"(,"tool_choice":"required","response_format":{"type":"json_object"})")
            .param == "tool_choice");
  CHECK(chat_error(R"(,"tools":)" + kTools + R"(,"tool_choice":"required","ignore_eos":true)").param == "ignore_eos");
}

TEST_CASE("a response's assistant message with its tool calls goes back as the client got it", "[tool_calls]") {
  const std::string history = R"({"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,)"
                              R"("refusal":null,"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":)"
                              R"({"name":"get_time","arguments":"{}"}}]},{"role":"tool","tool_call_id":)"
                              R"("chatcmpl-tool-1","content":"12:00"}],"tools":)" +
                              kTools + R"(,"tool_choice":"none"})";
  auto r = parse_generate_request(Endpoint::ChatCompletions, history, tool_context());
  CHECK(std::holds_alternative<GenerateRequest>(r));
}
