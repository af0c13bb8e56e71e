// Chat prompts: the served template (the GGUF's, --chat-template, a request's own), /apply-template, the
// fallback, and templates that raise, cannot be parsed, misuse an undefined value or loop forever. The
// 50 real templates are checked against Python's Jinja2 in test_chat_templates.cpp; here /apply-template
// is checked to serve exactly what that tested path renders.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "http/chat_prompt.hpp"
#include "http/openai_protocol.hpp"
#include "model_test_util.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;

namespace {

ServingContext with_template(const std::string& source) {
  ServingContext ctx = context();
  ctx.chat_template = make_chat_template(source, tok512());
  return ctx;
}

std::string prompt_of(const ServingContext& ctx, const std::string& body) {
  auto r = apply_template_response(body, ctx);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return nlohmann::json::parse(std::get<std::string>(r)).at("prompt");
}

ApiError error_of(const ServingContext& ctx, const std::string& body) {
  auto r = apply_template_response(body, ctx);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

const std::string kHi = R"("messages": [{"role": "user", "content": "Hi"}])";

}  // namespace

TEST_CASE("ModelFile carries the GGUF tokenizer.chat_template, empty without one", "[chat]") {
  using namespace parley_test;
  TempDir tmp;
  const std::string path = tmp / "templated.gguf";
  const std::string tmpl = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
  rewrite(kGguf, path, [&](GgufWriter& w) { w.set_string("tokenizer.chat_template", tmpl); });
  CHECK(load_model_file(path).chat_template == tmpl);
  CHECK(load_model_file(kGguf).chat_template.empty());
  CHECK(load_model_file(kBin).chat_template.empty());
  rewrite(kGguf, path, [&](GgufWriter& w) { w.set_u32("tokenizer.chat_template", 7); });
  REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("tokenizer.chat_template"));
}

TEST_CASE("/apply-template renders the served template with the request's variables", "[chat]") {
  const ServingContext ctx = with_template(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
      "{% if tools %}{{ tools | tojson }}{% endif %}{% if enable_thinking is defined %}T={{ enable_thinking }}{% endif "
      "%}"
      "{% if add_generation_prompt %}[assistant]{% endif %}{{ eos_token }}");
  CHECK(prompt_of(ctx, "{" + kHi + "}") == "<s>[user]Hi[assistant]</s>");
  CHECK(prompt_of(ctx, "{" + kHi + R"(, "add_generation_prompt": false})") == "<s>[user]Hi</s>");
  CHECK(prompt_of(ctx, "{" + kHi + R"(, "chat_template_kwargs": {"enable_thinking": false}})") ==
        "<s>[user]HiT=False[assistant]</s>");
  // Tools reach the template in the client's key order (tojson as transformers writes it).
  CHECK(prompt_of(ctx,
                  "{" + kHi + R"(, "tools": [{"type": "function", "function": {"name": "f", "description": "d"}}]})") ==
        R"(<s>[user]Hi[{"type": "function", "function": {"name": "f", "description": "d"}}][assistant]</s>)");
  // A request's own template wins over the served one.
  CHECK(prompt_of(ctx, "{" + kHi + R"(, "chat_template": "{{ messages | length }}"})") == "1");
}

TEST_CASE("tool-call arguments reach templates as objects, content parts as the template wants them", "[chat]") {
  const std::string call = R"("messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "cold"}])";
  const ServingContext ctx = with_template(
      "{% for m in messages %}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments.city }}"
      "{% else %}{{ m.content }}{% endif %};{% endfor %}");
  CHECK(prompt_of(ctx, "{" + call + "}") == "Weather?;Oslo;cold;");
  // The client's null content on the tool-calling turn is empty, as vLLM makes it (Jinja2 would print None).
  CHECK(prompt_of(with_template("{% for m in messages %}[{{ m.content }}]{% endfor %}"), "{" + call + "}") ==
        "[Weather?][][cold]");
  const std::string parts =
      R"("messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])";
  // A template that iterates over content gets the parts; one that prints it gets the texts joined by newlines.
  CHECK(
      prompt_of(with_template("{% for m in messages %}{% for p in m.content %}<{{ p.text }}>{% endfor %}{% endfor %}"),
                "{" + parts + "}") == "<a><b>");
  CHECK(prompt_of(with_template("{{ messages[0].content }}"), "{" + parts + "}") == "a\nb");
}

TEST_CASE("a template that fails answers 400 with its message and the next request still renders", "[chat]") {
  const ServingContext ctx = with_template(
      "{% if messages[0].role != 'system' %}{{ raise_exception('Conversations must start with a system turn') }}"
      "{% endif %}{{ messages[0].content }}");
  const ApiError raised = error_of(ctx, "{" + kHi + "}");
  CHECK(raised.status == 400);
  CHECK(raised.message == "Conversations must start with a system turn");
  CHECK(prompt_of(ctx, R"({"messages": [{"role": "system", "content": "S"}]})") == "S");

  const ApiError undefined = error_of(with_template("{{ nothing.here }}"), "{" + kHi + "}");
  CHECK_THAT(undefined.message,
             Catch::StartsWith("The chat template failed to render: ") && Catch::Contains("nothing"));
  const ApiError forever =
      error_of(with_template("{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}"),
               "{" + kHi + "}");
  CHECK_THAT(forever.message, Catch::Contains("step limit"));
  const ApiError unparsable =
      error_of(context(), "{" + kHi + R"(, "chat_template": "line one\n{% for m in messages %}"})");
  CHECK(unparsable.param == "chat_template");
  CHECK_THAT(unparsable.message, Catch::StartsWith("The chat template cannot be parsed: line 2"));
}

TEST_CASE("a served template that cannot be parsed stops the server naming the line, and a file overrides it",
          "[chat]") {
  using namespace parley_test;
  CHECK(served_chat_template("", "", tok512()) == nullptr);
  CHECK_THROWS_WITH(served_chat_template("ok\n{% if x %}", "", tok512()),
                    Catch::Contains("the model's tokenizer.chat_template cannot be parsed: line 2") &&
                        Catch::Contains("--chat-template FILE"));
  TempDir tmp;
  const std::string file = tmp / "t.jinja";
  std::ofstream(file) << "{{ messages[0].content | upper }}";
  const auto served = served_chat_template("{% if x %}", file, tok512());
  REQUIRE(served);
  ChatInputs in;
  in.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  CHECK(served->apply(in) == "HI");
  CHECK_THROWS_WITH(served_chat_template("", tmp / "missing.jinja", tok512()), Catch::Contains("cannot read"));
}

TEST_CASE("/apply-template serves what ChatTemplate renders for every shared template", "[chat]") {
  const std::string body =
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                                             {"role": "assistant", "content": "Hello"},
                                             {"role": "user", "content": "Bye"}]})";
  ChatInputs in;
  in.messages = nlohmann::ordered_json::parse(body).at("messages");
  int rendered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_dir() + "/chat_templates")) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream f(entry.path());
    const std::string source((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    INFO(entry.path().filename().string());
    const ServingContext ctx = with_template(source);
    auto r = apply_template_response(body, ctx);
    std::string want;
    bool raised = false;
    try {
      want = ctx.chat_template->apply(in);
    } catch (const jinja::RenderError&) {
      raised = true;
    }
    CHECK(std::holds_alternative<ApiError>(r) == raised);
    if (!raised && std::holds_alternative<std::string>(r)) {
      CHECK(nlohmann::json::parse(std::get<std::string>(r)).at("prompt") == want);
      ++rendered;
    }
  }
  CHECK(rendered >= 40);
}
