// The Jinja engine's exact error messages (the construct and the line), its step, depth and size limits, and a
// fuzz run over mangled chat templates. The agreement with Python's Jinja2 is in test_jinja.cpp and
// test_jinja_builtins.cpp.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"
#include "tests/jinja2_oracle.hpp"
#include "tests/test_paths.hpp"

using namespace parley;
using parley::test::fixed_now;
using Json = nlohmann::ordered_json;

// Exact messages: the construct and the line.
TEST_CASE("An unclosed for loop fails to parse, naming the tag it expected and the line it opened on", "[jinja]") {
  try {
    jinja::Template("a\n{% for x in y %}\n{{ x }}\nb");
    FAIL("no ParseError");
  } catch (const jinja::ParseError& e) {
    CHECK(e.line == 4);
    CHECK(std::string(e.what()) ==
          "line 4: unexpected end of template, expected 'endfor' or 'else' to close the 'for' from line 2");
  }
}

TEST_CASE("An unknown tag fails to parse with its name and line", "[jinja]") {
  try {
    jinja::Template("one\ntwo\n{% foo %}");
    FAIL("no ParseError");
  } catch (const jinja::ParseError& e) {
    CHECK(e.line == 3);
    CHECK(std::string(e.what()) == "line 3: unknown tag 'foo'");
  }
  try {
    jinja::Template("{% if x %}\n{% endfor %}\n{% endif %}");
    FAIL("no ParseError");
  } catch (const jinja::ParseError& e) {
    CHECK(std::string(e.what()) ==
          "line 2: unexpected 'endfor', expected 'elif' or 'else' or 'endif' to close the 'if' from line 1");
  }
}

TEST_CASE("An incomplete expression fails to parse, naming what it met instead", "[jinja]") {
  CHECK_THROWS_WITH(jinja::Template("{{ 1 + }}"), "line 1: unexpected end of print statement");
  CHECK_THROWS_WITH(jinja::Template("x\n{{ (1 }}"), "line 2: unexpected '}', expected ')'");
  CHECK_THROWS_WITH(jinja::Template("{{ x | nosuchfilter }}"), "line 1: no filter named 'nosuchfilter'");
}

TEST_CASE("raise_exception's message is the error's message, verbatim", "[jinja]") {
  const jinja::Template t("{% if messages | length == 0 %}{{ raise_exception('No messages: ' ~ 42) }}{% endif %}");
  try {
    t.render({{"messages", Json::array()}});
    FAIL("no RenderError");
  } catch (const jinja::RenderError& e) {
    CHECK(std::string(e.what()) == "No messages: 42");
    CHECK(e.raised_by_template);
  }
  CHECK(t.render({{"messages", {1}}}).empty());
}

TEST_CASE("Attribute access on an undefined variable fails with Jinja2's message and the line", "[jinja]") {
  const jinja::Template t("ok\n{{ user.name }}");
  try {
    t.render(Json::object());
    FAIL("no RenderError");
  } catch (const jinja::RenderError& e) {
    CHECK(e.line == 2);
    CHECK(!e.raised_by_template);
    CHECK(std::string(e.what()) == "line 2: 'user' is undefined");
  }
  CHECK(jinja::Template("[{{ user }}]{{ user is defined }}").render(Json::object()) == "[]False");
}

TEST_CASE("Nested range(100000) loops stop at the step limit, quickly", "[jinja]") {
  jinja::Options options;
  options.max_steps = 200'000;
  const jinja::Template t("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", options);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(t.render(Json::object()), "line 1: the template ran past its step limit of 200000 steps");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // The default limit holds too: a doubling string costs its length.
  CHECK_THROWS_WITH(
      jinja::Template("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}")
          .render(Json::object()),
      Catch::Contains("step limit of 5000000 steps"));
}

TEST_CASE("Huge strings and lists stop at the step limit before they are allocated", "[jinja]") {
  for (const char* source :
       {"{% set big = 'b' * 1000000 %}{{ ('a' * 1000).replace('a', big) }}",
        "{% set big = 'b' * 1000000 %}{{ ('a' * 1000) | replace('a', big) }}", "{{ 'x' | indent(10 ** 12) }}",
        "{{ 'x'.center(10 ** 12) }}", "{{ 'x' | center(10 ** 12) }}", "{{ [1] | tojson(indent=10 ** 12) }}",
        "{{ [1] | batch(10 ** 12, 0) | list }}", "{{ [1] | slice(10 ** 12) | list }}", "{{ 'ab' * 10 ** 12 }}",
        "{{ [1, 2] * 10 ** 12 }}"}) {
    INFO(source);
    CHECK_THROWS_WITH(jinja::Template(source).render(Json::object()), Catch::Contains("step limit"));
  }
}

