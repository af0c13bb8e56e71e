// The Jinja engine (model/jinja) against Python's Jinja2 as transformers sets it up (tests/jinja2_oracle.py):
// tables of snippets, one per construct, filter, test and method, rendered by both must agree byte for byte or
// both fail. Exact error messages, the limits and the fuzz run are in test_jinja_limits.cpp.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"

namespace parley::test {

using Json = nlohmann::ordered_json;

// 2026-07-04 10:30:00, a Saturday: the moment the oracle's strftime_now formats.
std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 4;
  tm.tm_hour = 10;
  tm.tm_min = 30;
  tm.tm_wday = 6;
  tm.tm_yday = 184;
  return tm;
}

// tests/jinja2_oracle.py over all the cases in one Python process: Debian's /usr/bin/python3 with python3-jinja2.
Json run_jinja2_oracle(const Json& cases) {
  static std::atomic<int> calls{0};
  const std::filesystem::path input =
      std::filesystem::temp_directory_path() /
      ("parley_jinja2_oracle_" + std::to_string(getpid()) + "_" + std::to_string(calls++) + ".json");
  std::ofstream(input) << cases.dump();
  const std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "jinja2_oracle.py";
  const std::string command = "/usr/bin/python3 '" + script.string() + "' < '" + input.string() + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string output;
  char buffer[65536];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  std::filesystem::remove(input);
  INFO("oracle output: " << output.substr(0, 2000));
  REQUIRE(status == 0);
  Json results = Json::parse(output);
  REQUIRE(results.size() == cases.size());
  return results;
}

}  // namespace parley::test

using namespace parley;
using parley::test::fixed_now;
using parley::test::Json;

namespace {

const Json& snippet_context() {
  static const Json context = Json::parse(R"j({
    "s": "Hello World",
    "n": 3,
    "f": 2.5,
    "l": [3, 1, 2],
    "words": ["b", "A", "c"],
    "d": {"b": 1, "a": 2},
    "people": [{"name": "Ann", "age": 30}, {"name": "bob", "age": 25}],
    "empty": [],
    "none_value": null,
    "t": true,
    "u": "héllo wörld ✓ 中文 😀",
    "floats": [1.0, 0.1, 1e-05, 1e+16, 1.5e+300, -0.0, 123456789.123, 3e-07, 100.0, 1e+22],
    "nested": {"a": {"b": {"c": "deep"}, "list": [1, {"x": null}]}, "z": [true, false], "é": "ü"},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                                               "days": {"type": "integer"}}, "required": ["city"]}}}]
  })j");
  return context;
}

struct Rendered {
  bool ok;
  std::string text;  // the output, or the error
};

Rendered render_with_engine(const std::string& source, const Json& context, const jinja::Options& options) {
  try {
    return {true, jinja::Template(source, options).render(context)};
  } catch (const jinja::ParseError& e) {
    return {false, e.what()};
  } catch (const jinja::RenderError& e) {
    return {false, e.what()};
  }
}

// Every template rendered by the engine and by Jinja2 with the same context: equal text, or both fail.
void check_against_jinja2(const std::vector<std::string>& templates, bool trim_blocks = true,
                          bool lstrip_blocks = true) {
  Json cases = Json::array();
  for (const std::string& source : templates)
    cases.push_back({{"template", source},
                     {"context", snippet_context()},
                     {"trim_blocks", trim_blocks},
                     {"lstrip_blocks", lstrip_blocks}});
  const Json expected = parley::test::run_jinja2_oracle(cases);
  jinja::Options options;
  options.trim_blocks = trim_blocks;
  options.lstrip_blocks = lstrip_blocks;
  options.now = fixed_now;
  for (std::size_t i = 0; i < templates.size(); ++i) {
    const Rendered ours = render_with_engine(templates[i], snippet_context(), options);
    const Json& theirs = expected[i];
    INFO("template: " << templates[i] << "\ntrim_blocks " << trim_blocks << ", lstrip_blocks " << lstrip_blocks);
    INFO("Jinja2: " << theirs.dump());
    INFO("engine: " << (ours.ok ? "" : "(error) ") << ours.text);
    CHECK(ours.ok == theirs["ok"].get<bool>());
    if (ours.ok && theirs["ok"].get<bool>()) CHECK(ours.text == theirs["text"].get<std::string>());
  }
}

}  // namespace

// clang-format off
TEST_CASE("Whitespace control, trim_blocks, lstrip_blocks, comments and raw blocks render as Jinja2 renders "
          "them",
          "[jinja][oracle]") {
  const std::vector<std::string> templates = {
      R"j(a
{% if true %}
b
{% endif %}
c)j",
      R"j(a
  {% if true %}
  b
  {% endif %}
c)j",
      R"j(a
  {%+ if true %}
  b
  {%+ endif %}
c)j",
      R"j(a  {%- if true -%}  b  {%- endif -%}  c)j",
      R"j(a
{{- 'x' -}}
b)j",
      R"j(a {{ 'x' }} b
)j",
      R"j(a
  {{ 'x' }}
  b)j",
      R"j({% for i in [1,2] %}
  {{ i }}
{% endfor %}
)j",
      R"j({% for i in [1,2] -%}
  {{ i }}
{%- endfor %})j",
      R"j(x {# comment #} y)j",
      R"j(x
  {# comment #}
y)j",
      R"j(x {#- comment -#} y)j",
      R"j(a
{# c #}
b)j",
      R"j({% raw %}{{ not rendered }}{% endraw %})j",
      R"j(a
  {% raw %}
  {{ x }}
  {% endraw %}
b)j",
      R"j({%- raw -%}  {{ x }}  {%- endraw -%})j",
      "line1\r\nline2\rline3\n",
      R"j(trailing newline

)j",
      R"j({% if true %}a{% endif +%}
b)j",
      R"j(  {% if true %}x{% endif %}  y)j",
      "\t{% set x = 1 %}\n\t{{ x }}",
      R"j({{ 'a' }}  {% if true %}
b{% endif %})j",
      R"j(a{%- if false %}b{% else -%}  c{% endif %})j",
      R"j({%- for i in range(3) %}
{{ i }}{% endfor %})j",
      R"j(  {%- set x = 2 %}
{{ x }})j",
      R"j(

