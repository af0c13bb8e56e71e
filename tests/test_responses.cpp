// OpenAI's Responses API at the edge (http/responses_parse.cpp, http/responses_render.cpp, http/response_store.*): a
// Responses body becomes exactly the chat body it asks for, each bad input is a 400 (or 404) naming its field, one
// output renders as a Response object or as the exact typed event sequence whose items add up to it, and the store
// keeps the newest responses, chains previous_response_id and forgets on DELETE.
#include "http/generation.hpp"
#include "http/openai_fields.hpp"
#include "http/responses_protocol.hpp"
#include "http/router.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::openai_test;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const std::string kTools = R"([{"type":"function","name":"get_weather","description":"The weather","parameters":)"
                           R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},)"
                           R"("strict":true},{"type":"function","name":"get_time"}])";

ordered_json to_chat(const std::string& body, const ResponseStore* store = nullptr) {
  INFO(body);
  http::ResponsesRequest out;
  try {
    return http::detail::responses_to_chat(body, json::parse(body), store, out);
  } catch (const http::detail::RequestError& e) {
    FAIL(e.error.message);
  }
  return nullptr;
}

GenerateRequest responses_ok(const std::string& body, const ServingContext& ctx = tool_context(),
                             const ResponseStore* store = nullptr) {
  INFO(body);
  auto r = parse_responses_request(body, ctx, store);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<GenerateRequest>(r);
}

ApiError responses_error(const std::string& body, const ResponseStore* store = nullptr) {
  INFO(body);
  auto r = parse_responses_request(body, tool_context(), store);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

// The body {"input": "Hi"} with these fields added.
std::string hi(const std::string& fields) { return R"({"input":"Hi")" + fields + "}"; }

// The output, in these deltas, through a Generation of the request; the JSON body or the SSE text.
std::string run(const GenerateRequest& req, Transport transport, const std::vector<std::string>& deltas,
                FinishReason finish = FinishReason::Stop, Generation** keep = nullptr) {
  static std::unique_ptr<Generation> last;
  last = std::make_unique<Generation>(req, "resp_t", kCreated, tok512(), transport);
  std::string out;
  for (size_t i = 0; i < deltas.size(); ++i) {
    RequestOutput o;
    o.req_id = "resp_t-0";
    o.text = deltas[i];
    o.token_ids = {int(i) + 5};
    if (i + 1 == deltas.size()) {
      o.finish_reason = finish;
      o.num_output_tokens = int(deltas.size());
    }
    out += last->on_output(o);
  }
  REQUIRE(last->done());
  if (keep) *keep = last.get();
  return out + last->closing_text();
}

// Splits the SSE text into events, checking each event's name is its data's type and the sequence numbers count up.
std::vector<json> sse_events(const std::string& text) {
  std::vector<json> out;
  for (size_t at = 0; at < text.size();) {
    REQUIRE(text.compare(at, 7, "event: ") == 0);
    const size_t line = text.find('\n', at), end = text.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string name = text.substr(at + 7, line - at - 7);
    REQUIRE(text.compare(line + 1, 6, "data: ") == 0);
    json data = json::parse(text.substr(line + 7, end - line - 7));
    CHECK(data["type"] == name);
    CHECK(data["sequence_number"] == out.size());
    out.push_back(std::move(data));
    at = end + 2;
  }
  return out;
}

std::vector<std::string> names(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const json& e : events) out.push_back(e["type"]);
  return out;
}

// The output items the SDK's stream assembles: each item added, its deltas appended, replaced by its done item
// (checked against the deltas' sum).
json assemble(const std::vector<json>& events) {
  json items = json::array();
  std::vector<std::string> texts;
  for (const json& e : events) {
    const std::string type = e["type"];
    if (type == "response.output_item.added") {
      REQUIRE(e["output_index"] == items.size());
      items.push_back(e["item"]);
      texts.emplace_back();
    } else if (type.ends_with(".delta")) {
      REQUIRE(e["output_index"] == items.size() - 1);
      CHECK(e["item_id"] == items.back()["id"]);
      texts.back() += e["delta"].get<std::string>();
    } else if (type == "response.output_item.done") {
      const json& item = e["item"];
      const std::string summed = item["type"] == "function_call" ? item["arguments"].get<std::string>()
                                                                 : item["content"][0]["text"].get<std::string>();
      CHECK(summed == texts.back());
      items.back() = item;
    }
  }
  return items;
}

}  // namespace

