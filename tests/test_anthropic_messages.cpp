// Anthropic's Messages API at the edge (http/anthropic_parse.cpp, http/anthropic_render.cpp): a Messages body
// becomes exactly the chat body it asks for, each bad input is a 400 with its own message in Anthropic's error
// shape, and one output renders as a message or as Anthropic's event sequence whose deltas add up to it.
#include "http/anthropic_protocol.hpp"
#include "http/generation.hpp"
#include "http/openai_fields.hpp"
#include "http/router.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::openai_test;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const std::string kTools = R"([{"name":"get_weather","description":"The weather","input_schema":{"type":"object",)"
                           R"("properties":{"city":{"type":"string"}},"required":["city"]}},)"
                           R"({"name":"get_time","input_schema":{"type":"object"}}])";

ordered_json to_chat(const std::string& body, bool count_only = false) {
  INFO(body);
  try {
    return http::detail::messages_to_chat(body, json::parse(body), count_only);
  } catch (const http::detail::RequestError& e) {
    FAIL(e.error.message);
  }
  return nullptr;
}

GenerateRequest messages_ok(const std::string& body, const ServingContext& ctx = tool_context()) {
  INFO(body);
  auto r = parse_messages_request(body, ctx);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}

ApiError messages_error(const std::string& body, const ServingContext& ctx = tool_context()) {
  INFO(body);
  auto r = parse_messages_request(body, ctx);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

// A body of the user message "Hi" with these fields added.
std::string hi(const std::string& fields) {
  return R"({"max_tokens":20,"messages":[{"role":"user","content":"Hi"}])" + fields + "}";
}

// The output, in these deltas, through a Generation of the request; the JSON body or the SSE text.
std::string run(const GenerateRequest& req, Transport transport, const std::vector<std::string>& deltas,
                FinishReason finish = FinishReason::Stop, StopReason stop = std::monostate{}) {
  Generation g(req, "msg_t", kCreated, tok512(), transport);
  std::string out;
  for (size_t i = 0; i < deltas.size(); ++i) {
    RequestOutput o;
    o.req_id = "msg_t-0";
    o.text = deltas[i];
    if (i + 1 == deltas.size()) {
      o.finish_reason = finish;
      o.stop_reason = stop;
      o.num_output_tokens = int(deltas.size());
    }
    out += g.on_output(o);
  }
  REQUIRE(g.done());
  return out + g.closing_text();
}

struct Sse {
  std::string name;
  json data;
};
// Splits Anthropic's SSE text into (event name, data), checking each event's name is its data's type.
std::vector<Sse> sse_events(const std::string& text) {
  std::vector<Sse> out;
  for (size_t at = 0; at < text.size();) {
    REQUIRE(text.compare(at, 7, "event: ") == 0);
    const size_t line = text.find('\n', at), end = text.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string name = text.substr(at + 7, line - at - 7);
    REQUIRE(text.compare(line + 1, 6, "data: ") == 0);
    const json data = json::parse(text.substr(line + 7, end - line - 7));
    CHECK(data["type"] == name);
    out.push_back({name, data});
    at = end + 2;
  }
  return out;
}

std::vector<std::string> names(const std::vector<Sse>& events) {
  std::vector<std::string> out;
  for (const Sse& e : events)
    out.push_back(e.name + (e.name == "content_block_start"   ? ":" + e.data["content_block"]["type"].get<std::string>()
                            : e.name == "content_block_delta" ? ":" + e.data["delta"]["type"].get<std::string>()
                                                              : ""));
  return out;
}

// The content blocks the SDK's MessageStream assembles from the events (partial_json parsed at the block's stop).
json assemble(const std::vector<Sse>& events) {
  json blocks = json::array();
  std::vector<std::string> partial;
  for (const Sse& e : events) {
    if (e.name == "content_block_start") {
      REQUIRE(e.data["index"] == blocks.size());
      blocks.push_back(e.data["content_block"]);
      partial.emplace_back();
    } else if (e.name == "content_block_delta") {
      const json& d = e.data["delta"];
      json& b = blocks[e.data["index"].get<size_t>()];
      if (d["type"] == "text_delta") b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta")
        b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "input_json_delta") partial[e.data["index"].get<size_t>()] += d["partial_json"];
    } else if (e.name == "content_block_stop") {
      const size_t i = e.data["index"];
      if (blocks[i]["type"] == "tool_use") blocks[i]["input"] = json::parse(partial[i]);
    }
  }
  return blocks;
}

}  // namespace

