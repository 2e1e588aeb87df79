// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The chat-template interpreter: lexer and whitespace rules, expressions,
 * Python printing, filters and tests, scoping, and every error and limit
 * path (each a clear error code and message, never a crash).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <edgeq/template.h>

#define NOW 1786752000 /* 2026-08-15 00:00 UTC */

/* Render @src with @vars (JSON object); returns the error code or 0. */
static int render_lim(const char *src, const char *vars,
		      const struct edgeq_tmpl_limits *lim, char **out,
		      struct edgeq_error *err)
{
	struct edgeq_tmpl *t;
	size_t n;
	int ret;

	*out = NULL;
	ret = edgeq_tmpl_compile(src, strlen(src), lim, &t, err);
	if (ret)
		return ret;
	ret = edgeq_tmpl_render(t, vars ? vars : "{}", NOW, out, &n, err);
	if (!ret)
		assert_int_equal(strlen(*out), n);
	edgeq_tmpl_free(t);
	return ret;
}

static void expect(const char *src, const char *vars, const char *want)
{
	struct edgeq_error err = { 0 };
	char *out;
	int ret = render_lim(src, vars, NULL, &out, &err);

	if (ret)
		fail_msg("%s: error %d: %s", src, ret, err.msg);
	if (strcmp(out, want))
		fail_msg("%s: got [%s], want [%s]", src, out, want);
	free(out);
}

static void expect_err(const char *src, const char *vars, int code,
		       const char *msg_part)
{
	struct edgeq_error err = { 0 };
	char *out = NULL;
	int ret = render_lim(src, vars, NULL, &out, &err);

	if (ret != -code)
		fail_msg("%s: returned %d (%s), want %d", src, ret,
			 ret ? err.msg : out, -code);
	if (msg_part && !strstr(err.msg, msg_part))
		fail_msg("%s: message [%s] lacks [%s]", src, err.msg, msg_part);
	free(out);
}

static void test_text_and_whitespace(void **state)
{
	expect("plain text\n", NULL, "plain text");
	expect("a\r\nb\rc", NULL, "a\nb\nc");
	expect("{% if true %}\nx\n{% endif %}\ny", NULL, "x\ny");
	expect("  {% if true %}x{% endif %}", NULL, "x");
	expect("  {%+ if true %}x{% endif %}", NULL, "  x");
	expect("a  {{- 'b' -}}  c", NULL, "abc");
	expect("a {#- c -#} b", NULL, "ab");
	expect("a\n  {# c #}\nb", NULL, "a\nb");
	expect("{{ 'x' }}\ny", NULL, "x\ny");
	expect("{{ {'a': {'b': 1}} }}", NULL, "{'a': {'b': 1}}");
	expect("  {% raw %}{{ x }}{% endraw %}\nz", NULL, "{{ x }}z");
}

static void test_expressions(void **state)
{
	expect("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }}", NULL,
	       "7 9 64");
	expect("{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }}", NULL,
	       "3.5 3 -4 2");
	expect("{{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }}", NULL,
	       "a1None abab [1, 2]");
	expect("{{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 3 not in [1, 2] }}", NULL,
	       "True True True");
	expect("{{ x or 'd' }} {{ 0 and 1 }} {{ 'y' if x else 'n' }}",
	       "{\"x\": 0}", "d 0 n");
	expect("{{ x.y.z }} {{ x['y']['z'] }} {{ l[-1] }} {{ l[1:] }}",
	       "{\"x\": {\"y\": {\"z\": 5}}, \"l\": [1, 2, 3]}",
	       "5 5 3 [2, 3]");
	expect("{{ 'héllo'[1] }}{{ 'héllo'[::-1] }}", NULL, "éolléh");
	expect("{{ -x }} {{ not x }} {{ x is none }}", "{\"x\": 2}",
	       "-2 False False");
}

static void test_python_printing(void **state)
{
	expect("{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 2.0 }} {{ 1e15 }}",
	       NULL, "0.30000000000000004 1e+16 1e-05 2.0 1000000000000000.0");
	expect("{{ [\"it's\", 'a\"b', '\\n', none, true] }}", NULL,
	       "[\"it's\", 'a\"b', '\\n', None, True]");
	expect("{{ (1,) }} {{ (1, 2) }} {{ {} }} {{ [] }}", NULL,
	       "(1,) (1, 2) {} []");
	expect("{{ undefined_name }}|{{ x.missing }}|", "{\"x\": {}}", "||");
}