{%- if true %}x{% endif %})j",
      R"j({{ 1 }}
{{ 2 }}
)j",
      R"j({% macro m() %}
  inside
{% endmacro %}
{{ m() }}|)j",
  };
  check_against_jinja2(templates, true, true);
  check_against_jinja2(templates, true, false);
  check_against_jinja2(templates, false, false);
}

TEST_CASE("Literals print as Python prints them: ints, floats by repr, strings with escapes, lists, tuples and "
          "dicts",
          "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ 42 }} {{ -3 }} {{ 0 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }})j",
      R"j({{ 1.5 }} {{ 1.0 }} {{ 0.1 }} {{ 1e5 }} {{ 1e-5 }} {{ 2.5e-3 }} {{ 1e16 }} {{ 1e15 }} )j"
          R"j({{ 123456789.123456789 }})j",
      R"j({{ 0.1 + 0.2 }} {{ 1/3 }} {{ 2/3 }} {{ 10/2 }} {{ 1e300*1e10 }} {{ -1e300*1e10 }} {{ -0.0 }})j",
      R"j({{ true }} {{ false }} {{ none }} {{ True }} {{ False }} {{ None }})j",
      R"j({{ 'single' }} {{ "double" }} {{ 'it\'s' }} {{ "say \"hi\"" }} {{ 'a' 'b' }})j",
      R"j({{ 'tab\there' }}|{{ 'nl\nhere' }}|{{ '\u00e9\x41\101' }}|{{ 'back\\slash' }}|{{ '\q' }})j",
      R"j({{ [1, 2, 3] }} {{ [] }} {{ ['a', "b", 'it\'s'] }} {{ [1.0, none, true, [2]] }})j",
      R"j({{ (1, 2) }} {{ (1,) }} {{ () }} {{ 1, 2 }})j",
      R"j({{ {'a': 1, 'b': [2, 3]} }} {{ {} }} {{ {1: 'x', 2.5: none, true: false} }})j",
      R"j({{ {'a': 1, 'a': 2} }} {{ ['x\ny', 'é', '\x00', '\x7f', '\xa0', '✓'] }})j",
      R"j({{ s }} {{ n }} {{ f }} {{ l }} {{ d }} {{ t }} {{ none_value }} {{ u }})j",
      R"j({{ floats }})j",
      R"j({{ people }})j",
      R"j({{ ["it's", 'say "x"', 'both \' "'] }})j",
  });
}

TEST_CASE("Operators follow Python: int and float arithmetic, string and list operators, chained comparisons, "
          "and/or, inline if",
          "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 10 }} {{ 2 ** 3 ** 2 }} {{ 2 ** -1 }} {{ 7 // 2 }} )j"
          R"j({{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }})j",
      R"j({{ 7.5 // 2 }} {{ -7.5 // 2 }} {{ 7.5 % 2 }} {{ -7.5 % 2 }} {{ 5 / 2 }} {{ 4 / 2 }} {{ 1 + 1.5 }} )j"
          R"j({{ 3 * 1.0 }})j",
      R"j({{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] + [2] }} {{ [0] * 3 }} {{ 'x' * 0 }} {{ 'x' * -1 }})j",
      R"j({{ 'a' ~ 1 ~ none ~ true ~ [1] ~ 1.0 }} {{ undefined_thing ~ 'x' }})j",
      R"j({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} )j"
          R"j({{ 2 >= 2 }} {{ 1 <= 0 }})j",
      R"j({{ true == 1 }} {{ false == 0 }} {{ none == none }} {{ 'a' == 'a' }} {{ [1] == [1] }} )j"
          R"j({{ (1,) == [1] }} {{ {'a': 1} == {'a': 1} }})j",
      R"j({{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'a' in {'a': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in l }} )j"
          R"j({{ 'x' in undefined_thing }})j",
      R"j({{ true and 'x' }} {{ false and 'x' }} {{ '' or 'default' }} {{ 0 or none }} {{ [] or {} }} )j"
          R"j({{ not '' }} {{ not [1] }} {{ not not 0 }})j",
      R"j({{ 'yes' if t else 'no' }} {{ 'yes' if empty else 'no' }} )j"
          R"j([{{ 'x' if false }}] {{ 1 if none else 2 if false else 3 }})j",
      R"j({{ -n }} {{ +n }} {{ -f }} {{ - -3 }} {{ -2 ** 2 }} {{ (-2) ** 2 }} {{ not n == 3 }})j",
      R"j({{ n * -1 }} {{ n - -1 }} {{ 10 - 2 - 3 }} {{ 100 / 10 / 5 }} {{ 2 * 3 // 4 }})j",
      R"j({{ true + true }} {{ true * 5 }} {{ 5 - false }} {{ 1 + true }})j",
      R"j({{ 'abc' < 'abd' }} {{ 'B' < 'a' }} {{ 'é' > 'z' }} {{ (1, 2) < (1, 2, 0) }})j",
      R"j({{ n > 2 and n < 5 }} {{ n > 5 or n == 3 }} {{ (n > 5) or (n == 3 and f > 2) }})j",
      R"j({{ 10 % 3 == 1 }} {{ 2 ** 62 }} {{ 9007199254740993 }} {{ -9223372036854775807 - 1 }})j",
  });
}

