/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GGUF (v2, v3) reader. The whole file is validated when it is opened:
 * magic, version, counts against the file size, every string and array
 * length (with overflow checks), the alignment key, each tensor's name,
 * dimensions and type, and each tensor's extent within the file. A refused
 * file gets a message that names the field and its byte offset.
 *
 * Strings returned point into the mapped file and are NOT NUL-terminated:
 * use the length. Everything stays valid until edgeq_gguf_close().
 */
#ifndef EDGEQ_GGUF_H
#define EDGEQ_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, as stored in the file. */
enum edgeq_gguf_type {
	EDGEQ_GGUF_UINT8 = 0,
	EDGEQ_GGUF_INT8 = 1,
	EDGEQ_GGUF_UINT16 = 2,
	EDGEQ_GGUF_INT16 = 3,
	EDGEQ_GGUF_UINT32 = 4,
	EDGEQ_GGUF_INT32 = 5,
	EDGEQ_GGUF_FLOAT32 = 6,
	EDGEQ_GGUF_BOOL = 7,
	EDGEQ_GGUF_STRING = 8,
	EDGEQ_GGUF_ARRAY = 9,
	EDGEQ_GGUF_UINT64 = 10,
	EDGEQ_GGUF_INT64 = 11,
	EDGEQ_GGUF_FLOAT64 = 12,
	EDGEQ_GGUF_TYPE_COUNT,
};

#define EDGEQ_GGUF_MAX_DIMS 4
#define EDGEQ_GGUF_NTYPES 40   /* ggml type ids edgeq knows are below this */
#define EDGEQ_GGUF_MAX_NAME 64 /* tensor names, NUL included (as ggml) */

struct edgeq_gguf_str {
	const char *ptr; /* into the mapping; not NUL-terminated */
	uint64_t len;
};

/* One metadata key/value pair. */
struct edgeq_gguf_kv {
	struct edgeq_gguf_str key;
	enum edgeq_gguf_type type;
	enum edgeq_gguf_type arr_type; /* element type when type == ARRAY */
	uint64_t arr_n;		       /* element count when type == ARRAY */
	uint64_t val_off;   /* file offset of the value (array: of its data) */
	const uint8_t *val; /* the value's bytes in the mapping */
	uint64_t rec_off;   /* file offset of the whole pair (its key length) */
	uint64_t rec_len;   /* bytes of the pair: key, value type and value */
};

/* One tensor as the file describes it. */
struct edgeq_gguf_tensor {
	char name[EDGEQ_GGUF_MAX_NAME];
	uint32_t n_dims;
	uint64_t ne[EDGEQ_GGUF_MAX_DIMS]; /* ne[0] is the row length; unused = 1 */
	uint32_t type;			  /* ggml type id (enum edgeq_type) */
	uint64_t offset;		  /* absolute file offset of the data */
	uint64_t size;			  /* bytes of data */
	uint64_t info_off; /* file offset of its tensor-info record */
};

struct edgeq_gguf {
	const uint8_t *base; /* the mapped file (or caller's buffer) */
	uint64_t size;	     /* bytes of the file */
	uint32_t version;
	uint64_t n_kv, n_tensors;
	struct edgeq_gguf_kv *kv;
	struct edgeq_gguf_tensor *tensors;
	uint32_t alignment;
	uint64_t data_offset; /* absolute file offset of the tensor data section */
	int fd;		      /* -1 for a memory buffer */
	bool mapped;
	unsigned int flags; /* EDGEQ_GGUF_* open flags */
};

/*
 * Open flag: accept tensors of known ggml types edgeq cannot compute with
 * (Q5_K ...), for readers that only describe a model (planner, manifest).
 * Every other check stays.
 */
#define EDGEQ_GGUF_ANY_TYPE 0x1u

/* Open and validate a file (mmapped read-only). */
int edgeq_gguf_open(const char *path, struct edgeq_gguf **out,
		    struct edgeq_error *err);
/* The same, with EDGEQ_GGUF_* @flags. */
int edgeq_gguf_open_flags(const char *path, unsigned int flags,
			  struct edgeq_gguf **out, struct edgeq_error *err);
/* Validate a file held in memory (the buffer must outlive the handle). */
int edgeq_gguf_open_mem(const void *buf, size_t len, struct edgeq_gguf **out,
			struct edgeq_error *err);
void edgeq_gguf_close(struct edgeq_gguf *g);

/* Name of a ggml type id ("Q4_K"), or NULL when unknown. */
const char *edgeq_gguf_type_name(uint32_t type);
/* Name of a metadata value type ("uint32"). */
const char *edgeq_gguf_vtype_name(uint32_t type);
/* Whether edgeq can compute with tensors of this type. */
bool edgeq_gguf_type_supported(uint32_t type);
/* Block size (elements) and block bytes of a known type; 0 if unknown. */
uint32_t edgeq_gguf_type_blck(uint32_t type);
uint32_t edgeq_gguf_type_size(uint32_t type);

/* The key/value pair called @key, or NULL. */
const struct edgeq_gguf_kv *edgeq_gguf_find(const struct edgeq_gguf *g,
					    const char *key);
/* The tensor called @name, or NULL. */
const struct edgeq_gguf_tensor *edgeq_gguf_tensor(const struct edgeq_gguf *g,
						  const char *name);

/*
 * Typed lookups: -ENOENT when the key is absent, -EINVAL (with a message
 * naming the key and its offset) when its type does not fit or the value is
 * out of range. Integer getters accept any integer type whose value fits.
 */
int edgeq_gguf_get_u32(const struct edgeq_gguf *g, const char *key,
		       uint32_t *out, struct edgeq_error *err);
int edgeq_gguf_get_i32(const struct edgeq_gguf *g, const char *key,
		       int32_t *out, struct edgeq_error *err);
int edgeq_gguf_get_u64(const struct edgeq_gguf *g, const char *key,
		       uint64_t *out, struct edgeq_error *err);
int edgeq_gguf_get_f32(const struct edgeq_gguf *g, const char *key, float *out,
		       struct edgeq_error *err);
int edgeq_gguf_get_bool(const struct edgeq_gguf *g, const char *key, bool *out,
			struct edgeq_error *err);
/*
 * The integer "<general.architecture>.@suffix" ("llama.block_count" for
 * "block_count"), as edgeq_gguf_get_u32(); -ENOENT when either key is absent.
 */
int edgeq_gguf_get_arch_u32(const struct edgeq_gguf *g, const char *suffix,
			    uint32_t *out, struct edgeq_error *err);
int edgeq_gguf_get_str(const struct edgeq_gguf *g, const char *key,
		       struct edgeq_gguf_str *out, struct edgeq_error *err);
/* An array of @type elements (any count); @kv receives the pair. */
int edgeq_gguf_get_arr(const struct edgeq_gguf *g, const char *key,
		       enum edgeq_gguf_type type,
		       const struct edgeq_gguf_kv **kv,
		       struct edgeq_error *err);
/*
 * Fill @out (kv->arr_n entries, caller-allocated) with the strings of a
 * string array. The lengths were validated at open.
 */
void edgeq_gguf_arr_strings(const struct edgeq_gguf_kv *kv,
			    struct edgeq_gguf_str *out);
/* Element @i of a numeric array, converted. */
double edgeq_gguf_arr_num(const struct edgeq_gguf_kv *kv, uint64_t i);

/* Compare a GGUF string with a C string. */
bool edgeq_gguf_str_eq(struct edgeq_gguf_str s, const char *c);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_GGUF_H */