static void test_tojson(void **state)
{
	expect("{{ x|tojson }}", "{\"x\": {\"a\": [1, 2.5, \"é\", null]}}",
	       "{\"a\": [1, 2.5, \"é\", null]}");
	expect("{{ x|tojson(indent=2) }}", "{\"x\": {\"a\": [1]}}",
	       "{\n  \"a\": [\n    1\n  ]\n}");
	expect("{{ x|tojson(sort_keys=true, separators=(',', ':')) }}",
	       "{\"x\": {\"b\": 1, \"a\": 2}}", "{\"a\":2,\"b\":1}");
	expect("{{ 'é\\n\"'|tojson(ensure_ascii=true) }}", NULL,
	       "\"\\u00e9\\n\\\"\"");
	expect_err("{{ x|tojson }}", NULL, EINVAL, "not JSON serializable");
	expect_err("{{ [1]|map('string')|tojson }}", NULL, EINVAL, "generator");
}

static void test_filters_and_tests(void **state)
{
	expect("{{ '  a  '|trim }}|{{ 'ab'|upper }}|{{ 'Hi'|lower }}|{{ 'a b'|title }}",
	       NULL, "a|AB|hi|A B");
	expect("{{ [3, 1, 2]|sort|join(',') }} {{ [1, 2]|length }} {{ 'abc'|first }}",
	       NULL, "1,2,3 2 a");
	expect("{{ l|selectattr('a')|map(attribute='a')|list }}",
	       "{\"l\": [{\"a\": 1}, {\"a\": 0}, {\"a\": 3}]}", "[1, 3]");
	expect("{{ x|default('d') }} {{ ''|default('e', true) }}", NULL, "d e");
	expect("{{ 'a\nb'|indent(2, true) }}", NULL, "  a\n  b");
	expect("{{ 4 is even }} {{ 'a' is string }} {{ {} is mapping }} {{ x is defined }}",
	       NULL, "True True True False");
	expect("{{ '{}-{}'.format(1, 'b') }} {{ 'a,b'.split(',') }} {{ 'xa'.lstrip('x') }}",
	       NULL, "1-b ['a', 'b'] a");
	expect("{{ d.get('k', 5) }} {{ d.items()|list }}",
	       "{\"d\": {\"j\": 1}}", "5 [('j', 1)]");
	expect("{{ '<a>'|safe + '<b>' }}", NULL, "<a>&lt;b&gt;");
	expect("{{ strftime_now('%Y-%m-%d') }}", NULL, "2026-08-15");
	expect("{{ '%s=%03d %.1f %x' % ('a', 7, 2.25, -255) }} {{ '%(n)s'|format(n=1) }}",
	       NULL, "a=007 2.2 -ff 1");
}

static void test_scoping(void **state)
{
	expect("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
	       NULL, "12121");
	expect("{% set ns = namespace(n=0) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
	       NULL, "6");
	expect("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{% set c = 3 %}{{ m(1) }}{{ m(4, b=5) }}",
	       NULL, "123453");
	expect("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}",
	       NULL, "[in]");
	expect("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}",
	       NULL, "02");
	expect("{% for a, b in [[1, 2]] %}{{ a }}{{ b }}{{ loop.length }}{% else %}e{% endfor %}{% for x in [] %}{% else %}empty{% endfor %}",
	       NULL, "121empty");
	expect("{% set b %}x{{ 1 }}{% endset %}{{ b }}{% filter upper %}y{% endfilter %}",
	       NULL, "x1Y");
}