TEST_CASE("responses: a Responses body becomes the chat body it asks for", "[responses]") {
  const std::string body = R"({"model":"stories260K","instructions":"Be terse.",
    "input":[
      {"role":"developer","content":"Use tools."},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather?"},
        {"type":"input_text","text":"In Oslo."}]},
      {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"call it"}]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
      {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"zeta\":1,\"city\":\"Oslo\"}"},
      {"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"21 C"},
      {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]},
      {"role":"user","content":"Thanks"}],
    "tools":)" + kTools + R"(,"tool_choice":{"type":"function","name":"get_time"},"parallel_tool_calls":false,
    "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},
    "reasoning":{"effort":"low","summary":"auto"},"max_output_tokens":30,"temperature":0.5,"top_p":0.9,"seed":3,
    "stream":true,"user":"u-7","store":false,"metadata":{"k":"v"},"truncation":"disabled","include":[]})";
  const ordered_json expected = ordered_json::parse(R"({
    "messages":[
      {"role":"system","content":"Be terse."},
      {"role":"system","content":"Use tools."},
      {"role":"user","content":"Weather?\nIn Oslo."},
      {"role":"assistant","content":"Checking.","reasoning_content":"call it","tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"zeta\":1,\"city\":\"Oslo\"}"}},
        {"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"21 C"},
      {"role":"tool","tool_call_id":"call_2","content":"noon"},
      {"role":"user","content":"Thanks"}],
    "tools":[{"type":"function","function":{"name":"get_weather","description":"The weather","parameters":{
        "type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
      {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}],
    "tool_choice":{"type":"function","function":{"name":"get_time"}},
    "parallel_tool_calls":false,
    "response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}},
    "reasoning_effort":"low",
    "max_tokens":30,"temperature":0.5,"top_p":0.9,"seed":3,"stream":true,"user":"u-7"})");
  CHECK(to_chat(body).dump(1) == expected.dump(1));  // key order included: templates print tools as written
}

TEST_CASE("responses: tool_choice, text.format and reasoning.effort as chat asks them", "[responses]") {
  CHECK(to_chat(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":"required")"))["tool_choice"] == "required");
  CHECK(to_chat(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":"none")"))["tool_choice"] == "none");
  CHECK_FALSE(to_chat(hi(R"(,"tool_choice":"auto")")).contains("tool_choice"));  // nothing to call
  CHECK(to_chat(hi(R"(,"text":{"format":{"type":"json_object"}})"))["response_format"] ==
        ordered_json{{"type", "json_object"}});
  CHECK_FALSE(to_chat(hi(R"(,"text":{"format":{"type":"text"}})")).contains("response_format"));
  CHECK(to_chat(hi(R"(,"reasoning":{"effort":"none"})"))["chat_template_kwargs"] ==
        ordered_json{{"enable_thinking", false}});
  CHECK(to_chat(hi("")) == ordered_json::parse(R"({"messages":[{"role":"user","content":"Hi"}]})"));
}

