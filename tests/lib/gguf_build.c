// SPDX-License-Identifier: GPL-2.0-or-later
/* In-memory GGUF builder for tests (see gguf_build.h). */
#include <stdlib.h>
#include <string.h>

#include "gguf_build.h"
#include "model/tokenize.h"

size_t gb_raw(struct gb *g, const void *p, size_t n)
{
	size_t at = g->n;

	if (g->n + n > g->cap) {
		size_t nc = (g->n + n) * 2 + 64;

		g->b = realloc(g->b, nc);
		if (!g->b)
			abort();
		g->cap = nc;
	}
	memcpy(g->b + g->n, p, n);
	g->n += n;
	return at;
}

size_t gb_u32(struct gb *g, uint32_t v)
{
	return gb_raw(g, &v, 4);
}

size_t gb_u64(struct gb *g, uint64_t v)
{
	return gb_raw(g, &v, 8);
}

size_t gb_str(struct gb *g, const char *s)
{
	size_t at = gb_u64(g, strlen(s));

	gb_raw(g, s, strlen(s));
	return at;
}

size_t gb_header(struct gb *g, uint32_t version, uint64_t n_tensors,
		 uint64_t n_kv)
{
	size_t at = gb_raw(g, "GGUF", 4);

	gb_u32(g, version);
	gb_u64(g, n_tensors);
	gb_u64(g, n_kv);
	return at;
}

size_t gb_kv_str(struct gb *g, const char *k, const char *v)
{
	size_t at = gb_str(g, k);

	gb_u32(g, 8);
	gb_str(g, v);
	return at;
}

size_t gb_kv_u32(struct gb *g, const char *k, uint32_t v)
{
	size_t at = gb_str(g, k);

	gb_u32(g, 4);
	gb_u32(g, v);
	return at;
}

size_t gb_kv_f32(struct gb *g, const char *k, float v)
{
	size_t at = gb_str(g, k);

	gb_u32(g, 6);
	gb_raw(g, &v, 4);
	return at;
}

size_t gb_kv_bool(struct gb *g, const char *k, int v)
{
	size_t at = gb_str(g, k);
	uint8_t b = (uint8_t)v;

	gb_u32(g, 7);
	gb_raw(g, &b, 1);
	return at;
}

size_t gb_kv_arr_str(struct gb *g, const char *k, const char *const *v,
		     size_t n)
{
	size_t at = gb_str(g, k), i;

	gb_u32(g, 9);
	gb_u32(g, 8);
	gb_u64(g, n);
	for (i = 0; i < n; i++)
		gb_str(g, v[i]);
	return at;
}

size_t gb_kv_arr_f32(struct gb *g, const char *k, const float *v, size_t n)
{
	size_t at = gb_str(g, k);

	gb_u32(g, 9);
	gb_u32(g, 6);
	gb_u64(g, n);
	gb_raw(g, v, 4 * n);
	return at;
}

size_t gb_kv_arr_i32(struct gb *g, const char *k, const int32_t *v, size_t n)
{
	size_t at = gb_str(g, k);

	gb_u32(g, 9);
	gb_u32(g, 5);
	gb_u64(g, n);
	gb_raw(g, v, 4 * n);
	return at;
}

size_t gb_tensor(struct gb *g, const char *name, uint32_t n_dims,
		 const uint64_t *ne, uint32_t type, uint64_t offset)
{
	size_t at = gb_str(g, name);
	uint32_t i;

	gb_u32(g, n_dims);
	for (i = 0; i < n_dims; i++)
		gb_u64(g, ne[i]);
	gb_u32(g, type);
	gb_u64(g, offset);
	return at;
}

void gb_align(struct gb *g, size_t a)
{
	gb_zero(g, (a - g->n % a) % a);
}

void gb_zero(struct gb *g, size_t n)
{
	static const uint8_t z[256];

	while (n) {
		size_t k = n > sizeof(z) ? sizeof(z) : n;

		gb_raw(g, z, k);
		n -= k;
	}
}

void gb_put_u32(struct gb *g, size_t off, uint32_t v)
{
	memcpy(g->b + off, &v, 4);
}

void gb_put_u64(struct gb *g, size_t off, uint64_t v)
{
	memcpy(g->b + off, &v, 8);
}

void gb_free(struct gb *g)
{
	free(g->b);
	memset(g, 0, sizeof(*g));
}

void gb_bpe_bytes(const char **toks, int32_t *types)
{
	static char store[256][4];
	int i;

	for (i = 0; i < 256; i++) {
		size_t l = utf8_put(bpe_byte_to_cp((uint8_t)i), store[i]);

		store[i][l] = 0;
		toks[i] = store[i];
		types[i] = 1;
	}
}