TEST_CASE("messages: a Messages body becomes the chat body it asks for", "[messages]") {
  const std::string body = R"({"model":"stories260K","max_tokens":30,
    "system":[{"type":"text","text":"Be terse."},{"type":"text","text":"Use tools."}],
    "messages":[
      {"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"text","text":"In Oslo."}]},
      {"role":"assistant","content":[{"type":"thinking","thinking":"call it","signature":""},
        {"type":"text","text":"Checking."},
        {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"zeta":1,"city":"Oslo"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"21 C"},
        {"type":"text","text":"And now?"}]},
      {"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,
        "content":[{"type":"text","text":"no"},{"type":"text","text":"clock"}]}]},
      {"role":"user","content":"Thanks"}],
    "tools":)" + kTools + R"(,"tool_choice":{"type":"tool","name":"get_time","disable_parallel_tool_use":true},
    "thinking":{"type":"enabled","budget_tokens":1024},"stop_sequences":["END"],"temperature":0.5,"top_p":0.9,
    "top_k":40,"stream":true,"metadata":{"user_id":"u-7"}})";
  const ordered_json expected = ordered_json::parse(R"({
    "messages":[
      {"role":"system","content":"Be terse.\nUse tools."},
      {"role":"user","content":"Weather?\nIn Oslo."},
      {"role":"assistant","content":"Checking.","reasoning_content":"call it","tool_calls":[{"id":"toolu_1",
        "type":"function","function":{"name":"get_weather","arguments":"{\"zeta\":1,\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"toolu_1","content":"21 C"},
      {"role":"user","content":"And now?"},
      {"role":"assistant","content":"","tool_calls":[{"id":"toolu_2","type":"function",
        "function":{"name":"get_time","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"toolu_2","content":"no\nclock"},
      {"role":"user","content":"Thanks"}],
    "tools":[{"type":"function","function":{"name":"get_weather","description":"The weather","parameters":{
        "type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
      {"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}],
    "parallel_tool_calls":false,
    "tool_choice":{"type":"function","function":{"name":"get_time"}},
    "chat_template_kwargs":{"enable_thinking":true},
    "max_tokens":30,"stop":["END"],"stream":true,"temperature":0.5,"top_p":0.9,"top_k":40,"user":"u-7"})");
  CHECK(to_chat(body).dump(1) == expected.dump(1));  // key order included: templates print tools as written
}

TEST_CASE("messages: tool_choice auto, any and none, and thinking disabled, as chat asks them", "[messages]") {
  CHECK(to_chat(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"auto"})"))["tool_choice"] == "auto");
  CHECK(to_chat(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"any"})"))["tool_choice"] == "required");
  CHECK(to_chat(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"none"})"))["tool_choice"] == "none");
  CHECK_FALSE(to_chat(hi(R"(,"tool_choice":{"type":"auto"})")).contains("tool_choice"));  // nothing to call
  CHECK(to_chat(hi(R"(,"thinking":{"type":"disabled"})"))["chat_template_kwargs"] ==
        ordered_json{{"enable_thinking", false}});
  const ordered_json counted = to_chat(R"({"messages":[{"role":"user","content":"Hi"}],"temperature":0})", true);
  CHECK(counted == ordered_json::parse(R"({"messages":[{"role":"user","content":"Hi"}]})"));
}

TEST_CASE("messages: each bad input is a 400 invalid_request_error with its own message", "[messages]") {
  const std::string tool_turn = R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f",)"
                                R"("input":{}}]})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages":[{"role":"user","content":"Hi"}]})", "max_tokens: Field required"},
      {R"({"max_tokens":5})", "messages: Field required"},
      {R"({"max_tokens":5,"messages":[]})", "messages: at least one message is required"},
      {R"({"max_tokens":5,"messages":"Hi"})", "messages: Input should be a valid list"},
      {hi("").replace(hi("").find("user"), 4, "tool"),
       "messages.0.role: Input should be 'user', 'assistant' or 'system'"},
      {R"({"max_tokens":5,"messages":[{"role":"user"}]})", "messages.0.content: Field required"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9"}]}]})",
       "messages.0.content.0.tool_use_id: 'toolu_9' answers no tool_use block of an earlier assistant message"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"},)" + tool_turn +
           R"(,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2"}]}]})",
       "messages.2.content.0.tool_use_id: 'toolu_2' answers no tool_use block of an earlier assistant message"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"},)" + tool_turn +
           R"(,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":"yes"}]}]})",
       "messages.2.content.0.is_error: Input should be a valid boolean"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})",
       "messages.0.content.0.type: 'image' blocks are not supported in user messages; 'text' and 'tool_result' are"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}]})",
       "messages.0.content.0.type: 'tool_use' blocks are not supported in user messages; 'text' and 'tool_result' "
       "are"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]})",
       "messages.0.content.0.type: Field required"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use",)"
       R"("id":"a","name":"f","input":[]}]},{"role":"user","content":"x"}]})",
       "messages.1.content.0.input: Input should be a valid dictionary"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"},)" + tool_turn + "," + tool_turn +
           R"(,{"role":"user","content":"x"}]})",
       "messages.2.content.0.id: 'toolu_1' is the id of an earlier tool_use"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Sure"}]})",
       "messages: a final assistant message (a prefill to continue) is not supported; end with a user message"},
      {hi(R"(,"system":[{"type":"image"}])"), "system.0.type: 'image' blocks are not supported here; only 'text' is"},
      {hi(R"(,"system":5)"), "system: Input should be a valid string or a list of text blocks"},
      {hi(R"(,"tools":[{"type":"web_search_20250305","name":"web_search"}])"),
       "tools.0.type: server tools (\"web_search_20250305\") are not supported; only custom tools are"},
      {hi(R"(,"tools":[{"name":"f"}])"), "tools.0.input_schema: Field required"},
      {hi(R"(,"tools":[{"input_schema":{}}])"), "tools.0.name: Field required"},
      {hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"required"})"),
       "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"},
      {hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"tool","name":"nope"})"),
       "tool_choice.name: no tool named 'nope' is in tools"},
      {hi(R"(,"tool_choice":{"type":"any"})"), "tool_choice: 'any' needs tools"},
      {hi(R"(,"thinking":{"type":"enabled"})"), "thinking.budget_tokens: Field required"},
      {hi(R"(,"thinking":{"type":"enabled","budget_tokens":0})"),
       "thinking.budget_tokens: Input should be a positive integer"},
      {hi(R"(,"thinking":{"type":"sometimes"})"), "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'"},
      {hi(R"(,"stop_sequences":"END")"), "stop_sequences: Input should be a valid list of strings"},
      {hi(R"(,"output_config":{"format":{"type":"text"}})"),
       "output_config.format: Input should be {\"type\": \"json_schema\", \"schema\": {...}}"},
      // Checked by the chat path, with the same field names.
      {hi(R"(,"temperature":-1)"), "temperature must be non-negative, got -1.0."},
      {hi(R"(,"top_k":-5)"), "top_k must be -1 (disable), or at least 1, got -5."},
      {R"({"max_tokens":0,"messages":[{"role":"user","content":"Hi"}]})", "max_tokens must be at least 1, got 0."},
  };
  for (const auto& [body, message] : cases) {
    const ApiError e = messages_error(body);
    CHECK(e.status == 400);
    CHECK(e.message == message);
    CHECK(json::parse(anthropic_error_body(e)) ==
          json{{"type", "error"},
               {"error", {{"type", "invalid_request_error"}, {"message", message}}},
               {"request_id", nullptr}});
  }
  const ApiError unknown_model = messages_error(hi(R"(,"model":"claude-x")"));
  CHECK(json::parse(anthropic_error_body(unknown_model)) ==
        json::parse(
            R"({"type":"error","error":{"type":"not_found_error","message":"The model `claude-x` does not exist."},)"
            R"("request_id":null})"));
}

