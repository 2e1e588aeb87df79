// SPDX-License-Identifier: LGPL-2.1-or-later
/* Small helpers of the server: a growing buffer, UTF-8, logging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "engine/text.h"
#include "server/server.h"

void srv_buf_add(struct srv_buf *b, const void *d, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void srv_buf_printf(struct srv_buf *b, const char *fmt, ...)
{
	char tmp[512], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		srv_buf_add(b, tmp, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	srv_buf_add(b, big, (size_t)n);
	free(big);
}

void srv_buf_free(struct srv_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void srv_utf8_sanitize(const char *s, size_t n, struct srv_buf *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;
	int k;

	while (i < n) {
		k = eng_utf8_seq(u + i, n - i);
		if (k > 0) {
			i += (size_t)k;
			continue;
		}
		srv_buf_add(out, s + run, i - run);
		srv_buf_add(out, "\xef\xbf\xbd", 3);
		i++;
		run = i;
	}
	srv_buf_add(out, s + run, i - run);
}

/* ---- logging */
static bool log_journal;

static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(2, &st))
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void srv_log_setup(const char *target)
{
	if (target && !strcmp(target, "journal"))
		log_journal = true;
	else if (target && !strcmp(target, "stderr"))
		log_journal = false;
	else
		log_journal = stderr_is_journal();
}

void srv_log(int prio, const char *const *fields, const char *fmt, ...)
{
	char msg[1024], mfield[1040], pfield[16];
	struct iovec iov[40];
	size_t n = 0, i;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_journal) {
		snprintf(mfield, sizeof(mfield), "MESSAGE=%s", msg);
		snprintf(pfield, sizeof(pfield), "PRIORITY=%d", prio);
		iov[n].iov_base = mfield;
		iov[n++].iov_len = strlen(mfield);
		iov[n].iov_base = pfield;
		iov[n++].iov_len = strlen(pfield);
		iov[n].iov_base = (char *)"SYSLOG_IDENTIFIER=edgeq";
		iov[n++].iov_len = strlen("SYSLOG_IDENTIFIER=edgeq");
		for (i = 0; fields && fields[i] && n < 40; i++) {
			iov[n].iov_base = (char *)fields[i];
			iov[n++].iov_len = strlen(fields[i]);
		}
		if (sd_journal_sendv(iov, (int)n) >= 0)
			return;
	}
	/* stderr: the message, then the fields as key=value (lower case);
	 * debug messages only go to the journal */
	if (prio >= SRV_DEBUG)
		return;
	flockfile(stderr);
	fprintf(stderr, "edgeq serve: %s", msg);
	for (i = 0; fields && fields[i]; i++) {
		const char *f = fields[i], *eq = strchr(f, '=');

		if (!eq)
			continue;
		if (!strncmp(f, "EDGEQ_", 6))
			f += 6;
		fputc(i ? ' ' : '\t', stderr);
		for (; f < eq; f++)
			fputc(*f >= 'A' && *f <= 'Z' ? *f - 'A' + 'a' : *f,
			      stderr);
		fprintf(stderr, "=%s", eq + 1);
	}
	fputc('\n', stderr);
	funlockfile(stderr);
}
