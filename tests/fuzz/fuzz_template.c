// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: arbitrary bytes as a chat template (and, after a NUL
 * byte, as the conversation JSON), compiled and rendered under small
 * limits. Checks: no crash, no leak, no unbounded time or memory (the
 * interpreter's limits must stop every runaway), and a result that is
 * either an error with a message or a NUL-terminated output.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/template.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char conv_default[] =
	"{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"},"
	"{\"role\": \"user\", \"content\": \"h\\u00e9llo\"},"
	"{\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"c1\","
	"\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1.5}}}]},"
	"{\"role\": \"tool\", \"content\": \"{}\"}],"
	"\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
	"\"parameters\": {\"type\": \"object\"}}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct edgeq_tmpl_limits lim = {
		.max_output = 1 << 20,
		.max_memory = 32 << 20,
		.max_depth = 200,
		.max_steps = 200000,
	};
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	struct edgeq_tmpl *t;
	struct edgeq_error err;
	char *conv, *out = NULL;
	size_t n = 0;
	int ret;

	ret = edgeq_tmpl_compile((const char *)data, tlen, &lim, &t, &err);
	if (ret) {
		if (t || !err.msg[0])
			abort();
		return 0;
	}
	if (nul) {
		conv = malloc(size - tlen);
		if (!conv)
			abort();
		memcpy(conv, nul + 1, size - tlen - 1);
		conv[size - tlen - 1] = 0;
	} else {
		conv = strdup(conv_default);
	}
	ret = edgeq_tmpl_render_conv(t, conv, size & 1, "<s>", "</s>", 0, &out,
				     &n, &err);
	if (ret) {
		if (out || !err.msg[0])
			abort();
	} else if (!out || out[n] != 0 || n > lim.max_output) {
		abort();
	}
	free(out);
	free(conv);
	edgeq_tmpl_free(t);
	return 0;
}
