// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pretok-split: the pieces a pre-tokenizer cuts texts into, for checking a
 * pre-tokenizer against another implementation of its patterns
 * (tests/unit/t_pretok_regex.py does, against Python's regex module).
 *
 *   pretok-split NAME < TEXTS     one JSON list of pieces per text; the texts
 *                                 on stdin are separated by NUL bytes
 *   pretok-split --patterns NAME  the steps, one JSON string per line
 *                                 ("@gpt2" etc. for hand-written splitters)
 *   pretok-split --list           the first name of every implemented set
 *                                 of split rules
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/edgeq.h>

#include "model/pretok.h"
#include "model/tokenize.h"
#include "model/unicode.h"

static void json_str(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int split_one(const struct pretok *p, const char *t, size_t len)
{
	uint32_t *cps = malloc((len + 1) * sizeof(*cps));
	uint8_t *fl = malloc(len + 1);
	char *u = malloc(len * 3 + 4);
	size_t *off = malloc((len + 1) * sizeof(*off));
	struct pretok_piece *pc = NULL;
	size_t i, l, n = 0, bl = 0, npc = 0;
	int ret = -1;

	if (!cps || !fl || !u || !off)
		goto out;
	for (i = 0; i < len; i += l) {
		uint32_t c = utf8_get(t + i, len - i, &l);

		cps[n] = c >= 0x110000 ? 0xfffd : c;
		fl[n] = ucd_flags(cps[n]);
		off[n++] = bl;
		bl += utf8_put(cps[n - 1], u + bl);
	}
	off[n] = bl;
	if (pretok_split(p, cps, fl, n, &pc, &npc))
		goto out;
	putchar('[');
	for (i = 0; i < npc; i++) {
		if (i)
			fputs(", ", stdout);
		json_str(u + off[pc[i].start],
			 off[pc[i].start + pc[i].len] - off[pc[i].start]);
	}
	puts("]");
	ret = 0;
out:
	free(pc);
	free(cps);
	free(fl);
	free(u);
	free(off);
	return ret;
}

int main(int argc, char **argv)
{
	struct edgeq_error err = { 0 };
	bool patterns = argc == 3 && !strcmp(argv[1], "--patterns");
	const char *name = argv[argc - 1];
	struct pretok *p;
	size_t n = 0, cap = 1 << 16, got, a;
	char *buf;
	unsigned int i;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		size_t rules, prev = SIZE_MAX;
		bool impl;

		for (a = 0; (name = pretok_known(a, &impl, &rules)); a++)
			if (impl && rules != prev) {
				puts(name);
				prev = rules;
			}
		return 0;
	}
	if (argc != 2 && !patterns) {
		fprintf(stderr,
			"usage: pretok-split [--patterns] NAME < TEXTS\n");
		return 2;
	}
	if (pretok_new(name, strlen(name), &p, &err)) {
		fprintf(stderr, "pretok-split: %s\n", err.msg);
		return 1;
	}
	if (patterns) {
		const char *s;

		for (i = 0; (s = pretok_step(p, i)); i++) {
			json_str(s, strlen(s));
			putchar('\n');
		}
		pretok_free(p);
		return 0;
	}
	buf = malloc(cap);
	while (buf && (got = fread(buf + n, 1, cap - n, stdin)) > 0) {
		n += got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	if (!buf) {
		fprintf(stderr, "pretok-split: out of memory\n");
		return 1;
	}
	for (a = 0; a < n;) {
		char *z = memchr(buf + a, 0, n - a);
		size_t e = z ? (size_t)(z - buf) : n;

		if (split_one(p, buf + a, e - a)) {
			fprintf(stderr, "pretok-split: out of memory\n");
			return 1;
		}
		a = e + 1;
	}
	free(buf);
	pretok_free(p);
	return 0;
}
