// The Jinja engine (core/chat/jinja) renders as Python's Jinja2 does in Hugging Face's chat-template
// settings: each case's expected text (or the fact that Jinja2 raised) was produced by Jinja2 3.1 with
// tests/reference/make_jinja_cases.py. Also: errors carry line and column, raise_exception keeps the
// template's message, and hostile templates stop at the limits instead of exhausting the machine.
#include <QtTest>

#include "cpu_cost.h"
#include "jinja_fixed_time.h"

#include <algorithm>

#include "chat/jinja/json.h"
#include "chat/jinja/template.h"
#include "util/error.h"

using namespace wb::jinja;

namespace {

struct Case {
    const char* name;
    const char* source;
    const char* expected;  // the rendered text, or Jinja2's message when it raised
    const char* error;     // the exception class Jinja2 raised, or nullptr
    int line;              // Jinja2's line number of a syntax error
};

// BEGIN CASES (written by tests/reference/make_jinja_cases.py)
const char* const kContextJson =
    "{\"xs\": [3, 1, 2], \"d\": {\"b\": 2, \"a\": 1, \"c\": null}, \"s\": \"h\303\251llo W\303\266rld\", \"n\": null, \"t\": true, \"f\": 1.5, \"empty\": [], \"words\": [\"b\", \"A\", \"c\", \"a\"], \"msgs\": [{\"role\": \"system\", \"content\": \" be brief \"}, {\"role\": \"user\", \"content\": \"hi\\tthere\"}, {\"role\": \"assistant\", \"content\": \"yo\", \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1, \"y\": \"\303\251\\\"\\n\"}}}]}], \"nested\": {\"a\": {\"b\": [10, 20, {\"c\": \"deep\"}]}}}";

const Case kCases[] = {
    {"print int float",
     "{{ 1 }} {{ 1.0 }} {{ 2.50 }} {{ 1e20 }} {{ 1.5e-7 }} {{ -0.0 }} {{ 10/4 }} {{ 10/5 }}",
     "1 1.0 2.5 1e+20 1.5e-07 -0.0 2.5 2.0", nullptr, 0},
    {"print bool none",
     "{{ true }} {{ False }} {{ none }} {{ None }} {{ n }}",
     "True False None None None", nullptr, 0},
    {"print containers",
     "{{ [1, 'a', none, true, 1.5] }} {{ (1,) }} {{ (1, 'b') }} {{ () }} {{ {'k': [1], 2: 'v'} }}",
     "[1, 'a', None, True, 1.5] (1,) (1, 'b') () {'k': [1], 2: 'v'}", nullptr, 0},
    {"print repr quotes",
     "{{ ['it\\'s', \"say \\\"hi\\\"\", 'both \\' \"', 'tab\\tnl\\n', 'back\\\\slash'] }}",
     "[\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\tnl\\n', 'back\\\\slash']", nullptr, 0},
    {"print repr unicode",
     "{{ ['h\303\251llo', '\360\237\230\200', '\\u00a0', '\\u200b', '\\x01'] }}",
     "['h\303\251llo', '\360\237\230\200', '\\xa0', '\\u200b', '\\x01']", nullptr, 0},
    {"print dict context",
     "{{ d }} {{ nested }}",
     "{'b': 2, 'a': 1, 'c': None} {'a': {'b': [10, 20, {'c': 'deep'}]}}", nullptr, 0},
    {"print top-level tuple",
     "{{ 1, 'a' }}",
     "(1, 'a')", nullptr, 0},
    {"arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }}",
     "3 -4 1 2 1.5 1024 0.5 3 9", nullptr, 0},
    {"int float mix",
     "{{ 1 + 1.0 }} {{ 3 * 0.5 }} {{ true + 1 }} {{ 10 - 2.5 }}",
     "2.0 1.5 2 7.5", nullptr, 0},
    {"unary",
     "{{ -xs[0] }} {{ +2 }} {{ - - 3 }} {{ -(1.5) }}",
     "-3 2 3 -1.5", nullptr, 0},
    {"string ops",
     "{{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ 'x' ~ 1 ~ none ~ true ~ [1] }}",
     "ab ababab xxx x1NoneTrue[1]", nullptr, 0},
    {"list ops",
     "{{ [1, 2] + [3] }} {{ [0] * 3 }} {{ (1, 2) + (3,) }}",
     "[1, 2, 3] [0, 0, 0] (1, 2, 3)", nullptr, 0},
    {"percent format",
     "{{ '%s-%d-%.2f-%5s-%-4d|' % ('a', 3, 1.5, 'r', 7) }} {{ '%s' % [1] }} {{ '100%%' % () }}",
     "a-3-1.50-    r-7   | [1] 100%", nullptr, 0},
    {"comparisons",
     "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 == true }} {{ (1, 2) == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }}",
     "True True True True True True False True False", nullptr, 0},
    {"in operator",
     "{{ 'ell' in s }} {{ 2 in xs }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in xs }} {{ 'x' in undefined_name }}",
     "False True True True True False", nullptr, 0},
    {"and or not",
     "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ not empty }} {{ none or [] }} {{ not 1 == 2 }}",
     "x y  True [] True", nullptr, 0},
    {"conditional expression",
     "{{ 'yes' if t else 'no' }} {{ 'a' if n else 'b' if f else 'c' }} [{{ 'x' if false }}]",
     "yes b []", nullptr, 0},
    {"string literal escapes",
     "{{ 'a\\nb\\tc\\\\d\\x41\\u00e9\\U0001F600\\q' }}",
     "a\nb\tc\\dA\303\251\360\237\230\200\\q", nullptr, 0},
    {"adjacent string literals",
     "{{ 'ab' 'cd' \"ef\" }}",
     "abcdef", nullptr, 0},
    {"integer literals",
     "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_0.5 }}",
     "1000 31 15 5 10.5", nullptr, 0},
    {"dict and list literals",
     "{{ {'a': 1, 'b': [1, 2,], 'a': 3} }} {{ [1, [2, [3]]] }} {{ {} }} {{ [] }}",
     "{'a': 3, 'b': [1, 2]} [1, [2, [3]]] {} []", nullptr, 0},
    {"subscripts",
     "{{ xs[0] }} {{ xs[-1] }} {{ d['a'] }} {{ d.b }} {{ nested.a.b[2].c }} {{ nested['a']['b'][1] }} {{ xs.1 }} {{ s[1] }}",
     "3 2 1 2 deep 20 1 \303\251", nullptr, 0},
    {"slices",
     "{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::-1] }} {{ xs[::2] }} {{ s[::-1] }} {{ s[1:4] }} {{ xs[5:] }} {{ xs[-10:1] }} {{ 'abcdef'[4:1:-1] }}",
     "[1, 2] [3, 1] [2, 1, 3] [3, 2] dlr\303\266W oll\303\251h \303\251ll [] [3] edc", nullptr, 0},
    {"missing item is undefined",
     "[{{ xs[10] }}][{{ d.zz }}][{{ d['zz'] }}][{{ none.x }}][{{ s.nope }}]",
     "[][][][][]", nullptr, 0},
    {"dict method beats key",
     "{{ {'items': 1}.items() | list }} {{ {'items': 1}['items'] }}",
     "[('items', 1)] 1", nullptr, 0},
    {"undefined prints empty",
     "[{{ nothing }}][{{ nothing | length }}][{{ nothing | string }}][{{ nothing ~ 'x' }}][{% for x in nothing %}x{% endfor %}]",
     "[][0][][x][]", nullptr, 0},
    {"undefined truthiness",
     "{{ 'y' if nothing else 'n' }} {{ nothing is defined }} {{ nothing is undefined }} {{ nothing == nothing }} {{ nothing is none }}",
     "n False True True False", nullptr, 0},
    {"undefined default",
     "{{ nothing | default('dflt') }} {{ n | default('x') }} {{ '' | default('e', true) }} {{ nothing | d('short') }}",
     "dflt None e short", nullptr, 0},
    {"attribute of undefined raises",
     "{{ nothing.attr }}",
     "'nothing' is undefined", "UndefinedError", 0},
    {"subscript of undefined raises",
     "{{ nothing[0] }}",
     "'nothing' is undefined", "UndefinedError", 0},
    {"arithmetic on undefined raises",
     "{{ nothing + 1 }}",
     "'nothing' is undefined", "UndefinedError", 0},
    {"calling undefined raises",
     "{{ nothing() }}",
     "'nothing' is undefined", "UndefinedError", 0},
    {"undefined in comparison raises",
     "{{ nothing < 1 }}",
     "'nothing' is undefined", "UndefinedError", 0},
    {"type tests",
     "{{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 's' is string }} {{ d is mapping }} {{ xs is mapping }} {{ n is none }} {{ t is boolean }}",
     "True True True False True True True False True True", nullptr, 0},
    {"sequence iterable tests",
     "{{ s is sequence }} {{ xs is sequence }} {{ d is sequence }} {{ 1 is iterable }} {{ xs is iterable }} {{ none is iterable }} {{ nothing is iterable }} {{ (xs | select) is iterable }} {{ (xs | select) is sequence }}",
     "True True True False True False True True False", nullptr, 0},
    {"value tests",
     "{{ t is true }} {{ 1 is true }} {{ false is false }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 2 is ne 1 }} {{ 1 is lt 2 }} {{ 3 is gt 2 }} {{ 2 is ge 2 }} {{ 1 is le 0 }} {{ 2 is in xs }} {{ 'abc' is lower }} {{ 'ABC' is upper }}",
     "True False True True True True True False True True True True False True True True", nullptr, 0},
    {"callable sameas tests",
     "{{ range is callable }} {{ 'x'.upper is callable }} {{ d is callable }} {{ none is sameas none }} {{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }}",
     "True True False True True False True", nullptr, 0},
    {"test with an argument it does not take raises",
     "{{ 1 is string 2 }}",
     "test_string() takes 1 positional argument but 2 were given", "TypeError", 0},
    {"unicode names",
     "{% set caf\303\251 = 'c' %}{{ caf\303\251 }}{{ \345\220\215\345\211\215 | default('-') }}",
     "c-", nullptr, 0},
    {"is not",
     "{{ n is not none }} {{ nothing is not defined }} {{ not n is none }}",
     "False True False", nullptr, 0},
    {"trim length upper lower",
     "[{{ '  a b \\n' | trim }}] [{{ 'xxaxx' | trim('x') }}] {{ s | length }} {{ xs | count }} {{ d | length }} {{ s | upper }} {{ s | lower }}",
     "[a b] [a] 11 3 3 H\303\211LLO W\303\226RLD h\303\251llo w\303\266rld", nullptr, 0},
    {"title capitalize",
     "{{ 'hello wORLD foo-bar (x)' | title }} {{ 'hELLO wORLD' | capitalize }} {{ \"they're\".title() }}",
     "Hello World Foo-Bar (X) Hello world They'Re", nullptr, 0},
    {"replace",
     "{{ 'a-b-c' | replace('-', '+') }} {{ 'a-b-c' | replace('-', '', 1) }} {{ 'abc'.replace('', '.') }}",
     "a+b+c ab-c .a.b.c.", nullptr, 0},
    {"join",
     "{{ xs | join(', ') }} {{ msgs | join('|', attribute='role') }} {{ [1, none, 'a'] | join }}",
     "3, 1, 2 system|user|assistant 1Nonea", nullptr, 0},
    {"first last",
     "{{ xs | first }} {{ xs | last }} {{ s | first }} [{{ empty | first }}] {{ d | first }}",
     "3 2 h [] b", nullptr, 0},
    {"items list",
     "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {{ d | list }} {{ 'abc' | list }} {{ (1, 2) | list }}",
     "b=2;a=1;c=None; ['b', 'a', 'c'] ['a', 'b', 'c'] [1, 2]", nullptr, 0},
    {"tojson",
     "{{ msgs[2] | tojson }} {{ '\303\251\"\\n' | tojson }} {{ [1.0, 2, none, true] | tojson }}",
     "{\"role\": \"assistant\", \"content\": \"yo\", \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1, \"y\": \"\303\251\\\"\\n\"}}}]} \"\303\251\\\"\\n\" [1.0, 2, null, true]", nullptr, 0},
    {"tojson indent",
     "{{ nested | tojson(indent=2) }} {{ [] | tojson(indent=2) }} {{ {'a': {}} | tojson(indent=1) }}",
     "{\n  \"a\": {\n    \"b\": [\n      10,\n      20,\n      {\n        \"c\": \"deep\"\n      }\n    ]\n  }\n} [] {\n \"a\": {}\n}", nullptr, 0},
    {"tojson ensure_ascii sort_keys",
     "{{ '\303\251\360\237\230\200' | tojson(ensure_ascii=True) }} {{ '\303\251' | tojson(ensure_ascii=False) }} {{ d | tojson(sort_keys=true) }} {{ d | tojson(separators=(',', ':')) }}",
     "\"\\u00e9\\ud83d\\ude00\" \"\303\251\" {\"a\": 1, \"b\": 2, \"c\": null} {\"b\":2,\"a\":1,\"c\":null}", nullptr, 0},
    {"tojson of undefined raises",
     "{{ nothing | tojson }}",
     "Object of type Undefined is not JSON serializable", "TypeError", 0},
    {"tojson of generator raises",
     "{{ xs | select | tojson }}",
     "Object of type generator is not JSON serializable", "TypeError", 0},
    {"string int float",
     "{{ 5 | string }} {{ '42' | int }} {{ ' 7 ' | int }} {{ '4.9' | int }} {{ 'x' | int }} {{ 'x' | int(3) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 'y' | float }} {{ 2 | float }}",
     "5 42 7 4 0 3 3 2.5 0.0 2.0", nullptr, 0},
    {"round abs",
     "{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 3 | round }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(0, 'floor') }} {{ -3 | abs }} {{ -2.5 | abs }}",
     "2.0 4.0 2.67 3 3.0 2.0 3 2.5", nullptr, 0},
    {"selectattr rejectattr",
     "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'in', ['user', 'system']) | map(attribute='role') | list }} {{ msgs | selectattr('tool_calls') | list | length }} {{ msgs | selectattr('tool_calls', 'defined') | list | length }}",
     "['hi\\tthere'] ['assistant'] 1 1", nullptr, 0},
    {"select reject map",
     "{{ xs | select('odd') | list }} {{ xs | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ words | map('upper') | list }} {{ msgs | map(attribute='missing', default='-') | list }} {{ none | map('upper') | list }}",
     "[3, 1] [2] [1, 'a'] ['B', 'A', 'C', 'A'] ['-', '-', '-'] []", nullptr, 0},
    {"unique",
     "{{ words | unique | list }} {{ words | unique(case_sensitive=true) | list }} {{ msgs | unique(attribute='role') | map(attribute='role') | join(',') }}",
     "['b', 'A', 'c'] ['b', 'A', 'c', 'a'] system,user,assistant", nullptr, 0},
    {"sort",
     "{{ xs | sort }} {{ words | sort }} {{ words | sort(case_sensitive=true) }} {{ xs | sort(reverse=true) }} {{ msgs | sort(attribute='role') | map(attribute='role') | join(',') }}",
     "[1, 2, 3] ['A', 'a', 'b', 'c'] ['A', 'a', 'b', 'c'] [3, 2, 1] assistant,system,user", nullptr, 0},
    {"dictsort",
     "{{ d | dictsort }} {{ {'b': 1, 'A': 2} | dictsort }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }} {{ {'b': 1, 'a': 2} | dictsort(reverse=true) }}",
     "[('a', 1), ('b', 2), ('c', None)] [('A', 2), ('b', 1)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]", nullptr, 0},
    {"min max sum",
     "{{ xs | min }} {{ xs | max }} {{ words | max }} {{ xs | sum }} {{ [1.5, 2] | sum }} {{ msgs | map(attribute='content') | map('length') | sum }} [{{ empty | max }}]",
     "1 3 c 6 3.5 20 []", nullptr, 0},
    {"indent",
     "[{{ 'a\\nb\\n\\nc' | indent }}] [{{ 'a\\nb' | indent(2, true) }}] [{{ 'a\\n\\nb' | indent(width='> ', blank=true) }}] [{{ 'x\\n' | indent(first=true) }}]",
     "[a\n    b\n\n    c] [  a\n  b] [a\n> \n> b] [    x\n]", nullptr, 0},
    {"safe and markup concat",
     "{{ 'a<b' | safe }} {{ ('<i>' | safe) + '<&>' }} {{ '<&>' + ('<i>' | safe) }} {{ ('<i>' | safe) ~ '<&>' }} {{ '<\"\\'&>' | escape }}",
     "a<b <i>&lt;&amp;&gt; &lt;&amp;&gt;<i> <i><&> &lt;&#34;&#39;&amp;&gt;", nullptr, 0},
    {"batch wordcount center truncate",
     "{{ xs | batch(2) | list }} {{ xs | batch(2, 0) | list }} {{ 'one two, three' | wordcount }} [{{ 'ab' | center(7) }}] [{{ 'abc' | center(6) }}] {{ 'a b c d e f g h i j k' | truncate(9) }} {{ 'abcdefghijklmnop' | truncate(10, true) }}",
     "[[3, 1], [2]] [[3, 1], [2, 0]] 3 [   ab  ] [ abc  ] a b c... abcdefg...", nullptr, 0},
    {"reverse",
     "{{ xs | reverse | list }} {{ s | reverse }}",
     "[2, 1, 3] dlr\303\266W oll\303\251h", nullptr, 0},
    {"filter with dotted attribute",
     "{{ [nested] | map(attribute='a.b.1') | list }}",
     "[20]", nullptr, 0},
    {"length of generator raises",
     "{{ xs | select | length }}",
     "object of type 'generator' has no len()", "TypeError", 0},
    {"unknown filter fails at parse",
     "{% if false %}{{ x | from_json }}{% endif %}{% for x in xs %}{{ x | nope }}{% endfor %}",
     "No filter named 'nope'.", "TemplateAssertionError", 1},
    {"unknown filter inside if only fails when called",
     "{% if false %}{{ x | from_json }}{% endif %}ok {{ 'x' if false else 'y' | nope if false else 'z' }}",
     "ok z", nullptr, 0},
    {"unknown filter inside if fails when called",
     "{% if true %}{{ 'x' | from_json }}{% endif %}",
     "No filter named 'from_json' found.", "TemplateRuntimeError", 0},
    {"unknown test fails at parse",
     "{{ 1 is nope }}",
     "No test named 'nope'.", "TemplateAssertionError", 1},
    {"str methods",
     "{{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ ' a  b\\tc\\n'.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }}",
     "['a', 'b', '', 'c'] ['a', 'b,c'] ['a', 'b', 'c'] ['a', 'b c'] ['a,b', 'c']", nullptr, 0},
    {"strip methods",
     "[{{ '  x  '.strip() }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] [{{ 'xyxay'.strip('xy') }}] [{{ '\\n\\tx\\n'.strip() }}]",
     "[x] [x  ] [  x] [a] [x]", nullptr, 0},
    {"startswith endswith",
     "{{ s.startswith('h\303\251') }} {{ s.endswith('rld') }} {{ s.startswith(('x', 'h')) }} {{ 'abc'.endswith('b', 0, 2) }} {{ '<think>x'.startswith('<think>') }}",
     "True True True True True", nullptr, 0},
    {"case methods",
     "{{ 'AbC'.upper() }} {{ 'AbC'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ '\303\251'.upper() }}",
     "ABC abc Hello World Hello \303\211", nullptr, 0},
    {"find count replace join",
     "{{ s.find('l') }} {{ s.rfind('l') }} {{ s.find('z') }} {{ 'aaa'.count('a') }} {{ 'aXbX'.replace('X', '-') }} {{ '-'.join(['a', 'b']) }} {{ ', '.join(words) }}",
     "2 9 -1 3 a-b- a-b b, A, c, a", nullptr, 0},
    {"str format",
     "{{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='N') }} {{ '{{literal}}'.format() }}",
     "a and 1 xyx N! {literal}", nullptr, 0},
    {"dict methods",
     "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}",
     "1 None dflt ['b', 'a', 'c'] [2, 1, None] b2a1cNone", nullptr, 0},
    {"list methods",
     "{{ xs.index(1) }} {{ [1, 1, 2].count(1) }}",
     "1 2", nullptr, 0},
    {"list append is refused",
     "{% set _ = xs.append(4) %}",
     "access to attribute 'append' of 'list' object is unsafe.", "SecurityError", 0},
    {"list pop is refused",
     "{{ xs.pop() }}",
     "access to attribute 'pop' of 'list' object is unsafe.", "SecurityError", 0},
    {"dict update is refused",
     "{% set _ = d.update({'x': 1}) %}",
     "access to attribute 'update' of 'dict' object is unsafe.", "SecurityError", 0},
    {"unsafe attribute is refused",
     "{{ d.__class__ }}",
     "", nullptr, 0},
    {"python attributes are not reachable",
     "[{{ s.__len__ }}][{{ xs._x }}]",
     "[][]", nullptr, 0},
    {"str join type error",
     "{{ ','.join([1, 2]) }}",
     "sequence item 0: expected str instance, int found", "TypeError", 0},
    {"if elif else",
     "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %};{% endfor %}",
     "one;two;many;", nullptr, 0},
    {"for loop variables",
     "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
     "1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|", nullptr, 0},
    {"for previtem nextitem cycle",
     "{% for x in xs %}[{{ loop.previtem }}:{{ x }}:{{ loop.nextitem }}:{{ loop.cycle('a', 'b') }}:{{ loop.depth }}]{% endfor %}",
     "[:3:1:a:1][3:1:2:b:1][1:2::a:1]", nullptr, 0},
    {"for else",
     "{% for x in empty %}x{% else %}none{% endfor %} {% for x in xs %}{{ x }}{% else %}none{% endfor %}",
     "none 312", nullptr, 0},
    {"for with filter",
     "{% for m in msgs if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.last }};{% endfor %}",
     "1userFalse;2assistantTrue;", nullptr, 0},
    {"for unpacking",
     "{% for a, b in [(1, 2), [3, 4]] %}{{ a }}{{ b }};{% endfor %}{% for k, v in d.items() %}{{ k }};{% endfor %}",
     "12;34;b;a;c;", nullptr, 0},
    {"for over dict and string",
     "{% for k in d %}{{ k }}{% endfor %} {% for c in 'h\303\251!' %}[{{ c }}]{% endfor %}",
     "bac [h][\303\251][!]", nullptr, 0},
    {"nested loops",
     "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}",
     "1x11y21;2x12y22;", nullptr, 0},
    {"break continue",
     "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "0134", nullptr, 0},
    {"break outside loop fails at parse",
     "{% break %}",
     "'break' outside loop (<template>, line 11)", "SyntaxError", 0},
    {"loop scoping",
     "{% set c = 0 %}{% for x in xs %}{{ c }}{% set c = c + 1 %}{{ c }}{% endfor %}|{{ c }}",
     "010101|0", nullptr, 0},
    {"if does not scope",
     "{% if true %}{% set v = 'in' %}{% endif %}{{ v }}",
     "in", nullptr, 0},
    {"namespace",
     "{% set ns = namespace(n=0, s='') %}{% for x in xs %}{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }} {{ ns.s }} {{ ns.missing }}|{{ namespace(a=1) }}",
     "6 312 |<Namespace {'a': 1}>", nullptr, 0},
    {"namespace from dict",
     "{% set ns = namespace(d) %}{{ ns.a }}{{ ns.b }}",
     "12", nullptr, 0},
    {"set tuple",
     "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, %}{{ t }}{% set p, q = 'xy' %}{{ q }}{{ p }}",
     "12(1,)yx", nullptr, 0},
    {"set unpack mismatch raises",
     "{% set a, b = [1, 2, 3] %}",
     "too many values to unpack (expected 2)", "ValueError", 0},
    {"set attribute on non-namespace raises",
     "{% set d.x = 1 %}",
     "cannot assign attribute on non-namespace object", "TemplateRuntimeError", 0},
    {"block set",
     "{% set body %}  x {{ xs[0] }}\n{% endset %}[{{ body }}]{% set up | upper | trim %} abc {% endset %}[{{ up }}]",
     "[  x 3\n][ABC]", nullptr, 0},
    {"macro",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '\077') }} {{ greet(punct='.', name='C') }} [{{ greet() }}]",
     "Hi A! Hi B\077 Hi C. [Hi !]", nullptr, 0},
    {"macro varargs kwargs",
     "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}",
     "1(2, 3){'k': 'v'}", nullptr, 0},
    {"macro too many args raises",
     "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
     "macro 'm' takes not more than 1 argument(s)", "TypeError", 0},
    {"macro unknown keyword raises",
     "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}",
     "macro 'm' takes no keyword argument 'b'", "TypeError", 0},
    {"macro recursion",
     "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}",
     "120", nullptr, 0},
    {"macro sees outer variables",
     "{% set g = 'G' %}{% macro m() %}{{ g }}{{ xs[0] }}{% endmacro %}{{ m() }}",
     "G3", nullptr, 0},
    {"macro render json schema",
     "{% macro render(v) %}{% if v is mapping %}{{ '{' }}{% for k, x in v.items() %}{{ k }}:{{ render(x) }}{% if not loop.last %},{% endif %}{% endfor %}{{ '}' }}{% elif v is string %}'{{ v }}'{% else %}{{ v }}{% endif %}{% endmacro %}{{ render(nested) }}",
     "{a:{b:[10, 20, {'c': 'deep'}]}}", nullptr, 0},
    {"call block",
     "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ xs[0] }}{% endcall %}",
     "<b>inner 3</b>", nullptr, 0},
    {"call block with arguments",
     "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each(xs) %}[{{ x }}]{% endcall %}",
     "[3][1][2]", nullptr, 0},
    {"filter block",
     "{% filter upper %}hello {{ s }}{% endfilter %}|{% filter replace('a', 'b') | trim %} aaa {% endfilter %}|",
     "HELLO H\303\211LLO W\303\226RLD|bbb|", nullptr, 0},
    {"raw",
     "{% raw %}{{ not rendered }} {% if %}{% endraw %}|{{ 1 }}",
     "{{ not rendered }} {% if %}|1", nullptr, 0},
    {"comments",
     "a{# comment {{ x }} #}b{#- trim -#}  c",
     "abc", nullptr, 0},
    {"globals",
     "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ dict(d) }}",
     "[0, 1, 2] [1, 3, 5] [5, 3, 1] {'a': 1, 'b': 'x'} {'b': 2, 'a': 1, 'c': None}", nullptr, 0},
    {"raise_exception",
     "before{{ raise_exception('Conversation roles must alternate!') }}",
     "Conversation roles must alternate!", "TemplateError", 0},
    {"strftime_now",
     "{{ strftime_now('%Y-%m-%d %H:%M %d %B %Y %A %b') }}",
     "2024-07-26 10:30 26 July 2024 Friday Jul", nullptr, 0},
    {"range too big raises",
     "{{ range(200000) | length }}",
     "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", "OverflowError", 0},
    {"generator is consumed once",
     "{% set g = xs | select %}{{ g | list }}{{ g | list }}{{ g is iterable }}{{ (empty | select) | first }}|{{ g | first }}",
     "[3, 1, 2][]True|", nullptr, 0},
    {"generation block",
     "{% for m in msgs %}{% generation %}[{{ m.role }}]{% endgeneration %}{% endfor %}",
     "[system][user][assistant]", nullptr, 0},
    {"trim_blocks drops first newline",
     "{% if true %}\nA\n{% endif %}\nB\n{# c #}\nC",
     "A\nB\nC", nullptr, 0},
    {"lstrip_blocks strips indentation of blocks only",
     "x\n    {% if true %}\n    y {{ 1 }}\n    {{ 2 }}\n    {% endif %}\n  {# c #}\nz",
     "x\n    y 1\n    2\nz", nullptr, 0},
    {"lstrip_blocks not after text on the line",
     "a {% if true %}b{% endif %}\n\t {% if true %}c{% endif %} d",
     "a bc d", nullptr, 0},
    {"minus strips all whitespace",
     "a  \n  {%- if true -%}  \n  b  \n  {{- 'c' -}}  \n {#- x -#} \n d",
     "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", "TemplateSyntaxError", 6},
    {"plus keeps whitespace",
     "x\n   {%+ if true %}y{% endif +%}\nz\n  {%+ if true +%}\nw{% endif %}",
     "x\n   y\nz\n  \nw", nullptr, 0},
    {"trailing newline of the source is dropped",
     "a\n",
     "a", nullptr, 0},
    {"only one trailing newline is dropped",
     "a\n\n",
     "a\n", nullptr, 0},
    {"crlf normalized",
     "a\r\nb\rc{% if true %}\r\nd{% endif %}",
     "a\nb\ncd", nullptr, 0},
    {"raw whitespace control",
     "  {% raw %}\n x {{ y }}\n  {% endraw %}\nz {%- raw -%}  r  {%- endraw -%}  q",
     "\n x {{ y }}\nzrq", nullptr, 0},
    {"whitespace control in variables",
     "a {{- 1 }} {{ 2 -}} b {{+ 3 }}",
     "a1 2b 3", nullptr, 0},
    {"dict literal in output",
     "{{ {'a': {'b': 1}} }}{{ {'x': 1}['x'] }}",
     "{'a': {'b': 1}}1", nullptr, 0},
    {"unclosed block is a syntax error",
     "{% if x %}a",
     "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'.", "TemplateSyntaxError", 1},
    {"unknown tag is a syntax error",
     "a\n{% frobnicate %}",
     "Encountered unknown tag 'frobnicate'.", "TemplateSyntaxError", 2},
    {"bad expression is a syntax error",
     "{{ 1 + }}",
     "unexpected 'end of print statement'", "TemplateSyntaxError", 1},
    {"unterminated string is a syntax error",
     "\n\n{{ 'abc }}",
     "unexpected char \"'\" at 5", "TemplateSyntaxError", 3},
    {"unclosed variable is a syntax error",
     "{{ x ",
     "unexpected end of template, expected 'end of print statement'.", "TemplateSyntaxError", 1},
    {"type error in addition",
     "{{ 'a' + 1 }}",
     "can only concatenate str (not \"int\") to str", "TypeError", 0},
    {"division by zero",
     "{{ 1 / 0 }}",
     "division by zero", "ZeroDivisionError", 0},
    {"not iterable",
     "{% for x in 5 %}{% endfor %}",
     "'int' object is not iterable", "TypeError", 0},
};
// END CASES


