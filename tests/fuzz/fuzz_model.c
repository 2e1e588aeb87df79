// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: arbitrary bytes as a model file through the whole
 * loader (hyperparameters, tensor table and shapes, tokenizer, weights),
 * then a context and two decode steps when it loads. A hostile file must be
 * refused with a message, never crash or read out of bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/engine.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	struct edgeq_error err = { 0 };
	struct edgeq_model *m;
	struct edgeq_ctx *c;
	const float *lg;
	char path[64];
	int32_t toks[2];
	int fd = memfd_create("fuzz-model", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	edgeq_model_params_init(&mp);
	mp.path = path;
	mp.n_threads = 1;
	mp.weights = EDGEQ_WEIGHTS_MMAP;
	if (!edgeq_model_load(&mp, &m, &err)) {
		const struct edgeq_model_info *in = edgeq_model_info(m);

		edgeq_ctx_params_init(&cp);
		cp.n_ctx = 8;
		cp.n_batch = 2;
		if (!edgeq_ctx_new(m, &cp, &c, &err)) {
			toks[0] = in->bos >= 0 ? in->bos : 0;
			toks[1] = (int32_t)(in->n_vocab - 1);
			if (!edgeq_decode(c, toks, 2, &lg, &err))
				(void)edgeq_decode(c, toks, 1, &lg, &err);
			edgeq_ctx_free(c);
		}
		edgeq_model_free(m);
	} else if (!err.msg[0]) {
		__builtin_trap(); /* every refusal says why */
	}
	close(fd);
	return 0;
}