static void test_syntax_errors(void **state)
{
	static const char *const bad[] = {
		"{% if x %}unclosed",
		"{{ 'unclosed string }}",
		"{# unclosed comment",
		"{% frobnicate %}",
		"{{ x|no_such_filter }}",
		"{{ x is no_such_test }}",
		"{{ (1 }}",
		"{{ [1) }}",
		"{{ 99999999999999999999 }}",
		"{{ '\\x4' }}",
		"{% break %}",
		"{% macro m(a=1, b) %}{% endmacro %}",
		"{% set 1 = 2 %}",
		"{{ }}",
		"{% endif %}",
		"{{ x ! y }}",
		"{% for %}{% endfor %}",
		"{{ a is b is c }}",
		"{% raw %}never closed",
	};
	struct edgeq_error err;
	struct edgeq_tmpl *t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = (struct edgeq_tmpl *)1;
		if (edgeq_tmpl_compile(bad[i], strlen(bad[i]), NULL, &t,
				       &err) != -EINVAL)
			fail_msg("%s compiled", bad[i]);
		assert_null(t);
		assert_true(strlen(err.msg) > 10);
	}
	assert_int_equal(edgeq_tmpl_compile(NULL, 0, NULL, &t, &err), -EINVAL);
	/* an unknown filter inside an if fails only when it runs */
	expect("{% if false %}{{ x|no_such_filter }}{% endif %}ok", NULL, "ok");
	expect_err("{% if true %}{{ x|no_such_filter }}{% endif %}", NULL,
		   EINVAL, "No filter named 'no_such_filter'");
}

static void test_runtime_errors(void **state)
{
	expect_err("{{ raise_exception('no system role') }}", NULL, ECANCELED,
		   "no system role");
	expect_err("{{ x.y }}", NULL, EINVAL, "'x' is undefined");
	expect_err("{{ x + 1 }}", NULL, EINVAL, "UndefinedError");
	expect_err("{{ 'a' + 1 }}", NULL, EINVAL, "TypeError");
	expect_err("{{ 1 / 0 }}", NULL, EINVAL, "ZeroDivisionError");
	expect_err("{{ 9223372036854775807 + 1 }}", NULL, EINVAL,
		   "OverflowError");
	expect_err("{% set l = [] %}{{ l.append(1) }}", NULL, EINVAL,
		   "SecurityError");
	expect_err("{% set d = {} %}{{ d.update({}) }}", NULL, EINVAL,
		   "unsafe");
	expect_err("{{ range(200000)|length }}", NULL, EINVAL, "MAX_RANGE");
	expect_err("{% set x.y = 1 %}", "{\"x\": 1}", EINVAL, "namespace");
	expect_err("{% for a, b in [1] %}{% endfor %}", NULL, EINVAL,
		   "not iterable");
	expect_err("{{ 1 < 'a' }}", NULL, EINVAL, "not supported");
	expect_err("{{ 5() }}", NULL, EINVAL, "not callable");
	expect_err("{{ [1]|map('upper')|length }}", NULL, EINVAL, "len()");
	expect_err("{{ '%s %s' % ('a',) }}", NULL, EINVAL,
		   "not enough arguments");
	expect_err("{{ '%s' % ('a', 'b') }}", NULL, EINVAL,
		   "not all arguments");
	expect_err("{{ '%y' % 1 }}", NULL, EINVAL,
		   "unsupported format character");
	expect_err("{{ '%d' % 'x' }}", NULL, EINVAL, "real number");
	expect_err("{{ '%(k)s' % {} }}", NULL, EINVAL, "KeyError");
	expect_err("{{ 'x' }}", "[1]", EINVAL, "JSON object");
	expect_err("{{ 'x' }}", "{bad json", EINVAL, "JSON");
}