TEST_CASE("responses: each bad input is a 400 naming its field, in OpenAI's error shape", "[responses]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "input: Field required"},
      {R"({"input":[]})", "input: at least one item is required"},
      {R"({"input":5})", "input: Input should be a valid string or a list of items"},
      {R"({"input":[{"type":"web_search_call","id":"ws_1"}]})",
       "input.0.type: 'web_search_call' items are not supported; 'message', 'function_call', 'function_call_output' "
       "and 'reasoning' are"},
      {R"({"input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]})",
       "input.0.call_id: 'call_9' answers no function_call item before it"},
      {R"({"input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]})",
       "input.0.arguments: Input should be a valid string"},
      {R"({"input":[{"role":"tool","content":"x"}]})",
       "input.0.role: Input should be 'user', 'system', 'developer' or 'assistant'"},
      {R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})",
       "input.0.content.0.type: 'input_image' parts are not supported; 'input_text' and 'output_text' are"},
      {R"({"input":[{"role":"user"}]})", "input.0.content: Field required"},
      {hi(R"(,"tools":[{"type":"web_search"}])"),
       "tools.0.type: 'web_search' tools are not supported; only 'function' tools are"},
      {hi(R"(,"tools":[{"type":"function"}])"), "tools.0.name: Field required"},
      {hi(R"(,"tools":[{"type":"function","name":"f","parameters":[]}])"),
       "tools.0.parameters: Input should be a valid dictionary"},
      {hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"function","name":"nope"})"),
       "tool_choice.name: no function named 'nope' is in tools"},
      {hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"allowed_tools","tools":[]})"),
       "tool_choice.type: 'allowed_tools' is not supported; 'function' (with a name) is"},
      {hi(R"(,"tool_choice":"required")"), "tool_choice: 'required' needs tools"},
      {hi(R"(,"text":{"format":{"type":"xml"}})"),
       "text.format.type: Input should be 'text', 'json_schema' or 'json_object'"},
      {hi(R"(,"text":{"format":{"type":"json_schema","name":"x"}})"), "text.format.schema: Field required"},
      {hi(R"(,"text":{"format":{"type":"json_schema","schema":{}}})"), "text.format.name: Field required"},
      {hi(R"(,"reasoning":{"effort":"extreme"})"),
       "reasoning.effort: Input should be 'none', 'minimal', 'low', 'medium' or 'high'"},
      {hi(R"(,"max_output_tokens":0)"), "max_output_tokens: Input should be an integer greater than or equal to 1"},
      {hi(R"(,"metadata":[])"), "metadata: Input should be a valid dictionary"},
      {hi(R"(,"background":true)"), "background: background responses are not supported; leave it false"},
      // Checked by the chat path.
      {hi(R"(,"temperature":-1)"), "temperature must be non-negative, got -1.0."},
  };
  for (const auto& [body, message] : cases) {
    const ApiError e = responses_error(body);
    CHECK(e.status == 400);
    CHECK(e.message == message);
    CHECK(json::parse(error_body(e))["error"]["message"] == message);
  }
  const ApiError unknown = responses_error(hi(R"(,"previous_response_id":"resp_nope")"));
  CHECK(unknown.status == 404);
  CHECK(json::parse(error_body(unknown)) ==
        json::parse(R"({"error":{"message":"Previous response with id 'resp_nope' not found.","type":)"
                    R"("NotFoundError","param":"previous_response_id","code":"previous_response_not_found"}})"));
}

TEST_CASE("responses: the request runs as the same chat request, endpoint Responses", "[responses]") {
  const GenerateRequest r =
      responses_ok(R"({"instructions":"Be terse.","input":"Hi","max_output_tokens":12,"temperature":0.3,"seed":5})");
  const GenerateRequest c = parse_ok(
      Endpoint::ChatCompletions,
      R"({"max_tokens":12,"messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}],)"
      R"("temperature":0.3,"seed":5})");
  CHECK(r.endpoint == Endpoint::Responses);
  CHECK(r.prompts == c.prompts);
  CHECK(r.params.max_tokens == 12);
  CHECK(r.params.temperature == 0.3f);
  CHECK(r.params.seed == c.params.seed);
  REQUIRE(r.responses);
  CHECK(r.responses->store);
  CHECK(r.responses->input == ordered_json::parse(R"([{"type":"message","role":"user","content":"Hi"}])"));
  CHECK(responses_ok(hi(R"(,"store":false,"service_tier":"auto","frobnicate":1)")).ignored_fields ==
        std::vector<std::string>{"frobnicate"});
}