TEST_CASE("Runaway recursion and deep nesting fail as errors, not crashes", "[jinja]") {
  CHECK_THROWS_WITH(jinja::Template("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").render(Json::object()),
                    Catch::Contains("nests too deeply"));
  CHECK_THROWS_AS(jinja::Template("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
                  jinja::ParseError);
  CHECK_THROWS_AS(jinja::Template("{{ " + std::string(5000, '-') + "1 }}"), jinja::ParseError);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  CHECK_THROWS_WITH(jinja::Template(chain + " }}"), "line 1: expression nested too deeply");
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{% if true %}";
  CHECK_THROWS_AS(jinja::Template(blocks), jinja::ParseError);
}

TEST_CASE("Values nested 100,000 deep fail to print or compare as Python fails, and free without recursing",
          "[jinja]") {
  const std::string build =
      "{% set ns = namespace(a=[], b=[], n=none) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}"
      "{% set ns.b = [ns.b] %}{% set ns.n = namespace(next=ns.n) %}{% endfor %}";
  CHECK(jinja::Template(build + "{{ ns.a | length }}{{ ns.n.next.next is defined }}").render(Json::object()) ==
        "1True");
  CHECK_THROWS_WITH(jinja::Template(build + "{{ ns.a }}").render(Json::object()),
                    "line 1: maximum recursion depth exceeded while getting the repr of an object");
  CHECK_THROWS_WITH(jinja::Template(build + "{{ ns.a == ns.b }}").render(Json::object()),
                    "line 1: maximum recursion depth exceeded in comparison");
  CHECK_THROWS_WITH(jinja::Template(build + "{{ ns.n }}").render(Json::object()),
                    Catch::Contains("maximum recursion depth exceeded"));
  CHECK_THROWS_AS(jinja::Template(build + "{{ ns.a | tojson }}").render(Json::object()), jinja::RenderError);
}

TEST_CASE("A template renders the same twice: the tree is parsed once and rendering keeps no state", "[jinja]") {
  const jinja::Template t(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
      "{{ ns.n }} {{ messages.pop() }} {{ messages | length }}");
  const Json context = {{"messages", {1, 2, 3}}};
  CHECK(t.render(context) == "3 3 2");
  CHECK(t.render(context) == "3 3 2");
}

namespace {

std::vector<std::string> chat_template_sources() {
  const std::filesystem::path folder = std::filesystem::path(test::shared_dir()) / "chat_templates";
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().extension() == ".jinja") paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> sources;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    sources.push_back(text.str());
  }
  return sources;
}

// One to three edits: a deletion, an insertion (template syntax or any byte), a duplicated chunk, a truncation.
std::string mangle(std::string s, std::mt19937& rng) {
  static const std::vector<std::string> kPieces = {"{%",
                                                   "%}",
                                                   "{{",
                                                   "}}",
                                                   "{#",
                                                   "#}",
                                                   "-",
                                                   "+",
                                                   "(",
                                                   ")",
                                                   "[",
                                                   "]",
                                                   "'",
                                                   "\"",
                                                   "\\",
                                                   "|",
                                                   ".",
                                                   ",",
                                                   "~",
                                                   " if ",
                                                   "endfor",
                                                   "endif",
                                                   "{% for x in y %}",
                                                   "{% endif %}",
                                                   "loop.",
                                                   "ns.",
                                                   "\n",
                                                   "*"};
  const auto position = [&](std::size_t size) { return std::uniform_int_distribution<std::size_t>(0, size)(rng); };
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = position(s.size() - 1);
    switch (rng() % 5) {
      case 0:
        s.erase(at, 1 + rng() % 8);
        break;
      case 1:
        s.insert(at, kPieces[rng() % kPieces.size()]);
        break;
      case 2:
        s.insert(at, 1, static_cast<char>(rng() % 256));
        break;
      case 3:
        s.insert(position(s.size()), s.substr(at, 1 + rng() % 64));
        break;
      case 4:
        s.resize(at);
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("10,000 mangled chat templates either parse or fail with ParseError, and render or fail with RenderError",
          "[jinja][fuzz]") {
  const std::vector<std::string> sources = chat_template_sources();
  REQUIRE(sources.size() >= 50);
  const Json context = Json::parse(R"j({
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "18C"}, {"role": "user", "content": "Thanks"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})j");
  jinja::Options options;
  options.max_steps = 20'000;
  options.now = fixed_now;
  std::mt19937 rng(20260704);
  int parsed = 0, rendered = 0;
  for (int i = 0; i < 10'000; ++i) {
    // A quarter mangle whole templates; the rest excerpts of up to 1 KiB (truncated at both ends), so that the
    // run stays within seconds under ASan.
    const std::string& source = sources[i % sources.size()];
    std::string input = source;
    if (i % 4 != 0) {
      const std::size_t start = rng() % source.size();
      input = source.substr(start, 1 + rng() % 1024);
    }
    const std::string mangled = mangle(std::move(input), rng);
    try {
      const jinja::Template t(mangled, options);
      ++parsed;
      t.render(context);
      ++rendered;
    } catch (const jinja::ParseError&) {
    } catch (const jinja::RenderError&) {}
  }
  // Anything else thrown fails the test above; these say the fuzzer reaches rendering.
  std::printf("fuzz: 10000 mangled templates, %d parsed, %d rendered\n", parsed, rendered);
  CHECK(parsed > 1'000);
  CHECK(rendered > 500);
}