TEST_CASE("Attribute, item and slice access fall back as Jinja2 does, and a missing value is Undefined until "
          "misused",
          "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ d.a }} {{ d['b'] }} {{ people[0].name }} {{ people[1]['age'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }})j",
      R"j({{ s[0] }} {{ s[-1] }} {{ u[1] }} {{ s[1:4] }} {{ s[:3] }} {{ s[3:] }} {{ s[::2] }} {{ s[::-1] }} )j"
          R"j({{ u[::-1] }})j",
      R"j({{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[-2:] }} {{ l[5:] }} {{ l[-10:2] }} {{ l[::2] }} )j"
          R"j({{ l[2:0:-1] }} {{ l[10:0:-1] }})j",
      R"j([{{ d.missing }}] [{{ d['missing'] }}] [{{ l[10] }}] [{{ s.missing }}] [{{ none_value.x }}] [{{ l['x'] }}])j",
      R"j({{ d.missing is defined }} {{ d.a is defined }} {{ missing is defined }} {{ missing is undefined }})j",
      R"j({{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }})j",
      R"j({{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz', none) }})j",
      R"j({{ missing }}|{{ missing | default('dflt') }}|{% for x in missing %}never{% endfor %}|{{ missing | )j"
          R"j(length }})j",
      R"j({{ missing.attr }})j",
      R"j({{ missing['key'] }})j",
      R"j({{ missing + 1 }})j",
      R"j({{ missing < 1 }})j",
      R"j({{ missing() }})j",
      R"j({{ d.missing.deeper }})j",
      R"j({{ missing == missing }} {{ missing == none }} {{ missing != 1 }})j",
      R"j({{ l[1.5] }}|{{ d[[1]] }}|{{ s['x'] }}|{{ l[:'x'] }})j",
      R"j({{ nested.a.b.c }} {{ nested['a']['list'][1] }})j",
      R"j({{ d['items'] is callable }} {{ 'abc'.upper is callable }})j",
      R"j({{ t.x }}|{{ n.x }}|{{ f[0] }})j",
  });
}

TEST_CASE("if, for (loop variables, filters, else, break, continue), set, namespace and scoping behave as in "
          "Jinja2",
          "[jinja][oracle]") {
  check_against_jinja2({
      R"j({% if n == 3 %}three{% elif n == 4 %}four{% else %}other{% endif %})j",
      R"j({% if n == 4 %}four{% elif n > 1 %}big{% endif %})j",
      R"j({% if [] %}a{% elif {} %}b{% elif '' %}c{% else %}d{% endif %})j",
      R"j({% for x in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ )j"
          R"j(loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %})j",
      R"j({% for x in l %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %})j",
      R"j({% for x in l %}{{ loop.cycle('odd', 'even') }} {% endfor %})j",
      R"j({% for x in [1, 1, 2, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %})j",
      R"j({% for x in l if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %})j",
      R"j({% for x in empty %}no{% else %}empty{% endfor %})j",
      R"j({% for x in l %}{% else %}never{% endfor %})j",
      R"j({% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %})j",
      R"j({% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %})j",
      R"j({% for k, v in d.items() %}{{ k }}={{ v }} {% endfor %})j",
      R"j({% for k in d %}{{ k }}{% endfor %})j",
      R"j({% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %})j",
      R"j({% for c in 'héllo' %}{{ c }}.{% endfor %})j",
      R"j({% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}|{{ loop.index }} {% endfor %})j",
      R"j({% for x in l %}{% set outer = loop %}{% for y in [1] %}{{ outer.index }}{% endfor %}{% endfor %})j",
      R"j({% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }})j",
      R"j({% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }})j",
      R"j({% for i in range(3) %}{% if i == 0 %}{% set y = 'a' %}{% endif %}[{{ y }}]{% endfor %})j",
      R"j({% set ns = namespace(count=0, items=[]) %}{% for x in l %}{% set ns.count = ns.count + x %}{% endfor )j"
          R"j(%}{{ ns.count }} {{ ns.items }})j",
      R"j({% set ns = namespace(d) %}{{ ns.a }} {{ ns.b }} {{ ns.zz }})j",
      R"j({% set ns = namespace() %}{% set ns.x = 5 %}{{ ns.x }} {{ ns['x'] }})j",
      R"j({% set a, b = 1, 2 %}{{ a }}{{ b }})j",
      R"j({% set a, b = [3, 4] %}{{ a }}{{ b }})j",
      R"j({% set t2 = 1, 2 %}{{ t2 }})j",
      R"j({% set x %}block {{ n }}{% endset %}[{{ x }}])j",
      R"j({% set x | upper %}shout {{ s }}{% endset %}{{ x }})j",
      R"j({% set x %}{% set inner = 1 %}{% endset %}[{{ inner }}])j",
      R"j({% for i in range(3) %}{{ i }}{% endfor %}{{ range(2, 8, 2) | list }} {{ range(5, 0, -2) | list }})j",
      R"j({% for i in range(0) %}x{% endfor %}{{ range(3) | length }})j",
      R"j({% for x in l %}{% set z = x %}{% endfor %}[{{ z }}])j",
      R"j({% for x in l %}{% endfor %}[{{ x }}])j",
      R"j({% for x in [] %}{% else %}{% set e = 1 %}{% endfor %}[{{ e }}])j",
      R"j({% if not missing %}ok{% endif %}{% if missing is not defined %}!{% endif %})j",
      R"j({% for m in people %}{{ m.name }}{{ ', ' if not loop.last }}{% endfor %})j",
      R"j({% for x in l %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}{{ loop }})j",
      R"j({% for x in l %}{{ loop | length }}{% endfor %})j",
      R"j({% set l2 = l %}{{ l2.pop() }}{{ l }}{{ l2.pop(0) }}{{ l2 }})j",
      R"j({% set q = [1,2,3] %}{% set _ = q.pop() %}{{ q }})j",
  });
}

TEST_CASE("Macros, call blocks, filter blocks and generation blocks render as Jinja2 renders them", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({% macro m(a, b=2, c='x') %}[{{ a }},{{ b }},{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(1, )j"
          R"j(c='y') }}{{ m(a=0, b=1) }})j",
      R"j({% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }})j",
      R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }})j",
      R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }})j",
      R"j({% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }})j",
      R"j({% macro m() %}{{ varargs }}|{{ kwargs }}{% endmacro %}{{ m(1, 2, k='v') }})j",
      R"j({% macro m(a, b=a * 2) %}{{ b }}{% endmacro %}{{ m(3) }})j",
      R"j({% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }})j",
      R"j({% set y = 4 %}{% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }})j",
      R"j({% macro outer() %}<{{ caller() }}>{% endmacro %}{% call outer() %}inner {{ n }}{% endcall %})j",
      R"j({% macro list_items(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) )j"
          R"j(list_items(l) %}[{{ x }}]{% endcall %})j",
      R"j({% macro m() %}{% set local = 1 %}{{ local }}{% endmacro %}{{ m() }}[{{ local }}])j",
      R"j({% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ )j"
          R"j(fact(5) }})j",
      R"j({% macro m(x) %}{{ x }}{% endmacro %}{{ m('a') ~ m('b') }} {{ m(1) | length }} {{ m }})j",
      R"j({{ m() }}{% macro m() %}x{% endmacro %})j",
      R"j({% macro m() %}{{ caller() }}{% endmacro %}{{ m() }})j",
      R"j({% macro m() %}x{% endmacro %}{% call m() %}body{% endcall %})j",
      R"j({% filter upper %}hello {{ s }}{% endfilter %})j",
      R"j({% filter replace('l', 'L') | title %}hello world{% endfilter %})j",
      R"j({% filter trim %}   padded   {% endfilter %}|)j",
      R"j({% filter indent(2) %}a
