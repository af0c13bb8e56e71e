// The Jinja engine against Python's Jinja2 (tests/jinja2_oracle.hpp), the library around the language: filters,
// tests, string/dict/list methods, tojson, transformers' globals, the templates both refuse, and the combinations
// chat templates use. The language itself: test_jinja.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/jinja/jinja.hpp"
#include "tests/jinja2_oracle.hpp"

using namespace parley;
using namespace parley::test;

// clang-format off
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
      R"j({% set t = (1, 'a') %}{{ t[0] }}{{ t[-1] }}{{ t | length }}{{ t | list }})j"
      R"j({{ t.count(1) }}{{ t.index('a') }})j",
      R"j({{ none_value | string | upper }} {{ t | string ~ '!' }} {{ [t] | join }} {{ (1, 2) | join('-') }})j",
      R"j({{ l | sum / l | length }} {{ (l | sum) / (l | length) }} {{ l | length * 2 }})j",
      R"j({{ -l[0] }} {{ not l }} {{ not empty }} {{ -(n) ** 2 }} {{ (-n) ** 2 }})j",
  });
}
// clang-format on
