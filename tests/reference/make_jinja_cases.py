#!/usr/bin/env python3
"""The expected results of test_jinja's hand-written cases, from Python's Jinja2 in Hugging Face's
settings (the environment of make_template_reference.py). Rewrites the table between the
"BEGIN CASES" / "END CASES" markers of tests/unit/test_jinja.cpp: each case's template, the result
Jinja2 rendered, or the exception class it raised. Every case renders with CONTEXT below.

Usage: python3 make_jinja_cases.py
"""
import pathlib
import re

import jinja2

from make_template_reference import make_env

HERE = pathlib.Path(__file__).resolve().parent
TEST = HERE.parent / "unit" / "test_jinja.cpp"

CONTEXT = {
    "xs": [3, 1, 2], "d": {"b": 2, "a": 1, "c": None}, "s": "héllo Wörld", "n": None, "t": True, "f": 1.5,
    "empty": [], "words": ["b", "A", "c", "a"],
    "msgs": [{"role": "system", "content": " be brief "}, {"role": "user", "content": "hi\tthere"},
             {"role": "assistant", "content": "yo", "tool_calls": [{"type": "function", "function": {
                 "name": "f", "arguments": {"x": 1, "y": "é\"\n"}}}]}],
    "nested": {"a": {"b": [10, 20, {"c": "deep"}]}},
}