b
c{% endfilter %})j",
      R"j({% generation %}gen {{ n }}{% endgeneration %})j",
      R"j({% generation %}{% set g = 1 %}{% endgeneration %}[{{ g }}])j",
      R"j({% for x in l %}{% generation %}{{ x }}{% endgeneration %}{% endfor %})j",
  });
}

TEST_CASE("Filters with their arguments give what Jinja2 gives", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ s | upper }} {{ s | lower }} {{ 'hello wORLD' | title }} {{ 'hello wORLD' | capitalize }} )j"
          R"j({{ u | upper }})j",
      R"j({{ "it's a-b (c) [d] {e} <f> g_h" | title }} {{ 'ßtraße' | upper }})j",
      R"j([{{ '  x y  ' | trim }}] [{{ 'xxhixx' | trim('x') }}] [{{ '\n\t x\u3000' | trim }}])j",
      R"j({{ l | length }} {{ s | length }} {{ u | length }} {{ d | length }} {{ l | count }} {{ '' | length }})j",
      R"j({{ l | join(', ') }} {{ l | join }} {{ people | join('; ', attribute='name') }} )j"
          R"j({{ 'abc' | join('-') }} {{ d | join(',') }})j",
      R"j({{ people | map(attribute='name') | list }} {{ l | map('string') | join('+') }} )j"
          R"j({{ words | map('upper') | list }})j",
      R"j({{ people | map(attribute='missing', default='?') | list }} {{ people | map(attribute='missing') | list }})j",
      R"j({{ l | select('odd') | list }} {{ l | reject('odd') | list }} )j"
          R"j({{ [0, 1, '', 'a', none] | select | list }} {{ l | select('gt', 1) | list }})j",
      R"j({{ people | selectattr('age', 'gt', 26) | map(attribute='name') | list }} )j"
          R"j({{ people | rejectattr('name', 'equalto', 'Ann') | list }})j",
      R"j({{ people | selectattr('name') | list | length }} )j"
          R"j({{ msgs | selectattr('role', 'eq', 'user') | list | length }})j",
      R"j({{ l | first }} {{ l | last }} {{ s | first }} {{ s | last }} [{{ empty | first }}] {{ d | first }})j",
      R"j({{ s | list }} {{ d | list }} {{ l | list }} {{ missing | list }})j",
      R"j({{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} )j"
          R"j({{ {'b': 1, 'A': 2, 'c': 0} | dictsort(by='value') }})j",
      R"j({{ {'b': 1, 'A': 2, 'a': 3} | dictsort }} {{ {'b': 1, 'A': 2, 'a': 3} | dictsort(true) }})j",
      R"j({{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ l | sort(reverse=true) }} )j"
          R"j({{ people | sort(attribute='age') | map(attribute='name') | list }})j",
      R"j({{ people | sort(attribute='name') | map(attribute='name') | join }} {{ [3, 1, 2] | sort | first }})j",
      R"j({{ [1, 2, 1, 3, 2] | unique | list }} {{ ['a', 'A', 'b'] | unique | list }} )j"
          R"j({{ ['a', 'A', 'b'] | unique(true) | list }})j",
      R"j({{ l | min }} {{ l | max }} {{ words | min }} {{ words | max }} {{ people | max(attribute='age') }} )j"
          R"j([{{ empty | min }}])j",
      R"j({{ l | sum }} {{ people | sum(attribute='age') }} {{ [0.5, 1] | sum }} {{ l | sum(start=10) }})j",
      R"j({{ l | reverse | list }} {{ s | reverse }} {{ l | reverse | join }})j",
      R"j({{ missing | default('d') }} {{ none_value | default('d') }} {{ '' | default('d') }} )j"
          R"j({{ '' | default('d', true) }} {{ 0 | d('zero', true) }} {{ s | d('x') }})j",
      R"j({{ '42' | int }} {{ '42.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} )j"
          R"j({{ -3.9 | int }} {{ '0x1f' | int(base=16) }} {{ ' 12 ' | int }} {{ true | int }} )j"
          R"j({{ none_value | int }})j",
      R"j({{ '3.5' | float }} {{ 'x' | float }} {{ 2 | float }} {{ '1e3' | float }} {{ ' -1.5 ' | float }} )j"
          R"j({{ 'inf' | float }} {{ 'nan' | float }})j",
      R"j({{ 1 | string }} {{ none_value | string }} {{ [1, 'a'] | string }} {{ 1.0 | string | length }})j",
      R"j({{ -3 | abs }} {{ -2.5 | abs }} {{ 2.567 | round }} {{ 2.567 | round(2) }} {{ 2.5 | round }} )j"
          R"j({{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.567 | round(1, 'floor') }} )j"
          R"j({{ 2.521 | round(1, 'ceil') }} {{ 7 | round }})j",
      R"j({{ 'a\nb\n\nc' | indent }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent(2, blank=true) }}|{{ )j"
          R"j('a\nb' | indent('> ') }}|{{ 'x\n' | indent }})j",
      R"j({{ 'hello' | replace('l', 'L') }} {{ 'hello' | replace('l', 'L', 1) }} {{ 'abc' | replace('', '-') }} )j"
          R"j({{ 5 | replace('5', 'five') }})j",
      R"j({{ '<a href="x">&\'</a>' | escape }} {{ '<b>' | e }} {{ ('<b>' | safe) + '<i>' }} )j"
          R"j({{ '<b>' + ('<i>' | safe) }} {{ ('x' | safe) ~ '<' }})j",
      R"j({{ ('<b>' | safe | string) + '&' }} {{ ('a' | e) + ('<' | e) }} {{ ('a' | safe) * 2 + '<' }} )j"
          R"j({{ 'x' | safe | upper + '&' }})j",
      R"j({{ 'one two  three' | wordcount }} {{ 'x' | center(7) }}|{{ 'ab' | center(7) }}|{{ 'abc' | center(2) }})j",
      R"j({{ l | batch(2) | list }} {{ l | batch(2, 0) | list }} {{ [1,2,3,4,5] | slice(2) | list }})j",
      R"j({{ l | map('int') | sum }} {{ ['1', '2'] | map('int') | list }} )j"
          R"j({{ people | map(attribute='name') | map('upper') | join('/') }})j",
      R"j({{ people | attr('name') }} {{ s | attr('upper') is callable }})j",
      R"j({{ 'x' | from_json }})j",
      R"j({% if false %}{{ 'x' | from_json }}{% endif %}ok)j",
      R"j({% if true %}{{ 'x' | from_json }}{% endif %})j",
      R"j({{ 'x' if true else ('y' | nofilter) }})j",
      R"j({{ l | map('nofilter') | list }})j",
      R"j({{ l | select('notest') | list }})j",
      R"j({{ l | selectattr('x') | list }})j",
      R"j({{ people | selectattr('age', 'odd') | map(attribute='name') | first }})j",
      R"j({{ (l | select('odd')) is sequence }} {{ (l | select('odd')) is iterable }} )j"
          R"j({% if empty | select %}generator truthy{% endif %})j",
      R"j({{ l | select('odd') | length }})j",
  });
}

