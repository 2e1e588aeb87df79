// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Walk a GGUF header with every length and count checked against the file:
 * metadata (shape keys, tokenizer bytes for the manifest hash) and the tensor
 * table (types, element counts, quantized bytes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ledger/gguf_scan.h"

enum {
	GT_U8 = 0,
	GT_I8,
	GT_U16,
	GT_I16,
	GT_U32,
	GT_I32,
	GT_F32,
	GT_BOOL,
	GT_STRING,
	GT_ARRAY,
	GT_U64,
	GT_I64,
	GT_F64,
	GT_COUNT
};

/* Block size (elements) and bytes per block of each ggml type. */
static const struct {
	const char *name;
	uint32_t blck, size;
} ggml_types[GGUF_SCAN_NTYPES] = {
	[0] = { "F32", 1, 4 },	     [1] = { "F16", 1, 2 },
	[2] = { "Q4_0", 32, 18 },    [3] = { "Q4_1", 32, 20 },
	[6] = { "Q5_0", 32, 22 },    [7] = { "Q5_1", 32, 24 },
	[8] = { "Q8_0", 32, 34 },    [9] = { "Q8_1", 32, 36 },
	[10] = { "Q2_K", 256, 84 },  [11] = { "Q3_K", 256, 110 },
	[12] = { "Q4_K", 256, 144 }, [13] = { "Q5_K", 256, 176 },
	[14] = { "Q6_K", 256, 210 }, [15] = { "Q8_K", 256, 292 },
	[24] = { "I8", 1, 1 },	     [25] = { "I16", 1, 2 },
	[26] = { "I32", 1, 4 },	     [27] = { "I64", 1, 8 },
	[28] = { "F64", 1, 8 },	     [30] = { "BF16", 1, 2 },
};

const char *gguf_type_name(uint32_t type)
{
	return type < GGUF_SCAN_NTYPES ? ggml_types[type].name : NULL;
}

struct cur {
	const uint8_t *p;
	uint64_t off, size;
	struct edgeq_error *err;
};

static int need(struct cur *c, uint64_t n, const char *what)
{
	if (n > c->size - c->off)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF truncated: %s at offset %llu needs %llu bytes, file has %llu",
			what, (unsigned long long)c->off, (unsigned long long)n,
			(unsigned long long)(c->size - c->off));
	return 0;
}

static int rd(struct cur *c, void *dst, uint64_t n, const char *what)
{
	int ret = need(c, n, what);

	if (ret)
		return ret;
	memcpy(dst, c->p + c->off, n);
	c->off += n;
	return 0;
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what)
{
	return rd(c, v, 4, what);
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what)
{
	return rd(c, v, 8, what);
}

/* A string: u64 length + bytes; *s points into the map. */
static int rd_str(struct cur *c, const char **s, uint64_t *len,
		  const char *what)
{
	int ret = rd_u64(c, len, what);

	if (ret)
		return ret;
	if (*len > 65536)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF %s at offset %llu: string length %llu exceeds 65536",
			what, (unsigned long long)(c->off - 8),
			(unsigned long long)*len);
	ret = need(c, *len, what);
	if (ret)
		return ret;
	*s = (const char *)c->p + c->off;
	c->off += *len;
	return 0;
}

static const uint32_t scalar_size[GT_COUNT] = {
	[GT_U8] = 1,  [GT_I8] = 1,  [GT_U16] = 2, [GT_I16] = 2,
	[GT_U32] = 4, [GT_I32] = 4, [GT_F32] = 4, [GT_BOOL] = 1,
	[GT_U64] = 8, [GT_I64] = 8, [GT_F64] = 8,
};

/* Skip one value of @type; for arrays report the count. */
static int skip_value(struct cur *c, uint32_t type, uint64_t *count,
		      const char *key)
{
	uint32_t et;
	uint64_t n, i, len;
	const char *s;
	int ret;

	if (type >= GT_COUNT)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF key '%s' at offset %llu: unknown value type %u",
			key, (unsigned long long)c->off, type);
	if (type == GT_STRING)
		return rd_str(c, &s, &len, key);
	if (type != GT_ARRAY) {
		ret = need(c, scalar_size[type], key);
		if (!ret)
			c->off += scalar_size[type];
		return ret;
	}
	ret = rd_u32(c, &et, key);
	if (!ret)
		ret = rd_u64(c, &n, key);
	if (ret)
		return ret;
	if (et >= GT_COUNT || et == GT_ARRAY)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF key '%s': bad array element type %u", key, et);
	if (count)
		*count = n;
	if (et != GT_STRING) {
		if (n > (c->size - c->off) / scalar_size[et])
			return edgeq_error_set(
				c->err, EBADMSG,
				"GGUF key '%s' at offset %llu: array of %llu elements overruns the file",
				key, (unsigned long long)c->off,
				(unsigned long long)n);
		c->off += n * scalar_size[et];
		return 0;
	}
	if (n > (c->size - c->off) / 8)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF key '%s': array of %llu strings overruns the file",
			key, (unsigned long long)n);
	for (i = 0; i < n; i++) {
		ret = rd_str(c, &s, &len, key);
		if (ret)
			return ret;
	}
	return 0;
}