CASES = [
    # printing: Python's str() of each type
    ("print int float", "{{ 1 }} {{ 1.0 }} {{ 2.50 }} {{ 1e20 }} {{ 1.5e-7 }} {{ -0.0 }} {{ 10/4 }} {{ 10/5 }}"),
    ("print bool none", "{{ true }} {{ False }} {{ none }} {{ None }} {{ n }}"),
    ("print containers", "{{ [1, 'a', none, true, 1.5] }} {{ (1,) }} {{ (1, 'b') }} {{ () }} {{ {'k': [1], 2: 'v'} }}"),
    ("print repr quotes", "{{ ['it\\'s', \"say \\\"hi\\\"\", 'both \\' \"', 'tab\\tnl\\n', 'back\\\\slash'] }}"),
    ("print repr unicode", "{{ ['héllo', '😀', '\\u00a0', '\\u200b', '\\x01'] }}"),
    ("print dict context", "{{ d }} {{ nested }}"),
    ("print top-level tuple", "{{ 1, 'a' }}"),
    # literals and operators
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }}"),
    ("int float mix", "{{ 1 + 1.0 }} {{ 3 * 0.5 }} {{ true + 1 }} {{ 10 - 2.5 }}"),
    ("unary", "{{ -xs[0] }} {{ +2 }} {{ - - 3 }} {{ -(1.5) }}"),
    ("string ops", "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'x' ~ 1 ~ none ~ true ~ [1] }}"),
    ("list ops", "{{ [1, 2] + [3] }} {{ [0] * 3 }} {{ (1, 2) + (3,) }}"),
    ("percent format", "{{ '%s-%d-%.2f-%5s-%-4d|' % ('a', 3, 1.5, 'r', 7) }} {{ '%s' % [1] }} {{ '100%%' % () }}"),
    ("comparisons", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 == true }} {{ (1, 2) == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }}"),
    ("in operator", "{{ 'ell' in s }} {{ 2 in xs }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in xs }} {{ 'x' in undefined_name }}"),
    ("and or not", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ not empty }} {{ none or [] }} {{ not 1 == 2 }}"),
    ("conditional expression", "{{ 'yes' if t else 'no' }} {{ 'a' if n else 'b' if f else 'c' }} [{{ 'x' if false }}]"),
    ("string literal escapes", "{{ 'a\\nb\\tc\\\\d\\x41\\u00e9\\U0001F600\\q' }}"),
    ("adjacent string literals", "{{ 'ab' 'cd' \"ef\" }}"),
    ("integer literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_0.5 }}"),
    ("dict and list literals", "{{ {'a': 1, 'b': [1, 2,], 'a': 3} }} {{ [1, [2, [3]]] }} {{ {} }} {{ [] }}"),
    # subscripts and slices
    ("subscripts", "{{ xs[0] }} {{ xs[-1] }} {{ d['a'] }} {{ d.b }} {{ nested.a.b[2].c }} {{ nested['a']['b'][1] }} {{ xs.1 }} {{ s[1] }}"),
    ("slices", "{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ s[::-1] }} {{ s[1:4] }} {{ xs[5:] }} {{ xs[-10:1] }} {{ 'abcdef'[4:1:-1] }}"),
    ("missing item is undefined", "[{{ xs[10] }}][{{ d.zz }}][{{ d['zz'] }}][{{ none.x }}][{{ s.nope }}]"),
    ("dict method beats key", "{{ {'items': 1}.items() | list }} {{ {'items': 1}['items'] }}"),
    # undefined
    ("undefined prints empty", "[{{ nothing }}][{{ nothing | length }}][{{ nothing | string }}][{{ nothing ~ 'x' }}][{% for x in nothing %}x{% endfor %}]"),
    ("undefined truthiness", "{{ 'y' if nothing else 'n' }} {{ nothing is defined }} {{ nothing is undefined }} {{ nothing == nothing }} {{ nothing is none }}"),
    ("undefined default", "{{ nothing | default('dflt') }} {{ n | default('x') }} {{ '' | default('e', true) }} {{ nothing | d('short') }}"),
    ("attribute of undefined raises", "{{ nothing.attr }}"),
    ("subscript of undefined raises", "{{ nothing[0] }}"),
    ("arithmetic on undefined raises", "{{ nothing + 1 }}"),
    ("calling undefined raises", "{{ nothing() }}"),
    ("undefined in comparison raises", "{{ nothing < 1 }}"),
    # tests
    ("type tests", "{{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 's' is string }} {{ d is mapping }} {{ xs is mapping }} {{ n is none }} {{ t is boolean }}"),
    ("sequence iterable tests", "{{ s is sequence }} {{ xs is sequence }} {{ d is sequence }} {{ 1 is iterable }} {{ xs is iterable }} {{ none is iterable }} {{ nothing is iterable }} {{ (xs | select) is iterable }} {{ (xs | select) is sequence }}"),
    ("value tests", "{{ t is true }} {{ 1 is true }} {{ false is false }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 2 is ne 1 }} {{ 1 is lt 2 }} {{ 3 is gt 2 }} {{ 2 is ge 2 }} {{ 1 is le 0 }} {{ 2 is in xs }} {{ 'abc' is lower }} {{ 'ABC' is upper }}"),
    ("callable sameas tests", "{{ range is callable }} {{ 'x'.upper is callable }} {{ d is callable }} {{ none is sameas none }} {{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }}"),
    ("test with an argument it does not take raises", "{{ 1 is string 2 }}"),
    ("unicode names", "{% set café = 'c' %}{{ café }}{{ 名前 | default('-') }}"),
    ("is not", "{{ n is not none }} {{ nothing is not defined }} {{ not n is none }}"),
    # filters
    ("trim length upper lower", "[{{ '  a b \\n' | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ s | length }} {{ xs | count }} {{ d | length }} {{ s | upper }} {{ s | lower }}"),
    ("title capitalize", "{{ 'hello wORLD foo-bar (x)' | title }} {{ 'hELLO wORLD' | capitalize }} {{ \"they're\".title() }}"),
    ("replace", "{{ 'a-b-c' | replace('-', '+') }} {{ 'a-b-c' | replace('-', '', 1) }} {{ 'abc'.replace('', '.') }}"),
    ("join", "{{ xs | join(', ') }} {{ msgs | join('|', attribute='role') }} {{ [1, none, 'a'] | join }}"),
    ("first last", "{{ xs | first }} {{ xs | last }} {{ s | first }} [{{ empty | first }}] {{ d | first }}"),
    ("items list", "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {{ d | list }} {{ 'abc' | list }} {{ (1, 2) | list }}"),
    ("tojson", "{{ msgs[2] | tojson }} {{ 'é\"\\n' | tojson }} {{ [1.0, 2, none, true] | tojson }}"),
    ("tojson indent", "{{ nested | tojson(indent=2) }} {{ [] | tojson(indent=2) }} {{ {'a': {}} | tojson(indent=1) }}"),
    ("tojson ensure_ascii sort_keys", "{{ 'é😀' | tojson(ensure_ascii=True) }} {{ 'é' | tojson(ensure_ascii=False) }} {{ d | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }}"),
    ("tojson of undefined raises", "{{ nothing | tojson }}"),
    ("tojson of generator raises", "{{ xs | select | tojson }}"),
    ("string int float", "{{ 5 | string }} {{ '42' | int }} {{ ' 7 ' | int }} {{ '4.9' | int }} {{ 'x' | int }} {{ 'x' | int(3) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 'y' | float }} {{ 2 | float }}"),
    ("round abs", "{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 3 | round }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(0, 'floor') }} {{ -3 | abs }} {{ -2.5 | abs }}"),
    ("selectattr rejectattr", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'in', ['user', 'system']) | map(attribute='role') | list }} {{ msgs | selectattr('tool_calls') | list | length }} {{ msgs | selectattr('tool_calls', 'defined') | list | length }}"),
    ("select reject map", "{{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ words | map('upper') | list }} {{ msgs | map(attribute='missing', default='-') | list }} {{ none | map('upper') | list }}"),
    ("unique", "{{ words | unique | list }} {{ words | unique(case_sensitive=true) | list }} {{ msgs | unique(attribute='role') | map(attribute='role') | join(',') }}"),
    ("sort", "{{ xs | sort }} {{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ xs | sort(reverse=true) }} {{ msgs | sort(attribute='role') | map(attribute='role') | join(',') }}"),
    ("dictsort", "{{ d | dictsort }} {{ {'b': 1, 'A': 2} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }} {{ {'b': 1, 'a': 2} | dictsort(reverse=true) }}"),
    ("min max sum", "{{ xs | min }} {{ xs | max }} {{ words | max }} {{ xs | sum }} {{ [1.5, 2] | sum }} {{ msgs | map(attribute='content') | map('length') | sum }} [{{ empty | max }}]"),
    ("indent", "[{{ 'a\\nb\\n\\nc' | indent }}] [{{ 'a\\nb' | indent(2, true) }}] [{{ 'a\\n\\nb' | indent(width='> ', blank=true) }}] [{{ 'x\\n' | indent(first=true) }}]"),
    ("safe and markup concat", "{{ 'a<b' | safe }} {{ ('<i>' | safe) + '<&>' }} {{ '<&>' + ('<i>' | safe) }} {{ ('<i>' | safe) ~ '<&>' }} {{ '<\"\\'&>' | escape }}"),
    ("batch wordcount center truncate", "{{ xs | batch(2) | list }} {{ xs | batch(2, 0) | list }} {{ 'one two, three' | wordcount }} [{{ 'ab' | center(7) }}] [{{ 'abc' | center(6) }}] {{ 'a b c d e f g h i j k' | truncate(9) }} {{ 'abcdefghijklmnop' | truncate(10, true) }}"),
    ("reverse", "{{ xs | reverse | list }} {{ s | reverse }}"),
    ("filter with dotted attribute", "{{ [nested] | map(attribute='a.b.1') | list }}"),
    ("length of generator raises", "{{ xs | select | length }}"),
    ("unknown filter fails at parse", "{% if false %}{{ x | from_json }}{% endif %}{% for x in xs %}{{ x | nope }}{% endfor %}"),
    ("unknown filter inside if only fails when called", "{% if false %}{{ x | from_json }}{% endif %}ok {{ 'x' if false else 'y' | nope if false else 'z' }}"),
    ("unknown filter inside if fails when called", "{% if true %}{{ 'x' | from_json }}{% endif %}"),
    ("unknown test fails at parse", "{{ 1 is nope }}"),
    # methods
    ("str methods", "{{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ ' a  b\\tc\\n'.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }}"),
    ("strip methods", "[{{ '  x  '.strip() }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] [{{ 'xyxay'.strip('xy') }}] [{{ '\\n\\tx\\n'.strip() }}]"),
    ("startswith endswith", "{{ s.startswith('hé') }} {{ s.endswith('rld') }} {{ s.startswith(('x', 'h')) }} {{ 'abc'.endswith('b', 0, 2) }} {{ '<think>x'.startswith('<think>') }}"),
    ("case methods", "{{ 'AbC'.upper() }} {{ 'AbC'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'é'.upper() }}"),
    ("find count replace join", "{{ s.find('l') }} {{ s.rfind('l') }} {{ s.find('z') }} {{ 'aaa'.count('a') }} {{ 'aXbX'.replace('X', '-') }} {{ '-'.join(['a', 'b']) }} {{ ', '.join(words) }}"),
    ("str format", "{{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='N') }} {{ '{{literal}}'.format() }}"),
    ("dict methods", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}"),
    ("list methods", "{{ xs.index(1) }} {{ [1, 1, 2].count(1) }}"),
    ("list append is refused", "{% set _ = xs.append(4) %}"),
    ("list pop is refused", "{{ xs.pop() }}"),
    ("dict update is refused", "{% set _ = d.update({'x': 1}) %}"),
    ("unsafe attribute is refused", "{{ d.__class__ }}"),
    ("python attributes are not reachable", "[{{ s.__len__ }}][{{ xs._x }}]"),
    ("str join type error", "{{ ','.join([1, 2]) }}"),
    # statements
    ("if elif else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %};{% endfor %}"),
    ("for loop variables", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
    ("for previtem nextitem cycle", "{% for x in xs %}[{{ loop.previtem }}:{{ x }}:{{ loop.nextitem }}:{{ loop.cycle('a', 'b') }}:{{ loop.depth }}]{% endfor %}"),
    ("for else", "{% for x in empty %}x{% else %}none{% endfor %} {% for x in xs %}{{ x }}{% else %}none{% endfor %}"),
    ("for with filter", "{% for m in msgs if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.last }};{% endfor %}"),
    ("for unpacking", "{% for a, b in [(1, 2), [3, 4]] %}{{ a }}{{ b }};{% endfor %}{% for k, v in d.items() %}{{ k }};{% endfor %}"),
    ("for over dict and string", "{% for k in d %}{{ k }}{% endfor %} {% for c in 'hé!' %}[{{ c }}]{% endfor %}"),
    ("nested loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}"),
    ("break continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("break outside loop fails at parse", "{% break %}"),
    ("loop scoping", "{% set c = 0 %}{% for x in xs %}{{ c }}{% set c = c + 1 %}{{ c }}{% endfor %}|{{ c }}"),
    ("if does not scope", "{% if true %}{% set v = 'in' %}{% endif %}{{ v }}"),
    ("namespace", "{% set ns = namespace(n=0, s='') %}{% for x in xs %}{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }} {{ ns.s }} {{ ns.missing }}|{{ namespace(a=1) }}"),
    ("namespace from dict", "{% set ns = namespace(d) %}{{ ns.a }}{{ ns.b }}"),
    ("set tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, %}{{ t }}{% set p, q = 'xy' %}{{ q }}{{ p }}"),
    ("set unpack mismatch raises", "{% set a, b = [1, 2, 3] %}"),
    ("set attribute on non-namespace raises", "{% set d.x = 1 %}"),
    ("block set", "{% set body %}  x {{ xs[0] }}\n{% endset %}[{{ body }}]{% set up | upper | trim %} abc {% endset %}[{{ up }}]"),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }} [{{ greet() }}]"),
    ("macro varargs kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}"),
    ("macro too many args raises", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
    ("macro unknown keyword raises", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}"),
    ("macro recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}"),
    ("macro sees outer variables", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ xs[0] }}{% endmacro %}{{ m() }}"),
    ("macro render json schema", "{% macro render(v) %}{% if v is mapping %}{{ '{' }}{% for k, x in v.items() %}{{ k }}:{{ render(x) }}{% if not loop.last %},{% endif %}{% endfor %}{{ '}' }}{% elif v is string %}'{{ v }}'{% else %}{{ v }}{% endif %}{% endmacro %}{{ render(nested) }}"),
    ("call block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ xs[0] }}{% endcall %}"),
    ("call block with arguments", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each(xs) %}[{{ x }}]{% endcall %}"),
    ("filter block", "{% filter upper %}hello {{ s }}{% endfilter %}|{% filter replace('a', 'b') | trim %} aaa {% endfilter %}|"),
    ("raw", "{% raw %}{{ not rendered }} {% if %}{% endraw %}|{{ 1 }}"),
    ("comments", "a{# comment {{ x }} #}b{#- trim -#}  c"),
    ("globals", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ dict(d) }}"),
    ("raise_exception", "before{{ raise_exception('Conversation roles must alternate!') }}"),
    ("strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M %d %B %Y %A %b') }}"),
    ("range too big raises", "{{ range(200000) | length }}"),
    ("generator is consumed once", "{% set g = xs | select %}{{ g | list }}{{ g | list }}{{ g is iterable }}{{ (empty | select) | first }}|{{ g | first }}"),
    ("generation block", "{% for m in msgs %}{% generation %}[{{ m.role }}]{% endgeneration %}{% endfor %}"),
    # whitespace control: trim_blocks, lstrip_blocks, - and +
    ("trim_blocks drops first newline", "{% if true %}\nA\n{% endif %}\nB\n{# c #}\nC"),
    ("lstrip_blocks strips indentation of blocks only", "x\n    {% if true %}\n    y {{ 1 }}\n    {{ 2 }}\n    {% endif %}\n  {# c #}\nz"),
    ("lstrip_blocks not after text on the line", "a {% if true %}b{% endif %}\n\t {% if true %}c{% endif %} d"),
    ("minus strips all whitespace", "a  \n  {%- if true -%}  \n  b  \n  {{- 'c' -}}  \n {#- x -#} \n d"),
    ("plus keeps whitespace", "x\n   {%+ if true %}y{% endif +%}\nz\n  {%+ if true +%}\nw{% endif %}"),
    ("trailing newline of the source is dropped", "a\n"),
    ("only one trailing newline is dropped", "a\n\n"),
    ("crlf normalized", "a\r\nb\rc{% if true %}\r\nd{% endif %}"),
    ("raw whitespace control", "  {% raw %}\n x {{ y }}\n  {% endraw %}\nz {%- raw -%}  r  {%- endraw -%}  q"),
    ("whitespace control in variables", "a {{- 1 }} {{ 2 -}} b {{+ 3 }}"),
    ("dict literal in output", "{{ {'a': {'b': 1}} }}{{ {'x': 1}['x'] }}"),
    # errors
    ("unclosed block is a syntax error", "{% if x %}a"),
    ("unknown tag is a syntax error", "a\n{% frobnicate %}"),
    ("bad expression is a syntax error", "{{ 1 + }}"),
    ("unterminated string is a syntax error", "\n\n{{ 'abc }}"),
    ("unclosed variable is a syntax error", "{{ x "),
    ("type error in addition", "{{ 'a' + 1 }}"),
    ("division by zero", "{{ 1 / 0 }}"),
    ("not iterable", "{% for x in 5 %}{% endfor %}"),
]