TEST_CASE("Tests with is and is not answer as Jinja2 answers", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ n is odd }} {{ n is even }} {{ n is divisibleby 3 }} {{ n is divisibleby(2) }} {{ 2.0 is even }})j",
      R"j({{ n is number }} {{ f is number }} {{ t is number }} {{ n is integer }} {{ t is integer }} )j"
          R"j({{ f is float }} {{ n is float }})j",
      R"j({{ s is string }} {{ n is string }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} )j"
          R"j({{ n is sequence }} {{ missing is sequence }})j",
      R"j({{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ s is iterable }} {{ n is iterable }} )j"
          R"j({{ missing is iterable }} {{ ns_missing is mapping }})j",
      R"j({{ none_value is none }} {{ 0 is none }} {{ t is boolean }} {{ 1 is boolean }} {{ t is true }} )j"
          R"j({{ 1 is true }} {{ false is false }} {{ 0 is false }})j",
      R"j({{ n is eq 3 }} {{ n is equalto 3 }} {{ n is ne 3 }} {{ n is lt 5 }} {{ n is lessthan 2 }} )j"
          R"j({{ n is gt 2 }} {{ n is greaterthan 3 }} {{ n is le 3 }} {{ n is ge 4 }})j",
      R"j({{ n is == 3 }} {{ n is != 3 }} {{ n is > 1 }} {{ n is >= 4 }} {{ n is < 4 }} {{ n is <= 2 }})j",
      R"j({{ 2 is in l }} {{ 'a' is in 'cat' }} {{ 'q' is in d }})j",
      R"j({{ range is callable }} {{ s is callable }} {{ s.upper is callable }} {{ missing is callable }} )j"
          R"j({{ namespace is callable }})j",
      R"j({{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aBc' is lower }} {{ '123' is lower }})j",
      R"j({{ none_value is sameas none }} {{ t is sameas true }} {{ 1 is sameas true }} {{ l is sameas l }})j",
      R"j({{ ('x' | safe) is escaped }} {{ 'x' is escaped }} {{ 'upper' is filter }} {{ 'nope' is filter }} )j"
          R"j({{ 'odd' is test }})j",
      R"j({{ s is not string }} {{ n is not divisibleby 2 }} {{ missing is not none }} {{ not n is odd }})j",
      R"j({{ missing is odd }})j",
      R"j({{ 'a' is odd }})j",
      R"j({{ n is nosuchtest }})j",
      R"j({% if n is nosuchtest %}{% endif %})j",
  });
}

