// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * GGUF reader: validates the whole header against the file before anything
 * uses it. Layout (little endian):
 *
 *   "GGUF" u32 version u64 n_tensors u64 n_kv
 *   n_kv x { string key, u32 type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment (default 32), then tensor data
 *
 * string = u64 length + bytes; array = u32 element type + u64 count + elements.
 * Every allocation is bounded by the file size: a count is accepted only if
 * the smallest possible encoding of that many items fits in what is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <edgeq/gguf.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_ALIGNMENT (1u << 24)
#define GGUF_MAX_KEY 65535

struct type_desc {
	const char *name;
	uint32_t blck, size;
	bool supported;
};

/* ggml type ids; sizes are those of ggml-common.h. */
static const struct type_desc type_table[] = {
	[0] = { "F32", 1, 4, true },
	[1] = { "F16", 1, 2, true },
	[2] = { "Q4_0", 32, 18, true },
	[3] = { "Q4_1", 32, 20, true },
	[6] = { "Q5_0", 32, 22, true },
	[7] = { "Q5_1", 32, 24, true },
	[8] = { "Q8_0", 32, 34, true },
	[9] = { "Q8_1", 32, 36, false },
	[10] = { "Q2_K", 256, 84, true },
	[11] = { "Q3_K", 256, 110, true },
	[12] = { "Q4_K", 256, 144, true },
	[13] = { "Q5_K", 256, 176, true },
	[14] = { "Q6_K", 256, 210, true },
	[15] = { "Q8_K", 256, 292, false },
	[16] = { "IQ2_XXS", 256, 66, false },
	[17] = { "IQ2_XS", 256, 74, false },
	[18] = { "IQ3_XXS", 256, 98, false },
	[19] = { "IQ1_S", 256, 50, false },
	[20] = { "IQ4_NL", 32, 18, true },
	[21] = { "IQ3_S", 256, 110, false },
	[22] = { "IQ2_S", 256, 82, false },
	[23] = { "IQ4_XS", 256, 136, true },
	[24] = { "I8", 1, 1, false },
	[25] = { "I16", 1, 2, false },
	[26] = { "I32", 1, 4, false },
	[27] = { "I64", 1, 8, false },
	[28] = { "F64", 1, 8, false },
	[29] = { "IQ1_M", 256, 56, false },
	[30] = { "BF16", 1, 2, true },
	[34] = { "TQ1_0", 256, 54, false },
	[35] = { "TQ2_0", 256, 66, false },
	[39] = { "MXFP4", 32, 17, false },
};

#define N_TYPES (sizeof(type_table) / sizeof(type_table[0]))
_Static_assert(N_TYPES == EDGEQ_GGUF_NTYPES, "EDGEQ_GGUF_NTYPES");

static const char *const vtype_names[EDGEQ_GGUF_TYPE_COUNT] = {
	"uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
	"bool",	 "string", "array",  "uint64", "int64",	 "float64",
};

static const uint8_t vtype_size[EDGEQ_GGUF_TYPE_COUNT] = {
	1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8,
};

const char *edgeq_gguf_type_name(uint32_t type)
{
	return type < N_TYPES ? type_table[type].name : NULL;
}

const char *edgeq_gguf_vtype_name(uint32_t type)
{
	return type < EDGEQ_GGUF_TYPE_COUNT ? vtype_names[type] : "unknown";
}

bool edgeq_gguf_type_supported(uint32_t type)
{
	return type < N_TYPES && type_table[type].supported;
}

uint32_t edgeq_gguf_type_blck(uint32_t type)
{
	return type < N_TYPES && type_table[type].name ? type_table[type].blck :
							 0;
}

uint32_t edgeq_gguf_type_size(uint32_t type)
{
	return type < N_TYPES && type_table[type].name ? type_table[type].size :
							 0;
}

/* A bounds-checked cursor over the file. */
struct cur {
	const uint8_t *b;
	uint64_t size, pos;
	struct edgeq_error *err;
	unsigned int flags;
};

static uint64_t left(const struct cur *c)
{
	return c->size - c->pos;
}

static int need(struct cur *c, uint64_t n, const char *what)
{
	if (n > left(c))
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: %s at offset %llu: needs %llu bytes but the file ends at %llu (truncated)",
			what, (unsigned long long)c->pos, (unsigned long long)n,
			(unsigned long long)c->size);
	return 0;
}