TEST_CASE("messages: an error's type follows its HTTP status, in the body and as a stream event", "[messages]") {
  const std::vector<std::pair<int, std::string>> types = {{400, "invalid_request_error"},
                                                          {401, "authentication_error"},
                                                          {403, "permission_error"},
                                                          {404, "not_found_error"},
                                                          {413, "invalid_request_error"},
                                                          {429, "rate_limit_error"},
                                                          {500, "api_error"},
                                                          {503, "overloaded_error"}};
  for (const auto& [status, type] : types)
    CHECK(json::parse(anthropic_error_body(api_error(status, "m")))["error"]["type"] == type);
  CHECK(anthropic_error_event(api_error(503, "busy")) ==
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"},"
        "\"request_id\":null}\n\n");
}

TEST_CASE("messages: the request runs as the same chat request, endpoint Messages", "[messages]") {
  const GenerateRequest m = messages_ok(
      R"({"max_tokens":12,"system":"Be terse.","messages":[{"role":"user","content":"Hi"}],"temperature":0.3,)"
      R"("top_k":7,"stop_sequences":["x"],"seed":5})");
  const GenerateRequest c = parse_ok(
      Endpoint::ChatCompletions,
      R"({"max_tokens":12,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}],)"
      R"("temperature":0.3,"top_k":7,"stop":["x"],"seed":5})");
  CHECK(m.endpoint == Endpoint::Messages);
  CHECK(m.prompt_texts == c.prompt_texts);
  CHECK(m.prompts == c.prompts);
  CHECK(m.params.max_tokens == 12);
  CHECK(m.params.temperature == 0.3f);
  CHECK(m.params.top_k == 7);
  CHECK(m.params.stop == std::vector<std::string>{"x"});
  CHECK(m.params.seed == c.params.seed);
  const auto counted =
      count_tokens_response(R"({"system":"Be terse.","messages":[{"role":"user","content":"Hi"}]})", tool_context());
  REQUIRE(std::holds_alternative<std::string>(counted));
  CHECK(json::parse(std::get<std::string>(counted)) == json{{"input_tokens", m.prompts[0].size()}});
}