static bool key_is(const char *k, uint64_t klen, const char *arch,
		   const char *suffix)
{
	size_t al = strlen(arch), sl = strlen(suffix);

	return klen == al + 1 + sl && !memcmp(k, arch, al) && k[al] == '.' &&
	       !memcmp(k + al + 1, suffix, sl);
}

static uint32_t scalar_u32(const uint8_t *p, uint32_t type)
{
	uint64_t v = 0;

	switch (type) {
	case GT_U8:
	case GT_I8:
		v = p[0];
		break;
	case GT_U16:
	case GT_I16:
		memcpy(&v, p, 2);
		break;
	case GT_U32:
	case GT_I32:
		memcpy(&v, p, 4);
		break;
	case GT_U64:
	case GT_I64:
		memcpy(&v, p, 8);
		break;
	default:
		return 0;
	}
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void copy_str(char *dst, size_t dlen, const uint8_t *val, uint32_t type)
{
	uint64_t len;

	if (type != GT_STRING)
		return;
	memcpy(&len, val, 8);
	if (len >= dlen)
		len = dlen - 1;
	memcpy(dst, val + 8, len);
	dst[len] = '\0';
}

static int walk_kv(struct cur *c, struct gguf_scan *g)
{
	crypto_hash_sha256_state st;
	uint32_t align = 32;
	uint64_t i;
	int ret;

	crypto_hash_sha256_init(&st);
	/* First pass: architecture (keys may come in any order). */
	for (int pass = 0; pass < 2; pass++) {
		c->off = 24;
		for (i = 0; i < g->n_kv; i++) {
			uint64_t start = c->off, klen, vstart, count = 0;
			const char *k;
			uint32_t type;
			char key[96];

			ret = rd_str(c, &k, &klen, "metadata key");
			if (ret)
				return ret;
			snprintf(key, sizeof(key), "%.*s", (int)klen, k);
			ret = rd_u32(c, &type, key);
			if (ret)
				return ret;
			vstart = c->off;
			ret = skip_value(c, type, &count, key);
			if (ret)
				return ret;
			if (pass == 0) {
				if (!strcmp(key, "general.architecture"))
					copy_str(g->arch, sizeof(g->arch),
						 c->p + vstart, type);
				continue;
			}
			if (!strncmp(key, "tokenizer.", 10)) {
				crypto_hash_sha256_update(&st, c->p + start,
							  c->off - start);
				g->tokenizer_keys++;
				if (!strcmp(key, "tokenizer.ggml.tokens"))
					g->n_vocab = (uint32_t)count;
				continue;
			}
			if (!strcmp(key, "general.name"))
				copy_str(g->name, sizeof(g->name),
					 c->p + vstart, type);
			else if (!strcmp(key, "general.alignment"))
				align = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch, "block_count"))
				g->n_layer = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch, "embedding_length"))
				g->n_embd = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch,
					"feed_forward_length"))
				g->n_ff = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch, "context_length"))
				g->n_ctx = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch,
					"attention.head_count"))
				g->n_head = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch,
					"attention.head_count_kv"))
				g->n_head_kv = scalar_u32(c->p + vstart, type);
			else if (key_is(k, klen, g->arch,
					"attention.key_length"))
				g->head_dim = scalar_u32(c->p + vstart, type);
		}
	}
	crypto_hash_sha256_final(&st, g->tokenizer_sha256);
	if (!align || (align & (align - 1)))
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF general.alignment %u is not a power of two",
			align);
	return (int)align;
}