static void test_limits(void **state)
{
	struct edgeq_tmpl_limits lim = { 0 };
	struct edgeq_error err;
	char *out, *deep;
	size_t i;

	lim.max_output = 1000;
	assert_int_equal(render_lim("{% for i in range(2000) %}x{% endfor %}",
				    NULL, &lim, &out, &err),
			 -E2BIG);
	assert_non_null(strstr(err.msg, "output limit"));
	/* also when the output is built inside a set block */
	assert_int_equal(
		render_lim(
			"{% set b %}{% for i in range(2000) %}x{% endfor %}{% endset %}",
			NULL, &lim, &out, &err),
		-E2BIG);

	lim = (struct edgeq_tmpl_limits){ .max_memory = 1 << 20 };
	assert_int_equal(
		render_lim(
			"{% set ns = namespace(s='x') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
			NULL, &lim, &out, &err),
		-ENOMEM);
	assert_non_null(strstr(err.msg, "memory limit"));
	assert_int_equal(render_lim("{{ 'x' * 100000000000 }}", NULL, &lim,
				    &out, &err),
			 -ENOMEM);

	lim = (struct edgeq_tmpl_limits){ .max_steps = 10000 };
	assert_int_equal(
		render_lim(
			"{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
			NULL, &lim, &out, &err),
		-ETIME);
	assert_non_null(strstr(err.msg, "step limit"));

	lim = (struct edgeq_tmpl_limits){ .max_depth = 50 };
	assert_int_equal(
		render_lim(
			"{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
			NULL, &lim, &out, &err),
		-ELOOP);
	assert_non_null(strstr(err.msg, "nesting limit"));
	deep = malloc(4000);
	assert_non_null(deep);
	strcpy(deep, "{{ ");
	for (i = 0; i < 1000; i++)
		strcat(deep, "(");
	assert_int_equal(render_lim(deep, NULL, &lim, &out, &err), -ELOOP);
	strcpy(deep, "{{ x");
	for (i = 0; i < 400; i++)
		strcat(deep, "|e");
	strcat(deep, " }}");
	assert_int_equal(render_lim(deep, NULL, &lim, &out, &err), -ELOOP);
	free(deep);
	/* a deeply nested JSON value */
	lim = (struct edgeq_tmpl_limits){ 0 };
	deep = calloc(1, 1000);
	assert_non_null(deep);
	strcpy(deep, "{\"x\": ");
	for (i = 0; i < 300; i++)
		strcat(deep, "[");
	assert_int_equal(render_lim("{{ x }}", deep, &lim, &out, &err),
			 -EINVAL);
	free(deep);
	/* compile is bounded by the memory limit too */
	lim = (struct edgeq_tmpl_limits){ .max_memory = 4096 };
	assert_int_equal(
		render_lim(
			"{% for i in range(3) %}{{ i }}{% endfor %}{{ 'a' }}{{ 'b' }}{{ 'c' }}",
			NULL, &lim, &out, &err),
		-ENOMEM);
}

static void test_chat(void **state)
{
	static const char src[] =
		"{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
		"{% if tools is not none %}T{{ tools|length }}{% endif %}"
		"{% if add_generation_prompt %}<assistant>{% endif %}{{ eos_token is defined }}";
	struct edgeq_error err;
	struct edgeq_tmpl *t;
	char *out;
	size_t n;

	assert_int_equal(edgeq_tmpl_compile(src, strlen(src), NULL, &t, &err),
			 0);
	assert_int_equal(edgeq_tmpl_render_chat(
				 t,
				 "[{\"role\": \"user\", \"content\": \"hi\"}]",
				 NULL, true, "<s>", NULL, NOW, &out, &n, &err),
			 0);
	assert_string_equal(out, "<s><user>hi<assistant>False");
	free(out);
	assert_int_equal(
		edgeq_tmpl_render_conv(
			t, "{\"messages\": [], \"tools\": [{}], \"x\": 1}",
			false, "", "</s>", NOW, &out, &n, &err),
		0);
	assert_string_equal(out, "T1True");
	free(out);
	assert_int_equal(edgeq_tmpl_render_conv(t, "{\"messages\": 3}", false,
						NULL, NULL, NOW, &out, &n,
						&err),
			 -EINVAL);
	assert_int_equal(
		edgeq_tmpl_render_conv(t, "{\"messages\": [], \"tools\": 1}",
				       false, NULL, NULL, NOW, &out, &n, &err),
		-EINVAL);
	assert_int_equal(edgeq_tmpl_render_chat(t, "{}", NULL, false, NULL,
						NULL, NOW, &out, &n, &err),
			 -EINVAL);
	edgeq_tmpl_free(t);
	edgeq_tmpl_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_and_whitespace),
		cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_python_printing),
		cmocka_unit_test(test_tojson),
		cmocka_unit_test(test_filters_and_tests),
		cmocka_unit_test(test_scoping),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_runtime_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_chat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
