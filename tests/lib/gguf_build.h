/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Build GGUF files in memory for tests: a growable buffer with typed
 * writers. Each writer returns the offset it wrote at, so a test can patch
 * a field afterwards to craft a malformed file.
 */
#ifndef EDGEQ_TESTS_GGUF_BUILD_H
#define EDGEQ_TESTS_GGUF_BUILD_H

#include <stddef.h>
#include <stdint.h>

struct gb {
	uint8_t *b;
	size_t n, cap;
};

size_t gb_raw(struct gb *g, const void *p, size_t n);
size_t gb_u32(struct gb *g, uint32_t v);
size_t gb_u64(struct gb *g, uint64_t v);
size_t gb_str(struct gb *g, const char *s);
/* "GGUF", version, n_tensors, n_kv */
size_t gb_header(struct gb *g, uint32_t version, uint64_t n_tensors,
		 uint64_t n_kv);
size_t gb_kv_str(struct gb *g, const char *k, const char *v);
size_t gb_kv_u32(struct gb *g, const char *k, uint32_t v);
size_t gb_kv_f32(struct gb *g, const char *k, float v);
size_t gb_kv_bool(struct gb *g, const char *k, int v);
size_t gb_kv_arr_str(struct gb *g, const char *k, const char *const *v,
		     size_t n);
size_t gb_kv_arr_f32(struct gb *g, const char *k, const float *v, size_t n);
size_t gb_kv_arr_i32(struct gb *g, const char *k, const int32_t *v, size_t n);
/* name, n_dims, ne[], type, offset */
size_t gb_tensor(struct gb *g, const char *name, uint32_t n_dims,
		 const uint64_t *ne, uint32_t type, uint64_t offset);
void gb_align(struct gb *g, size_t a);
void gb_zero(struct gb *g, size_t n);
void gb_put_u32(struct gb *g, size_t off, uint32_t v);
void gb_put_u64(struct gb *g, size_t off, uint64_t v);
void gb_free(struct gb *g);
/* The 256 byte tokens of a byte-level BPE vocabulary (GPT-2's byte map),
 * ids 0..255 in byte order, all normal: fills toks[0..255], types[0..255]. */
void gb_bpe_bytes(const char **toks, int32_t *types);

#endif