static int rd_u32(struct cur *c, uint32_t *v, const char *what)
{
	int ret = need(c, 4, what);

	if (ret)
		return ret;
	memcpy(v, c->b + c->pos, 4);
	c->pos += 4;
	return 0;
}

static int rd_u64(struct cur *c, uint64_t *v, const char *what)
{
	int ret = need(c, 8, what);

	if (ret)
		return ret;
	memcpy(v, c->b + c->pos, 8);
	c->pos += 8;
	return 0;
}

static int rd_str(struct cur *c, struct edgeq_gguf_str *s, const char *what)
{
	uint64_t at = c->pos, len;
	int ret = rd_u64(c, &len, what);

	if (ret)
		return ret;
	if (len > left(c))
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: %s at offset %llu: string length %llu exceeds the %llu bytes left in the file",
			what, (unsigned long long)at, (unsigned long long)len,
			(unsigned long long)left(c));
	s->ptr = (const char *)c->b + c->pos;
	s->len = len;
	c->pos += len;
	return 0;
}

/* Print a key safely (it may hold anything). */
static void key_print(char *buf, size_t n, struct edgeq_gguf_str s)
{
	size_t i, o = 0;

	for (i = 0; i < s.len && o + 5 < n && i < 80; i++) {
		unsigned char ch = (unsigned char)s.ptr[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\'')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", ch);
	}
	if (i < s.len && o + 4 < n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o < n ? o : n - 1] = 0;
}

static int parse_kv(struct cur *c, uint64_t idx, struct edgeq_gguf_kv *kv)
{
	char key[400];
	uint64_t at = c->pos, voff, n, i;
	uint32_t type, at_type;
	int ret;

	kv->rec_off = at;
	ret = rd_str(c, &kv->key, "metadata key");
	if (ret)
		return ret;
	key_print(key, sizeof(key), kv->key);
	if (kv->key.len == 0 || kv->key.len > GGUF_MAX_KEY)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: metadata key #%llu at offset %llu: length %llu is out of range (1..%u)",
			(unsigned long long)idx, (unsigned long long)at,
			(unsigned long long)kv->key.len, GGUF_MAX_KEY);
	at = c->pos;
	ret = rd_u32(c, &type, "metadata value type");
	if (ret)
		return ret;
	if (type >= EDGEQ_GGUF_TYPE_COUNT)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: metadata '%s': value type %u at offset %llu is unknown",
			key, type, (unsigned long long)at);
	kv->type = type;
	kv->arr_type = 0;
	kv->arr_n = 0;
	voff = c->pos;
	if (type == EDGEQ_GGUF_STRING) {
		struct edgeq_gguf_str s;

		ret = rd_str(c, &s, "metadata string value");
		if (ret)
			return ret;
	} else if (type == EDGEQ_GGUF_ARRAY) {
		ret = rd_u32(c, &at_type, "array element type");
		if (ret)
			return ret;
		if (at_type >= EDGEQ_GGUF_TYPE_COUNT ||
		    at_type == EDGEQ_GGUF_ARRAY)
			return edgeq_error_set(
				c->err, EBADMSG,
				"gguf: metadata '%s': array element type %u at offset %llu is %s",
				key, at_type, (unsigned long long)voff,
				at_type == EDGEQ_GGUF_ARRAY ?
					"a nested array (not supported)" :
					"unknown");
		at = c->pos;
		ret = rd_u64(c, &n, "array length");
		if (ret)
			return ret;
		kv->arr_type = at_type;
		kv->arr_n = n;
		voff = c->pos;
		if (at_type == EDGEQ_GGUF_STRING) {
			/* Each string takes at least its 8-byte length. */
			if (n > left(c) / 8)
				return edgeq_error_set(
					c->err, EBADMSG,
					"gguf: metadata '%s': array length %llu at offset %llu: %llu strings cannot fit in the %llu bytes left",
					key, (unsigned long long)n,
					(unsigned long long)at,
					(unsigned long long)n,
					(unsigned long long)left(c));
			for (i = 0; i < n; i++) {
				struct edgeq_gguf_str s;

				ret = rd_str(c, &s, "array string element");
				if (ret)
					return ret;
			}
		} else {
			uint64_t es = vtype_size[at_type];

			if (n > left(c) / es)
				return edgeq_error_set(
					c->err, EBADMSG,
					"gguf: metadata '%s': array length %llu at offset %llu: %llu x %llu bytes exceeds the %llu bytes left",
					key, (unsigned long long)n,
					(unsigned long long)at,
					(unsigned long long)n,
					(unsigned long long)es,
					(unsigned long long)left(c));
			c->pos += n * es;
		}
	} else {
		ret = need(c, vtype_size[type], "metadata value");
		if (ret)
			return ret;
		if (type == EDGEQ_GGUF_BOOL && c->b[c->pos] > 1)
			return edgeq_error_set(
				c->err, EBADMSG,
				"gguf: metadata '%s': bool value %u at offset %llu is not 0 or 1",
				key, c->b[c->pos], (unsigned long long)c->pos);
		c->pos += vtype_size[type];
	}
	kv->val_off = voff;
	kv->val = c->b + voff;
	kv->rec_len = c->pos - kv->rec_off;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct edgeq_gguf_kv *const *x = a, *const *y = b;
	uint64_t n = (*x)->key.len < (*y)->key.len ? (*x)->key.len :
						     (*y)->key.len;
	int r = memcmp((*x)->key.ptr, (*y)->key.ptr, n);

	if (r)
		return r;
	return (*x)->key.len < (*y)->key.len ? -1 :
	       (*x)->key.len > (*y)->key.len ? 1 :
					       0;
}