RenderOptions fixed_options() {
    RenderOptions o;
    o.local_time = jinja_reference_time;
    return o;
}

bool is_syntax_error(const char* error) {
    if (!error) return false;
    const std::string e = error;
    return e == "TemplateSyntaxError" || e == "TemplateAssertionError" || e == "SyntaxError";
}

}  // namespace

class TestJinja : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void renders_like_jinja2_data();
    void renders_like_jinja2();
    void errors_carry_line_and_column_data();
    void errors_carry_line_and_column();
    void hostile_templates_stop_at_limits_data();
    void hostile_templates_stop_at_limits();
    void empty_repeats_render_at_once();
    void json_reads_like_python_data();
    void json_reads_like_python();
    void context_must_be_a_dict();
    void input_marks_follow_the_text_data();
    void input_marks_follow_the_text();
};

void TestJinja::renders_like_jinja2_data() {
    QTest::addColumn<int>("index");
    for (std::size_t i = 0; i < std::size(kCases); ++i) QTest::newRow(kCases[i].name) << static_cast<int>(i);
}

void TestJinja::renders_like_jinja2() {
    QFETCH(int, index);
    const Case& c = kCases[index];
    const Value context = parse_json(kContextJson);
    if (!c.error) {
        std::string got;
        try {
            got = Template::parse(c.source).render(context, fixed_options());
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QString("threw: ") + e.what()));
        }
        QCOMPARE(QString::fromStdString(got), QString::fromUtf8(c.expected));
        return;
    }
    // Jinja2 raised: so must we, at the same stage (a syntax error when parsing, else when rendering).
    std::optional<Template> t;
    try {
        t.emplace(Template::parse(c.source));
    } catch (const wb::Error& e) {
        QVERIFY2(is_syntax_error(c.error), qPrintable(QString("parse failed: ") + e.what() + "; jinja2: " + c.error));
        const QString where = c.line ? QString("line %1, column ").arg(c.line) : QString("line ");
        QVERIFY2(QString(e.what()).startsWith(where), qPrintable(QString(e.what()) + " (jinja2: line " + QString::number(c.line) + ")"));
        return;
    }
    QVERIFY2(!is_syntax_error(c.error), qPrintable(QString("parsed; jinja2: ") + c.error + ": " + c.expected));
    try {
        const std::string got = t->render(context, fixed_options());
        QFAIL(qPrintable(QString("rendered [") + QString::fromStdString(got) + "]; jinja2 raised " + c.error + ": " + c.expected));
    } catch (const TemplateRaised& e) {
        QCOMPARE(QString(c.error), QString("TemplateError"));
        QCOMPARE(QString::fromUtf8(e.what()), QString::fromUtf8(c.expected));
    } catch (const wb::Error& e) {
        QVERIFY2(QString(c.error) != "TemplateError", e.what());
        QVERIFY2(QString(e.what()).startsWith("line "), e.what());
    }
}

