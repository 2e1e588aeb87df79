// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * GGUF reader: a valid file parses with the right values; each of the
 * malformed variants below is refused with its own message naming the
 * field (and where it applies, its offset). The files are built in memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/gguf.h>

#include "gguf_build.h"

/* Offsets of the fields the malformed cases patch. */
struct offs {
	size_t n_tensors, n_kv, key0, type0, arch_val, align_val, kv2, kv2_type;
	size_t t_name, t_ndims, t_ne0, t_ne1, t_type, t_off;
};

/* A valid file: 3 kv (arch, alignment, a float array), one F32 [32, 2] tensor. */
static void build(struct gb *g, struct offs *o)
{
	static const float arr[3] = { 1, 2, 3 };

	memset(g, 0, sizeof(*g));
	gb_header(g, 3, 1, 3);
	o->n_tensors = 8;
	o->n_kv = 16;
	o->key0 = gb_kv_str(g, "general.architecture", "llama");
	o->type0 = o->key0 + 8 + strlen("general.architecture");
	o->arch_val = o->type0 + 4;
	o->align_val = gb_kv_u32(g, "general.alignment", 32) + 8 +
		       strlen("general.alignment");
	o->kv2 = gb_kv_arr_f32(g, "test.floats", arr, 3);
	o->kv2_type = o->kv2 + 8 + strlen("test.floats");
	{
		uint64_t ne[2] = { 32, 2 };

		o->t_name = gb_tensor(g, "w", 2, ne, 0, 0);
	}
	o->t_ndims = o->t_name + 8 + 1;
	o->t_ne0 = o->t_ndims + 4;
	o->t_ne1 = o->t_ne0 + 8;
	o->t_type = o->t_ne1 + 8;
	o->t_off = o->t_type + 4;
	gb_align(g, 32);
	gb_zero(g, 32 * 2 * 4);
}

static int open_buf(struct gb *g, struct edgeq_error *err,
		    struct edgeq_gguf **out)
{
	return edgeq_gguf_open_mem(g->b, g->n, out, err);
}

static void expect_refused(struct gb *g, const char *what)
{
	struct edgeq_error err = { 0 };
	struct edgeq_gguf *f = NULL;
	int ret = open_buf(g, &err, &f);

	if (ret == 0 || !strstr(err.msg, what))
		print_error("expected refusal with '%s', got %d '%s'\n", what,
			    ret, err.msg);
	assert_true(ret < 0);
	assert_null(f);
	assert_non_null(strstr(err.msg, what));
	gb_free(g);
}

static void test_valid(void **state)
{
	struct edgeq_error err = { 0 };
	struct edgeq_gguf *f;
	struct gb g;
	struct offs o;
	struct edgeq_gguf_str s;
	const struct edgeq_gguf_kv *kv;
	const struct edgeq_gguf_tensor *t;
	uint32_t a;
	float fl;

	build(&g, &o);
	assert_int_equal(open_buf(&g, &err, &f), 0);
	assert_int_equal(f->version, 3);
	assert_int_equal(f->n_kv, 3);
	assert_int_equal(
		edgeq_gguf_get_str(f, "general.architecture", &s, &err), 0);
	assert_true(edgeq_gguf_str_eq(s, "llama"));
	assert_int_equal(edgeq_gguf_get_u32(f, "general.alignment", &a, &err),
			 0);
	assert_int_equal(a, 32);
	assert_int_equal(edgeq_gguf_get_u32(f, "missing", &a, &err), -ENOENT);
	assert_int_equal(edgeq_gguf_get_f32(f, "general.architecture", &fl,
					    &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "has type string"));
	assert_int_equal(edgeq_gguf_get_arr(f, "test.floats",
					    EDGEQ_GGUF_FLOAT32, &kv, &err),
			 0);
	assert_int_equal(kv->arr_n, 3);
	assert_true(edgeq_gguf_arr_num(kv, 2) == 3.0);
	assert_int_equal(edgeq_gguf_get_arr(f, "test.floats", EDGEQ_GGUF_INT32,
					    &kv, &err),
			 -EINVAL);
	t = edgeq_gguf_tensor(f, "w");
	assert_non_null(t);
	assert_int_equal(t->size, 256);
	assert_int_equal(t->offset, f->data_offset);
	assert_int_equal(t->offset % 32, 0);
	edgeq_gguf_close(f);
	gb_free(&g);
}

