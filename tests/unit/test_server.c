// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the daemon's helpers: chat templates and UTF-8 holdback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/text.h"
#include "server/server.h"

static const struct srv_msg conv[] = {
	{ "system", "Be brief." },
	{ "user", "Hi" },
	{ "assistant", " Hello! " },
	{ "user", "Bye" },
};

static void render(enum srv_template t, const struct srv_msg *m, size_t n,
		   const char *want)
{
	struct srv_buf b = { 0 };

	assert_int_equal(srv_template_render(t, m, n, &b), 0);
	assert_string_equal(b.p, want);
	srv_buf_free(&b);
}

/* Parse @text; NULL: no calls. Else the calls as compact JSON, and the
 * content left in @rest. */
static char *calls_of(const char *text, char *rest, size_t cap)
{
	struct srv_buf c = { 0 };
	json_t *j = srv_tool_calls(text, strlen(text), &c);
	char *s = NULL;

	if (j) {
		size_t i;
		json_t *o;

		/* the ids are random: check their shape, then drop them */
		json_array_foreach(j, i, o)
		{
			const char *id =
				json_string_value(json_object_get(o, "id"));

			assert_non_null(id);
			assert_int_equal(strncmp(id, "call_", 5), 0);
			json_object_del(o, "id");
		}
		s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(j);
	} else {
		assert_int_equal(c.len, 0);
	}
	snprintf(rest, cap, "%.*s", (int)c.len, c.p ? c.p : "");
	srv_buf_free(&c);
	return s;
}

static void want_calls(const char *text, const char *calls, const char *rest)
{
	char left[512], *got = calls_of(text, left, sizeof(left));

	if (!calls) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, calls);
	assert_string_equal(left, rest);
	free(got);
}

static void test_tool_calls(void **state)
{
	/* Hermes / Qwen: blocks, text around them kept */
	want_calls(
		"Let me look.\n<tool_call>\n{\"name\": \"get_weather\", "
		"\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
		"[{\"function\":{\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\","
		"\"name\":\"get_weather\"},\"type\":\"function\"}]",
		"Let me look.");
	want_calls("<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n"
		   "<tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}",
		   "[{\"function\":{\"arguments\":\"{}\",\"name\":\"a\"},"
		   "\"type\":\"function\"},{\"function\":{\"arguments\":"
		   "\"{\\\"x\\\":1}\",\"name\":\"b\"},\"type\":\"function\"}]",
		   "");
	/* Mistral: an array, and the name[ARGS] form */
	want_calls(
		"[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"q\": \"é\"}}]",
		"[{\"function\":{\"arguments\":\"{\\\"q\\\":\\\"é\\\"}\","
		"\"name\":\"f\"},\"type\":\"function\"}]",
		"");
	want_calls("[TOOL_CALLS]f[ARGS]{\"a\":2}[TOOL_CALLS]g[ARGS]{}",
		   "[{\"function\":{\"arguments\":\"{\\\"a\\\":2}\",\"name\":"
		   "\"f\"},\"type\":\"function\"},{\"function\":{\"arguments\":"
		   "\"{}\",\"name\":\"g\"},\"type\":\"function\"}]",
		   "");
	/* Llama 3.x: the answer is the object (parameters), or after the tag */
	want_calls(" {\"name\": \"f\", \"parameters\": {\"n\": 3}} ",
		   "[{\"function\":{\"arguments\":\"{\\\"n\\\":3}\",\"name\":"
		   "\"f\"},\"type\":\"function\"}]",
		   "");
	want_calls("<|python_tag|>{\"name\": \"f\", \"parameters\": {}}",
		   "[{\"function\":{\"arguments\":\"{}\",\"name\":\"f\"},"
		   "\"type\":\"function\"}]",
		   "");
	/* text stays text: prose, JSON that is no call, broken blocks */
	want_calls("The weather in Oslo is mild.", NULL, NULL);
	want_calls("{\"temperature\": 21}", NULL, NULL);
	want_calls("<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",
		   NULL, NULL);
	want_calls("<tool_call>{\"arguments\": {}}</tool_call>", NULL, NULL);
	want_calls("[TOOL_CALLS] not json", NULL, NULL);
	want_calls("[TOOL_CALLS]f[ARGS][1]", NULL, NULL);
	want_calls("<tool_call>{\"name\": \"f\", \"arguments\": 7}</tool_call>",
		   NULL, NULL);
}

static void safe(const char *text, size_t want)
{
	size_t got = srv_tool_safe_len(text, strlen(text));

	if (got != want)
		fail_msg("'%s': %zu safe, expected %zu", text, got, want);
}