static int cmp_tname(const void *a, const void *b)
{
	const struct edgeq_gguf_tensor *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static int check_duplicates(struct edgeq_gguf *g, struct edgeq_error *err)
{
	uint64_t i, n = g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors;
	const void **p;
	int ret = 0;

	if (n < 2)
		return 0;
	p = calloc(n, sizeof(*p));
	if (!p)
		return edgeq_error_set(err, ENOMEM, "gguf: out of memory");
	for (i = 0; i < g->n_kv; i++)
		p[i] = &g->kv[i];
	qsort(p, g->n_kv, sizeof(*p), cmp_key);
	for (i = 1; i < g->n_kv; i++) {
		const struct edgeq_gguf_kv *a = p[i - 1], *b = p[i];

		if (!cmp_key(&p[i - 1], &p[i])) {
			char key[400];

			key_print(key, sizeof(key), a->key);
			ret = edgeq_error_set(
				err, EBADMSG,
				"gguf: metadata key '%s' appears twice (values at offsets %llu and %llu)",
				key, (unsigned long long)a->val_off,
				(unsigned long long)b->val_off);
			goto out;
		}
	}
	for (i = 0; i < g->n_tensors; i++)
		p[i] = &g->tensors[i];
	qsort(p, g->n_tensors, sizeof(*p), cmp_tname);
	for (i = 1; i < g->n_tensors; i++) {
		const struct edgeq_gguf_tensor *a = p[i - 1], *b = p[i];

		if (!strcmp(a->name, b->name)) {
			ret = edgeq_error_set(
				err, EBADMSG,
				"gguf: tensor name '%s' appears twice (tensor infos at offsets %llu and %llu)",
				a->name, (unsigned long long)a->info_off,
				(unsigned long long)b->info_off);
			goto out;
		}
	}
out:
	free(p);
	return ret;
}

static int parse_tensor(struct cur *c, uint64_t idx,
			struct edgeq_gguf_tensor *t)
{
	struct edgeq_gguf_str name;
	uint64_t at = c->pos, nel = 1, rows, blocks;
	uint32_t d;
	const struct type_desc *td;
	int ret;

	t->info_off = at;
	ret = rd_str(c, &name, "tensor name");
	if (ret)
		return ret;
	if (name.len == 0 || name.len >= EDGEQ_GGUF_MAX_NAME ||
	    memchr(name.ptr, 0, name.len))
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor #%llu at offset %llu: name length %llu is out of range (1..%d, no NUL)",
			(unsigned long long)idx, (unsigned long long)at,
			(unsigned long long)name.len, EDGEQ_GGUF_MAX_NAME - 1);
	memcpy(t->name, name.ptr, name.len);
	t->name[name.len] = 0;
	at = c->pos;
	ret = rd_u32(c, &t->n_dims, "tensor n_dims");
	if (ret)
		return ret;
	if (t->n_dims < 1 || t->n_dims > EDGEQ_GGUF_MAX_DIMS)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor '%s': n_dims %u at offset %llu is out of range (1..%d)",
			t->name, t->n_dims, (unsigned long long)at,
			EDGEQ_GGUF_MAX_DIMS);
	for (d = 0; d < EDGEQ_GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	for (d = 0; d < t->n_dims; d++) {
		at = c->pos;
		ret = rd_u64(c, &t->ne[d], "tensor dimension");
		if (ret)
			return ret;
		if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX ||
		    nel > (uint64_t)INT64_MAX / t->ne[d])
			return edgeq_error_set(
				c->err, EBADMSG,
				"gguf: tensor '%s': dimension %u = %llu at offset %llu is zero or overflows the element count",
				t->name, d, (unsigned long long)t->ne[d],
				(unsigned long long)at);
		nel *= t->ne[d];
	}
	at = c->pos;
	ret = rd_u32(c, &t->type, "tensor type");
	if (ret)
		return ret;
	td = t->type < N_TYPES ? &type_table[t->type] : NULL;
	if (!td || !td->name)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor '%s': type id %u at offset %llu is unknown",
			t->name, t->type, (unsigned long long)at);
	if (!td->supported && !(c->flags & EDGEQ_GGUF_ANY_TYPE))
		return edgeq_error_set(
			c->err, EOPNOTSUPP,
			"gguf: tensor '%s': type %s (id %u, at offset %llu) is not supported by edgeq (supported: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)",
			t->name, td->name, t->type, (unsigned long long)at);
	if (t->ne[0] % td->blck)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor '%s': row length %llu is not a multiple of the %s block size %u (tensor info at offset %llu)",
			t->name, (unsigned long long)t->ne[0], td->name,
			td->blck, (unsigned long long)t->info_off);
	rows = nel / t->ne[0];
	blocks = t->ne[0] / td->blck;
	if (blocks > UINT64_MAX / td->size ||
	    rows > UINT64_MAX / (blocks * td->size))
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor '%s': byte size overflows (tensor info at offset %llu)",
			t->name, (unsigned long long)t->info_off);
	t->size = rows * blocks * td->size;
	at = c->pos;
	ret = rd_u64(c, &t->offset, "tensor data offset");
	if (ret)
		return ret;
	/* Named now: in a file cut inside the tensor table, this is the
	 * first sign of it. The exact extent is checked after the table. */
	if (t->offset > c->size)
		return edgeq_error_set(
			c->err, EBADMSG,
			"gguf: tensor '%s': data offset %llu (field at offset %llu) is beyond the file: its data extends past the end of the file at %llu",
			t->name, (unsigned long long)t->offset,
			(unsigned long long)at, (unsigned long long)c->size);
	return 0;
}