void TestJinja::errors_carry_line_and_column_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<bool>("at_parse");
    QTest::addColumn<QString>("message");
    QTest::newRow("missing operand") << "{{ x }}\n  {{ 1 + }}" << true << "line 2, column 10: unexpected end of print statement";
    QTest::newRow("unknown tag") << "a\nb {% frob %}" << true << "line 2, column 6: encountered unknown tag 'frob'";
    QTest::newRow("unclosed for") << "{% for x in y %}\nz" << true << "line 2, column 2: unexpected end of template, expected 'endfor' or 'else'";
    QTest::newRow("unterminated string") << "\n {{ 'ab }}" << true << "line 2, column 5: unexpected char ''' (unterminated string)";
    QTest::newRow("unknown filter") << "{{ 1 }}\n{{ x | frob }}" << true << "line 2, column 8: no filter named 'frob'";
    QTest::newRow("attribute of undefined") << "a\n\n  {{ nope.attr }}" << false << "line 3, column 10: 'nope' is undefined";
    QTest::newRow("list append") << "{% for x in [1] %}\n{{ [].append(1) }}{% endfor %}" << false
                                 << "line 2, column 13: security error: access to attribute 'append' of 'list' object is unsafe.";
    QTest::newRow("type error") << "{% set a = 1 %}{{ a ~ 'b' }}{{ a + 'b' }}" << false
                                << "line 1, column 34: unsupported operand type(s) for +: 'int' and 'str'";
}