static void test_v2_accepted(void **state)
{
	struct edgeq_error err = { 0 };
	struct edgeq_gguf *f;
	struct gb g;
	struct offs o;

	build(&g, &o);
	gb_put_u32(&g, 4, 2);
	assert_int_equal(open_buf(&g, &err, &f), 0);
	edgeq_gguf_close(f);
	gb_free(&g);
}

#define CASE(name, patch, what)           \
	static void name(void **state)    \
	{                                 \
		struct gb g;              \
		struct offs o;            \
		build(&g, &o);            \
		patch;                    \
		(void)o;                  \
		expect_refused(&g, what); \
	}

CASE(test_empty, g.n = 0, "file is only 0 bytes")
CASE(test_bad_magic, g.b[0] = 'X', "not a GGUF file")
CASE(test_version_1, gb_put_u32(&g, 4, 1), "version 1 at offset 4")
CASE(test_version_4, gb_put_u32(&g, 4, 4), "version 4 at offset 4")
CASE(test_truncated_header, g.n = 12, "tensor count at offset 8")
CASE(test_kv_count_huge, gb_put_u64(&g, o.n_kv, 1ull << 60),
     "metadata count 1152921504606846976 at offset 16")
CASE(test_tensor_count_huge, gb_put_u64(&g, o.n_tensors, 1ull << 40),
     "tensor count 1099511627776 at offset 8")
CASE(test_key_len_huge, gb_put_u64(&g, o.key0, 1ull << 62),
     "metadata key at offset 24: string length")
CASE(test_key_len_zero, gb_put_u64(&g, o.key0, 0), "length 0 is out of range")
CASE(test_value_type_unknown, gb_put_u32(&g, o.type0, 99),
     "value type 99 at offset 52")
CASE(test_nested_array, gb_put_u32(&g, o.kv2_type + 4, 9), "nested array")
CASE(test_array_len_huge, gb_put_u64(&g, o.kv2_type + 8, 1ull << 61),
     "'test.floats': array length 2305843009213693952")
CASE(test_string_len_past_end, gb_put_u64(&g, o.arch_val, 5000),
     "metadata string value at offset 56: string length 5000")
CASE(test_alignment_zero, gb_put_u32(&g, o.align_val + 4, 0),
     "general.alignment 0")
CASE(test_alignment_not_pow2, gb_put_u32(&g, o.align_val + 4, 48),
     "general.alignment 48")
CASE(test_alignment_type, gb_put_u32(&g, o.align_val, 5),
     "general.alignment at offset")
CASE(test_ndims_5, gb_put_u32(&g, o.t_ndims, 5), "n_dims 5 at offset")
CASE(test_dim_zero, gb_put_u64(&g, o.t_ne1, 0), "dimension 1 = 0")
CASE(test_dims_overflow, gb_put_u64(&g, o.t_ne1, 1ull << 62),
     "overflows the element count")
CASE(test_type_unknown, gb_put_u32(&g, o.t_type, 99), "type id 99 at offset")
CASE(test_type_unsupported, gb_put_u32(&g, o.t_type, 16), "type IQ2_XXS (id 16")
CASE(test_row_not_block_multiple, gb_put_u32(&g, o.t_type, 2);
     gb_put_u64(&g, o.t_ne0, 33),
     "row length 33 is not a multiple of the Q4_0 block size 32")
CASE(test_offset_unaligned, gb_put_u64(&g, o.t_off, 4),
     "data offset 4 (field at offset")
CASE(test_data_past_end, gb_put_u64(&g, o.t_ne1, 3),
     "extends past the end of the file")
CASE(test_truncated_tensor_info, g.n = o.t_type + 2, "tensor type at offset")
CASE(test_tensor_name_too_long, gb_put_u64(&g, o.t_name, 70),
     "name length 70 is out of range")
CASE(test_bool_value, gb_put_u32(&g, o.type0, 7);
     g.b[o.arch_val] = 2, "bool value 2")

CASE(test_data_offset_beyond_file, gb_put_u64(&g, o.t_off, 1ull << 40),
     "data offset 1099511627776 (field at offset")