static int parse(struct edgeq_gguf *g, struct edgeq_error *err)
{
	struct cur c = { g->base, g->size, 0, err, g->flags };
	const struct edgeq_gguf_kv *akv;
	uint64_t i, at;
	int ret;

	if (g->size < 4 || memcmp(g->base, "GGUF", 4)) {
		if (g->size < 4)
			return edgeq_error_set(
				err, EBADMSG,
				"gguf: magic at offset 0: file is only %llu bytes (truncated)",
				(unsigned long long)g->size);
		return edgeq_error_set(
			err, EBADMSG,
			"gguf: magic at offset 0 is %02x %02x %02x %02x, not \"GGUF\": not a GGUF file",
			g->base[0], g->base[1], g->base[2], g->base[3]);
	}
	c.pos = 4;
	ret = rd_u32(&c, &g->version, "version");
	if (ret)
		return ret;
	if (g->version != 2 && g->version != 3)
		return edgeq_error_set(
			err, EPROTO,
			"gguf: GGUF version %u at offset 4 is not supported (2 or 3)",
			g->version);
	ret = rd_u64(&c, &g->n_tensors, "tensor count");
	if (ret)
		return ret;
	ret = rd_u64(&c, &g->n_kv, "metadata count");
	if (ret)
		return ret;
	/* Smallest kv: key len 8 + 1 byte + type 4 + 1-byte value. */
	if (g->n_kv > left(&c) / 14)
		return edgeq_error_set(
			err, EBADMSG,
			"gguf: metadata count %llu at offset 16 cannot fit in a %llu-byte file",
			(unsigned long long)g->n_kv,
			(unsigned long long)g->size);
	/* Smallest tensor info: name 8+1, n_dims 4, one dim 8, type 4, offset 8. */
	if (g->n_tensors > left(&c) / 33)
		return edgeq_error_set(
			err, EBADMSG,
			"gguf: tensor count %llu at offset 8 cannot fit in a %llu-byte file",
			(unsigned long long)g->n_tensors,
			(unsigned long long)g->size);
	g->kv = calloc(g->n_kv ? g->n_kv : 1, sizeof(*g->kv));
	g->tensors =
		calloc(g->n_tensors ? g->n_tensors : 1, sizeof(*g->tensors));
	if (!g->kv || !g->tensors)
		return edgeq_error_set(err, ENOMEM, "gguf: out of memory");
	for (i = 0; i < g->n_kv; i++) {
		ret = parse_kv(&c, i, &g->kv[i]);
		if (ret)
			return ret;
	}
	g->alignment = GGUF_DEFAULT_ALIGNMENT;
	akv = edgeq_gguf_find(g, "general.alignment");
	if (akv) {
		uint32_t a;

		if (akv->type != EDGEQ_GGUF_UINT32)
			return edgeq_error_set(
				err, EBADMSG,
				"gguf: general.alignment at offset %llu has type %s, not uint32",
				(unsigned long long)akv->val_off,
				edgeq_gguf_vtype_name(akv->type));
		memcpy(&a, akv->val, 4);
		if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGNMENT)
			return edgeq_error_set(
				err, EBADMSG,
				"gguf: general.alignment %u at offset %llu is not a power of two in 1..%u",
				a, (unsigned long long)akv->val_off,
				GGUF_MAX_ALIGNMENT);
		g->alignment = a;
	}
	for (i = 0; i < g->n_tensors; i++) {
		ret = parse_tensor(&c, i, &g->tensors[i]);
		if (ret)
			return ret;
	}
	at = c.pos;
	g->data_offset = (at + g->alignment - 1) / g->alignment * g->alignment;
	if (g->n_tensors && g->data_offset > g->size)
		return edgeq_error_set(
			err, EBADMSG,
			"gguf: tensor data section at offset %llu (after padding to %u) is past the end of the %llu-byte file",
			(unsigned long long)g->data_offset, g->alignment,
			(unsigned long long)g->size);
	for (i = 0; i < g->n_tensors; i++) {
		struct edgeq_gguf_tensor *t = &g->tensors[i];
		uint64_t room = g->size - g->data_offset;
		uint64_t off_at = t->info_off + 8 + strlen(t->name) + 4 +
				  8ull * t->n_dims + 4;

		if (t->offset % g->alignment)
			return edgeq_error_set(
				err, EBADMSG,
				"gguf: tensor '%s': data offset %llu (field at offset %llu) is not a multiple of the alignment %u",
				t->name, (unsigned long long)t->offset,
				(unsigned long long)off_at, g->alignment);
		if (t->offset > room || t->size > room - t->offset)
			return edgeq_error_set(
				err, EBADMSG,
				"gguf: tensor '%s': data [%llu, %llu) (offset field at %llu) extends past the end of the file at %llu",
				t->name,
				(unsigned long long)(g->data_offset +
						     t->offset),
				(unsigned long long)(g->data_offset +
						     t->offset +
						     (t->size < room ? t->size :
								       room)),
				(unsigned long long)off_at,
				(unsigned long long)g->size);
		t->offset += g->data_offset;
	}
	return check_duplicates(g, err);
}