void TestJinja::errors_carry_line_and_column() {
    QFETCH(QString, source);
    QFETCH(bool, at_parse);
    QFETCH(QString, message);
    const std::string src = source.toStdString();
    try {
        const Template t = Template::parse(src);
        QVERIFY2(!at_parse, "parsed");
        t.render(parse_json("{}"));
        QFAIL("rendered");
    } catch (const wb::Error& e) {
        QCOMPARE(QString(e.what()), message);
    }
}

void TestJinja::hostile_templates_stop_at_limits_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("message");
    // Whether the work up to the limit is steps (loop iterations, calls, parsing), whose CPU time per
    // step is the same at any limit, or bytes copied into one string or list that grows to the limit:
    // their cost per byte depends on which cache the working set fits in (doubling a string to 4 MiB
    // and to 16 MiB differed 5x per byte on this machine, with the same algorithm), so for those the
    // test checks the error at both limits but not the growth of the time.
    QTest::addColumn<bool>("steps");
    QTest::newRow("nested loops") << "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                                  << "too many loop iterations" << true;
    QTest::newRow("output size") << "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}" << "output too long" << false;
    QTest::newRow("macro recursion") << "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}" << "maximum recursion depth" << true;
    QTest::newRow("caller recursion") << "{% macro f() %}{{ caller() }}{% endmacro %}"
                                         "{% macro g() %}{% call f() %}{{ g() }}{% endcall %}{% endmacro %}{{ g() }}"
                                      << "maximum recursion depth" << true;
    QTest::newRow("string doubling") << "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
                                     << "string too long" << false;
    QTest::newRow("string repeat") << "{{ 'abc' * 100000000000 }}" << "string too long" << true;
    QTest::newRow("list repeat") << "{{ ([1] * 1000) * 100000000 }}" << "list too long" << true;
    QTest::newRow("list doubling") << "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"
                                   << "list too long" << false;
    QTest::newRow("range") << "{{ range(10**12) }}" << "range too big" << true;
    QTest::newRow("deep brackets") << QString("{{ ") + QString("(").repeated(5000) + "1" + QString(")").repeated(5000) + " }}"
                                   << "nested deeper than" << true;
    QTest::newRow("deep blocks") << QString("{% if 1 %}").repeated(3000) + QString("{% endif %}").repeated(3000) << "nested deeper than" << true;
    QTest::newRow("long operator chain") << QString("{{ 1") + QString(" + 1").repeated(100000) + " }}" << "nested deeper than" << true;
    QTest::newRow("long attribute chain") << QString("{{ x") + QString(".a").repeated(100000) + " }}" << "nested deeper than" << true;
    QTest::newRow("deep value") << "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}{% set ns.v = [ns.v] %}{% endfor %}"
                                << "value nested deeper than" << true;
    QTest::newRow("namespace cycle printed") << "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}" << "maximum recursion depth" << true;
    QTest::newRow("replace blow-up") << "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s.replace('a', 'aa') %}{% endfor %}"
                                     << "string too long" << false;
}