static int walk_tensors(struct cur *c, struct gguf_scan *g, uint32_t align)
{
	uint64_t i, data_start;
	int ret;

	for (i = 0; i < g->n_tensors; i++) {
		const char *name;
		uint64_t nlen, dims[4] = { 1, 1, 1, 1 }, nel = 1, off, bytes;
		uint32_t nd, type, d;
		char tname[96];

		ret = rd_str(c, &name, &nlen, "tensor name");
		if (ret)
			return ret;
		snprintf(tname, sizeof(tname), "%.*s", (int)nlen, name);
		ret = rd_u32(c, &nd, tname);
		if (ret)
			return ret;
		if (nd == 0 || nd > 4)
			return edgeq_error_set(
				c->err, EBADMSG,
				"GGUF tensor '%s' at offset %llu: %u dimensions (1 to 4 allowed)",
				tname, (unsigned long long)c->off - 4, nd);
		for (d = 0; d < nd; d++) {
			ret = rd_u64(c, &dims[d], tname);
			if (ret)
				return ret;
			if (!dims[d] || dims[d] > (1ull << 40) ||
			    nel > (1ull << 50) / dims[d])
				return edgeq_error_set(
					c->err, EBADMSG,
					"GGUF tensor '%s': dimension %u = %llu out of range",
					tname, d, (unsigned long long)dims[d]);
			nel *= dims[d];
		}
		ret = rd_u32(c, &type, tname);
		if (!ret)
			ret = rd_u64(c, &off, tname);
		if (ret)
			return ret;
		if (type >= GGUF_SCAN_NTYPES || !ggml_types[type].name)
			return edgeq_error_set(
				c->err, EBADMSG,
				"GGUF tensor '%s': unknown type id %u", tname,
				type);
		if (nel % ggml_types[type].blck)
			return edgeq_error_set(
				c->err, EBADMSG,
				"GGUF tensor '%s': %llu elements not a multiple of the %s block (%u)",
				tname, (unsigned long long)nel,
				ggml_types[type].name, ggml_types[type].blck);
		bytes = nel / ggml_types[type].blck * ggml_types[type].size;
		g->type_counts[type]++;
		g->weight_bytes += bytes;
		g->n_params += nel;
		if (!strcmp(tname, "token_embd.weight")) {
			g->embd_bytes = bytes;
			g->embd_rows = dims[1];
		} else if (!strcmp(tname, "output.weight")) {
			g->has_output = 1;
		}
		if (off > g->size)
			return edgeq_error_set(
				c->err, EBADMSG,
				"GGUF tensor '%s': data offset %llu beyond the file",
				tname, (unsigned long long)off);
	}
	data_start = (c->off + align - 1) / align * align;
	if (data_start + g->weight_bytes > g->size)
		return edgeq_error_set(
			c->err, EBADMSG,
			"GGUF tensor data (%llu bytes from offset %llu) extends past the end of the file (%llu)",
			(unsigned long long)g->weight_bytes,
			(unsigned long long)data_start,
			(unsigned long long)g->size);
	return 0;
}

int gguf_scan_open(const char *path, struct gguf_scan *g,
		   struct edgeq_error *err)
{
	struct cur c = { .err = err };
	struct stat sb;
	char magic[4];
	void *map;
	int fd, ret;

	memset(g, 0, sizeof(*g));
	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size < 24) {
		close(fd);
		return edgeq_error_set(
			err, EBADMSG,
			"%s: not a GGUF file (shorter than its 24-byte header)",
			path);
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return edgeq_error_set(err, errno, "%s: mmap: %s", path,
				       strerror(errno));
	g->map = map;
	g->size = (uint64_t)sb.st_size;
	c.p = map;
	c.size = g->size;
	memcpy(magic, map, 4);
	if (memcmp(magic, "GGUF", 4)) {
		ret = edgeq_error_set(
			err, EBADMSG,
			"%s: bad magic at offset 0 (not a GGUF file)", path);
		goto fail;
	}
	c.off = 4;
	rd_u32(&c, &g->version, "version");
	rd_u64(&c, &g->n_tensors, "tensor count");
	rd_u64(&c, &g->n_kv, "metadata count");
	if (g->version < 2 || g->version > 3) {
		ret = edgeq_error_set(
			err, EBADMSG,
			"%s: GGUF version %u at offset 4 (2 and 3 supported)",
			path, g->version);
		goto fail;
	}
	if (g->n_tensors > g->size / 24 || g->n_kv > g->size / 12) {
		ret = edgeq_error_set(
			err, EBADMSG,
			"%s: tensor count %llu / metadata count %llu too large for a file of %llu bytes",
			path, (unsigned long long)g->n_tensors,
			(unsigned long long)g->n_kv,
			(unsigned long long)g->size);
		goto fail;
	}
	ret = walk_kv(&c, g);
	if (ret < 0)
		goto fail;
	ret = walk_tensors(&c, g, (uint32_t)ret);
	if (ret)
		goto fail;
	if (!g->head_dim && g->n_head)
		g->head_dim = g->n_embd / g->n_head;
	if (!g->n_head_kv)
		g->n_head_kv = g->n_head;
	if (!g->n_vocab)
		g->n_vocab = (uint32_t)g->embd_rows;
	return 0;
fail:
	gguf_scan_close(g);
	return ret;
}

void gguf_scan_close(struct gguf_scan *g)
{
	if (g->map)
		munmap((void *)g->map, g->size);
	g->map = NULL;
}
