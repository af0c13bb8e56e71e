// The Jinja engine (model/jinja) against Python's Jinja2 (tests/jinja2_oracle.hpp), the language itself: tables of
// snippets for whitespace control, literals, operators, access, statements and macros, rendered by both, must
// agree byte for byte or both fail. Filters, tests, methods and globals: test_jinja_builtins.cpp; exact errors,
// limits and the fuzz run: test_jinja_limits.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"
#include "tests/jinja2_oracle.hpp"

using namespace parley;
using namespace parley::test;

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
// clang-format on
