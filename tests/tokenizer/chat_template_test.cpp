// SPDX-License-Identifier: MIT
// Tests of ChatTemplate, the Jinja2-subset interpreter for HuggingFace chat templates.
// Golden cases come from ../shared/tokenizer/chat-*.json (rendered by reference Jinja2 3.1).
// The expected strings in kJinjaCases and kQwen3ToolsExpected were produced by Python Jinja2
// 3.1 configured as transformers does (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps-based tojson), never by this interpreter.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sniper {
namespace {

std::string shared_dir() {
  const char* env = std::getenv("SNIPER_SHARED_DIR");
  return env != nullptr ? env : "../shared";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json parse_json(const std::string& text) {
  return nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// Parses and renders; returns the output or "ERROR: <message>".
std::string render(const std::string& source, const std::string& context_json) {
  auto tpl = ChatTemplate::parse(source);
  if (!tpl.ok()) return "ERROR: " + tpl.error().message;
  const nlohmann::ordered_json context = parse_json(context_json);
  EXPECT_FALSE(context.is_discarded()) << context_json;
  auto out = tpl->render(context);
  if (!out.ok()) return "ERROR: " + out.error().message;
  return out.value();
}

// Runs every case of chat-<model>.json against <model>/tokenizer_config.json's chat_template.
void run_golden_file(const std::string& model, size_t min_cases) {
  const std::string dir = shared_dir() + "/tokenizer/";
  const nlohmann::ordered_json cases = parse_json(read_file(dir + "chat-" + model + ".json"));
  const nlohmann::ordered_json config = parse_json(read_file(dir + model + "/tokenizer_config.json"));
  ASSERT_TRUE(cases.is_object()) << "cannot read chat-" << model << ".json under " << dir;
  ASSERT_TRUE(config.is_object() && config.contains("chat_template") && config["chat_template"].is_string());
  auto tpl = ChatTemplate::parse(config["chat_template"].get<std::string>());
  ASSERT_TRUE(tpl.ok()) << tpl.error().message;
  ASSERT_TRUE(cases.contains("cases") && cases["cases"].is_array());
  ASSERT_GE(cases["cases"].size(), min_cases);
  for (const auto& c : cases["cases"]) {
    nlohmann::ordered_json context;
    context["messages"] = c["messages"];
    context["add_generation_prompt"] = c["add_generation_prompt"];
    context["bos_token"] = cases["bos_token"];
    context["eos_token"] = cases["eos_token"];
    if (!c["enable_thinking"].is_null()) context["enable_thinking"] = c["enable_thinking"];  // null: unset
    SCOPED_TRACE(model + "/" + c["name"].get<std::string>() + " add_generation_prompt=" +
                 c["add_generation_prompt"].dump() + " enable_thinking=" + c["enable_thinking"].dump());
    auto out = tpl->render(context);
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(out.value(), c["expected"].get<std::string>());
  }
}

TEST(ChatTemplateGolden, Qwen3MatchesReference) { run_golden_file("qwen3", 36); }

TEST(ChatTemplateGolden, Llama3MatchesReference) { run_golden_file("llama3", 12); }

constexpr const char* kQwen3ToolsContext =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Weather in Paris?\"}, {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"Need the tool.\", \"tool_calls\": [{\"id\": \"call1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call1\", \"content\": \"{\\\"temp\\\": 21}\"}, {\"role\": \"tool\", \"content\": \"second\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather «now»\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}], \"add_generation_prompt\": true, \"bos_token\": \"\", \"eos_token\": \"<|im_end|>\", \"enable_thinking\": false}";
constexpr const char* kQwen3ToolsExpected =
    "<|im_start|>system\n"
    "Be brief.\n"
    "\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather «now»\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n"
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "Weather in Paris?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "<think>\n"
    "Need the tool.\n"
    "</think>\n"
    "\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n"
    "<tool_response>\n"
    "{\"temp\": 21}\n"
    "</tool_response>\n"
    "<tool_response>\n"
    "second\n"
    "</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n"
    "<think>\n"
    "\n"
    "</think>\n"
    "\n";

TEST(ChatTemplateGolden, Qwen3ToolCallsAndToolResponses) {
  const nlohmann::ordered_json config =
      parse_json(read_file(shared_dir() + "/tokenizer/qwen3/tokenizer_config.json"));
  ASSERT_TRUE(config.is_object() && config.contains("chat_template"));
  EXPECT_EQ(render(config["chat_template"].get<std::string>(), kQwen3ToolsContext), kQwen3ToolsExpected);
}

struct JinjaCase {
  const char* name;
  const char* source;
  const char* context;
  const char* expected;
};

const JinjaCase kJinjaCases[] = {
    {"trim_blocks_drops_newline_after_block",
     "{% if true %}\n"
     "yes\n"
     "{% endif %}\n"
     "after\n",
     "{}",
     "yes\n"
     "after"},
    {"lstrip_blocks_strips_indent_before_block",
     "  {% if true %}\n"
     "    body\n"
     "  {% endif %}\n",
     "{}",
     "    body\n"},
    {"lstrip_not_for_expressions",
     "  {{ 'x' }}\n"
     "  {% if true %}y{% endif %}",
     "{}",
     "  x\n"
     "y"},
    {"dash_strips_all_whitespace",
     "a \n"
     " {%- if true -%} \n"
     " b \n"
     " {%- endif -%} \n"
     " c",
     "{}",
     "abc"},
    {"plus_disables_lstrip",
     "  {%+ if true %}x{% endif %}",
     "{}",
     "  x"},
    {"plus_disables_trim",
     "{% if true +%}\n"
     "x{% endif %}",
     "{}",
     "\n"
     "x"},
    {"comment_whitespace",
     "a\n"
     "  {# note #}\n"
     "b {#- x -#} c",
     "{}",
     "a\n"
     "bc"},
    {"crlf_and_trailing_newline",
     "a\r\n"
     "b\r{% if true %}\r\n"
     "c{% endif %}\n",
     "{}",
     "a\n"
     "b\n"
     "c"},
    {"raw_block",
     "{% raw %}{{ x }}{% endraw %}|{%- raw -%} {% if %} {%- endraw %}|",
     "{}",
     "{{ x }}|{% if %}|"},
    {"loop_variables",
     "{% for x in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.first|int }}{{ loop.last|int }}{{ loop.length }}{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }}{{ loop.cycle('o','e') }} {% endfor %}",
     "{}",
     "12103-bo 21003ace 30013b-o "},
    {"loop_filter_and_else",
     "{% for m in ms if m.role != 'system' %}{{ loop.index }}:{{ m.role }} {% else %}empty{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}",
     "{\"ms\": [{\"role\": \"system\"}, {\"role\": \"user\"}, {\"role\": \"assistant\"}]}",
     "1:user 2:assistant |empty"},
    {"loop_scoping",
     "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}",
     "{}",
     "111 111 1"},
    {"namespace_survives_loop",
     "{% set ns = namespace(n=0, seen=[]) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.seen = ns.seen + [i] %}{% endfor %}{{ ns.n }} {{ ns.seen }}",
     "{}",
     "6 [0, 1, 2, 3]"},
    {"break_continue",
     "{% for i in range(10) %}{% if i is even %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}",
     "{}",
     "135"},
    {"tuple_unpacking",
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a * b }}{% endfor %}",
     "{\"d\": {\"z\": 1, \"a\": [1, \"x\"]}}",
     "z=1;a=[1, 'x'];212"},
    {"macro_defaults_kwargs_caller",
     "{% macro tag(name, cls='c', n=2) %}<{{ name }} {{ cls }}{{ n }}>{% if caller is defined %}{{ caller() }}{% endif %}{% endmacro %}{{ tag('a') }}{{ tag('b', n=5) }}{% call tag('d') %}in{% endcall %}",
     "{}",
     "<a c2><b c5><d c2>in"},
    {"recursive_macro",
     "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(10) }}",
     "{}",
     "3628800"},
    {"string_filters",
     "{{ '  Hi There  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|{{ 'a-b'|replace('-', '+') }}|{{ 'ab'|upper }}{{ 'CD'|lower }}|{{ 'x'|center(6) }}|{{ 'a b  c'|wordcount }}",
     "{}",
     "Hi There|hi|Hello World|Hello|a+b|ABcd|  x   |3"},
    {"indent_filter",
     "{{ 'a\n"
     "b\n"
     "\n"
     "c'|indent }}|{{ 'a\n"
     "b'|indent(2, true) }}|{{ 'a\n"
     "\n"
     "b'|indent('> ', blank=true) }}",
     "{}",
     "a\n"
     "    b\n"
     "\n"
     "    c|  a\n"
     "  b|a\n"
     "> \n"
     "> b"},
    {"sequence_filters",
     "{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'a']|sort }}{{ [3, 1, 2]|sort(reverse=true) }}{{ ['a', 'A', 'b']|unique|list }}{{ [1, 2]|reverse|list }}{{ 'abc'|reverse }}{{ [1, 2, 3]|first }}{{ [1, 2, 3]|last }}{{ [1, 2, 3]|length }}{{ [1, 2]|join('-') }}{{ [4, 2, 9]|max }}{{ [4, 2, 9]|min }}{{ [1, 2, 3]|sum }}",
     "{}",
     "[1, 2, 3]['A', 'a', 'b'][3, 2, 1]['a', 'b'][2, 1]cba1331-2926"},
    {"attribute_filters",
     "{{ xs|map(attribute='n')|list }}{{ xs|selectattr('n')|map(attribute='k')|join }}{{ xs|rejectattr('n', 'equalto', 2)|list|length }}{{ xs|selectattr('k', 'defined')|list|length }}{{ [1, 2, 3, 4]|select('odd')|list }}{{ [1, 2, 3, 4]|reject('divisibleby', 2)|list }}{{ ['a', 'b']|map('upper')|join }}{{ xs|sort(attribute='n')|map(attribute='n')|list }}",
     "{\"xs\": [{\"n\": 2, \"k\": \"x\"}, {\"n\": 0, \"k\": \"y\"}, {\"n\": 1}]}",
     "[2, 0, 1]x22[1, 3][1, 3]AB[0, 1, 2]"},
    {"number_filters",
     "{{ 3.7|int }} {{ '42'|int }} {{ ' 0x1A'|int(0, 16) }} {{ 'x'|int(7) }} {{ '3.5'|float }} {{ 'y'|float }} {{ -3|abs }} {{ 2.675|round(2) }} {{ 2.5|round }} {{ 3|round }} {{ 1.234|round(1, 'ceil') }} {{ 7|string }}x",
     "{}",
     "3 42 26 7 3.5 0.0 3 2.67 2.0 3 1.3 7x"},
    {"default_filter",
     "{{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ false|default('f', boolean=true) }}",
     "{}",
     "d  d None f"},
    {"tojson_filter",
     "{{ x|tojson }}\n"
     "{{ x|tojson(indent=2) }}\n"
     "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}\n"
     "{{ 'é \001'|tojson }}{{ 'é'|tojson(ensure_ascii=true) }}{{ [1, 2]|tojson(separators=(',', ':')) }}",
     "{\"x\": {\"b\": [1, 2.5, null, true, 1e+100, -0.0], \"a\": \"é<\\\"\\n\\t\", \"e\": {}, \"l\": []}}",
     "{\"b\": [1, 2.5, null, true, 1e+100, -0.0], \"a\": \"é<\\\"\\n\\t\", \"e\": {}, \"l\": []}\n"
     "{\n"
     "  \"b\": [\n"
     "    1,\n"
     "    2.5,\n"
     "    null,\n"
     "    true,\n"
     "    1e+100,\n"
     "    -0.0\n"
     "  ],\n"
     "  \"a\": \"é<\\\"\\n\\t\",\n"
     "  \"e\": {},\n"
     "  \"l\": []\n"
     "}\n"
     "{\"a\": 2, \"b\": 1}\n"
     "\"é \\u0001\"\"\\u00e9\"[1,2]"},
    {"string_methods",
     "{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.rsplit(' ', 1) }}{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ '\n"
     "\n"
     "x\n"
     "'.strip('\n"
     "') }}{{ '  x'.lstrip() }}{{ 'x  '.rstrip() }}|{{ 'hello'.find('l') }}{{ 'hello'.rfind('l') }}{{ 'hello'.count('l') }}{{ 'a-b'.replace('-', '') }}{{ 'ab'.upper() }}{{ 'a b'.title() }}{{ '-'.join(['x', 'y']) }}{{ '{} and {name}'.format(1, name='n') }}{{ 'l1\n"
     "l2'.splitlines() }}{{ '12'.isdigit() }}",
     "{}",
     "['a', 'b', '', 'c']['a', 'b']['a b', 'c']TrueTruexxx|232abABA Bx-y1 and n['l1', 'l2']True"},
    {"dict_methods",
     "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d|length }} {{ d|items|list }} {{ d|dictsort }} {{ d['b'] }} {{ d.a }}",
     "{\"d\": {\"b\": 2, \"a\": 1}}",
     "1 None 5 ['b', 'a'] [2, 1] 2 [('b', 2), ('a', 1)] [('a', 1), ('b', 2)] 2 1"},
    {"subscripts_and_slices",
     "{{ 'abcdef'[1:3] }}{{ 'abcdef'[::-1] }}{{ [1, 2, 3, 4][-2:] }}{{ [1, 2, 3][::2] }}{{ 'héllo'[1] }}{{ 'héllo'|length }}{{ xs[-1] }}{{ xs[9] }}{{ xs.0 }}{{ 'abc'[5:] }}{{ [1, 2, 3][10:1:-1] }}",
     "{\"xs\": [10, 20, 30]}",
     "bcfedcba[3, 4][1, 3]é53010[3]"},
    {"operators",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 4 / 2 }} {{ 'ab' * 3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 2 * 3 - -1 }} {{ 'a' ~ 1 ~ none }} {{ [1] + [2] }} {{ '%s=%d' % ('k', 3) }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-05 }} {{ 10 / 4 }}",
     "{}",
     "3 -4 2 3.5 1024 2.0 ababab 3.0 0.5 8 a1None [1, 2] k=3 0.30000000000000004 1e+20 1e-05 2.5"},
    {"comparisons_and_logic",
     "{{ 1 in [1, 2] }}{{ 'a' not in 'abc' }}{{ 'k' in {'k': 1} }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 1 == 1.0 }}{{ true == 1 }}{{ [1] == [1] }}{{ 'a' < 'b' }}{{ none or 'x' }}{{ 0 and 1 }}{{ not none }}{{ 'y' if 0 else 'n' }}{{ 'y' if 0 }}",
     "{}",
     "TrueFalseTrueTrueFalseTrueTrueTrueTruex0Truen"},
    {"tests",
     "{{ x is defined }}{{ y is undefined }}{{ none is none }}{{ 1 is integer }}{{ true is number }}{{ 1.0 is float }}{{ 's' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ [] is iterable }}{{ true is boolean }}{{ false is false }}{{ true is true }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 2 is in [1, 2] }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 5 is gt 3 }}{{ x is not none }}",
     "{\"x\": 1}",
     "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrue"},
    {"printing_values",
     "{{ [1, 'a', none, 2.5, true, [1], {'k': 'v'}, (1,)] }} {{ \"it's\" }} {{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\n"
     "'] }} {{ none }} {{ True }}",
     "{}",
     "[1, 'a', None, 2.5, True, [1], {'k': 'v'}, (1,)] it's [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n'] None True"},
    {"undefined_attribute_is_empty",
     "[{{ m.tool_calls }}][{{ m['missing'] }}][{{ m.tool_calls is defined }}][{{ m.tool_calls|length }}]",
     "{\"m\": {\"role\": \"user\"}}",
     "[][][False][0]"},
    {"with_and_set_blocks",
     "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}|{% set blk | upper %}b{{ 1 }}{% endset %}{{ blk }}|{% filter upper %}f{{ 'x' }}{% endfilter %}|{% set p, q = [1, 2] %}{{ p }}{{ q }}|{% set t = 1, 2 %}{{ t }}",
     "{}",
     "3|B1|FX|12|(1, 2)"},

};

