// SPDX-License-Identifier: LGPL-2.1-or-later
/* Things every part of libedgeq uses: version, errors, time, sizes. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/edgeq.h>

const char *edgeq_version(void)
{
	return EDGEQ_VERSION;
}

const char *edgeq_commit(void)
{
	return EDGEQ_COMMIT;
}

int edgeq_error_vset(struct edgeq_error *err, int code, const char *fmt,
		     va_list ap)
{
	if (code < 0)
		code = -code;
	if (err) {
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	}
	return -code;
}

int edgeq_error_set(struct edgeq_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = edgeq_error_vset(err, code, fmt, ap);
	va_end(ap);
	return ret;
}

void edgeq_error_clear(struct edgeq_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

uint64_t edgeq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int edgeq_parse_size(const char *s, uint64_t total, uint64_t *out)
{
	char *end;
	double v, mult = 1;

	if (!s || !*s)
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	if (*s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	if (*end == '%') {
		if (!total || end[1] || v > 100)
			return -EINVAL;
		*out = (uint64_t)(v / 100.0 * (double)total);
		return 0;
	}
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		mult = 1024.0;
		break;
	case 'M':
		mult = 1024.0 * 1024;
		break;
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		break;
	case 'T':
		mult = 1024.0 * 1024 * 1024 * 1024;
		break;
	default:
		return -EINVAL;
	}
	if (*end) {
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
	}
	if (*end)
		return -EINVAL;
	v *= mult;
	if (v >= 18446744073709551615.0)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

uint64_t edgeq_peak_rss(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}
