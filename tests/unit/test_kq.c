// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the kq library: descriptors, memfds, the CPU executor.
 * (The kernel side is tested in the VM: tests/kmod.) */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/edgeq.h>
#include <edgeq/kq.h>
#include "kernels/kernels.h"

static void fill(float *x, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 9) % 2001) / 500.0f - 2.0f;
	}
}

static void test_desc_init(void **state)
{
	struct edgeq_op_desc op;
	unsigned int nt, nd;
	int code;

	for (code = 0; code < EDGEQ_OP_COUNT; code++) {
		edgeq_op_desc_init(&op, (uint16_t)code, 77);
		assert_int_equal(op.size, sizeof(op));
		assert_int_equal(op.cookie, 77);
		assert_int_equal(op.priority, EDGEQ_PRIO_NORMAL);
		assert_int_equal(edgeq_op_arity((uint16_t)code, &nt, &nd), 0);
		assert_int_equal(op.ntensors, nt);
		assert_int_equal(op.ndims, nd);
	}
	assert_int_equal(edgeq_op_arity(EDGEQ_OP_COUNT, &nt, &nd), -EINVAL);
	edgeq_op_desc_tensor(&op, 9, 1, 2, 3); /* ignored */
	edgeq_op_desc_tensor(&op, 1, 5, 64, 128);
	assert_int_equal(op.tensors[1].handle, 5);
	assert_int_equal(op.tensors[1].offset, 64);
	assert_int_equal(op.tensors[1].length, 128);
}

static void test_open_errors(void **state)
{
	struct edgeq_kq *kq = NULL;

	assert_int_equal(edgeq_kq_open("", 0, &kq), -EINVAL);
	assert_int_equal(edgeq_kq_open("a/b", 0, &kq), -EINVAL);
	assert_int_equal(edgeq_kq_open("npu0", O_APPEND, &kq), -EINVAL);
	assert_int_equal(edgeq_kq_open("/nonexistent/edgeq", 0, &kq), -ENOENT);
	if (access("/dev/edgeq/zz-none", F_OK))
		assert_int_equal(edgeq_kq_open("zz-none", 0, &kq), -ENOENT);
	edgeq_kq_close(NULL);
}

static void test_memfd_sealed(void **state)
{
	void *map;
	int fd, seals;

	assert_int_equal(edgeq_kq_memfd("t", 0, &fd, &map), -EINVAL);
	assert_int_equal(edgeq_kq_memfd("t", 8192, &fd, &map), 0);
	seals = fcntl(fd, F_GET_SEALS);
	assert_true(seals & F_SEAL_SHRINK);
	assert_true(seals & F_SEAL_GROW);
	assert_true(ftruncate(fd, 4096) < 0);
	memset(map, 1, 8192);
	munmap(map, 8192);
	close(fd);
}

static void test_exec_elementwise(void **state)
{
	enum { N = 100 };
	float a[N], b[N], y[N], z[N];
	struct edgeq_op_desc op;
	void *t[4];
	double sum = 0;
	int i;

	fill(a, N, 1);
	fill(b, N, 2);
	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 0);
	op.shape[0] = N;
	for (i = 0; i < 3; i++)
		op.tensors[i].length = N * 4;
	t[0] = a, t[1] = b, t[2] = y;
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	for (i = 0; i < N; i++)
		assert_true(y[i] == a[i] + b[i]);

	op.opcode = EDGEQ_OP_SILU_MUL;
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	for (i = 0; i < N; i++)
		assert_true(fabsf(y[i] - a[i] / (1 + expf(-a[i])) * b[i]) <
			    1e-5f);

	edgeq_op_desc_init(&op, EDGEQ_OP_RMSNORM, 0);
	op.shape[0] = N;
	for (i = 0; i < 3; i++)
		op.tensors[i].length = N * 4;
	op.param[0] = 0x3727c5ac; /* 1e-5f */
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	for (i = 0; i < N; i++)
		sum += a[i] * a[i];
	for (i = 0; i < N; i++)
		assert_true(fabs(y[i] - a[i] / sqrt(sum / N + 1e-5) * b[i]) <
			    1e-4);

	/* A length too short for the shape. */
	op.tensors[2].length = N * 4 - 1;
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
	op.ndims = 2;
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);

	edgeq_op_desc_init(&op, EDGEQ_OP_SOFTMAX, 0);
	op.shape[0] = N / 2;
	op.shape[1] = 2;
	op.tensors[0].length = N * 4;
	memcpy(z, a, sizeof(z));
	t[0] = z;
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	for (sum = 0, i = 0; i < N / 2; i++)
		sum += z[i];
	assert_true(fabs(sum - 1.0) < 1e-5);

	edgeq_op_desc_init(&op, EDGEQ_OP_ROPE, 0);
	op.shape[0] = 2;
	op.shape[1] = 50;
	op.tensors[0].length = N * 4;
	op.param[0] = 0; /* position 0: identity */
	memcpy(z, a, sizeof(z));
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	assert_memory_equal(z, a, sizeof(z));
	op.param[0] = 3;
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	/* A rotation keeps each pair's norm. */
	for (i = 0; i < N; i += 2)
		assert_true(fabsf(z[i] * z[i] + z[i + 1] * z[i + 1] -
				  a[i] * a[i] - a[i + 1] * a[i + 1]) < 1e-4f);
	/* n_rot 4 of 50: only the first 4 dims of each head turn. */
	memcpy(z, a, sizeof(z));
	op.param[1] = 4ULL << 32;
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	assert_memory_equal(z + 4, a + 4, 46 * 4);
	assert_memory_equal(z + 54, a + 54, 46 * 4);
	assert_true(memcmp(z, a, 16) != 0);
	op.param[1] = 51ULL << 32; /* more than head_dim */
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
	op.param[1] = 0;
	op.shape[1] = 49; /* odd head_dim */
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
}