TEST_CASE("responses: a text answer is a Response with one message item, usage and the request's fields",
          "[responses]") {
  const GenerateRequest req = responses_ok(hi(R"(,"instructions":"Be terse.","temperature":0,"metadata":{"a":"b"})"));
  const json r = json::parse(run(req, Transport::Json, {"Hel", "lo"}));
  CHECK(r["id"] == "resp_t");
  CHECK(r["object"] == "response");
  CHECK(r["created_at"] == kCreated);
  CHECK(r["status"] == "completed");
  CHECK(r["incomplete_details"].is_null());
  CHECK(r["error"].is_null());
  CHECK(r["model"] == "stories260K");
  CHECK(r["output"] ==
        json::parse(R"([{"id":"msg_t","type":"message","status":"completed","role":"assistant",)"
                    R"("content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]}])"));
  CHECK(r["usage"] == json{{"input_tokens", req.prompts[0].size()},
                           {"input_tokens_details", {{"cached_tokens", 0}, {"cache_write_tokens", 0}}},
                           {"output_tokens", 2},
                           {"output_tokens_details", {{"reasoning_tokens", 0}}},
                           {"total_tokens", req.prompts[0].size() + 2}});
  CHECK(r["instructions"] == "Be terse.");
  CHECK(r["temperature"] == 0.0);
  CHECK(r["top_p"] == 1.0);
  CHECK(r["tools"] == json::array());
  CHECK(r["tool_choice"] == "auto");
  CHECK(r["parallel_tool_calls"] == true);
  CHECK(r["text"] == json::parse(R"({"format":{"type":"text"}})"));
  CHECK(r["metadata"] == json{{"a", "b"}});
  CHECK(r["store"] == true);
  CHECK(r["previous_response_id"].is_null());
  const json cut = json::parse(run(req, Transport::Json, {"Hel"}, FinishReason::Length));
  CHECK(cut["status"] == "incomplete");
  CHECK(cut["incomplete_details"] == json{{"reason", "max_output_tokens"}});
  CHECK(cut["output"][0]["status"] == "incomplete");
}

TEST_CASE("responses: a streamed text answer is the exact event sequence and adds up to the Response", "[responses]") {
  const GenerateRequest req = responses_ok(hi(R"(,"stream":true)"));
  const auto events = sse_events(run(req, Transport::Sse, {"", "Hel", "lo"}));
  CHECK(names(events) == std::vector<std::string>{"response.created", "response.in_progress",
                                                  "response.output_item.added", "response.content_part.added",
                                                  "response.output_text.delta", "response.output_text.delta",
                                                  "response.output_text.done", "response.content_part.done",
                                                  "response.output_item.done", "response.completed"});
  CHECK(events[0]["response"]["status"] == "in_progress");
  CHECK(events[0]["response"]["output"] == json::array());
  CHECK_FALSE(events[0]["response"].contains("usage"));
  CHECK(events[2]["item"] ==
        json::parse(R"({"id":"msg_t","type":"message","status":"in_progress","role":"assistant","content":[]})"));
  CHECK(events[4] == json::parse(R"({"type":"response.output_text.delta","item_id":"msg_t","output_index":0,)"
                                 R"("content_index":0,"delta":"Hel","logprobs":[],"sequence_number":4})"));
  CHECK(events[6]["text"] == "Hello");
  const json& completed = events.back()["response"];
  CHECK(completed == json::parse(run(req, Transport::Json, {"", "Hel", "lo"})));
  CHECK(assemble(events) == completed["output"]);
  const auto cut = sse_events(run(req, Transport::Sse, {"Hel"}, FinishReason::Length));
  CHECK(cut.back()["type"] == "response.incomplete");
  CHECK(cut[cut.size() - 2]["item"]["status"] == "incomplete");
}