/* Each pair's record spans key, type and value, back to back. */
static void test_record_span(void **state)
{
	struct edgeq_error err = { 0 };
	struct edgeq_gguf *f;
	struct gb g;
	struct offs o;
	uint32_t v;

	build(&g, &o);
	assert_int_equal(open_buf(&g, &err, &f), 0);
	assert_int_equal(f->kv[0].rec_off, o.key0);
	assert_int_equal(f->kv[0].rec_off + f->kv[0].rec_len, f->kv[1].rec_off);
	assert_int_equal(f->kv[1].rec_off + f->kv[1].rec_len, f->kv[2].rec_off);
	assert_int_equal(f->kv[2].rec_off, o.kv2);
	assert_int_equal(f->kv[2].rec_off + f->kv[2].rec_len, o.t_name);
	assert_int_equal(edgeq_gguf_get_arch_u32(f, "block_count", &v, &err),
			 -ENOENT);
	edgeq_gguf_close(f);
	gb_free(&g);
}

/* EDGEQ_GGUF_ANY_TYPE lets an MXFP4 tensor (unsupported) through, sized by its
 * blocks. */
static void test_any_type_flag(void **state)
{
	char path[] = "/tmp/test_gguf_XXXXXX";
	struct edgeq_error err = { 0 };
	struct edgeq_gguf *f = NULL;
	struct gb g;
	struct offs o;
	int fd;

	build(&g, &o);
	gb_put_u32(&g, o.t_type, 39);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, g.b, g.n), (ssize_t)g.n);
	close(fd);
	assert_int_equal(edgeq_gguf_open(path, &f, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "type MXFP4 (id 39"));
	assert_int_equal(
		edgeq_gguf_open_flags(path, EDGEQ_GGUF_ANY_TYPE, &f, &err), 0);
	assert_int_equal(f->tensors[0].size, 2 * 17);
	edgeq_gguf_close(f);
	unlink(path);
	gb_free(&g);
}

static void test_duplicate_tensor(void **state)
{
	struct gb g = { 0 };
	uint64_t ne[1] = { 8 };

	gb_header(&g, 3, 2, 0);
	gb_tensor(&g, "a", 1, ne, 0, 0);
	gb_tensor(&g, "a", 1, ne, 0, 32);
	gb_align(&g, 32);
	gb_zero(&g, 64);
	expect_refused(&g, "tensor name 'a' appears twice");
}

static void test_duplicate_key(void **state)
{
	struct gb g = { 0 };

	gb_header(&g, 3, 0, 2);
	gb_kv_u32(&g, "a.key", 1);
	gb_kv_u32(&g, "a.key", 2);
	expect_refused(&g, "metadata key 'a.key' appears twice");
}

static void test_type_names(void **state)
{
	assert_string_equal(edgeq_gguf_type_name(12), "Q4_K");
	assert_null(edgeq_gguf_type_name(99));
	assert_true(edgeq_gguf_type_supported(14));
	assert_true(edgeq_gguf_type_supported(13));
	assert_true(edgeq_gguf_type_supported(23));
	assert_false(edgeq_gguf_type_supported(16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_v2_accepted),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_version_1),
		cmocka_unit_test(test_version_4),
		cmocka_unit_test(test_truncated_header),
		cmocka_unit_test(test_kv_count_huge),
		cmocka_unit_test(test_tensor_count_huge),
		cmocka_unit_test(test_key_len_huge),
		cmocka_unit_test(test_key_len_zero),
		cmocka_unit_test(test_value_type_unknown),
		cmocka_unit_test(test_nested_array),
		cmocka_unit_test(test_array_len_huge),
		cmocka_unit_test(test_string_len_past_end),
		cmocka_unit_test(test_alignment_zero),
		cmocka_unit_test(test_alignment_not_pow2),
		cmocka_unit_test(test_alignment_type),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_ndims_5),
		cmocka_unit_test(test_dim_zero),
		cmocka_unit_test(test_dims_overflow),
		cmocka_unit_test(test_type_unknown),
		cmocka_unit_test(test_type_unsupported),
		cmocka_unit_test(test_row_not_block_multiple),
		cmocka_unit_test(test_offset_unaligned),
		cmocka_unit_test(test_data_past_end),
		cmocka_unit_test(test_truncated_tensor_info),
		cmocka_unit_test(test_tensor_name_too_long),
		cmocka_unit_test(test_bool_value),
		cmocka_unit_test(test_duplicate_tensor),
		cmocka_unit_test(test_data_offset_beyond_file),
		cmocka_unit_test(test_record_span),
		cmocka_unit_test(test_any_type_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