TEST_CASE("messages: Anthropic's no-op fields pass silently, unknown ones are reported, strict refuses", "[messages]") {
  const GenerateRequest req = messages_ok(hi(R"(,"service_tier":"auto","container":null,"frobnicate":1)"));
  CHECK(req.ignored_fields == std::vector<std::string>{"frobnicate"});
  ServingContext strict = tool_context();
  strict.strict_request_fields = true;
  CHECK(messages_error(hi(R"(,"frobnicate":1)"), strict).message == "frobnicate: Extra inputs are not permitted");
}

TEST_CASE("messages: the message's stop_reason: end_turn, max_tokens, stop_sequence naming it", "[messages]") {
  const GenerateRequest req = messages_ok(hi(""));
  const json end = json::parse(run(req, Transport::Json, {"Hel", "lo"}));
  CHECK(end["id"] == "msg_t");
  CHECK(end["type"] == "message");
  CHECK(end["role"] == "assistant");
  CHECK(end["model"] == "stories260K");
  CHECK(end["content"] == json::parse(R"([{"type":"text","text":"Hello","citations":[]}])"));
  CHECK(end["stop_reason"] == "end_turn");
  CHECK(end["stop_sequence"].is_null());
  CHECK(end["usage"]["input_tokens"] == req.prompts[0].size());
  CHECK(end["usage"]["output_tokens"] == 2);
  const json cut = json::parse(run(req, Transport::Json, {"Hel"}, FinishReason::Length));
  CHECK(cut["stop_reason"] == "max_tokens");
  const json stopped = json::parse(run(req, Transport::Json, {"Hel"}, FinishReason::Stop, std::string("END")));
  CHECK(stopped["stop_reason"] == "stop_sequence");
  CHECK(stopped["stop_sequence"] == "END");
  const auto streamed = sse_events(run(req, Transport::Sse, {"Hel"}, FinishReason::Stop, std::string("END")));
  CHECK(streamed.at(streamed.size() - 2).data["delta"]["stop_reason"] == "stop_sequence");
  CHECK(streamed.at(streamed.size() - 2).data["delta"]["stop_sequence"] == "END");
}