TEST_CASE("String, dict and list methods behave as the sandbox exposes them", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ "they're bill's".title() }} )j"
          R"j({{ 'hELLO'.capitalize() }} {{ 'straße'.upper() }})j",
      R"j({{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} )j"
          R"j({{ 'a,b,c'.rsplit(',', 1) }} {{ '  a b  c  '.split(none, 1) }} {{ '  a b  c  '.rsplit(none, 1) }} )j"
          R"j({{ ''.split() }} {{ ''.split(',') }})j",
      R"j([{{ '  x  '.strip() }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] )j"
          R"j([{{ '\n\nhi\n'.rstrip('\n') }}] [{{ 'abcba'.lstrip('ab') }}])j",
      R"j({{ 'hello'.startswith('he') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith('lo') }} )j"
          R"j({{ 'hello'.endswith(('a', 'b')) }} {{ 'hello'.startswith('l', 2) }})j",
      R"j({{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.rfind('l') }} {{ 'héllo'.find('l') }} )j"
          R"j({{ 'hello'.find('l', 3) }} {{ 'hello'.index('e') }} {{ 'hello'.count('l') }} {{ 'aaa'.count('a') }} )j"
          R"j({{ 'abc'.count('') }})j",
      R"j({{ 'a-b-c'.replace('-', '+') }} {{ 'a-b-c'.replace('-', '+', 1) }} {{ 'ab'.replace('', '.') }} )j"
          R"j({{ '-'.join(['a', 'b']) }} {{ ''.join(s) }})j",
      R"j({{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} )j"
          R"j({{ '{{}} {}'.format(2) }} {{ '{:>5}|{:<4}|{:^6}'.format('r', 'l', 'c') }} )j"
          R"j({{ '{:.2f} {:5d} {:+d}'.format(3.14159, 42, 7) }} )j"
          R"j({{ '{0[a]} {1.name}'.format(d, ns_obj) if false else '{0[a]}'.format(d) }})j",
      R"j({{ '{!r} {!s}'.format('q', 'q') }} {{ '{}'.format(none_value) }} {{ '{}'.format([1, 'x']) }} )j"
          R"j({{ '{:%}'.format(0.25) }} {{ '{:e}'.format(12345.678) }})j",
      R"j({{ '123'.isdigit() }} {{ '12a'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'ab1'.isalnum() }} )j"
          R"j({{ '  '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ ''.isdigit() }})j",
      R"j({{ 'ab'.center(6, '*') }} {{ 'ab'.ljust(5, '.') }} {{ 'ab'.rjust(5) }} )j"
          R"j({{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.py'.removesuffix('.py') }})j",
      R"j({{ 'a\nb\r\nc'.splitlines() }} {{ 'k=v=w'.partition('=') }} {{ 'k=v=w'.rpartition('=') }} )j"
          R"j({{ 'abc'.partition('x') }})j",
      R"j({{ d.items() }} {{ d.keys() }} {{ d.values() }} {{ d.copy() }} {{ 'a' in d.keys() }} )j"
          R"j({{ d.items() | length }})j",
      R"j({{ l.count(1) }} {{ l.index(2) }} {{ l.copy() }} {{ (1, 2, 1).count(1) }})j",
      R"j({{ l.append(4) }})j",
      R"j({% set _ = l.append(4) %}{{ l }})j",
      R"j({{ d.update({}) }})j",
      R"j({{ d.pop('a') }})j",
      R"j({{ l.sort() }})j",
      R"j({{ l.append is defined }} {{ d.clear is defined }} [{{ l.append }}])j",
      R"j({{ 'abc'.nosuch() }})j",
      R"j({{ ''.split('') }})j",
      R"j({{ 'a'.join([1, 2]) }})j",
      R"j({{ [].pop() }})j",
      R"j({{ 'x'.zfill is defined }})j",
      R"j({{ '{} {}'.format(1) }})j",
      R"j({{ 'x'.__class__ }})j",
      R"j({{ d.__len__ }})j",
  });
}

TEST_CASE("tojson is json.dumps: separators, indent, sort_keys, ensure_ascii and unicode exactly", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ d | tojson }})j",
      R"j({{ nested | tojson }})j",
      R"j({{ nested | tojson(indent=2) }})j",
      R"j({{ nested | tojson(indent=4, sort_keys=true) }})j",
      R"j({{ l | tojson(separators=(',', ':')) }})j",
      R"j({{ d | tojson(separators=[',', ':']) }})j",
      R"j({{ floats | tojson }})j",
      R"j({{ u | tojson }})j",
      R"j({{ u | tojson(ensure_ascii=true) }})j",
      R"j({{ '😀 "q" \\ \n \t \u0001 \x7f </script>' | tojson }})j",
      R"j({{ '😀 é' | tojson(ensure_ascii=true) }})j",
      R"j({{ none_value | tojson }} {{ t | tojson }} {{ 1.0 | tojson }} {{ 'x' | tojson }} {{ (1, 'a') | tojson }})j",
      R"j({{ {1: 'a', true: 'b', none: 'c', 2.5: 'd'} | tojson }})j",
      R"j({{ {'b': 1, 'a': {'d': [], 'c': {}}} | tojson(indent=2, sort_keys=true) }})j",
      R"j({{ [[], {}, [[]]] | tojson(indent=1) }})j",
      R"j({{ d | tojson(indent='\t') }})j",
      R"j({{ l | tojson(indent=0) }})j",
      R"j({{ l | tojson(indent=-1) }})j",
      R"j({{ missing | tojson }})j",
      R"j({{ (l | select('odd')) | tojson }})j",
      R"j({{ d.items() | tojson }})j",
      R"j({{ namespace(a=1) | tojson }})j",
      R"j({{ tools | tojson }})j",
      R"j({{ tools[0] | tojson(indent=4) }})j",
      R"j({{ {'k': 'v'} | tojson(2) }})j",
      R"j({{ ('<>' | safe) | tojson }})j",
  });
}

TEST_CASE("raise_exception, strftime_now, range, dict and namespace behave as in transformers", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }})j",
      R"j({% if n == 3 %}{{ raise_exception('n is ' ~ n) }}{% endif %})j",
      R"j({{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%dT%H:%M:%S') }} {{ strftime_now('%A %B %-d') }})j",
      R"j({{ range(3) | list }} {{ range(1, 4) | list }} {{ range(10, 0, -3) | list }} {{ range(0) | list }})j",
      R"j({{ range(100001) | length }})j",
      R"j({{ range(1, 2, 0) }})j",
      R"j({{ range('a') }})j",
      R"j({{ dict(a=1, b='x') }} {{ dict({'a': 1}, b=2) }} {{ dict([['k', 'v']]) }} {{ namespace(a=1) }})j",
      R"j({% set ns = namespace(a=1) %}{{ ns }} {{ ns.a }})j",
      R"j({% set x = 5 %}{% set x.y = 1 %})j",
      R"j({{ lipsum is defined }} {{ cycler is defined }})j",
  });
}