TEST_CASE("responses: a forced call is a function_call item with the same ids and arguments, streamed or not",
          "[responses]") {
  const GenerateRequest req =
      responses_ok(hi(R"(,"tools":)" + kTools + R"(,"tool_choice":{"type":"function","name":"get_weather"})"));
  REQUIRE(req.tool_calling);
  CHECK(req.tool_calling->choice == ToolChoice::Named);
  CHECK(req.params.structured_outputs.has_value());  // the call is forced by the grammar, as chat's named tool_choice
  const std::string out = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const json whole = json::parse(run(req, Transport::Json, {out}));
  const std::string digits = tool_call_id("resp_t-0", 0).substr(14);
  CHECK(whole["output"] == json::parse(R"([{"id":"fc_)" + digits +
                                       R"(","type":"function_call","status":"completed",)"
                                       R"("arguments":"{\"city\":\"Oslo\"}","call_id":"call_)" +
                                       digits + R"(","name":"get_weather"}])"));
  std::vector<std::string> deltas;
  for (size_t i = 0; i < out.size(); i += 4) deltas.push_back(out.substr(i, 4));
  const auto events = sse_events(run(req, Transport::Sse, deltas));
  CHECK(names(events) ==
        std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                 "response.function_call_arguments.delta", "response.function_call_arguments.done",
                                 "response.output_item.done", "response.completed"});
  CHECK(events[4]["name"] == "get_weather");
  CHECK(assemble(events) == whole["output"]);
}

TEST_CASE("responses: the reasoning parser's split comes out as a reasoning item, streamed and not", "[responses]") {
  ServingContext ctx = tool_context();
  ctx.reasoning_parser = ReasoningParser::Qwen3;
  const GenerateRequest req = responses_ok(hi(R"(,"reasoning":{"effort":"high"})"), ctx);
  const std::string out = "<think>hmm, so</think>Hello there";
  const json whole = json::parse(run(req, Transport::Json, {"<think>hm", "m, so</think>", "Hello", " there"}));
  CHECK(whole["output"] ==
        json::parse(R"([{"type":"reasoning","id":"rs_t","summary":[],)"
                    R"("content":[{"type":"reasoning_text","text":"hmm, so"}],"status":"completed"},)"
                    R"({"id":"msg_t","type":"message","status":"completed","role":"assistant",)"
                    R"("content":[{"type":"output_text","text":"Hello there","annotations":[],)"
                    R"("logprobs":[]}]}])"));
  CHECK(whole["usage"]["output_tokens_details"]["reasoning_tokens"] == 2);
  CHECK(whole["reasoning"] == json::parse(R"({"effort":"high","summary":null})"));
  for (size_t cut = 1; cut < out.size(); ++cut) {  // the markers split anywhere
    INFO("cut at " << cut);
    const auto events = sse_events(run(req, Transport::Sse, {out.substr(0, cut), out.substr(cut)}));
    CHECK(assemble(events) == whole["output"]);
  }
  const auto events = sse_events(run(req, Transport::Sse, {"<think>hm", "m, so</think>", "Hello", " there"}));
  CHECK(names(events) == std::vector<std::string>{
                             "response.created", "response.in_progress", "response.output_item.added",
                             "response.content_part.added", "response.reasoning_text.delta",
                             "response.reasoning_text.delta", "response.reasoning_text.done",
                             "response.content_part.done", "response.output_item.done", "response.output_item.added",
                             "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                             "response.output_text.done", "response.content_part.done", "response.output_item.done",
                             "response.completed"});
}

TEST_CASE("responses: an engine failure mid-stream is the error event", "[responses]") {
  const GenerateRequest req = responses_ok(hi(R"(,"stream":true)"));
  Generation g(req, "resp_t", kCreated, tok512(), Transport::Sse);
  CHECK(json::parse(g.error_text(api_error(503, "queue full")).substr(std::string("event: error\ndata: ").size())) ==
        json::parse(R"({"type":"error","code":null,"message":"queue full","param":null,"sequence_number":0})"));
  CHECK_FALSE(g.stored_response());  // not finished: nothing to keep
}

