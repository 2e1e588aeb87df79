// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * template-render: the batch side of the template tests. Renders every
 * template for every conversation, add_generation_prompt off and on, in one
 * process, through the same library call as `edgeq template`:
 *
 *   template-render OUTDIR YYYY-MM-DD TEMPLATE... -- CONV.json...
 *
 * writes OUTDIR/<template>.<conv>.<0|1>.out, or .err holding the error
 * (as tests/template/ref_render.py --batch does for Jinja2), bos_token
 * "<s>" and eos_token "</s>".
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/template.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		if (f)
			fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = 0;
	fclose(f);
	return buf;
}

/* basename without its extension */
static void stem(const char *path, char *out, size_t n)
{
	char tmp[4096], *b, *dot;

	snprintf(tmp, sizeof(tmp), "%s", path);
	b = basename(tmp);
	dot = strrchr(b, '.');
	if (dot)
		*dot = 0;
	snprintf(out, n, "%s", b);
}

static int put(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(s, 1, n, f) != n || fclose(f)) {
		fprintf(stderr, "template-render: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tm tm = { 0 };
	int sep, i, j, agp, bad = 0;
	time_t now;

	for (sep = 3; sep < argc && strcmp(argv[sep], "--"); sep++)
		;
	if (argc < 5 || sep >= argc || !strptime(argv[2], "%Y-%m-%d", &tm)) {
		fprintf(stderr,
			"usage: template-render OUTDIR YYYY-MM-DD TEMPLATE... -- CONV.json...\n");
		return 2;
	}
	now = timegm(&tm);
	for (i = 3; i < sep; i++) {
		char *src = slurp(argv[i]), tn[256];
		struct edgeq_tmpl *t = NULL;
		struct edgeq_error cerr;
		int cret;

		if (!src) {
			fprintf(stderr, "template-render: %s: %s\n", argv[i],
				strerror(errno));
			return 1;
		}
		stem(argv[i], tn, sizeof(tn));
		cret = edgeq_tmpl_compile(src, strlen(src), NULL, &t, &cerr);
		for (j = sep + 1; j < argc; j++) {
			char *conv = slurp(argv[j]), cn[256], path[4096];

			if (!conv) {
				fprintf(stderr, "template-render: %s: %s\n",
					argv[j], strerror(errno));
				return 1;
			}
			stem(argv[j], cn, sizeof(cn));
			for (agp = 0; agp < 2; agp++) {
				struct edgeq_error err = cerr;
				char *out = NULL;
				size_t n = 0;
				int ret = cret;

				if (!ret)
					ret = edgeq_tmpl_render_conv(
						t, conv, agp, "<s>", "</s>",
						now, &out, &n, &err);
				snprintf(path, sizeof(path), "%s/%s.%s.%d.%s",
					 argv[1], tn, cn, agp,
					 ret ? "err" : "out");
				if (ret) {
					char msg[600];

					snprintf(msg, sizeof(msg), "%s%s\n",
						 ret == -ECANCELED ?
							 "raise_exception: " :
							 "",
						 err.msg);
					bad |= put(path, msg, strlen(msg));
				} else {
					bad |= put(path, out, n);
				}
				free(out);
			}
			free(conv);
		}
		edgeq_tmpl_free(t);
		free(src);
	}
	return bad ? 1 : 0;
}