TEST(ChatTemplateJinja, MatchesPythonJinja2) {
  for (const JinjaCase& c : kJinjaCases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(render(c.source, c.context), c.expected);
  }
}

TEST(ChatTemplateJinja, GenerationBlockRendersInPlace) {
  // transformers' AssistantTracker extension: {% generation %} marks assistant text only.
  EXPECT_EQ(render("{% for m in ms %}[{% generation %}{{ m }}{% endgeneration %}]{% endfor %}", R"({"ms": ["a", "b"]})"),
            "[a][b]");
}

TEST(ChatTemplateJinja, KeyOrderFollowsTheJsonType) {
  auto tpl = ChatTemplate::parse("{{ d|tojson }}");
  ASSERT_TRUE(tpl.ok());
  const char* text = R"({"d": {"b": 1, "a": 2}})";
  auto ordered = tpl->render(nlohmann::ordered_json::parse(text));
  auto sorted = tpl->render(nlohmann::json::parse(text));
  ASSERT_TRUE(ordered.ok() && sorted.ok());
  EXPECT_EQ(ordered.value(), R"({"b": 1, "a": 2})");
  EXPECT_EQ(sorted.value(), R"({"a": 2, "b": 1})");  // nlohmann::json keeps keys sorted
}

TEST(ChatTemplateJinja, CopiesShareTheParsedProgram) {
  auto tpl = ChatTemplate::parse("{% for m in messages %}{{ m.content }};{% endfor %}");
  ASSERT_TRUE(tpl.ok());
  const ChatTemplate copy = tpl.value();
  const auto context = nlohmann::json::parse(R"({"messages": [{"content": "a"}, {"content": "b"}]})");
  auto first = copy.render(context);
  auto second = tpl->render(context);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first.value(), "a;b;");
  EXPECT_EQ(second.value(), "a;b;");
}

