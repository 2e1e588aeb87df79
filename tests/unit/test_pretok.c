// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Pre-tokenizers: the splits of patterns the suite in ../shared/vocab does
 * not cover (worked out by hand from each pattern), the refusal of unknown
 * and unimplemented names, every known name compiling and covering its
 * text, long hostile inputs through every pattern (the test timeout
 * catches a super-linear matcher), the matcher's refusals of what it does
 * not implement, and the Unicode table.
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

#include <edgeq/edgeq.h>

#include "model/pretok.h"
#include "model/regex.h"
#include "model/tokenize.h"
#include "model/unicode.h"

/* The pieces of @text under @name, joined by '|'. */
static char *split(const char *name, const char *text)
{
	struct edgeq_error err = { 0 };
	struct pretok *p;
	struct pretok_piece *pc;
	size_t len = strlen(text), n = 0, i, l, npc, *off;
	uint32_t *cps = malloc((len + 1) * sizeof(*cps));
	uint8_t *fl = malloc(len + 1);
	char *out = malloc(len * 2 + 2), *o = out;

	off = malloc((len + 1) * sizeof(*off));
	assert_non_null(cps);
	assert_non_null(fl);
	assert_non_null(out);
	assert_non_null(off);
	if (pretok_new(name, strlen(name), &p, &err))
		fail_msg("%s: %s", name, err.msg);
	for (i = 0; i < len; i += l) {
		cps[n] = utf8_get(text + i, len - i, &l);
		fl[n] = ucd_flags(cps[n]);
		off[n++] = i;
	}
	off[n] = len;
	assert_int_equal(pretok_split(p, cps, fl, n, &pc, &npc), 0);
	for (i = 0; i < npc; i++) {
		size_t a = off[pc[i].start], b = off[pc[i].start + pc[i].len];

		if (i)
			*o++ = '|';
		memcpy(o, text + a, b - a);
		o += b - a;
	}
	*o = 0;
	free(pc);
	free(cps);
	free(fl);
	free(off);
	pretok_free(p);
	return out;
}

static void expect(const char *name, const char *text, const char *want)
{
	char *got = split(name, text);

	if (strcmp(got, want))
		fail_msg("%s '%s': got '%s', want '%s'", name, text, got, want);
	free(got);
}

static void test_splits(void **state)
{
	static const char mixed[] = "Hello world's 1234 !!!\n\n  x";

	/* qwen2 runs through the matcher, llama3 by hand-written rules */
	expect("qwen2", mixed, "Hello| world|'s| |1|2|3|4| !!!\n\n| | x");
	expect("llama-bpe", mixed, "Hello| world|'s| |123|4| !!!\n\n| | x");
	expect("llama-bpe", "it'S 'LL", "it|'S| '|LL");
	expect("qwen2", "it'S", "it|'S");
	expect("tekken", "HelloWorld ABCdef ABC", "Hello|World| ABCdef| ABC");
	expect("gpt-4o", "HelloWorld's 12345", "Hello|World's| |123|45");
	expect("superbpe", "x1234567y 12", "x|1|234|567|y |12");
	expect("deepseek-v3", "abc12345\xe4\xb8\x80\xe4\xba\x8c",
	       "abc|123|45|\xe4\xb8\x80\xe4\xba\x8c");
	expect("chameleon", "<sentinel:12>ab", "<|sentinel|:|1|2|>|ab");
	expect("bloom", "Hello, world! (x)", "Hello|,| world|! (|x|)");
	expect("deepseek-llm", "Hello World\n\n  ", "Hello| World|\n|\n|  ");
	expect("gpt-2", "Hello  world a  ", "Hello| | world| a|  ");
	expect("default", "x+=1234;", "x|+=|123|4|;");
	expect("starcoder", "ab12 c", "ab|1|2| c");
	expect("falcon", "a...b 12345", "a|...|b| |123|45");
	expect("seed-coder", "a!!\n\nb", "a|!!|\n\n|b");
	expect("bailingmoe", "x\n\n\ny", "x|\n\n\n|y");
	/* a non-ASCII space is White_Space: \s, not a letter */
	expect("qwen2",
	       "a\xe3\x80\x80"
	       "b",
	       "a|\xe3\x80\x80"
	       "b");
	/* collapsed text: a Latin-1 letter is \p{L} */
	expect("deepseek-coder", "\xc3\xa9t\xc3\xa9 1",
	       "\xc3\xa9t\xc3\xa9| |1");
}