/* MATVEC/MATMUL equal the kernels table's own result, bit for bit. */
static void test_exec_matvec(void **state)
{
	enum { ROWS = 8, COLS = 64, NB = 3 };
	const struct edgeq_kernel_ops *k = edgeq_kernels_select();
	static const uint32_t types[] = { EDGEQ_DTYPE_F32, EDGEQ_DTYPE_Q8_0,
					  EDGEQ_DTYPE_Q4_0 };
	float w[ROWS * COLS], x[NB * COLS], y[NB * ROWS], ref[NB * ROWS];
	struct edgeq_op_desc op;
	unsigned int ti;
	void *t[4];

	fill(w, ROWS * COLS, 3);
	fill(x, NB * COLS, 4);
	for (ti = 0; ti < 3; ti++) {
		uint32_t type = types[ti];
		const struct edgeq_type_traits *tr = edgeq_type_traits(type);
		size_t wrow = edgeq_row_size(type, COLS);
		size_t arow = edgeq_row_size(tr->vec_dot_type, COLS);
		char *wq = malloc(wrow * ROWS), *aq = malloc(arow * NB);
		int b;

		if (type == EDGEQ_DTYPE_F32)
			memcpy(wq, w, sizeof(w));
		else
			assert_int_equal(tr->from_float(w, wq, ROWS * COLS), 0);
		edgeq_op_desc_init(&op, EDGEQ_OP_MATVEC, 0);
		op.dtype = type;
		op.shape[0] = ROWS;
		op.shape[1] = COLS;
		op.tensors[0].length = wrow * ROWS;
		op.tensors[1].length = COLS * 4;
		op.tensors[2].length = ROWS * 4;
		t[0] = wq, t[1] = x, t[2] = y;
		assert_int_equal(edgeq_kq_exec(&op, t), 0);
		assert_int_equal(k->quantize_act(tr->vec_dot_type, x, aq, COLS),
				 0);
		k->matvec((enum edgeq_type)type, wq, COLS, 0, ROWS, aq, ref);
		assert_memory_equal(y, ref, ROWS * 4);

		edgeq_op_desc_init(&op, EDGEQ_OP_MATMUL, 0);
		op.dtype = type;
		op.shape[0] = ROWS;
		op.shape[1] = COLS;
		op.shape[2] = NB;
		op.tensors[0].length = wrow * ROWS;
		op.tensors[1].length = NB * COLS * 4;
		op.tensors[2].length = NB * ROWS * 4;
		assert_int_equal(edgeq_kq_exec(&op, t), 0);
		for (b = 0; b < NB; b++) {
			assert_int_equal(k->quantize_act(tr->vec_dot_type,
							 x + b * COLS, aq,
							 COLS),
					 0);
			k->matvec((enum edgeq_type)type, wq, COLS, 0, ROWS, aq,
				  ref + b * ROWS);
		}
		assert_memory_equal(y, ref, NB * ROWS * 4);
		op.tensors[0].length--; /* weights too short */
		assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
		free(wq);
		free(aq);
	}
	op.dtype = EDGEQ_DTYPE_BF16 + 1; /* not a weight type */
	op.tensors[0].length = 1 << 20;
	assert_int_equal(edgeq_kq_exec(&op, t), -EOPNOTSUPP);
}