static int open_common(struct edgeq_gguf *g, struct edgeq_gguf **out,
		       struct edgeq_error *err)
{
	int ret = parse(g, err);

	if (ret) {
		edgeq_gguf_close(g);
		return ret;
	}
	*out = g;
	return 0;
}

int edgeq_gguf_open_mem(const void *buf, size_t len, struct edgeq_gguf **out,
			struct edgeq_error *err)
{
	struct edgeq_gguf *g = calloc(1, sizeof(*g));

	if (!g)
		return edgeq_error_set(err, ENOMEM, "gguf: out of memory");
	g->base = buf;
	g->size = len;
	g->fd = -1;
	return open_common(g, out, err);
}

int edgeq_gguf_open(const char *path, struct edgeq_gguf **out,
		    struct edgeq_error *err)
{
	return edgeq_gguf_open_flags(path, 0, out, err);
}

int edgeq_gguf_open_flags(const char *path, unsigned int flags,
			  struct edgeq_gguf **out, struct edgeq_error *err)
{
	struct edgeq_gguf *g;
	struct stat st;
	void *p;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return edgeq_error_set(err, e, "%s: %s", path, strerror(e));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return edgeq_error_set(err, EINVAL, "%s: not a regular file",
				       path);
	}
	if (st.st_size == 0) {
		close(fd);
		return edgeq_error_set(
			err, EBADMSG,
			"gguf: magic at offset 0: the file is empty");
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		e = errno;
		close(fd);
		return edgeq_error_set(err, e, "%s: mmap: %s", path,
				       strerror(e));
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		munmap(p, (size_t)st.st_size);
		close(fd);
		return edgeq_error_set(err, ENOMEM, "gguf: out of memory");
	}
	g->base = p;
	g->size = (uint64_t)st.st_size;
	g->fd = fd;
	g->mapped = true;
	g->flags = flags;
	return open_common(g, out, err);
}