static void test_refusals(void **state)
{
	struct edgeq_error err = { 0 };
	struct pretok *p = NULL;

	assert_int_equal(pretok_new("frobnicate", 10, &p, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "'frobnicate'"));
	assert_null(p);
	assert_int_equal(pretok_new("kimi-k2", 7, &p, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "'kimi-k2'"));
	assert_non_null(strstr(err.msg, "not supported"));
	/* "gpt2" is no name llama.cpp knows ("gpt-2" is) */
	assert_int_equal(pretok_new("gpt2", 4, &p, &err), -EOPNOTSUPP);
	/* a prefix of a name is not the name */
	assert_int_equal(pretok_new("llama", 5, &p, &err), -EOPNOTSUPP);
	/* absent: llama.cpp's default */
	assert_int_equal(pretok_new(NULL, 0, &p, &err), 0);
	assert_string_equal(pretok_name(p), "default");
	pretok_free(p);
}

static void test_every_name(void **state)
{
	static const char text[] =
		"Hello World! it's 1,234.5 \xe2\x82\xac \xc3\xa9t\xc3\xa9 "
		"\xe4\xb8\x80\xe4\xba\x8c \xd9\xa3 \t\n\n   \r\n x";
	size_t i, n_impl = 0, n_missing = 0, rules;
	const char *name;
	bool impl;

	for (i = 0; (name = pretok_known(i, &impl, &rules)); i++) {
		struct edgeq_error err = { 0 };
		struct pretok *p;
		char *got, *q, *w;
		int ret;

		ret = pretok_new(name, strlen(name), &p, &err);
		if (!impl) {
			assert_int_equal(ret, -EOPNOTSUPP);
			assert_non_null(strstr(err.msg, name));
			n_missing++;
			continue;
		}
		if (ret)
			fail_msg("%s: %s", name, err.msg);
		pretok_free(p);
		n_impl++;
		/* the pieces cover the text, in order */
		got = split(name, text);
		for (q = got, w = got; *q; q++)
			if (*q != '|')
				*w++ = *q;
		*w = 0;
		assert_string_equal(got, text);
		free(got);
	}
	assert_true(n_impl >= 79);
	assert_true(n_missing >= 11);
}

/* Long runs of one class and long alternations, through every pattern. */
static void test_long_inputs(void **state)
{
	static const char *const pieces[] = {
		" ",
		"a",
		"A",
		"1",
		"!",
		"\n",
		"\xe4\xb8\x80",
		"\xc3\xa9",
		"'",
		"\xe3\x80\x80",
		"\xcc\x81",
		"\t",
		"$",
		"\xef\xbf\xbd",
	};
	size_t np = sizeof(pieces) / sizeof(pieces[0]);
	size_t n = 1 << 17, i, k, l, len = 0, rules, prev = SIZE_MAX;
	char *text = malloc(n * 8 + np * 20000 * 4);
	const char *name;
	bool impl;

	assert_non_null(text);
	/* runs of 20000 of each kind, then a random mix */
	for (k = 0; k < np; k++)
		for (i = 0; i < 20000; i++) {
			memcpy(text + len, pieces[k], strlen(pieces[k]));
			len += strlen(pieces[k]);
		}
	srand(7);
	for (i = 0; i < n; i++) {
		k = (size_t)rand() % np;
		memcpy(text + len, pieces[k], strlen(pieces[k]));
		len += strlen(pieces[k]);
	}
	text[len] = 0;
	for (i = 0; (name = pretok_known(i, &impl, &rules)); i++) {
		struct edgeq_error err = { 0 };
		struct pretok *p;
		struct pretok_piece *pc;
		uint32_t *cps;
		uint8_t *fl;
		size_t m = 0, npc, cover = 0, j;

		/* one name per set of rules is enough: skip the aliases */
		if (!impl || rules == prev)
			continue;
		prev = rules;
		assert_int_equal(pretok_new(name, strlen(name), &p, &err), 0);
		cps = malloc(len * sizeof(*cps));
		fl = malloc(len);
		assert_non_null(cps);
		assert_non_null(fl);
		for (j = 0; j < len; j += l) {
			cps[m] = utf8_get(text + j, len - j, &l);
			fl[m] = ucd_flags(cps[m]);
			m++;
		}
		assert_int_equal(pretok_split(p, cps, fl, m, &pc, &npc), 0);
		for (j = 0; j < npc; j++) {
			assert_int_equal(pc[j].start, cover);
			cover += pc[j].len;
		}
		assert_int_equal(cover, m);
		free(pc);
		free(cps);
		free(fl);
		pretok_free(p);
	}
	free(text);
}