namespace {

// The error of parsing and rendering source with the given limits (empty if it rendered), and in
// *cpu_s the thread CPU seconds it took.
std::string limit_error(const QString& source, const RenderLimits& limits, double* cpu_s) {
    std::string error;
    *cpu_s = wb_test::cpu_seconds_of([&] {
        try {
            RenderOptions options;
            options.limits = limits;
            Template::parse(source.toStdString()).render(parse_json("{}"), options);
        } catch (const wb::Error& e) {
            error = e.what();
        }
    });
    return error;
}

}  // namespace

// Each hostile template ends with its limit's error, under the shipped limits and under a quarter of
// each, within a CPU-time ceiling, and where the work is counted steps it grows at most in proportion to the limits: CPU time per
// unit of limit at most twice that at a quarter (tests/common/cpu_cost.h), so no path does more than a
// bounded amount of work per counted step. Measured on the thread's CPU time instead of a wall-clock bound, which failed under
// ASan on a loaded machine (the nested loops took 313 s there) and says nothing about growth.
void TestJinja::hostile_templates_stop_at_limits() {
    QFETCH(QString, source);
    QFETCH(QString, message);
    QFETCH(bool, steps);
    const RenderLimits shipped;
    RenderLimits quarter = shipped;
    quarter.max_output_bytes /= 4;
    quarter.max_string_bytes /= 4;
    quarter.max_list_items /= 4;
    quarter.max_loop_iterations /= 4;
    quarter.max_call_depth /= 4;
    quarter.max_steps /= 4;
    // A quarter first, so that the shipped limits' run does not pay for the allocator's first growth.
    double quarter_s = 0, full_s = 0, again_s = 0;
    const std::string quarter_error = limit_error(source, quarter, &quarter_s);
    QVERIFY2(QString::fromStdString(quarter_error).contains(message), quarter_error.empty() ? "rendered" : quarter_error.c_str());
    const std::string full_error = limit_error(source, shipped, &full_s);
    QVERIFY2(QString::fromStdString(full_error).contains(message), full_error.empty() ? "rendered" : full_error.c_str());
    // And an absolute ceiling: the GUI's worker waits this long for a hostile template. Every row takes
    // well under 2 s of CPU at the shipped limits in a Release build (the whole function, 5.2 s wall on
    // the development VM), so a step made tens of times dearer, or a limit raised tenfold, fails here
    // even where the growth check below does not apply.
    const double ceiling_s = 10.0 * wb_test::kBuildSlowdown;
    QVERIFY2(full_s <= ceiling_s, qPrintable(QString("the shipped limits took %1 s of CPU (at most %2 s)")
                                                 .arg(full_s, 0, 'f', 2).arg(ceiling_s, 0, 'f', 0)));
    if (!steps) return;
    limit_error(source, quarter, &again_s);
    quarter_s = std::min(quarter_s, again_s);
    const double growth = wb_test::cost_growth(quarter_s, 1.0, full_s, 4.0);
    QVERIFY2(growth <= 2.0, qPrintable(QString("cost per unit of limit grew %1x (a quarter of the limits: %2 ms, "
                                               "the limits: %3 ms CPU)")
                                           .arg(growth, 0, 'f', 2).arg(quarter_s * 1e3, 0, 'f', 1).arg(full_s * 1e3, 0, 'f', 1)));
}