void edgeq_gguf_close(struct edgeq_gguf *g)
{
	if (!g)
		return;
	if (g->mapped)
		munmap((void *)g->base, g->size);
	if (g->fd >= 0)
		close(g->fd);
	free(g->kv);
	free(g->tensors);
	free(g);
}

bool edgeq_gguf_str_eq(struct edgeq_gguf_str s, const char *c)
{
	size_t n = strlen(c);

	return s.len == n && !memcmp(s.ptr, c, n);
}

const struct edgeq_gguf_kv *edgeq_gguf_find(const struct edgeq_gguf *g,
					    const char *key)
{
	uint64_t i;

	for (i = 0; i < g->n_kv; i++)
		if (edgeq_gguf_str_eq(g->kv[i].key, key))
			return &g->kv[i];
	return NULL;
}

const struct edgeq_gguf_tensor *edgeq_gguf_tensor(const struct edgeq_gguf *g,
						  const char *name)
{
	uint64_t i;

	for (i = 0; i < g->n_tensors; i++)
		if (!strcmp(g->tensors[i].name, name))
			return &g->tensors[i];
	return NULL;
}

static int get_int(const struct edgeq_gguf *g, const char *key, int64_t lo,
		   uint64_t hi, uint64_t *uv, int64_t *sv,
		   struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv = edgeq_gguf_find(g, key);
	uint64_t u = 0;
	int64_t s = 0;
	bool neg = false;

	if (!kv)
		return -ENOENT;
	switch (kv->type) {
	case EDGEQ_GGUF_UINT8:
		u = kv->val[0];
		break;
	case EDGEQ_GGUF_INT8:
		s = (int8_t)kv->val[0];
		neg = true;
		break;
	case EDGEQ_GGUF_UINT16: {
		uint16_t v;
		memcpy(&v, kv->val, 2);
		u = v;
		break;
	}
	case EDGEQ_GGUF_INT16: {
		int16_t v;
		memcpy(&v, kv->val, 2);
		s = v;
		neg = true;
		break;
	}
	case EDGEQ_GGUF_UINT32: {
		uint32_t v;
		memcpy(&v, kv->val, 4);
		u = v;
		break;
	}
	case EDGEQ_GGUF_INT32: {
		int32_t v;
		memcpy(&v, kv->val, 4);
		s = v;
		neg = true;
		break;
	}
	case EDGEQ_GGUF_UINT64:
		memcpy(&u, kv->val, 8);
		break;
	case EDGEQ_GGUF_INT64:
		memcpy(&s, kv->val, 8);
		neg = true;
		break;
	default:
		return edgeq_error_set(
			err, EINVAL,
			"gguf: metadata '%s' at offset %llu has type %s, not an integer",
			key, (unsigned long long)kv->val_off,
			edgeq_gguf_vtype_name(kv->type));
	}
	if (neg) {
		if (s < lo || (s > 0 && (uint64_t)s > hi))
			goto range;
		u = (uint64_t)s;
	} else {
		if (u > hi)
			goto range;
		s = (int64_t)u;
	}
	if (uv)
		*uv = u;
	if (sv)
		*sv = s;
	return 0;
range:
	return edgeq_error_set(
		err, EINVAL,
		"gguf: metadata '%s' at offset %llu: value %lld is out of range",
		key, (unsigned long long)kv->val_off,
		neg ? (long long)s : (long long)u);
}