TEST_CASE("responses: the store keeps the newest responses and forgets the oldest past its bound",
          "[responses][store]") {
  ResponseStore store(2);
  for (const char* id : {"resp_a", "resp_b", "resp_c"}) store.put(id, {{{"id", id}}, ordered_json::array()});
  CHECK(store.size() == 2);
  CHECK(store.get("resp_a") == nullptr);
  REQUIRE(store.get("resp_c"));
  CHECK(store.get("resp_c")->response["id"] == "resp_c");
  CHECK(store.remove("resp_b"));
  CHECK_FALSE(store.remove("resp_b"));
  CHECK(store.size() == 1);
  store.set_max_responses(0);
  CHECK(store.size() == 0);
  store.put("resp_d", {});
  CHECK(store.get("resp_d") == nullptr);  // 0 keeps nothing
}

TEST_CASE("responses: previous_response_id continues with its input and output before the new input",
          "[responses][store]") {
  ResponseStore store;
  const GenerateRequest first = responses_ok(hi(R"(,"instructions":"Be terse.","tools":)" + kTools +
                                                R"(,"tool_choice":{"type":"function","name":"get_time"})"),
                                             tool_context(), &store);
  Generation* g = nullptr;
  run(first, Transport::Json, {"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
      FinishReason::Stop, &g);
  auto stored = g->stored_response();
  REQUIRE(stored);
  const std::string call_id = stored->response["output"][0]["call_id"];
  store.put("resp_t", std::move(*stored));
  const std::string second = R"({"previous_response_id":"resp_t","input":[{"type":"function_call_output",)"
                             R"("call_id":")" +
                             call_id + R"(","output":"noon"}]})";
  // The instructions are not carried over (OpenAI's rule); the call the first response made is answered.
  CHECK(to_chat(second, &store)["messages"] ==
        ordered_json::parse(R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"","tool_calls":[)"
                            R"({"id":")" +
                            call_id +
                            R"(","type":"function","function":{"name":"get_time",)"
                            R"("arguments":"{}"}}]},{"role":"tool","tool_call_id":")" +
                            call_id + R"(","content":"noon"}])"));
  const GenerateRequest next = responses_ok(second, tool_context(), &store);
  REQUIRE(next.responses);
  CHECK(next.responses->input.size() == 3);  // Hi, the call, its output: the chain the next turn continues
  CHECK(responses_ok(hi(R"(,"store":false)")).responses->store == false);
  Generation* unstored = nullptr;
  run(responses_ok(hi(R"(,"store":false)")), Transport::Json, {"x"}, FinishReason::Stop, &unstored);
  CHECK_FALSE(unstored->stored_response());
}

TEST_CASE("responses: GET shows a stored response, DELETE forgets it, an unknown id is a 404", "[responses][router]") {
  ResponseStore store;
  store.put("resp_x", {ordered_json{{"id", "resp_x"}, {"object", "response"}}, ordered_json::array()});
  auto route = [&](const std::string& method, const std::string& target, const std::string& body = "") {
    HttpRequestView view;
    view.method = method, view.target = target, view.body = body;
    return handle_request(view, RouterConfig{}, tool_context(), &store);
  };
  const RouteResult got = route("GET", "/v1/responses/resp_x");
  CHECK(got.status == 200);
  CHECK(json::parse(got.body) == json{{"id", "resp_x"}, {"object", "response"}});
  const RouteResult deleted = route("DELETE", "/v1/responses/resp_x");
  CHECK(deleted.status == 200);
  CHECK(json::parse(deleted.body) == json{{"id", "resp_x"}, {"object", "response"}, {"deleted", true}});
  const RouteResult gone = route("GET", "/v1/responses/resp_x");
  CHECK(gone.status == 404);
  CHECK(json::parse(gone.body)["error"]["message"] == "Response with id 'resp_x' not found.");
  CHECK(route("DELETE", "/v1/responses/resp_x").status == 404);
  CHECK(route("POST", "/v1/responses/resp_x").status == 405);
  CHECK(route("GET", "/v1/responses").status == 405);
  CHECK(route("POST", "/v1/responses", hi("")).kind == RouteResult::Kind::Generate);
  CHECK(route("POST", "/v1/responses", hi(R"(,"previous_response_id":"resp_x")")).status == 404);
}