static void test_exec_attention(void **state)
{
	enum { H = 4, KVH = 2, HD = 8, NPOS = 5 };
	float q[H * HD], kc[NPOS * KVH * HD], vc[NPOS * KVH * HD], out[H * HD];
	struct edgeq_op_desc op;
	void *t[4] = { q, kc, vc, out };
	int i;

	fill(q, H * HD, 5);
	fill(kc, NPOS * KVH * HD, 6);
	/* Every position holds the same V: the output is that V. */
	for (i = 0; i < NPOS * KVH * HD; i++)
		vc[i] = (float)(i % (KVH * HD));
	edgeq_op_desc_init(&op, EDGEQ_OP_ATTENTION, 0);
	op.dtype = EDGEQ_DTYPE_F32;
	op.shape[0] = H;
	op.shape[1] = KVH;
	op.shape[2] = HD;
	op.shape[3] = NPOS;
	op.tensors[0].length = sizeof(q);
	op.tensors[1].length = sizeof(kc);
	op.tensors[2].length = sizeof(vc);
	op.tensors[3].length = sizeof(out);
	assert_int_equal(edgeq_kq_exec(&op, t), 0);
	for (i = 0; i < H * HD; i++)
		assert_true(fabsf(out[i] - (float)((i / HD / (H / KVH)) * HD +
						   i % HD)) < 1e-4f);
	op.shape[1] = 3; /* heads not a multiple of kv heads */
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
	op.shape[1] = KVH;
	op.dtype = EDGEQ_DTYPE_Q4_0;
	assert_int_equal(edgeq_kq_exec(&op, t), -EOPNOTSUPP);
	/* Q8_0 KV needs head_dim % 32 == 0. */
	op.dtype = EDGEQ_DTYPE_Q8_0;
	assert_int_equal(edgeq_kq_exec(&op, t), -EINVAL);
}

static uint64_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/*
 * EDGEQ_F_TOKENS: a prompt's RoPE and attention as one op each give
 * exactly what one op a token gives (the form a decode step sends and the
 * decoder's logits were checked against): positions scaled per token,
 * each query causal over the rows up to its own, a sliding window.
 */