/* A streamed answer goes out but for what may begin a call. */
static void test_tool_safe_len(void **state)
{
	safe("The weather is", 14);
	safe("Let me check. <tool", 14); /* a marker's first characters */
	safe("Let me check. <tool_call>{\"na", 14);
	safe("x [TOOL_CA", 2);
	safe("x <|python", 2);
	safe("a < b", 5);	  /* '<' then ' ': no marker begins so */
	safe("  {\"name\": ", 0); /* Llama 3.x: the answer may be a call */
	safe("   ", 0);
	safe("", 0);
	safe("ok <", 3);
}

static void test_llama3(void **state)
{
	render(SRV_TMPL_LLAMA3, conv, 4,
	       "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
	       "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
	       "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void test_chatml(void **state)
{
	render(SRV_TMPL_CHATML, conv + 1, 1,
	       "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

static void test_llama2(void **state)
{
	render(SRV_TMPL_LLAMA2, conv, 4,
	       "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s>"
	       "<s>[INST] Bye [/INST]");
}

static void test_mistral(void **state)
{
	render(SRV_TMPL_MISTRAL, conv, 4,
	       "[INST] Be brief.\n\nHi [/INST]Hello!</s>[INST] Bye [/INST]");
}

static void test_inst_refuses_bad_order(void **state)
{
	struct srv_buf b = { 0 };
	const struct srv_msg two_users[] = { { "user", "a" }, { "user", "b" } };
	const struct srv_msg ends_assistant[] = { { "user", "a" },
						  { "assistant", "b" } };

	assert_int_equal(srv_template_render(SRV_TMPL_LLAMA2, two_users, 2, &b),
			 -EINVAL);
	srv_buf_free(&b);
	assert_int_equal(srv_template_render(SRV_TMPL_MISTRAL, ends_assistant,
					     2, &b),
			 -EINVAL);
	srv_buf_free(&b);
	assert_int_equal(srv_template_render(SRV_TMPL_CHATML, conv, 0, &b),
			 -EINVAL);
}

static void test_detect(void **state)
{
	assert_int_equal(srv_template_detect("{% ... '<|start_header_id|>' %}",
					     "llama", "", false, false),
			 SRV_TMPL_LLAMA3);
	assert_int_equal(srv_template_detect("<|im_start|>", "llama", "", false,
					     false),
			 SRV_TMPL_CHATML);
	assert_int_equal(srv_template_detect("[INST] <<SYS>>", "llama", "",
					     false, false),
			 SRV_TMPL_LLAMA2);
	assert_int_equal(srv_template_detect("{{ '[INST] ' + m }}", "llama", "",
					     false, false),
			 SRV_TMPL_MISTRAL);
	assert_int_equal(srv_template_detect(NULL, "qwen2", "", false, false),
			 SRV_TMPL_CHATML);
	assert_int_equal(srv_template_detect(NULL, "llama",
					     "Mistral-7B-Instruct-v0.2", false,
					     false),
			 SRV_TMPL_MISTRAL);
	assert_int_equal(srv_template_detect(NULL, "llama", "", true, false),
			 SRV_TMPL_LLAMA3);
	assert_int_equal(srv_template_detect(NULL, "llama", "Llama-2-7b-chat",
					     false, false),
			 SRV_TMPL_LLAMA2);
	assert_int_equal(srv_template_detect(NULL, "llama", "", false, false),
			 SRV_TMPL_CHATML);
}

static void test_utf8(void **state)
{
	struct srv_buf b = { 0 };

	/* "é" split after its first byte is held back */
	assert_int_equal(eng_utf8_complete("ab\xc3", 3), 2);
	assert_int_equal(eng_utf8_complete("ab\xc3\xa9", 4), 4);
	assert_int_equal(eng_utf8_complete("\xe2\x82", 2), 0);
	/* an invalid byte is not "partial": it passes, to be replaced */
	assert_int_equal(eng_utf8_complete("a\xff", 2), 2);
	srv_utf8_sanitize("a\xff"
			  "b\xc3\xa9\xed\xa0\x80",
			  8, &b);
	assert_string_equal(b.p,
			    "a\xef\xbf\xbd"
			    "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	srv_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tool_calls),
		cmocka_unit_test(test_tool_safe_len),
		cmocka_unit_test(test_llama3),
		cmocka_unit_test(test_chatml),
		cmocka_unit_test(test_llama2),
		cmocka_unit_test(test_mistral),
		cmocka_unit_test(test_inst_refuses_bad_order),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