// '' * n and [] * n are empty for any n, in Python at once: no loop of n steps (a hostile template
// would hang the worker). Python prints "|0|()" for this template.
void TestJinja::empty_repeats_render_at_once() {
    std::string out;
    // CPU seconds of this thread: a loop of n steps would take years; waiting for a core does not count.
    const double seconds = wb_test::cpu_seconds_of([&] {
        out = Template::parse("{{ '' * 9223372036854775807 }}|{{ ([] * 1000000000000000000) | length }}|"
                              "{{ () * 1000000000000000000 }}")
                  .render(parse_json("{}"));
    });
    QCOMPARE(QString::fromStdString(out), QString("|0|()"));
    QVERIFY2(seconds < 5.0, qPrintable(QString("took %1 s of CPU").arg(seconds)));
}

void TestJinja::json_reads_like_python_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("repr");
    QTest::newRow("scalars") << R"([1, 1.0, -2.5e3, true, false, null, "s"])" << "[1, 1.0, -2500.0, True, False, None, 's']";
    QTest::newRow("key order kept") << R"({"b": 1, "a": {"d": [], "c": {}}})" << "{'b': 1, 'a': {'d': [], 'c': {}}}";
    QTest::newRow("escapes") << R"(["\u00e9\ud83d\ude00\n\t\"\\\/"])" << "['é😀\\n\\t\"\\\\/']";
    // Python keeps integers beyond 64 bits exact; here they become the nearest float.
    QTest::newRow("huge numbers") << R"([123456789012345678901234, 1e400])" << "[1.2345678901234569e+23, inf]";
}