// ---- errors ----

// Expects rendering to fail with a message containing every fragment.
void expect_error(const std::string& source, const std::string& context, std::initializer_list<const char*> fragments) {
  const std::string out = render(source, context);
  ASSERT_EQ(out.rfind("ERROR: ", 0), 0u) << "expected an error, rendered: " << out;
  for (const char* f : fragments) EXPECT_NE(out.find(f), std::string::npos) << out << "\nlacks: " << f;
}

TEST(ChatTemplateErrors, UnknownFilterNamesFilterAndLine) {
  expect_error("line one\n{{ x | nosuchfilter }}", "{}", {"unknown filter 'nosuchfilter'", "line 2"});
}

TEST(ChatTemplateErrors, UnknownTestNamesTest) { expect_error("{{ x is nosuchtest }}", "{}", {"unknown test 'nosuchtest'"}); }

TEST(ChatTemplateErrors, UnknownStatementNamesStatement) {
  expect_error("a\n\n{% include 'other.jinja' %}", "{}", {"unknown statement 'include'", "line 3"});
}

TEST(ChatTemplateErrors, UnclosedBlock) { expect_error("{% if x %}abc", "{}", {"unexpected end of template", "'endif'"}); }

TEST(ChatTemplateErrors, MismatchedEndTag) { expect_error("{% if x %}{% endfor %}", "{}", {"unknown statement 'endfor'", "'endif'"}); }

