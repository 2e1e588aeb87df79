// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the daemon's helpers: chat templates and UTF-8 holdback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