static void test_exec_tokens(void **state)
{
	enum { H = 4, KVH = 2, HD = 32, NPOS = 9, NT = 4, RH = 3, RD = 16 };
	static float q[NT * H * HD], kc[NPOS * KVH * HD], vc[NPOS * KVH * HD];
	static float out[NT * H * HD], one[H * HD];
	static uint8_t k8[NPOS * KVH * 34], v8[NPOS * KVH * 34];
	float x[NT * RH * RD], y[NT * RH * RD], freq[RD / 2];
	struct edgeq_op_desc op, o1;
	int i, w, t, dt;

	fill(x, NT * RH * RD, 9);
	memcpy(y, x, sizeof(x));
	for (i = 0; i < RD / 2; i++)
		freq[i] =
			powf(10000.0f, -2.0f * (float)i / RD) / (i > 4 ? 3 : 1);
	edgeq_op_desc_init(&op, EDGEQ_OP_ROPE_FREQ, 0);
	op.ndims = 3;
	op.shape[0] = RH;
	op.shape[1] = RD;
	op.shape[2] = NT;
	op.param[0] = fbits(0.25f) << 32 | 1001; /* linear scaling */
	op.param[1] = 12ULL << 32 | fbits(1.1f); /* partial, a factor */
	op.flags = EDGEQ_OPF_ROPE_NEOX;
	op.tensors[0].length = sizeof(x);
	op.tensors[1].length = sizeof(freq);
	assert_int_equal(edgeq_op_rope_tokens(&op), NT);
	{
		void *tt[2] = { x, freq };

		assert_int_equal(edgeq_kq_exec(&op, tt), 0);
	}
	o1 = op;
	o1.ndims = 2;
	o1.shape[2] = 0;
	o1.tensors[0].length = RH * RD * 4;
	for (t = 0; t < NT; t++) {
		void *tt[2] = { y + t * RH * RD, freq };

		o1.param[0] = fbits((float)(1001 + t) * 0.25f);
		assert_int_equal(edgeq_kq_exec(&o1, tt), 0);
	}
	assert_memory_equal(x, y, sizeof(x));
	/* a token row short: refused, nothing rotated */
	memcpy(y, x, sizeof(x));
	op.tensors[0].length -= 4;
	{
		void *tt[2] = { x, freq };

		assert_int_equal(edgeq_kq_exec(&op, tt), -EINVAL);
	}
	assert_memory_equal(x, y, sizeof(x));

	/* ADD {n, rows}: b's one row added to each row of a, in place */
	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 0);
	op.ndims = 2;
	op.shape[0] = RD / 2;
	op.shape[1] = NT * RH * 2;
	op.tensors[0].length = sizeof(x);
	op.tensors[1].length = sizeof(freq);
	op.tensors[2].length = sizeof(x);
	memcpy(y, x, sizeof(x));
	{
		void *tt[3] = { x, freq, x };

		assert_int_equal(edgeq_kq_exec(&op, tt), 0);
		for (i = 0; i < NT * RH * RD; i++)
			assert_true(x[i] == y[i] + freq[i % (RD / 2)]);
		op.tensors[2].length -= 4; /* out a row's float short */
		assert_int_equal(edgeq_kq_exec(&op, tt), -EINVAL);
		op.opcode = EDGEQ_OP_SILU_MUL; /* rows are ADD's alone */
		op.tensors[2].length += 4;
		assert_int_equal(edgeq_kq_exec(&op, tt), -EINVAL);
	}

	fill(q, NT * H * HD, 10);
	fill(kc, NPOS * KVH * HD, 11);
	fill(vc, NPOS * KVH * HD, 12);
	edgeq_kernels_select()->quantize_act(EDGEQ_TYPE_Q8_0, kc, k8,
					     NPOS * KVH * HD);
	edgeq_kernels_select()->quantize_act(EDGEQ_TYPE_Q8_0, vc, v8,
					     NPOS * KVH * HD);
	for (dt = 0; dt < 2; dt++) {
		size_t hrow = dt ? 34 : HD * 4;
		char *K = dt ? (char *)k8 : (char *)kc;
		char *V = dt ? (char *)v8 : (char *)vc;

		for (w = 0; w < 2; w++) {
			void *tt[4] = { q, K, V, out };
			uint64_t win = w ? 3 : 0;

			edgeq_op_desc_init(&op, EDGEQ_OP_ATTENTION, 0);
			op.dtype = dt ? EDGEQ_DTYPE_Q8_0 : EDGEQ_DTYPE_F32;
			op.shape[0] = H;
			op.shape[1] = KVH;
			op.shape[2] = HD;
			op.shape[3] = NPOS;
			op.param[0] = fbits(0.3f);
			op.param[1] = win << 32 | NT;
			op.tensors[0].length = sizeof(q);
			op.tensors[1].length = NPOS * KVH * hrow;
			op.tensors[2].length = NPOS * KVH * hrow;
			op.tensors[3].length = sizeof(out);
			assert_int_equal(edgeq_kq_exec(&op, tt), 0);
			for (t = 0; t < NT; t++) {
				uint64_t e = NPOS - NT + t + 1, f, end;
				uint64_t first = win && e > win ? e - win : 0;
				void *t1[4] = { q + t * H * HD,
						K + first * KVH * hrow,
						V + first * KVH * hrow, one };

				edgeq_op_attn_span(&op, (uint64_t)t, &f, &end);
				assert_int_equal(f, first);
				assert_int_equal(end, e);
				o1 = op;
				o1.param[1] = 0;
				o1.shape[3] = e - first;
				o1.tensors[0].length = sizeof(one);
				o1.tensors[3].length = sizeof(one);
				assert_int_equal(edgeq_kq_exec(&o1, t1), 0);
				assert_memory_equal(one, out + t * H * HD,
						    sizeof(one));
			}
			/* more queries than rows; an output a query short */
			op.param[1] = NPOS + 1;
			assert_int_equal(edgeq_kq_exec(&op, tt), -EINVAL);
			op.param[1] = NT;
			op.tensors[3].length -= H * HD * 4;
			assert_int_equal(edgeq_kq_exec(&op, tt), -EINVAL);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_desc_init),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_memfd_sealed),
		cmocka_unit_test(test_exec_elementwise),
		cmocka_unit_test(test_exec_matvec),
		cmocka_unit_test(test_exec_attention),
		cmocka_unit_test(test_exec_tokens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