TEST_CASE("Templates that Jinja2 refuses or fails to render fail here too", "[jinja][oracle]") {
  check_against_jinja2({
      R"j({% for x in l %})j",
      R"j({% if true %}{% endfor %})j",
      R"j({% foo %})j",
      R"j({{ 1 + }})j",
      R"j({{ ( }})j",
      R"j({{ 'unterminated }})j",
      R"j({{ }})j",
      R"j({% endif %})j",
      R"j({% set %})j",
      R"j({% for in l %}{% endfor %})j",
      R"j({% macro m(a=1, b) %}{% endmacro %})j",
      R"j({% break %})j",
      R"j({% for x in l %}{% macro m() %}{% break %}{% endmacro %}{% endfor %})j",
      R"j({% for loop in l %}{% endfor %})j",
      R"j({{ 1 | }})j",
      R"j({# unterminated comment)j",
      R"j({% raw %} unterminated)j",
      R"j({{ a.1.2 }})j",
      R"j({{ x is }})j",
      R"j({% set 1 = 2 %})j",
      R"j({{ [1, 2 }})j",
      R"j({{ {'a' 1} }})j",
      R"j({{ 1 $ 2 }})j",
      R"j({% if %}{% endif %})j",
      R"j({{ 1 / 0 }})j",
      R"j({{ 1 // 0 }})j",
      R"j({{ 1 % 0 }})j",
      R"j({{ 'a' + 1 }})j",
      R"j({{ 1 + 'a' }})j",
      R"j({{ [1] + 'a' }})j",
      R"j({{ 'a' - 'b' }})j",
      R"j({{ -'a' }})j",
      R"j({{ 'a' < 1 }})j",
      R"j({{ none < 1 }})j",
      R"j({{ {} < {} }})j",
      R"j({{ 1 in 2 }})j",
      R"j({{ 1 in 'abc' }})j",
      R"j({% for x in 5 %}{% endfor %})j",
      R"j({% for x in none_value %}{% endfor %})j",
      R"j({% for a, b in [1] %}{% endfor %})j",
      R"j({% for a, b in [[1, 2, 3]] %}{% endfor %})j",
      R"j({{ s() }})j",
      R"j({{ d | dictsort(by='nope') }})j",
      R"j({{ l | items | list }})j",
      R"j({{ 5 | length }})j",
      R"j({{ missing | int }})j",
      R"j({{ 'x' | indent }}{{ 5 | indent }})j",
      R"j({% with a = 1 %}{% endwith %}{{ a }})j",
      R"j({% set a = 0 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% endwith %}{{ a }})j",
      R"j({% for i in l %}{% with %}{% if i == 1 %}{% break %}{% endif %}{{ i }}{% endwith %}{% endfor %})j",
      R"j({% include 'x' %})j",
      R"j({{ x | tojson(indent=1.5) }})j",
      R"j({{ {[1]: 2} }})j",
      R"j({{ 'abc'[1:2:0] }})j",
      R"j({% set ns = namespace() %}{{ ns | length }})j",
      R"j({{ 2 ** 0.5 }} {{ 8 ** (1/3) }} {{ (-8) ** 2.0 }})j",
      R"j({{ 0 ** -1 }})j",
      R"j({% macro m() %}{% endmacro %}{{ m(1) }})j",
      R"j({{ l | batch(0) | list }})j",
      R"j({{ 'x' | round }})j",
      R"j({{ n is divisibleby 0 }})j",
      R"j({% if x %}{% else %}{% else %}{% endif %})j",
      R"j({% for x in l %}{% endfor %}{% endfor %})j",
      R"j({{ loop.index }})j",
      R"j({{ 'a' 'b' }}{{ a b }})j",
      R"j({% elif x %})j",
      R"j({{ x.y = 1 }})j",
      R"j({% set x = 1 %}{% set x.y = 2 %})j",
      R"j({{ d.a.b }})j",
      R"j({{ d.zzz.b }})j",
      R"j({{ none_value.a.b }})j",
  });
}
TEST_CASE("Combinations chat templates use (callers with arguments, namespaces in macros, tool schemas, "
          "splitting reasoning out of content) render as in Jinja2",
          "[jinja][oracle]") {
  check_against_jinja2({
      R"j({% macro m(a, b=2) %}{{ caller(a, b) }}{% endmacro %}{% call(x, y=5) m(1) %}{{ x }}-{{ y }}{% endcall %})j",
      R"j({% macro m() %}{{ caller() }}{{ caller() }}{% endmacro %}{% set ns = namespace(i=0) %}{% call m() )j"
          R"j(%}{% set ns.i = ns.i + 1 %}{{ ns.i }}{% endcall %})j",
      R"j({% macro m(x) %}{{ x ~ kwargs.get('sep', '|') }}{% endmacro %}{{ m(1, sep='!') }}{{ m(2) }})j",
      R"j({% for a, b in [(1, 2), (3, 4)] %}{% if loop.changed(a, b) %}{{ a }}{{ b }}{% endif %}{% endfor %})j",
      R"j({% set ns = namespace(items=[]) %}{% for x in l %}{% set ns.items = ns.items + [x * 2] %}{% endfor )j"
          R"j(%}{{ ns.items }})j",
      R"j({% macro add(ns, v) %}{% set ns.total = ns.total + v %}{% endmacro %}{% set ns = namespace(total=0) )j"
          R"j(%}{{ add(ns, 2) }}{{ add(ns, 3) }}{{ ns.total }})j",
      R"j(a
  {#- comment #}
b)j",
      R"j(a
  {# comment -#}
  b)j",
      R"j({{- ' x ' -}}

{%- if true %}
  y
{% endif -%}

z)j",
      R"j(  {% if true %}a{% endif %}{% if true %}b{% endif %}
  {% if true %}c{% endif %})j",
      "{% if true %}\r\n  x\r\n{% endif %}\r\n",
      R"j(x{{ 'a' }}
  {%- if true %} y{% endif %})j",
      R"j({% for i in l -%}
  {{- i -}}
{%- endfor %})j",
      R"j({%- raw %}  {{ a }}
  {% endraw -%}
  z)j",
      R"j(  {%+ if true %}k{% endif %})j",
      R"j({% if true +%}