int edgeq_gguf_get_u32(const struct edgeq_gguf *g, const char *key,
		       uint32_t *out, struct edgeq_error *err)
{
	uint64_t v;
	int ret = get_int(g, key, 0, UINT32_MAX, &v, NULL, err);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

int edgeq_gguf_get_i32(const struct edgeq_gguf *g, const char *key,
		       int32_t *out, struct edgeq_error *err)
{
	int64_t v;
	int ret = get_int(g, key, INT32_MIN, INT32_MAX, NULL, &v, err);

	if (!ret)
		*out = (int32_t)v;
	return ret;
}

int edgeq_gguf_get_u64(const struct edgeq_gguf *g, const char *key,
		       uint64_t *out, struct edgeq_error *err)
{
	return get_int(g, key, 0, UINT64_MAX, out, NULL, err);
}

int edgeq_gguf_get_arch_u32(const struct edgeq_gguf *g, const char *suffix,
			    uint32_t *out, struct edgeq_error *err)
{
	struct edgeq_gguf_str arch;
	char key[256];
	int ret;

	ret = edgeq_gguf_get_str(g, "general.architecture", &arch, err);
	if (ret)
		return ret;
	if (arch.len + strlen(suffix) + 2 > sizeof(key))
		return -ENOENT;
	snprintf(key, sizeof(key), "%.*s.%s", (int)arch.len, arch.ptr, suffix);
	return edgeq_gguf_get_u32(g, key, out, err);
}

int edgeq_gguf_get_f32(const struct edgeq_gguf *g, const char *key, float *out,
		       struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv = edgeq_gguf_find(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type == EDGEQ_GGUF_FLOAT32) {
		memcpy(out, kv->val, 4);
	} else if (kv->type == EDGEQ_GGUF_FLOAT64) {
		double d;

		memcpy(&d, kv->val, 8);
		*out = (float)d;
	} else {
		return edgeq_error_set(
			err, EINVAL,
			"gguf: metadata '%s' at offset %llu has type %s, not float32",
			key, (unsigned long long)kv->val_off,
			edgeq_gguf_vtype_name(kv->type));
	}
	return 0;
}

int edgeq_gguf_get_bool(const struct edgeq_gguf *g, const char *key, bool *out,
			struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv = edgeq_gguf_find(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != EDGEQ_GGUF_BOOL)
		return edgeq_error_set(
			err, EINVAL,
			"gguf: metadata '%s' at offset %llu has type %s, not bool",
			key, (unsigned long long)kv->val_off,
			edgeq_gguf_vtype_name(kv->type));
	*out = kv->val[0] != 0;
	return 0;
}

int edgeq_gguf_get_str(const struct edgeq_gguf *g, const char *key,
		       struct edgeq_gguf_str *out, struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv = edgeq_gguf_find(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != EDGEQ_GGUF_STRING)
		return edgeq_error_set(
			err, EINVAL,
			"gguf: metadata '%s' at offset %llu has type %s, not string",
			key, (unsigned long long)kv->val_off,
			edgeq_gguf_vtype_name(kv->type));
	memcpy(&out->len, kv->val, 8);
	out->ptr = (const char *)kv->val + 8;
	return 0;
}

int edgeq_gguf_get_arr(const struct edgeq_gguf *g, const char *key,
		       enum edgeq_gguf_type type,
		       const struct edgeq_gguf_kv **out,
		       struct edgeq_error *err)
{
	const struct edgeq_gguf_kv *kv = edgeq_gguf_find(g, key);

	if (!kv)
		return -ENOENT;
	if (kv->type != EDGEQ_GGUF_ARRAY || kv->arr_type != type)
		return edgeq_error_set(
			err, EINVAL,
			"gguf: metadata '%s' at offset %llu has type %s%s%s, not array of %s",
			key, (unsigned long long)kv->val_off,
			edgeq_gguf_vtype_name(kv->type),
			kv->type == EDGEQ_GGUF_ARRAY ? " of " : "",
			kv->type == EDGEQ_GGUF_ARRAY ?
				edgeq_gguf_vtype_name(kv->arr_type) :
				"",
			edgeq_gguf_vtype_name(type));
	*out = kv;
	return 0;
}

void edgeq_gguf_arr_strings(const struct edgeq_gguf_kv *kv,
			    struct edgeq_gguf_str *out)
{
	const uint8_t *p = kv->val;
	uint64_t i;

	for (i = 0; i < kv->arr_n; i++) {
		memcpy(&out[i].len, p, 8);
		out[i].ptr = (const char *)p + 8;
		p += 8 + out[i].len;
	}
}

double edgeq_gguf_arr_num(const struct edgeq_gguf_kv *kv, uint64_t i)
{
	const uint8_t *p = kv->val + i * vtype_size[kv->arr_type];

	switch (kv->arr_type) {
	case EDGEQ_GGUF_UINT8:
		return *p;
	case EDGEQ_GGUF_INT8:
		return (int8_t)*p;
	case EDGEQ_GGUF_BOOL:
		return *p != 0;
	case EDGEQ_GGUF_UINT16: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case EDGEQ_GGUF_INT16: {
		int16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case EDGEQ_GGUF_UINT32: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	case EDGEQ_GGUF_INT32: {
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	case EDGEQ_GGUF_FLOAT32: {
		float v;
		memcpy(&v, p, 4);
		return v;
	}
	case EDGEQ_GGUF_UINT64: {
		uint64_t v;
		memcpy(&v, p, 8);
		return (double)v;
	}
	case EDGEQ_GGUF_INT64: {
		int64_t v;
		memcpy(&v, p, 8);
		return (double)v;
	}
	case EDGEQ_GGUF_FLOAT64: {
		double v;
		memcpy(&v, p, 8);
		return v;
	}
	default:
		return 0;
	}
}