TEST_CASE("messages: a streamed text answer is Anthropic's event sequence and adds up to the message", "[messages]") {
  const GenerateRequest req = messages_ok(hi(R"(,"stream":true)"));
  const auto events = sse_events(run(req, Transport::Sse, {"", "Hel", "lo", " you"}));
  CHECK(names(events) == std::vector<std::string>{"message_start", "content_block_start:text",
                                                  "content_block_delta:text_delta", "content_block_delta:text_delta",
                                                  "content_block_delta:text_delta", "content_block_stop",
                                                  "message_delta", "message_stop"});
  const json& start = events[0].data["message"];
  CHECK(start["id"] == "msg_t");
  CHECK(start["content"] == json::array());
  CHECK(start["stop_reason"].is_null());
  CHECK(start["usage"]["input_tokens"] == req.prompts[0].size());
  CHECK(start["usage"]["output_tokens"] == 0);
  CHECK(events[6].data["delta"]["stop_reason"] == "end_turn");
  CHECK(events[6].data["usage"]["output_tokens"] == 4);
  CHECK(assemble(events) == json::parse(run(req, Transport::Json, {"", "Hel", "lo", " you"}))["content"]);
}

TEST_CASE("messages: tool calls are tool_use blocks with the same ids and input, streamed or not", "[messages]") {
  const GenerateRequest req =
      messages_ok(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"tool","name":"get_weather"})"));
  REQUIRE(req.tool_calling);
  CHECK(req.tool_calling->choice == ToolChoice::Named);
  CHECK(req.params.structured_outputs.has_value());  // the call is forced by the grammar, as chat's named tool_choice
  const std::string out = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const json whole = json::parse(run(req, Transport::Json, {out}));
  const std::string id = tool_use_id("msg_t-0", 0);
  CHECK(id.size() == 6 + 32);
  CHECK(id.rfind("toolu_", 0) == 0);
  CHECK(whole["content"] ==
        json::parse(R"([{"type":"tool_use","id":")" + id +
                    R"(","name":"get_weather","input":{"city":"Oslo"},"caller":{"type":"direct"}}])"));
  CHECK(whole["stop_reason"] == "tool_use");
  std::vector<std::string> deltas;
  for (size_t i = 0; i < out.size(); i += 4) deltas.push_back(out.substr(i, 4));
  const auto events = sse_events(run(req, Transport::Sse, deltas));
  CHECK(names(events) == std::vector<std::string>{"message_start", "content_block_start:tool_use",
                                                  "content_block_delta:input_json_delta", "content_block_stop",
                                                  "message_delta", "message_stop"});
  CHECK(events[1].data["content_block"]["input"] == json::object());
  CHECK(assemble(events) == whole["content"]);
  CHECK(events[4].data["delta"]["stop_reason"] == "tool_use");
}

TEST_CASE("messages: text before a call is a text block, then the tool_use block", "[messages]") {
  const GenerateRequest req = messages_ok(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"auto"})"));
  const std::vector<std::string> deltas = {"Let me ", "look.\n<tool_call>\n{\"name\": \"get_time\", ",
                                           "\"arguments\": {}}\n</tool_call>"};
  const json whole = json::parse(run(req, Transport::Json, deltas));
  REQUIRE(whole["content"].size() == 2);
  CHECK(whole["content"][0]["text"] == "Let me look.");
  CHECK(whole["content"][1]["name"] == "get_time");
  const auto events = sse_events(run(req, Transport::Sse, deltas));
  CHECK(assemble(events) == whole["content"]);
  CHECK(events[events.size() - 2].data["delta"]["stop_reason"] == "tool_use");
}