def c_string(s):
    out = '"'
    for b in s.encode("utf-8"):
        c = chr(b)
        if c == '"':
            out += '\\"'
        elif c == "\\":
            out += "\\\\"
        elif c == "\n":
            out += "\\n"
        elif c == "\t":
            out += "\\t"
        elif c == "\r":
            out += "\\r"
        elif 0x20 <= b < 0x7F and c != "?":
            out += c
        else:
            out += "\\%03o" % b
    return out + '"'


def main():
    env = make_env()
    rows = []
    for name, source in CASES:
        line = None
        try:
            expected, error = env.from_string(source).render(**CONTEXT), None
        except Exception as e:
            expected, error = str(e), type(e).__name__
            # Jinja2's own syntax errors carry the template's line; Python's (a 'break' outside a
            # loop) carry a line of the generated code, which says nothing about the template.
            line = getattr(e, "lineno", None) if isinstance(e, jinja2.TemplateError) else None
        rows.append("    {%s,\n     %s,\n     %s, %s, %d}," % (
            c_string(name), c_string(source), c_string(expected), c_string(error) if error else "nullptr",
            line or 0))
    import json
    generated = ("const char* const kContextJson =\n    " + c_string(json.dumps(CONTEXT, ensure_ascii=False)) + ";\n\n"
                 "const Case kCases[] = {\n" + "\n".join(rows) + "\n};\n")
    text = TEST.read_text(encoding="utf-8")
    begin = text.index("// BEGIN CASES")
    end = text.index("// END CASES")
    TEST.write_text(text[:begin] + "// BEGIN CASES (written by tests/reference/make_jinja_cases.py)\n" + generated + text[end:],
                    encoding="utf-8")
    print(f"{TEST}: {len(rows)} cases")


if __name__ == "__main__":
    main()