TEST(ChatTemplateErrors, UnclosedVariableTag) { expect_error("{{ x ", "{}", {"never closed", "line 1"}); }

TEST(ChatTemplateErrors, UnterminatedString) { expect_error("\n{{ 'abc }}", "{}", {"unterminated string", "line 2"}); }

TEST(ChatTemplateErrors, UnterminatedComment) { expect_error("{# note", "{}", {"missing end of comment"}); }

TEST(ChatTemplateErrors, UnbalancedBracket) { expect_error("{{ (1 ] }}", "{}", {"unexpected ']'"}); }

TEST(ChatTemplateErrors, InvalidCharacter) { expect_error("{{ a ! b }}", "{}", {"unexpected character '!'"}); }

TEST(ChatTemplateErrors, BreakOutsideLoop) { expect_error("{% break %}", "{}", {"outside of a for loop"}); }

TEST(ChatTemplateErrors, UnknownMethodIsUndefinedAndCallingItFails) {
  expect_error("\n\n{{ 'x'.nosuchmethod() }}", "{}", {"'str object' has no attribute 'nosuchmethod'", "line 3"});
}

TEST(ChatTemplateErrors, AttributeOfUndefinedFails) {
  expect_error("{{ m.a.b }}", R"({"m": {}})", {"'dict object' has no attribute 'a'"});
  expect_error("{{ nothing.b }}", "{}", {"'nothing' is undefined"});
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesTheTemplateMessageVerbatim) {
  EXPECT_EQ(render("{% if messages|length == 0 %}{{ raise_exception('No messages given!') }}{% endif %}", R"({"messages": []})"),
            "ERROR: No messages given!");
}