void TestJinja::json_reads_like_python() {
    QFETCH(QString, json);
    QFETCH(QString, repr);
    QCOMPARE(QString::fromStdString(to_repr(parse_json(json.toStdString()))), repr);
    for (const char* bad : {"[1,", "{\"a\" 1}", "tru", "[1] x", "\"abc"}) {
        QVERIFY_THROWS_EXCEPTION(wb::Error, parse_json(bad));
    }
    QVERIFY_THROWS_EXCEPTION(wb::Error, parse_json(std::string(600, '[') + std::string(600, ']')));
}

void TestJinja::context_must_be_a_dict() {
    QVERIFY_THROWS_EXCEPTION(wb::Error, Template::parse("x").render(Value(1)));
    QCOMPARE(QString::fromStdString(Template::parse("x").render(Value(Dict{}))), QString("x"));
}

// Segments written as text with the input parts in [[...]].
static QString show_segments(const std::vector<Segment>& segments) {
    QString out;
    for (const Segment& s : segments) {
        const QString t = QString::fromStdString(s.text);
        out += s.from_input ? "[[" + t + "]]" : t;
    }
    return out;
}

void TestJinja::input_marks_follow_the_text_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("expected");
    // Exact rules: printing, ~ and +, slicing, indexing, iterating, captured blocks and macros.
    QTest::newRow("printed") << "<a>{{ m }}</a>" << "<a>[[  x<|im_start|>y  ]]</a>";
    QTest::newRow("template literal stays template") << "{{ '<|im_start|>' }}{{ bos }}" << "<|im_start|><s>";
    QTest::newRow("+ keeps both sides") << "{{ '<|im_start|>user\\n' + m + '<|im_end|>' }}"
                                        << "<|im_start|>user\n[[  x<|im_start|>y  ]]<|im_end|>";
    QTest::newRow("~ keeps both sides") << "{{ 'A' ~ m ~ 1 }}" << "A[[  x<|im_start|>y  ]]1";
    QTest::newRow("slice") << "{{ '(' + m[2:15] + ')' }}" << "([[x<|im_start|>]])";
    QTest::newRow("slice of a mixed string") << "{{ ('<b>' ~ m)[1:6] }}" << "b>[[  x]]";
    QTest::newRow("index") << "{{ m[2] }}{{ '<' }}" << "[[x]]<";
    QTest::newRow("iterate") << "{% for c in m[2:4] %}{{ c }}.{% endfor %}" << "[[x]].[[<]].";
    QTest::newRow("set block") << "{% set x %}<{{ m | trim }}>{% endset %}{{ x }}" << "<[[x<|im_start|>y]]>";
    QTest::newRow("macro") << "{% macro f(v) %}<t>{{ v }}</t>{% endmacro %}{{ f(m) }}" << "<t>[[  x<|im_start|>y  ]]</t>";
    QTest::newRow("namespace") << "{% set ns = namespace(c='') %}{% set ns.c = m %}{{ '<' + ns.c }}"
                               << "<[[  x<|im_start|>y  ]]";
    // Conservative rules: a builtin given input returns input.
    QTest::newRow("trim") << "{{ m | trim }}" << "[[x<|im_start|>y]]";
    QTest::newRow("strip method") << "{{ m.strip() }}" << "[[x<|im_start|>y]]";
    QTest::newRow("split last") << "{{ r.split('</think>')[-1] }}" << "[[answer]]";
    QTest::newRow("split then strip") << "{{ (r.split('</think>')[-1]).lstrip('a') }}" << "[[nswer]]";
    QTest::newRow("replace") << "{{ m.replace('x', '<|im_end|>') }}" << "[[  <|im_end|><|im_start|>y  ]]";
    QTest::newRow("upper") << "{{ m | upper }}" << "[[  X<|IM_START|>Y  ]]";
    QTest::newRow("string filter") << "{{ m | string }}" << "[[  x<|im_start|>y  ]]";
    QTest::newRow("join") << "{{ ['<', m] | join('|') }}" << "[[<|  x<|im_start|>y  ]]";
    QTest::newRow("tojson of input") << "{{ tools | tojson }}" << "[[[{\"name\": \"<|im_end|>\"}]]]";
    QTest::newRow("trim of a mixed string") << "{{ ('<s>' ~ m) | trim }}" << "[[<s>  x<|im_start|>y]]";
    QTest::newRow("a builtin without input stays template") << "{{ '<|im_start|>' | trim }}" << "<|im_start|>";
    QTest::newRow("a key of the input") << "{% for k in tools[0] %}{{ k }}{% endfor %}" << "[[name]]";
    // Numbers are not marked: their text is digits, never a special token.
    QTest::newRow("a number of the input") << "{{ n }}" << "7";
}

void TestJinja::input_marks_follow_the_text() {
    QFETCH(QString, source);
    QFETCH(QString, expected);
    const Value context(Dict{{Value("m"), mark_input(Value("  x<|im_start|>y  "))},
                             {Value("r"), mark_input(Value("reasoning</think>answer"))},
                             {Value("tools"), mark_input(parse_json(R"([{"name": "<|im_end|>"}])"))},
                             {Value("n"), mark_input(Value(7))},
                             {Value("bos"), Value("<s>")}});
    const Template t = Template::parse(source.toStdString());
    QCOMPARE(show_segments(t.render_segments(context)), expected);
    QCOMPARE(QString::fromStdString(t.render(context)), show_segments(t.render_segments(context)).remove("[[").remove("]]"));
}

QTEST_APPLESS_MAIN(TestJinja)
#include "test_jinja.moc"