kept{% endif %})j",
      R"j({{ '\u00e9\U0001F600\101\7' }})j",
      R"j({{ 'élève ÉCOLE'.title() }} {{ 'éa'.center(6, '·') }} {{ 'ÉCOLE'.lower() }} {{ 'Ωμέγα'.upper() }} {{ )j"
          R"j('привет мир' | title }})j",
      R"j({{ people | sort(attribute='age,name') | map(attribute='name') | list }} {{ people | )j"
          R"j(sort(attribute='name', reverse=true) | map(attribute='name') | join }})j",
      R"j({{ ['a', 'b'] | map('replace', 'a', 'z') | list }} {{ [none, 1] | map('default', 'x') | list }} {{ l )j"
          R"j(| map('abs') | list }})j",
      R"j({{ people | selectattr('name', 'defined') | list | length }} {{ [1, none, 2] | reject('none') | list )j"
          R"j(}} {{ l | select('in', [1, 2]) | list }} {{ range(10) | select('divisibleby', 3) | list }})j",
      R"j({{ people | rejectattr('nick') | list | length }} {{ people | selectattr('age', 'ge', 30) | first }})j",
      R"j({{ '1_000' | int }} {{ '12abc' | int }} {{ '-5' | int }} {{ '+7' | int }} {{ '0b101' | int(base=2) }} )j"
          R"j({{ '1e2' | int }} {{ 1e18 | int }})j",
      R"j({{ [1.5, 1e-7, 10000000000000000.0, 1234567890123456789] | tojson }} {{ {'a': [1, {'b': []}]} | )j"
          R"j(tojson(indent=2) }})j",
      R"j({{ msgs[-1].content }} {{ msgs[1:-1] | map(attribute='role') | join(',') }} {{ msgs | length }} {{ )j"
          R"j((msgs | last).role }})j",
      R"j({{ 'a' in d.keys() }} {{ 1 in d.values() }} {{ ('b', 1) in d.items() }} {{ d.items() | list | first }})j",
      R"j({{ l is sameas l }} {{ [1] is sameas [1] }} {{ none is sameas none }})j",
      R"j({% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{% set ns.a = ns.a + [2] %}{{ ns.a | length )j"
          R"j(}}{{ ns.a }})j",
      R"j({% set s2 = s %}{% set s2 = s2 ~ '!' %}{{ s }}{{ s2 }})j",
      R"j({% set x = [1, 2] %}{% set y = x %}{{ y.pop() }}{{ x }})j",
      R"j({{ '%' }} {{ '{{' }} {{ '}}' }} {{ '{%' }})j",
      R"j({{ "{{ not a tag }}" }})j",
      R"j({% set x = '{% raw %}' %}{{ x }})j",
      R"j({{ 'x' ~ 1.0 ~ 2.50 ~ -0.0 }} {{ [0.1 + 0.2] }} {{ 1e-4 }} {{ 5e-324 }} {{ 1.7976931348623157e308 }})j",
      R"j({{ 3 // 2.0 }} {{ -3 // 2.0 }} {{ 3 % -2.0 }} {{ 2 ** 0.5 }} {{ 4 ** 0.5 }} {{ 10 ** -2 }} {{ (2 ** )j"
          R"j(62) - 1 + (2 ** 62) }})j",
      R"j({{ 'abc' * 2 + 'd' }} {{ [1, 2] * 2 }} {{ (1,) * 3 }} {{ (1, 2) + (3,) }})j",
      R"j({{ {'a': 1}.get('a', 5) }} {{ {}.get('x') is none }} {{ {'a': {'b': 2}}['a']['b'] }} {{ {'x': 1}.x }})j",
      R"j({% for k, v in {'b': 2, 'a': 1} | dictsort %}{{ k }}{{ v }}{% endfor %} {% for k, v in {'b': 2, 'a': )j"
          R"j(1} | items %}{{ k }}{{ v }}{% endfor %})j",
      R"j({% for item in nested.a.list %}{{ item }}{% if item is mapping %}M{% endif %};{% endfor %})j",
      R"j({% if msgs[0]['role'] == 'system' %}{% set sys = msgs[0]['content'] %}{% set rest = msgs[1:] %}{% )j"
          R"j(else %}{% set sys = '' %}{% set rest = msgs %}{% endif %}{{ sys }}|{{ rest | length }})j",
      R"j({% for m in msgs %}{% if loop.index0 % 2 == 0 %}E{% else %}O{% endif %}{{ m.role[0] | upper }}{% endfor %})j",
      R"j({{ tools[0].function.parameters.properties | list }} {% for name, p in )j"
          R"j(tools[0].function.parameters.properties.items() %}{{ name }}:{{ p.type }}{{ ',' if not loop.last }}{% )j"
          R"j(endfor %})j",
      R"j({{ tools | map(attribute='function.name') | list }} {{ tools | map(attribute='function') | )j"
          R"j(map(attribute='name') | first }})j",
      R"j({% set content = '<think>\nreason\n</think>\n\nanswer' %}{{ )j"
          R"j(content.split('</think>')[-1].lstrip('\n') }}|{{ )j"
          R"j(content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') }})j",
      R"j({{ '  a  '.strip() == 'a' }} {{ 'A-B'.lower().replace('-', '_') }} {{ 'x'.join(['1', '2', '3']) }} {{ )j"
          R"j('a b'.split(' ') | length }})j",
      R"j({{ strftime_now('%B %d, %Y') }} {{ strftime_now('%j %U %w %a %p %I') }})j",
      R"j({{ l | unique | list | length }} {{ 'aAbB' | list | unique | join }} {{ ['a', 'A'] | )j"
          R"j(unique(case_sensitive=true) | list }})j",
      R"j({{ d | dictsort(case_sensitive=true) }} {{ {'a': 'B', 'b': 'a'} | dictsort(by='value') }})j",
      R"j({% for x in l %}{{ loop.cycle(*['a', 'b']) }}{% endfor %} {{ dict(**{'k': 1}) }} {{ namespace(**{'z': )j"
          R"j(2}).z }})j",
      R"j({{ [1, 2, 3] | batch(2) | map('list') | list }} {{ [1, 2, 3] | batch(2) | map('sum') | list }})j",
      R"j({{ 'Hello' is upper }} {{ 'HELLO' is upper }} {{ 'hello world' is lower }} {{ 'x1' is lower }})j",
      R"j({% set t = (1, 'a') %}{{ t[0] }}{{ t[-1] }}{{ t | length }}{{ t | list }}{{ t.count(1) }}{{ t.index('a') }})j",
      R"j({{ none_value | string | upper }} {{ t | string ~ '!' }} {{ [t] | join }} {{ (1, 2) | join('-') }})j",
      R"j({{ l | sum / l | length }} {{ (l | sum) / (l | length) }} {{ l | length * 2 }})j",
      R"j({{ -l[0] }} {{ not l }} {{ not empty }} {{ -(n) ** 2 }} {{ (-n) ** 2 }})j",
  });
}
// clang-format on