TEST(ChatTemplateErrors, SandboxRejectsMutatingMethods) {
  expect_error("{% set l = [1] %}{{ l.append(2) }}", "{}", {"append", "unsafe"});
}

TEST(ChatTemplateErrors, TypeErrorsNameBothTypes) {
  expect_error("{{ 1 + 'a' }}", "{}", {"unsupported operand type(s) for +: 'int' and 'str'"});
  expect_error("{{ 1 // 0 }}", "{}", {"by zero"});
}

TEST(ChatTemplateErrors, ContextMustBeAnObject) {
  auto tpl = ChatTemplate::parse("x");
  ASSERT_TRUE(tpl.ok());
  auto out = tpl->render(nlohmann::json::array());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("JSON object"), std::string::npos) << out.error().message;
}

// ---- resource limits ----

TEST(ChatTemplateLimits, IterationBudgetStopsHugeLoops) {
  // 100000 outer iterations each building a 100000-item range: 1e10 items without the budget.
  expect_error("{% for i in range(100000) %}{{ range(100000)|length }}{% endfor %}", "{}", {"work limit"});
}

TEST(ChatTemplateLimits, InfiniteRecursionStopsAtDepthLimit) {
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "{}", {"nested deeper than the limit of 64"});
}

TEST(ChatTemplateLimits, ExponentialMacroFanOutStops) {
  expect_error("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}", "{}",
               {"work limit"});
}

TEST(ChatTemplateLimits, StringGrowthIsBounded) {
  expect_error("{{ 'x' * 1000000000 }}", "{}", {"exceeds the template limit"});
  expect_error("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
               "{}", {"exceeds the template limit"});
}

TEST(ChatTemplateLimits, DeepNestingIsAParseError) {
  std::string deep = "{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}";
  expect_error(deep, "{}", {"nested deeper"});
  std::string blocks;
  for (int i = 0; i < 500; ++i) blocks += "{% if true %}";
  expect_error(blocks, "{}", {"nested deeper"});
}

}  // namespace
}  // namespace sniper