static void test_regex_refusals(void **state)
{
	static const char *const bad[] = {
		"(?=(\\d{3})+)",  /* look-ahead of more than one character */
		"a+?",		  /* lazy */
		"a++",		  /* possessive */
		"\\p{L}\xc3\xa9", /* non-ASCII literal with a category */
		"\\p{Han}",	  /* unknown category */
		"(?<=a)b",	  /* look-behind */
		"[a-",		  /* unterminated */
		"a{2000}",	  /* too many */
		"(a",
		"a)",
		"*a",
		"\\w",
		"[z-a]",
		"a{3,2}",
	};
	struct edgeq_error err = { 0 };
	struct re_prog *p;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = NULL;
		if (re_compile(bad[i], &p, &err) != -EINVAL)
			fail_msg("'%s' compiled", bad[i]);
		assert_null(p);
		assert_non_null(strstr(err.msg, "regex: "));
	}
	assert_int_equal(re_compile("(a|b){1,4}Z$", &p, &err), 0);
	re_free(p);
}

static void test_unicode_table(void **state)
{
	assert_int_equal(ucd_flags('A'), UCD_L);
	assert_int_equal(ucd_flags('5'), UCD_N);
	assert_int_equal(ucd_flags(' '), UCD_Z | UCD_WS);
	assert_int_equal(ucd_flags('\n'), UCD_C | UCD_WS);
	assert_int_equal(ucd_flags(0x1c), UCD_C); /* no White_Space */
	assert_int_equal(ucd_flags('~'), UCD_S);
	assert_int_equal(ucd_flags(0x85), UCD_C | UCD_WS);
	assert_int_equal(ucd_flags(0xa0), UCD_Z | UCD_WS);
	assert_int_equal(ucd_flags(0x301), UCD_M);
	assert_int_equal(ucd_flags(0x20ac), UCD_S);
	assert_int_equal(ucd_flags(0x3000), UCD_Z | UCD_WS);
	assert_int_equal(ucd_flags(0x4e00), UCD_L); /* in a First/Last range */
	assert_int_equal(ucd_flags(0x9fff), UCD_L);
	assert_int_equal(ucd_flags(0xac00), UCD_L);
	assert_int_equal(ucd_flags(0x0663), UCD_N);
	assert_int_equal(ucd_flags(0x2160), UCD_N); /* Nl */
	assert_int_equal(ucd_flags(0xe000), UCD_C); /* private use */
	assert_int_equal(ucd_flags(0x0378), UCD_C); /* unassigned */
	assert_int_equal(ucd_flags(0x10ffff), UCD_C);
	assert_int_equal(ucd_flags(0x110000), 0);
	assert_int_equal(ucd_flags(0x1f600), UCD_S);
	assert_int_equal(ucd_tolower('A'), 'a');
	assert_int_equal(ucd_tolower('a'), 'a');
	assert_int_equal(ucd_tolower(0xc9), 0xe9);
	assert_int_equal(ucd_tolower(0x130), 'i');
	assert_int_equal(ucd_tolower(0x212a), 'k');
	assert_int_equal(ucd_tolower(0x10400), 0x10428);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splits),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_every_name),
		cmocka_unit_test(test_long_inputs),
		cmocka_unit_test(test_regex_refusals),
		cmocka_unit_test(test_unicode_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