TEST_CASE("messages: the reasoning parser's split comes out as thinking blocks, streamed and not", "[messages]") {
  ServingContext ctx = tool_context();
  ctx.reasoning_parser = ReasoningParser::Qwen3;
  const GenerateRequest req = messages_ok(hi(R"(,"thinking":{"type":"enabled","budget_tokens":100})"), ctx);
  const std::string out = "<think>hmm, so</think>Hello there";
  const json whole = json::parse(run(req, Transport::Json, {out}));
  CHECK(whole["content"] == json::parse(R"([{"type":"thinking","thinking":"hmm, so","signature":""},)"
                                        R"({"type":"text","text":"Hello there","citations":[]}])"));
  for (size_t cut = 1; cut < out.size(); ++cut) {  // the markers split anywhere
    INFO("cut at " << cut);
    const auto events = sse_events(run(req, Transport::Sse, {out.substr(0, cut), out.substr(cut)}));
    CHECK(assemble(events) == whole["content"]);
    CHECK(names(events).front() == "message_start");
    CHECK(names(events).back() == "message_stop");
  }
  const auto events = sse_events(run(req, Transport::Sse, {"<think>hm", "m, so</thi", "nk>Hello", " there"}));
  CHECK(names(events) ==
        std::vector<std::string>{"message_start", "content_block_start:thinking", "content_block_delta:thinking_delta",
                                 "content_block_delta:thinking_delta", "content_block_stop", "content_block_start:text",
                                 "content_block_delta:text_delta", "content_block_delta:text_delta",
                                 "content_block_stop", "message_delta", "message_stop"});
}

TEST_CASE("messages: an engine failure mid-stream is an error event, and a refusal an error body", "[messages]") {
  const GenerateRequest req = messages_ok(hi(R"(,"stream":true)"));
  const Generation g(req, "msg_t", kCreated, tok512(), Transport::Sse);
  CHECK(sse_events(g.error_text(api_error(503, "queue full"))).at(0).data["error"]["type"] == "overloaded_error");
  CHECK(json::parse(g.error_json(api_error(503, "queue full")))["error"]["message"] == "queue full");
}

TEST_CASE("messages: x-api-key opens /v1 as a Bearer key does, and a wrong key is Anthropic's 401",
          "[messages][router]") {
  const RouterConfig keyed{"sekrit", "", "", "0.1.0", ""};
  auto route = [&](const std::string& method, const std::string& target, const std::string& authorization,
                   const std::string& x_api_key, const std::string& body = "") {
    HttpRequestView view;
    view.method = method, view.target = target, view.authorization = authorization, view.body = body;
    view.authorization_headers = authorization.empty() ? 0 : 1;
    view.x_api_key = x_api_key;
    return handle_request(view, keyed, tool_context());
  };
  CHECK(route("GET", "/v1/models", "", "sekrit").status == 200);
  CHECK(route("GET", "/v1/models", "", "sekri").status == 401);
  CHECK(route("GET", "/v1/models", "Bearer sekrit", "").status == 200);
  const std::string body = hi("");
  CHECK(route("POST", "/v1/messages", "", "sekrit", body).kind == RouteResult::Kind::Generate);
  const RouteResult refused = route("POST", "/v1/messages", "", "wrong", body);
  CHECK(refused.status == 401);
  CHECK(json::parse(refused.body)["type"] == "error");
  CHECK(json::parse(refused.body)["error"]["type"] == "authentication_error");
  const RouteResult counted = route("POST", "/v1/messages/count_tokens", "", "sekrit", body);
  CHECK(counted.status == 200);
  CHECK(json::parse(counted.body).contains("input_tokens"));
  CHECK(json::parse(route("GET", "/v1/messages", "", "sekrit").body)["error"]["type"] == "invalid_request_error");
  CHECK(json::parse(route("POST", "/v1/messages/batches", "", "sekrit").body)["error"]["type"] == "not_found_error");
}
