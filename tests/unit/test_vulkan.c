// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The execution backends (include/edgeq/backend.h): every op of the Vulkan
 * backend against the CPU's edgeq_kq_exec() (the engine's kernels, whose
 * scalar reference is the oracle), on tensors in sealed memfds as an agent
 * maps them; both memory paths (host import, staging); chains; errors.
 *
 * Tolerances, and why. The shaders reproduce the CPU's reduction order
 * (kernels/scalar.c): matrix products of F32/F16 weights use the same 32
 * lanes and fold, quantized ones the same exact integer block sums and one
 * fma chain in block order, attention the same per-score dots and softmax
 * order; activations are quantized by the same rule. What is left is what
 * Vulkan lets a driver do differently: fma() may be computed unfused
 * (lavapipe lowers it to llvm.fmuladd: up to half an ulp more per step of
 * a chain), division and exp() are not correctly rounded (2.5 ulp and
 * 3 + 2|x| ulp), and the fp16 rounding of a Q8_0 scale may differ in its
 * last bit, which moves one activation quantum in a block. Bounds: matrix
 * products |d| <= 2^-12 * sum_j |w_j x_j| (k steps of half an ulp are
 * k * 2^-24 of that sum: k <= 4096 steps fit, and one moved quantum per
 * row is 2^-8 of one term); element-wise and normalised outputs
 * |d| <= atol + rtol * |y| with rtol 1e-5..1e-4 (a few ulp of exp and
 * division through up to five dependent ops). The max |d| measured is
 * printed. On lavapipe (float64, a CPU device: shaders/common.glsl's
 * fma_rn() and div_rn() in float64) matrix products, RMSNORM and ROPE are
 * bit for bit the CPU's (0), attention within 2e-7 (exp); the float-only
 * shaders (EDGEQ_VK_FLOAT64=0, test_float_only) about 1 ulp of the result.
 *
 * Without a Vulkan device the Vulkan tests skip, saying why; under CI=true
 * lavapipe is installed (tools/install-deps) and they must run.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/backend.h>
#include <edgeq/kq.h>
#include "kernels/kernels.h"

/* A memfd holding an op's tensors, as a client's would. */
struct arena {
	int fd;
	void *map;
	size_t size, used;
	uint64_t id;
};

static struct edgeq_backend *vk; /* NULL: no Vulkan device */
static const char *vk_why = "";

static void arena_init(struct arena *a, size_t size, uint64_t id)
{
	a->size = (size + 4095) & ~(size_t)4095;
	a->used = 0;
	a->id = id;
	assert_int_equal(edgeq_kq_memfd("t", a->size, &a->fd, &a->map), 0);
}

static void arena_fini(struct arena *a)
{
	munmap(a->map, a->size);
	close(a->fd);
}

/* @bytes of the arena (256-aligned), as tensor @i of @op. */
static void *arena_take(struct arena *a, struct edgeq_op_desc *op,
			unsigned int i, size_t bytes)
{
	void *p;

	a->used = (a->used + 255) & ~(size_t)255;
	assert_true(a->used + bytes <= a->size);
	p = (char *)a->map + a->used;
	edgeq_op_desc_tensor(op, i, 1, a->used, bytes);
	a->used += bytes;
	return p;
}

static void tensors_of(const struct arena *a, const struct edgeq_op_desc *op,
		       struct edgeq_backend_tensor *t)
{
	for (unsigned int i = 0; i < op->ntensors; i++)
		t[i] = (struct edgeq_backend_tensor){
			.base = a->map,
			.map_len = a->size,
			.offset = op->tensors[i].offset,
			.length = op->tensors[i].length,
			.id = a->id,
		};
}

static void fill(float *x, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 9) % 2001) / 500.0f - 2.0f;
	}
}

static uint64_t bitsf(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/*
 * Run @n ops of @a on the CPU (on a copy) and on @b; the arenas' outputs
 * must agree within @atol + @rtol * |cpu|, or, where @l1 is given, within
 * 2^-12 * l1[j] for output element j. Returns the max difference.
 */
static double run_compare(struct edgeq_backend *b, struct arena *a,
			  const struct edgeq_op_desc *ops, unsigned int n,
			  const unsigned int *out_t, double atol, double rtol,
			  const double *l1)
{
	struct edgeq_backend_tensor(*t)[EDGEQ_MAX_TENSORS];
	char *cpu = malloc(a->size);
	int *st = calloc(n, sizeof(int));
	double maxd = 0;

	t = calloc(n, sizeof(*t));
	assert_non_null(cpu);
	memcpy(cpu, a->map, a->size);
	for (unsigned int i = 0; i < n; i++) {
		void *p[EDGEQ_MAX_TENSORS] = { 0 };

		for (unsigned int k = 0; k < ops[i].ntensors; k++)
			p[k] = cpu + ops[i].tensors[k].offset;
		assert_int_equal(edgeq_kq_exec(&ops[i], p), 0);
		tensors_of(a, &ops[i], t[i]);
	}
	assert_int_equal(edgeq_backend_run(b, ops, t, st, n), 0);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(st[i], 0);
	for (unsigned int i = 0; i < n; i++) {
		const struct edgeq_tensor_ref *r = &ops[i].tensors[out_t[i]];
		const float *g = (const float *)((char *)a->map + r->offset);
		const float *c = (const float *)(cpu + r->offset);

		for (size_t j = 0; j < r->length / 4; j++) {
			double d = fabs((double)g[j] - c[j]);
			double tol = l1 ? ldexp(l1[j], -12) :
					  atol + rtol * fabs(c[j]);

			if (d > maxd)
				maxd = d;
			if (!(d <= tol))
				fail_msg("op %u element %zu: gpu %.9g cpu %.9g",
					 i, j, g[j], c[j]);
		}
	}
	free(t);
	free(st);
	free(cpu);
	return maxd;
}

#define NEED_VK()                                      \
	do {                                           \
		if (!vk) {                             \
			print_message("%s\n", vk_why); \
			skip();                        \
		}                                      \
	} while (0)

/* y = W x (or Y = W X) of @type, rows x cols, nb activation rows. */
static double check_matmul(uint32_t type, uint64_t rows, uint64_t cols,
			   uint64_t nb)
{
	const struct edgeq_type_traits *tr = edgeq_type_traits(type);
	size_t wrow = edgeq_row_size(type, (int64_t)cols);
	struct edgeq_op_desc op;
	struct arena a;
	float *wf = malloc(rows * cols * 4), *x, *dq = malloc(cols * 4);
	double *l1 = calloc(rows * nb, sizeof(double)), d;
	void *w;
	const unsigned int out = 2;

	assert_non_null(tr);
	arena_init(&a, rows * wrow + nb * (cols + rows) * 4 + 4096, 7);
	edgeq_op_desc_init(&op, nb > 1 ? EDGEQ_OP_MATMUL : EDGEQ_OP_MATVEC, 1);
	op.dtype = type;
	op.shape[0] = rows;
	op.shape[1] = cols;
	if (nb > 1)
		op.shape[2] = nb;
	w = arena_take(&a, &op, 0, rows * wrow);
	x = arena_take(&a, &op, 1, nb * cols * 4);
	arena_take(&a, &op, 2, nb * rows * 4);
	fill(wf, rows * cols, (unsigned int)type * 31 + 5);
	fill(x, nb * cols, 99);
	for (uint64_t r = 0; r < rows; r++)
		tr->from_float(wf + r * cols, (char *)w + r * wrow,
			       (int64_t)cols);
	for (uint64_t r = 0; r < rows; r++) {
		tr->to_float((char *)w + r * wrow, dq, (int64_t)cols);
		for (uint64_t b = 0; b < nb; b++)
			for (uint64_t j = 0; j < cols; j++)
				l1[b * rows + r] +=
					fabs((double)dq[j] * x[b * cols + j]);
	}
	d = run_compare(vk, &a, &op, 1, &out, 0, 0, l1);
	print_message("%s %s %llux%llu nb %llu: max |gpu - cpu| = %.3g\n",
		      nb > 1 ? "matmul" : "matvec", tr->name,
		      (unsigned long long)rows, (unsigned long long)cols,
		      (unsigned long long)nb, d);
	arena_fini(&a);
	free(wf);
	free(dq);
	free(l1);
	return d;
}

/* lavapipe runs the float64 shaders: the CPU's bits, not a bound */
static bool exact_device(void)
{
	struct edgeq_backend_info info;

	edgeq_backend_get_info(vk, &info);
	return strstr(info.device, "llvmpipe") != NULL;
}

static void test_matvec_types(void **state)
{
	const uint32_t types[] = { EDGEQ_DTYPE_F32,  EDGEQ_DTYPE_F16,
				   EDGEQ_DTYPE_Q8_0, EDGEQ_DTYPE_Q4_0,
				   EDGEQ_DTYPE_Q4_K, EDGEQ_DTYPE_Q6_K };

	NEED_VK();
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		check_matmul(types[i], 67, 512, 1);
		check_matmul(types[i], 5, 2304, 1); /* long rows, few of them */
	}
	/* an odd block count: every other row and block starts 2 bytes
	 * into a word (Q8_0 and Q4_0 read whole words) */
	check_matmul(EDGEQ_DTYPE_Q8_0, 97, 96, 1);
	check_matmul(EDGEQ_DTYPE_Q4_0, 97, 96, 1);
}

/*
 * MATMUL: a workgroup takes 8 activation rows (shaders/mm_*.comp): a tile
 * short of 8, one whole, two and a part; every row the CPU's float for
 * float on lavapipe, as one row at a time is.
 */
static void test_matmul_types(void **state)
{
	const uint32_t types[] = { EDGEQ_DTYPE_Q8_0, EDGEQ_DTYPE_Q4_0,
				   EDGEQ_DTYPE_Q4_K, EDGEQ_DTYPE_Q6_K,
				   EDGEQ_DTYPE_F32,  EDGEQ_DTYPE_F16 };
	const uint64_t nbs[] = { 3, 8, 19 };
	double d = 0;

	NEED_VK();
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		for (size_t k = 0; k < sizeof(nbs) / sizeof(nbs[0]); k++)
			d = fmax(d, check_matmul(types[i], 33 + 8 * i, 512,
						 nbs[k]));
	check_matmul(EDGEQ_DTYPE_Q4_0, 65, 160, 3);
	check_matmul(EDGEQ_DTYPE_F16, 9, 96, 5);
	if (exact_device())
		assert_true(d == 0);
}

static void test_rmsnorm(void **state)
{
	struct edgeq_op_desc op;
	struct arena a;
	const unsigned int out = 2;
	const uint64_t n = 4096 + 3;

	NEED_VK();
	arena_init(&a, 3 * n * 4 + 4096, 11);
	edgeq_op_desc_init(&op, EDGEQ_OP_RMSNORM, 1);
	op.shape[0] = n;
	op.param[0] = bitsf(1e-5f);
	fill(arena_take(&a, &op, 0, n * 4), n, 3);
	fill(arena_take(&a, &op, 1, n * 4), n, 4);
	arena_take(&a, &op, 2, n * 4);
	print_message("rmsnorm: max |d| = %.3g\n",
		      run_compare(vk, &a, &op, 1, &out, 1e-6, 1e-6, NULL));
	arena_fini(&a);
}

static void test_rope(void **state)
{
	struct edgeq_op_desc op[3];
	struct arena a;
	const unsigned int out[3] = { 0, 0, 0 };

	NEED_VK();
	arena_init(&a, 3 * 8 * 64 * 4 + 4096, 12);
	for (int i = 0; i < 3; i++) {
		edgeq_op_desc_init(&op[i], EDGEQ_OP_ROPE, 1);
		op[i].shape[0] = 8;
		op[i].shape[1] = 64;
		op[i].param[0] = 17 + 100 * (uint64_t)i;
		fill(arena_take(&a, &op[i], 0, 8 * 64 * 4), 8 * 64, 5 + i);
	}
	op[1].flags = EDGEQ_OPF_ROPE_NEOX;
	op[1].param[1] = bitsf(1e6f);
	op[2].param[1] = (32ULL << 32) | bitsf(500000.0f); /* partial */
	print_message("rope: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 3, out, 1e-6, 1e-6, NULL));
	arena_fini(&a);
}

/*
 * ROPE_FREQ: the model's own frequencies (here Llama 3-like divisors on
 * some dimensions), a scaled position and a cos/sin factor; partial
 * rotation; a frequency table shorter than the rotated pairs is refused.
 */
static void test_rope_freq(void **state)
{
	struct edgeq_op_desc op[2];
	struct edgeq_backend_tensor t[1][EDGEQ_MAX_TENSORS];
	struct arena a;
	const unsigned int out[2] = { 0, 0 };
	float *f;
	int st[1];

	NEED_VK();
	arena_init(&a, 2 * 8 * 64 * 4 + 8192, 20);
	for (int i = 0; i < 2; i++) {
		edgeq_op_desc_init(&op[i], EDGEQ_OP_ROPE_FREQ, 1);
		op[i].shape[0] = 8;
		op[i].shape[1] = 64;
		fill(arena_take(&a, &op[i], 0, 8 * 64 * 4), 8 * 64, 9 + i);
	}
	f = arena_take(&a, &op[0], 1, 32 * 4);
	for (int i = 0; i < 32; i++)
		f[i] = (float)pow(500000.0, -2.0 * i / 64) /
		       (i > 20 ? 8.0f : 1);
	op[1].tensors[1] = op[0].tensors[1];
	op[1].tensors[1].length = 16 * 4;
	op[0].param[0] = bitsf(123.0f * 0.25f); /* linear scaling */
	op[0].param[1] = (64ULL << 32) | bitsf(1.19f);
	op[1].param[0] = bitsf(7.0f);
	op[1].param[1] = 32ULL << 32; /* partial, factor 1 */
	op[1].flags = EDGEQ_OPF_ROPE_NEOX;
	print_message("rope_freq: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 2, out, 1e-6, 1e-6, NULL));
	op[0].tensors[1].length = 31 * 4; /* a pair without its frequency */
	tensors_of(&a, &op[0], t[0]);
	assert_int_equal(edgeq_backend_run(vk, op, t, st, 1), 0);
	assert_int_equal(st[0], -EINVAL);
	{
		void *p[EDGEQ_MAX_TENSORS] = { a.map, f };

		assert_int_equal(edgeq_kq_exec(&op[0], p), -EINVAL);
	}
	arena_fini(&a);
}

static void test_softmax_ew(void **state)
{
	struct edgeq_op_desc op[3];
	struct arena a;
	const unsigned int out[3] = { 0, 2, 2 };
	const uint64_t n = 1000;

	NEED_VK();
	arena_init(&a, 10 * n * 4 + 4096, 13);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_SOFTMAX, 1);
	op[0].shape[0] = n / 4;
	op[0].shape[1] = 4;
	fill(arena_take(&a, &op[0], 0, n * 4), n, 8);
	for (int i = 1; i < 3; i++) {
		edgeq_op_desc_init(
			&op[i], i == 1 ? EDGEQ_OP_SILU_MUL : EDGEQ_OP_ADD, 1);
		op[i].shape[0] = n;
		fill(arena_take(&a, &op[i], 0, n * 4), n, 9 + i);
		fill(arena_take(&a, &op[i], 1, n * 4), n, 19 + i);
		arena_take(&a, &op[i], 2, n * 4);
	}
	print_message("softmax, silu_mul, add: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 3, out, 1e-6, 1e-5, NULL));
	arena_fini(&a);
}

/* RMSNORM over rows (EDGEQ_F_NORM_ROWS: per-head norms, a prompt's
 * tokens) and GELU_MUL, against the CPU executor; the GELU is GELU's. */
static void test_norm_rows_gelu(void **state)
{
	struct edgeq_op_desc op[3];
	struct arena a;
	const unsigned int out[3] = { 2, 2, 2 };
	const uint64_t hd = 64, rows = 70, n = 3000;
	float *x, *w, *g, *u;

	NEED_VK();
	arena_init(&a, (2 * rows * hd + hd + 3 * n + 2 * hd) * 4 + 8192, 15);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_RMSNORM, 1);
	op[0].ndims = 2;
	op[0].shape[0] = hd;
	op[0].shape[1] = rows;
	op[0].param[0] = bitsf(1e-6f);
	x = arena_take(&a, &op[0], 0, rows * hd * 4);
	fill(x, rows * hd, 31);
	for (uint64_t i = 0; i < hd; i++) /* rows of other scales */
		x[5 * hd + i] *= 1e4f, x[6 * hd + i] = 0,
						  x[7 * hd + i] *= 1e-3f;
	w = arena_take(&a, &op[0], 1, hd * 4);
	fill(w, hd, 32);
	arena_take(&a, &op[0], 2, rows * hd * 4);
	/* in place, one row: as a model's q norm of one head */
	edgeq_op_desc_init(&op[1], EDGEQ_OP_RMSNORM, 2);
	op[1].shape[0] = hd;
	op[1].param[0] = bitsf(1e-6f);
	fill(arena_take(&a, &op[1], 0, hd * 4), hd, 33);
	op[1].tensors[1] = op[0].tensors[1];
	op[1].tensors[2] = op[1].tensors[0];
	edgeq_op_desc_init(&op[2], EDGEQ_OP_GELU_MUL, 3);
	op[2].shape[0] = n;
	g = arena_take(&a, &op[2], 0, n * 4);
	fill(g, n, 34);
	for (uint64_t i = 0; i < n; i++)
		g[i] *= 8.0f; /* both tails and the middle */
	g[0] = -30.0f, g[1] = 30.0f, g[2] = 0.0f, g[3] = -0.0f;
	g[4] = 1e30f, g[5] = -1e30f;
	u = arena_take(&a, &op[2], 1, n * 4);
	fill(u, n, 35);
	arena_take(&a, &op[2], 2, n * 4);
	print_message("rmsnorm rows, gelu_mul: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 3, out, 1e-6, 1e-5, NULL));
	/* the formula is GELU's tanh form (within a few ulp) */
	for (uint64_t i = 0; i < n; i++) {
		float v = g[i], y = v, tf;

		edgeq_gelu_mul_ref(&y, &(float){ 1.0f }, 1);
		tf = 0.5f * v *
		     (1.0f +
		      tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
		if (!(fabsf(y - tf) <= 1e-6f * fabsf(tf) + 1e-7f * fabsf(v)))
			fail_msg("gelu(%.9g) = %.9g, tanh form %.9g", v, y, tf);
	}
	/* rows that do not fit: refused */
	{
		struct edgeq_backend_tensor t[EDGEQ_MAX_TENSORS];
		int st;

		op[0].shape[1] = rows + 1;
		tensors_of(&a, &op[0], t);
		assert_int_equal(edgeq_backend_run(vk, op, &t, &st, 1), 0);
		assert_int_equal(st, -EINVAL);
		op[0].shape[1] = rows;
	}
	arena_fini(&a);
}

static void check_attention(uint32_t dtype, uint64_t heads, uint64_t kvh,
			    uint64_t hd, uint64_t npos, float scale)
{
	struct edgeq_op_desc op;
	struct arena a;
	const unsigned int out = 3;
	size_t hrow = dtype == EDGEQ_DTYPE_Q8_0 ?
			      edgeq_row_size(EDGEQ_TYPE_Q8_0, (int64_t)hd) :
			      hd * (dtype == EDGEQ_DTYPE_F16 ? 2 : 4);
	size_t kv = npos * kvh * hrow;
	float *tmp = malloc(npos * kvh * hd * 4);
	const struct edgeq_type_traits *tr = edgeq_type_traits(dtype);

	arena_init(&a, 2 * heads * hd * 4 + 2 * kv + 4096, 14);
	edgeq_op_desc_init(&op, EDGEQ_OP_ATTENTION, 1);
	op.dtype = dtype;
	op.shape[0] = heads;
	op.shape[1] = kvh;
	op.shape[2] = hd;
	op.shape[3] = npos;
	op.param[0] = scale ? bitsf(scale) : 0; /* 0: 1/sqrt(head_dim) */
	fill(arena_take(&a, &op, 0, heads * hd * 4), heads * hd, 21);
	for (int i = 1; i < 3; i++) {
		fill(tmp, npos * kvh * hd, 22 + i);
		tr->from_float(tmp, arena_take(&a, &op, (unsigned int)i, kv),
			       (int64_t)(npos * kvh * hd));
	}
	arena_take(&a, &op, 3, heads * hd * 4);
	print_message(
		"attention %s %llu/%llu heads, %llu positions: max |d| = %.3g\n",
		tr->name, (unsigned long long)heads, (unsigned long long)kvh,
		(unsigned long long)npos,
		run_compare(vk, &a, &op, 1, &out, 1e-5, 1e-5, NULL));
	arena_fini(&a);
	free(tmp);
}

static void test_attention(void **state)
{
	NEED_VK();
	check_attention(EDGEQ_DTYPE_F32, 8, 2, 64, 37, 0);
	check_attention(EDGEQ_DTYPE_F16, 6, 6, 48, 300, 0);
	check_attention(EDGEQ_DTYPE_Q8_0, 8, 4, 64, 129, 0);
	/* a model's own scale (Gemma's query_pre_attn_scalar) */
	check_attention(EDGEQ_DTYPE_F16, 4, 2, 32, 20, 0.3f);
}

/*
 * A prompt's RoPE, attention and bias as one op each (EDGEQ_F_TOKENS): one
 * workgroup per (head, query), each query causal over its own rows, a
 * sliding window; the CPU executor's bits (which test_kq checks against
 * one op a token). Exact: the same order as the one-query form.
 */
static void test_tokens(void **state)
{
	enum { H = 8, KVH = 2, HD = 64, NPOS = 70, NT = 33 };
	struct edgeq_op_desc op[5];
	const unsigned int out[5] = { 0, 3, 3, 3, 2 };
	const struct edgeq_type_traits *tr;
	size_t kv16 = NPOS * KVH * HD * 2, kv8 = NPOS * KVH * 68;
	float *f, *tmp = malloc(NPOS * KVH * HD * 4);
	struct arena a;

	NEED_VK();
	arena_init(&a, 1 << 22, 23);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_ROPE_FREQ, 1);
	op[0].ndims = 3;
	op[0].shape[0] = H;
	op[0].shape[1] = HD;
	op[0].shape[2] = NT;
	op[0].param[0] = bitsf(0.5f) << 32 | 100;
	op[0].param[1] = (48ULL << 32) | bitsf(1.07f);
	fill(arena_take(&a, &op[0], 0, NT * H * HD * 4), NT * H * HD, 31);
	f = arena_take(&a, &op[0], 1, 24 * 4);
	for (int i = 0; i < 24; i++)
		f[i] = (float)pow(10000.0, -2.0 * i / 48);
	for (int i = 1; i < 4; i++) {
		uint32_t dt = i == 3 ? EDGEQ_DTYPE_Q8_0 : EDGEQ_DTYPE_F16;
		size_t kv = i == 3 ? kv8 : kv16;

		tr = edgeq_type_traits(dt);
		edgeq_op_desc_init(&op[i], EDGEQ_OP_ATTENTION, 1);
		op[i].dtype = dt;
		op[i].shape[0] = H;
		op[i].shape[1] = KVH;
		op[i].shape[2] = HD;
		op[i].shape[3] = NPOS;
		/* all of a prompt; a window of 20 (gemma's sliding layers) */
		op[i].param[1] = (i == 2 ? 20ULL << 32 : 0) | NT;
		fill(arena_take(&a, &op[i], 0, NT * H * HD * 4), NT * H * HD,
		     40 + (unsigned int)i);
		for (unsigned int k = 1; k < 3; k++) {
			fill(tmp, NPOS * KVH * HD,
			     50 + k + 2 * (unsigned int)i);
			tr->from_float(tmp, arena_take(&a, &op[i], k, kv),
				       NPOS * KVH * HD);
		}
		arena_take(&a, &op[i], 3, NT * H * HD * 4);
	}
	/* a bias over the prompt's rows: ADD {n, rows}, b one row */
	edgeq_op_desc_init(&op[4], EDGEQ_OP_ADD, 1);
	op[4].ndims = 2;
	op[4].shape[0] = H * HD;
	op[4].shape[1] = NT;
	fill(arena_take(&a, &op[4], 0, NT * H * HD * 4), NT * H * HD, 60);
	fill(arena_take(&a, &op[4], 1, H * HD * 4), H * HD, 61);
	op[4].tensors[2] = op[4].tensors[0]; /* in place */
	print_message("tokens: rope_freq, attention f16, windowed, q8_0, "
		      "add rows: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 5, out, 0, 0, NULL));
	arena_fini(&a);
	free(tmp);
}

/*
 * STORE: a K/V row into a cache, bit for bit the CPU's conversion
 * (kv_store()): ties to even, subnormal halves, underflow to a signed
 * zero, overflow to infinity, NaN payloads; F32 copied; an odd F16 row
 * refused on the device (two halves per word), not miswritten.
 */
static void test_store(void **state)
{
	static const uint32_t special[] = {
		0x3f800000, 0x3f801000, 0x3f803000, 0x3f800fff, /* ties */
		0x387fc000, 0x38000000, 0x33000000, 0x33000001, /* subnormal */
		0x32ffffff, 0x80000001, 0x80000000, 0x477fe000, /* tiny, max */
		0x477ff000, 0x7f800000, 0xff800000, 0x7fc12345, /* inf, nan */
		0xffa00001, 0x387fe000,
	};
	const unsigned int n = 256, ns = sizeof(special) / sizeof(special[0]);
	struct edgeq_backend_tensor t[2][EDGEQ_MAX_TENSORS];
	struct edgeq_op_desc op[2];
	uint16_t want[256];
	float *x;
	uint16_t *y16;
	float *y32;
	struct arena a;
	int st[2];

	NEED_VK();
	arena_init(&a, 65536, 19);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_STORE, 1);
	op[0].dtype = EDGEQ_DTYPE_F16;
	op[0].shape[0] = n;
	x = arena_take(&a, &op[0], 0, n * 4);
	fill(x, n, 5);
	for (unsigned int i = 0; i < n; i++)
		x[i] *= 1000.0f; /* rounding happens */
	memcpy(x, special, sizeof(special));
	y16 = arena_take(&a, &op[0], 1, n * 2);
	memset(y16, 0xa5, n * 2);
	edgeq_op_desc_init(&op[1], EDGEQ_OP_STORE, 2);
	op[1].dtype = EDGEQ_DTYPE_F32;
	op[1].shape[0] = n;
	op[1].tensors[0] = op[0].tensors[0];
	y32 = arena_take(&a, &op[1], 1, n * 4);
	for (unsigned int i = 0; i < n; i++)
		want[i] = edgeq_fp32_to_fp16(x[i]);
	tensors_of(&a, &op[0], t[0]);
	tensors_of(&a, &op[1], t[1]);
	assert_int_equal(edgeq_backend_run(vk, op, t, st, 2), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	for (unsigned int i = 0; i < n; i++)
		if (y16[i] != want[i])
			fail_msg("element %u (%s): x %08x gpu %04x cpu %04x", i,
				 i < ns ? "special" : "random",
				 (unsigned int)bitsf(x[i]), y16[i], want[i]);
	assert_memory_equal(y32, x, n * 4);
	/* the CPU's own op: the same bits (the oracle is kv_store's) */
	{
		void *p[EDGEQ_MAX_TENSORS] = { x, y16 };

		memset(y16, 0, n * 2);
		assert_int_equal(edgeq_kq_exec(&op[0], p), 0);
		assert_memory_equal(y16, want, n * 2);
	}
	/* an odd F16 row: refused (-EINVAL), nothing written */
	op[0].shape[0] = 7;
	op[0].tensors[0].length = 28;
	op[0].tensors[1].length = 14;
	memset(y16, 0x5a, n * 2);
	tensors_of(&a, &op[0], t[0]);
	assert_int_equal(edgeq_backend_run(vk, op, t, st, 1), 0);
	assert_int_equal(st[0], -EINVAL);
	assert_int_equal(y16[0], 0x5a5a);
	/* no other types (Q8_0: test_store_q8_0) */
	op[0].shape[0] = 32;
	op[0].dtype = EDGEQ_DTYPE_Q4_0;
	assert_false(edgeq_backend_supports(vk, &op[0]));
	arena_fini(&a);
}

/*
 * A layer-like chain in one command buffer: rmsnorm -> matvec -> rope ->
 * silu_mul -> add, each reading what the one before wrote.
 */
/*
 * STORE into a Q8_0 row (a Q8_0 KV cache): the bytes the CPU's
 * quantize_act() writes, blocks with a NaN or an infinity (NaN scale,
 * zero quants), all zeros, scales that round to 0 as F16, halves at the
 * rounding boundary; an odd block count refused on the device (two blocks
 * per invocation), nothing written.
 */
static void test_store_q8_0(void **state)
{
	const unsigned int n = 32 * 12;
	const size_t row = edgeq_row_size(EDGEQ_TYPE_Q8_0, n);
	struct edgeq_backend_tensor t[EDGEQ_MAX_TENSORS];
	struct edgeq_op_desc op;
	uint8_t *y, want[12 * 34];
	struct arena a;
	float *x;
	int st;

	NEED_VK();
	arena_init(&a, 65536, 23);
	edgeq_op_desc_init(&op, EDGEQ_OP_STORE, 1);
	op.dtype = EDGEQ_DTYPE_Q8_0;
	op.shape[0] = n;
	x = arena_take(&a, &op, 0, n * 4);
	fill(x, n, 41);
	for (unsigned int i = 0; i < n; i++)
		x[i] *= (float)(1 + i / 32) * 3.0f;
	x[3] = NAN;				/* block 0 */
	x[32 + 7] = INFINITY;			/* block 1 */
	memset(x + 64, 0, 32 * 4);		/* block 2: zeros */
	for (unsigned int i = 96; i < 128; i++) /* block 3: F16 scale 0 */
		x[i] *= 1e-12f;
	for (unsigned int i = 128; i < 160; i++) /* block 4: exact halves */
		x[i] = (float)((int)i - 144) + 0.5f;
	x[159] = 127.0f;
	y = arena_take(&a, &op, 1, row);
	memset(y, 0xa5, row);
	assert_int_equal(edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, x, want, n),
			 -EDOM);
	tensors_of(&a, &op, t);
	assert_int_equal(edgeq_backend_run(vk, &op, &t, &st, 1), 0);
	assert_int_equal(st, 0);
	for (size_t i = 0; i < row; i++)
		if (y[i] != want[i])
			fail_msg("byte %zu (block %zu): gpu %02x cpu %02x", i,
				 i / 34, y[i], want[i]);
	/* the CPU executor's own STORE: the same bytes */
	{
		void *p[EDGEQ_MAX_TENSORS] = { x, y };

		memset(y, 0, row);
		assert_int_equal(edgeq_kq_exec(&op, p), 0);
		assert_memory_equal(y, want, row);
	}
	/* 11 blocks: refused on the device, the row untouched */
	memset(y, 0x5a, row);
	op.shape[0] = n - 32;
	op.tensors[0].length = (n - 32) * 4;
	op.tensors[1].length = edgeq_row_size(EDGEQ_TYPE_Q8_0, n - 32);
	tensors_of(&a, &op, t);
	assert_int_equal(edgeq_backend_run(vk, &op, &t, &st, 1), 0);
	assert_int_equal(st, -EINVAL);
	for (size_t i = 0; i < row; i++)
		assert_int_equal(y[i], 0x5a);
	/* a row not whole blocks: refused by both */
	op.shape[0] = 40;
	op.tensors[0].length = 160;
	tensors_of(&a, &op, t);
	assert_int_equal(edgeq_backend_run(vk, &op, &t, &st, 1), 0);
	assert_int_equal(st, -EINVAL);
	{
		void *p[EDGEQ_MAX_TENSORS] = { x, y };

		assert_int_equal(edgeq_kq_exec(&op, p), -EINVAL);
	}
	arena_fini(&a);
}

static void test_chain(void **state)
{
	const uint64_t n = 256;
	struct edgeq_op_desc op[5];
	struct arena a;
	const unsigned int out[5] = { 2, 2, 0, 2, 2 };
	size_t wrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, n);
	uint64_t xo, no, yo, go;
	float *wf = malloc(n * n * 4);

	NEED_VK();
	arena_init(&a, n * wrow + 16 * n * 4, 15);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_RMSNORM, 1);
	op[0].shape[0] = n;
	op[0].param[0] = bitsf(1e-6f);
	fill(arena_take(&a, &op[0], 0, n * 4), n, 31);
	xo = op[0].tensors[0].offset;
	fill(arena_take(&a, &op[0], 1, n * 4), n, 32);
	arena_take(&a, &op[0], 2, n * 4);
	no = op[0].tensors[2].offset;
	edgeq_op_desc_init(&op[1], EDGEQ_OP_MATVEC, 2);
	op[1].dtype = EDGEQ_DTYPE_Q8_0;
	op[1].shape[0] = n;
	op[1].shape[1] = n;
	fill(wf, n * n, 33);
	edgeq_type_traits(EDGEQ_TYPE_Q8_0)
		->from_float(wf, arena_take(&a, &op[1], 0, n * wrow),
			     (int64_t)(n * n));
	edgeq_op_desc_tensor(&op[1], 1, 1, no, n * 4);
	arena_take(&a, &op[1], 2, n * 4);
	yo = op[1].tensors[2].offset;
	edgeq_op_desc_init(&op[2], EDGEQ_OP_ROPE, 3);
	op[2].shape[0] = 4;
	op[2].shape[1] = n / 4;
	op[2].param[0] = 5;
	edgeq_op_desc_tensor(&op[2], 0, 1, yo, n * 4);
	edgeq_op_desc_init(&op[3], EDGEQ_OP_SILU_MUL, 4);
	op[3].shape[0] = n;
	edgeq_op_desc_tensor(&op[3], 0, 1, yo, n * 4);
	edgeq_op_desc_tensor(&op[3], 1, 1, no, n * 4);
	arena_take(&a, &op[3], 2, n * 4);
	go = op[3].tensors[2].offset;
	edgeq_op_desc_init(&op[4], EDGEQ_OP_ADD, 5);
	op[4].shape[0] = n;
	edgeq_op_desc_tensor(&op[4], 0, 1, go, n * 4);
	edgeq_op_desc_tensor(&op[4], 1, 1, xo, n * 4);
	edgeq_op_desc_tensor(&op[4], 2, 1, xo, n * 4); /* the residual */
	print_message("chain of 5: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 5, out, 1e-5, 1e-4, NULL));
	arena_fini(&a);
	free(wf);
}

/*
 * Matrix products of one input in one chain (q, k and v of a layer) share
 * its quantization: one quantizing dispatch for the three, and the
 * results as each alone. An op that writes over that input in between
 * makes the next one quantize again (it must read the new values).
 */
static void test_shared_act(void **state)
{
	const uint64_t n = 256, rows[5] = { 40, 24, 24, 256, 24 };
	size_t wrow = edgeq_row_size(EDGEQ_TYPE_Q4_0, n);
	struct edgeq_op_desc op[5];
	struct edgeq_backend_info i0, i1;
	const unsigned int out[5] = { 2, 2, 2, 2, 2 };
	struct arena a;
	float *wf = malloc(n * n * 4);
	uint64_t xo;

	NEED_VK();
	arena_init(&a, 5 * n * wrow + 16 * n * 4, 16);
	for (int i = 0; i < 5; i++) {
		edgeq_op_desc_init(&op[i], EDGEQ_OP_MATVEC, (uint64_t)i + 1);
		op[i].dtype = EDGEQ_DTYPE_Q4_0;
		op[i].shape[0] = rows[i];
		op[i].shape[1] = n;
		fill(wf, rows[i] * n, 40u + (unsigned int)i);
		edgeq_type_traits(EDGEQ_TYPE_Q4_0)
			->from_float(wf,
				     arena_take(&a, &op[i], 0, rows[i] * wrow),
				     (int64_t)(rows[i] * n));
		if (!i)
			fill(arena_take(&a, &op[i], 1, n * 4), n, 39);
		xo = op[0].tensors[1].offset;
		edgeq_op_desc_tensor(&op[i], 1, 1, xo, n * 4);
		if (i == 3) /* x = W3 x: the input overwritten */
			edgeq_op_desc_tensor(&op[i], 2, 1, xo, n * 4);
		else
			arena_take(&a, &op[i], 2, rows[i] * 4);
	}
	edgeq_backend_get_info(vk, &i0);
	print_message("shared activations: max |d| = %.3g\n",
		      run_compare(vk, &a, op, 5, out, 1e-3, 1e-3, NULL));
	edgeq_backend_get_info(vk, &i1);
	/* ops 0-2 share one quantization, op 3 shares it too (it reads x
	 * before writing it), op 4 quantizes the new x: 5 + 2 dispatches */
	assert_int_equal(i1.dispatches - i0.dispatches, 7);
	arena_fini(&a);
	free(wf);
}

/* A product of @type, rows x n, of the nb rows at input offset @xo. */
static void fused_product(struct arena *a, struct edgeq_op_desc *op,
			  uint64_t key, uint32_t type, uint64_t rows,
			  uint64_t n, uint64_t nb, uint64_t xo, float *wf)
{
	size_t wrow = edgeq_row_size(type, (int64_t)n);

	edgeq_op_desc_init(op, nb > 1 ? EDGEQ_OP_MATMUL : EDGEQ_OP_MATVEC, key);
	op->dtype = type;
	op->shape[0] = rows;
	op->shape[1] = n;
	if (nb > 1)
		op->shape[2] = nb;
	fill(wf, rows * n, (unsigned int)(key * 7));
	edgeq_type_traits(type)->from_float(
		wf, arena_take(a, op, 0, rows * wrow), (int64_t)(rows * n));
	edgeq_op_desc_tensor(op, 1, 1, xo, nb * n * 4);
	arena_take(a, op, 2, nb * rows * 4);
}

static void fused_rope(struct arena *a, struct edgeq_op_desc *op, uint64_t key,
		       uint64_t heads, uint64_t pos)
{
	edgeq_op_desc_init(op, EDGEQ_OP_ROPE, key);
	op->shape[0] = heads;
	op->shape[1] = 64;
	op->param[0] = pos;
	op->param[1] = bitsf(10000.0f);
	fill(arena_take(a, op, 0, heads * 64 * 4), heads * 64,
	     (unsigned int)key);
}

/* STORE F32 of n floats from @src (an offset, or 0: a new filled row) */
static void fused_store(struct arena *a, struct edgeq_op_desc *op, uint64_t key,
			uint64_t n, uint64_t src)
{
	edgeq_op_desc_init(op, EDGEQ_OP_STORE, key);
	op->dtype = EDGEQ_DTYPE_F32;
	op->shape[0] = n;
	if (src)
		edgeq_op_desc_tensor(op, 0, 1, src, n * 4);
	else
		fill(arena_take(a, op, 0, n * 4), n, (unsigned int)key);
	arena_take(a, op, 1, n * 4);
}

/*
 * Independent neighbours share a dispatch (vk_ops.c fuse()): an RMSNORM
 * quantizes its rows for the product after it (Q8_0 and Q8_K), RoPE of q
 * and k with one table, a K row's STORE and its V row's; the results the
 * same bits as with EDGEQ_VK_FUSE=0 and the CPU's within the chain
 * bound, 4 dispatches fewer. Not fused: an in-place norm (its rows are
 * recomputed from the input), RoPE at another position (another table),
 * a STORE that reads the one before's output.
 */
static void test_fused(void **state)
{
	enum { N = 15 };
	const uint64_t n = 256;
	const unsigned int out[N] = { 2, 2, 2, 2, 2, 0, 0, 0,
				      1, 1, 1, 1, 2, 2, 2 };
	struct edgeq_backend_tensor(*t)[EDGEQ_MAX_TENSORS] =
		calloc(N, sizeof(*t));
	struct edgeq_op_desc op[N];
	struct edgeq_backend_info i0, i1;
	float *wf = malloc(40 * n * 4);
	char *start, *unfused;
	uint64_t d_off, d_on;
	struct arena a;
	int st[N];

	NEED_VK();
	arena_init(&a, 1 << 20, 41);
	/* 0-2: a norm of 2 rows, then two Q8_0-activation products of it */
	edgeq_op_desc_init(&op[0], EDGEQ_OP_RMSNORM, 1);
	op[0].ndims = 2;
	op[0].shape[0] = n;
	op[0].shape[1] = 2;
	op[0].param[0] = bitsf(1e-6f);
	fill(arena_take(&a, &op[0], 0, 2 * n * 4), 2 * n, 51);
	fill(arena_take(&a, &op[0], 1, n * 4), n, 52);
	arena_take(&a, &op[0], 2, 2 * n * 4);
	fused_product(&a, &op[1], 2, EDGEQ_TYPE_Q8_0, 40, n, 2,
		      op[0].tensors[2].offset, wf);
	fused_product(&a, &op[2], 3, EDGEQ_TYPE_Q4_0, 24, n, 2,
		      op[0].tensors[2].offset, wf);
	/* 3-4: a norm of one row, then a Q8_K-activation product */
	edgeq_op_desc_init(&op[3], EDGEQ_OP_RMSNORM, 4);
	op[3].shape[0] = n;
	op[3].param[0] = bitsf(1e-5f);
	fill(arena_take(&a, &op[3], 0, n * 4), n, 53);
	op[3].tensors[1] = op[0].tensors[1];
	arena_take(&a, &op[3], 2, n * 4);
	fused_product(&a, &op[4], 5, EDGEQ_TYPE_Q4_K, 16, n, 1,
		      op[3].tensors[2].offset, wf);
	/* 5-7: q and k at position 9 (fused), another k at 10 (not) */
	fused_rope(&a, &op[5], 6, 8, 9);
	fused_rope(&a, &op[6], 7, 2, 9);
	fused_rope(&a, &op[7], 8, 2, 10);
	/* 8-9: a K and a V row (fused); 10-11: the second reads the first's
	 * output (not) */
	fused_store(&a, &op[8], 9, n, 0);
	fused_store(&a, &op[9], 10, n, 0);
	fused_store(&a, &op[10], 11, n, 0);
	fused_store(&a, &op[11], 12, n, op[10].tensors[1].offset);
	/* 12-13: a norm in place, then a product of it (not fused) */
	edgeq_op_desc_init(&op[12], EDGEQ_OP_RMSNORM, 13);
	op[12].shape[0] = n;
	op[12].param[0] = bitsf(1e-6f);
	fill(arena_take(&a, &op[12], 0, n * 4), n, 54);
	op[12].tensors[1] = op[0].tensors[1];
	op[12].tensors[2] = op[12].tensors[0];
	fused_product(&a, &op[13], 14, EDGEQ_TYPE_Q8_0, 8, n, 1,
		      op[12].tensors[0].offset, wf);
	/* 14: a product of the norm's output after another op (not fused:
	 * not the norm's neighbour) */
	fused_product(&a, &op[14], 15, EDGEQ_TYPE_Q8_0, 8, n, 1,
		      op[3].tensors[2].offset, wf);
	for (int i = 0; i < N; i++)
		tensors_of(&a, &op[i], t[i]);
	start = malloc(a.size);
	unfused = malloc(a.size);
	memcpy(start, a.map, a.size);

	setenv("EDGEQ_VK_FUSE", "0", 1);
	edgeq_backend_get_info(vk, &i0);
	assert_int_equal(edgeq_backend_run(vk, op, t, st, N), 0);
	edgeq_backend_get_info(vk, &i1);
	unsetenv("EDGEQ_VK_FUSE");
	d_off = i1.dispatches - i0.dispatches;
	memcpy(unfused, a.map, a.size);
	memcpy(a.map, start, a.size);
	print_message("fused chain: max |d| = %.3g\n",
		      run_compare(vk, &a, op, N, out, 1e-5, 1e-4, NULL));
	edgeq_backend_get_info(vk, &i0);
	d_on = i0.dispatches - i1.dispatches;
	/* unfused: 15 ops and 4 quantizing passes (op 2 shares op 1's) */
	assert_int_equal(d_off, 19);
	assert_int_equal(d_on, 15);
	assert_memory_equal(a.map, unfused, a.size);
	free(start);
	free(unfused);
	free(t);
	free(wf);
	arena_fini(&a);
}

/*
 * A chain over more mappings than the backend's first table holds (each
 * op's tensors in a memfd of their own), on both memory paths: the
 * buffers of the first ops must survive the table's growth.
 */
static void many_mappings(struct edgeq_backend *b)
{
	enum { N = 80 };
	static struct arena a[N];
	struct edgeq_backend_tensor(*t)[EDGEQ_MAX_TENSORS] =
		calloc(N, sizeof(*t));
	struct edgeq_op_desc *op = calloc(N, sizeof(*op));
	int st[N];

	for (int i = 0; i < N; i++) {
		float *x, *y;

		arena_init(&a[i], 4096, 1000 + (uint64_t)i);
		edgeq_op_desc_init(&op[i], EDGEQ_OP_ADD, (uint64_t)i);
		op[i].shape[0] = 16;
		x = arena_take(&a[i], &op[i], 0, 64);
		y = arena_take(&a[i], &op[i], 1, 64);
		arena_take(&a[i], &op[i], 2, 64);
		for (int j = 0; j < 16; j++) {
			x[j] = (float)i;
			y[j] = (float)j;
		}
		tensors_of(&a[i], &op[i], t[i]);
	}
	assert_int_equal(edgeq_backend_run(b, op, t, st, N), 0);
	for (int i = 0; i < N; i++) {
		const float *z = (const float *)((char *)a[i].map +
						 op[i].tensors[2].offset);

		assert_int_equal(st[i], 0);
		for (int j = 0; j < 16; j++)
			assert_true(z[j] == (float)(i + j));
		edgeq_backend_forget(b, a[i].id);
		arena_fini(&a[i]);
	}
	free(t);
	free(op);
}

/* A chain that outlasts the device wait is waited for, not abandoned
 * with the device still using the caller's memory; and counted. */
static void test_slow_chain(void **state)
{
	struct edgeq_backend *s;
	struct edgeq_backend_info info;

	NEED_VK();
	setenv("EDGEQ_VK_TIMEOUT_MS", "0", 1);
	assert_int_equal(edgeq_backend_open("vulkan", NULL, &s), 0);
	many_mappings(s);
	unsetenv("EDGEQ_VK_TIMEOUT_MS");
	/* every chain outlasts a 0 ms wait, whether the driver ran it in
	 * vkQueueSubmit or after (lavapipe does either) */
	edgeq_backend_get_info(s, &info);
	assert_true(info.slow_chains >= 1);
	edgeq_backend_free(s);
	/* and none of the shared backend's outlasted the default 60 s */
	many_mappings(vk);
	edgeq_backend_get_info(vk, &info);
	assert_int_equal(info.slow_chains, 0);
}

static void test_many_mappings(void **state)
{
	struct edgeq_backend *s;

	NEED_VK();
	many_mappings(vk);
	setenv("EDGEQ_VK_IMPORT", "0", 1);
	assert_int_equal(edgeq_backend_open("vulkan", NULL, &s), 0);
	unsetenv("EDGEQ_VK_IMPORT");
	many_mappings(s);
	edgeq_backend_free(s);
}

/* One op on a small arena, through backend @b: its status. */
static int run_one(struct edgeq_backend *b, struct arena *a,
		   struct edgeq_op_desc *op)
{
	struct edgeq_backend_tensor t[1][EDGEQ_MAX_TENSORS];
	int st, ret;

	tensors_of(a, op, t[0]);
	ret = edgeq_backend_run(b, op, t, &st, 1);
	return ret ? ret : st;
}

static void test_errors(void **state)
{
	struct edgeq_backend_tensor t[3][EDGEQ_MAX_TENSORS];
	struct edgeq_op_desc op[3];
	struct arena a;
	int st[3];

	NEED_VK();
	arena_init(&a, 65536, 16);
	edgeq_op_desc_init(&op[0], EDGEQ_OP_MATVEC, 1);
	op[0].dtype = EDGEQ_DTYPE_BF16; /* no shader for it */
	op[0].shape[0] = 4;
	op[0].shape[1] = 32;
	arena_take(&a, &op[0], 0, 4 * 32 * 2);
	arena_take(&a, &op[0], 1, 32 * 4);
	arena_take(&a, &op[0], 2, 4 * 4);
	assert_int_equal(run_one(vk, &a, &op[0]), -EOPNOTSUPP);
	op[0].dtype = EDGEQ_DTYPE_F16;
	op[0].shape[0] = 9; /* 9 rows do not fit */
	assert_int_equal(run_one(vk, &a, &op[0]), -EINVAL);
	op[0].shape[0] = 4;
	op[0].tensors[2].offset += 2; /* not a whole float */
	assert_int_equal(run_one(vk, &a, &op[0]), -EINVAL);
	op[0].tensors[2].offset -= 2;
	op[0].tensors[1].offset = a.size; /* outside the mapping */
	assert_int_equal(run_one(vk, &a, &op[0]), -EINVAL);
	op[0].tensors[1].offset = 0;
	edgeq_op_desc_init(&op[1], EDGEQ_OP_ATTENTION, 2);
	op[1].dtype = EDGEQ_DTYPE_F32;
	op[1].shape[0] = 3; /* not a multiple of kv heads */
	op[1].shape[1] = 2;
	op[1].shape[2] = 4;
	op[1].shape[3] = 1;
	for (int i = 0; i < 4; i++)
		edgeq_op_desc_tensor(&op[1], (unsigned int)i, 1, 0, 64);
	assert_int_equal(run_one(vk, &a, &op[1]), -EINVAL);
	op[1].ndims = 3; /* arity */
	assert_int_equal(run_one(vk, &a, &op[1]), -EINVAL);
	/* a chain stops at its first bad op */
	edgeq_op_desc_init(&op[0], EDGEQ_OP_NOP, 1);
	edgeq_op_desc_init(&op[2], EDGEQ_OP_NOP, 3);
	for (int i = 0; i < 3; i++)
		tensors_of(&a, &op[i], t[i]);
	assert_int_equal(edgeq_backend_run(vk, op, t, st, 3), 0);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], -EINVAL);
	assert_int_equal(st[2], -ECANCELED);
	arena_fini(&a);
}

/*
 * The staging path (EDGEQ_VK_IMPORT=0): results as with import, device
 * bytes counted and released; a weight is copied once per mapping id and
 * a forgotten id is copied again.
 */
static void test_staging(void **state)
{
	struct edgeq_backend *s;
	struct edgeq_backend_info info;
	struct edgeq_op_desc op;
	struct arena a;
	float *w, *x, *y;

	NEED_VK();
	setenv("EDGEQ_VK_IMPORT", "0", 1);
	assert_int_equal(edgeq_backend_open("vulkan", NULL, &s), 0);
	unsetenv("EDGEQ_VK_IMPORT");
	edgeq_backend_get_info(s, &info);
	assert_int_equal(info.mem, EDGEQ_BACKEND_MEM_STAGING);
	arena_init(&a, 65536, 17);
	edgeq_op_desc_init(&op, EDGEQ_OP_MATVEC, 1);
	op.dtype = EDGEQ_DTYPE_F32;
	op.shape[0] = 2;
	op.shape[1] = 32;
	w = arena_take(&a, &op, 0, 2 * 32 * 4);
	x = arena_take(&a, &op, 1, 32 * 4);
	y = arena_take(&a, &op, 2, 2 * 4);
	for (int j = 0; j < 32; j++) {
		w[j] = 1;
		w[32 + j] = 2;
		x[j] = (float)j;
	}
	assert_int_equal(run_one(s, &a, &op), 0);
	assert_true(y[0] == 496 && y[1] == 992);
	edgeq_backend_get_info(s, &info);
	assert_true(info.device_bytes >= a.size);
	/* same identity: the device copy of the weight is used */
	w[0] = 1001;
	x[0] = 1;
	assert_int_equal(run_one(s, &a, &op), 0);
	assert_true(y[0] == 497);
	/* forgotten: copied again */
	edgeq_backend_forget(s, a.id);
	assert_int_equal(run_one(s, &a, &op), 0);
	assert_true(y[0] == 1497);
	assert_true(edgeq_backend_release(s, UINT64_MAX) >= a.size);
	arena_fini(&a);
	edgeq_backend_free(s);
	/* the import path writes in place, the same numbers */
	if (vk) {
		edgeq_backend_get_info(vk, &info);
		print_message("default path on %s: %s\n", info.device,
			      edgeq_backend_mem_name(info.mem));
	}
}

/*
 * The float-only shaders (devices without float64: Mali, V3D), forced with
 * EDGEQ_VK_FLOAT64=0: within the bounds above, not bit for bit.
 */
static void test_float_only(void **state)
{
	struct edgeq_backend *keep = vk;

	NEED_VK();
	setenv("EDGEQ_VK_FLOAT64", "0", 1);
	assert_int_equal(edgeq_backend_open("vulkan", NULL, &vk), 0);
	unsetenv("EDGEQ_VK_FLOAT64");
	check_matmul(EDGEQ_DTYPE_F16, 67, 512, 1);
	check_matmul(EDGEQ_DTYPE_Q4_0, 67, 2304, 1);
	check_matmul(EDGEQ_DTYPE_Q4_K, 40, 512, 4);
	check_matmul(EDGEQ_DTYPE_Q6_K, 17, 256, 2);
	check_attention(EDGEQ_DTYPE_Q8_0, 8, 4, 64, 129, 0);
	test_rmsnorm(state);
	edgeq_backend_free(vk);
	vk = keep;
}

/*
 * The CUDA backend (built where nvcc is): without a driver or a GPU it
 * lists none and opens none, -ENODEV, which is all this machine can show;
 * with one, its ops against the CPU's (test_vulkan's checks on the CUDA
 * backend, the ops it has: products of F32, F16, Q8_0 and Q4_0 rows,
 * RMSNORM, ROPE, ROPE_FREQ, ADD, SILU_MUL, STORE) and the ops it lacks
 * refused, for the agent's CPU kernels.
 */
static void test_cuda(void **state)
{
	struct edgeq_backend_device d[4];
	struct edgeq_backend *cu, *keep = vk;
	struct edgeq_op_desc op[3];
	struct edgeq_backend_tensor t[1][EDGEQ_MAX_TENSORS];
	const unsigned int out[3] = { 2, 2, 1 };
	struct arena a;
	int n, ret, st[1];

	if (!edgeq_backend_built("cuda")) {
		print_message(
			"skip: built without the CUDA backend (no nvcc)\n");
		skip();
	}
	n = edgeq_backend_list("cuda", d, 4);
	ret = edgeq_backend_open("cuda", NULL, &cu);
	if (n < 0) {
		assert_int_equal(n, -ENODEV);
		assert_int_equal(ret, -ENODEV);
		print_message("cuda: no driver or GPU here (-ENODEV, as it "
			      "should be); the kernels are not run\n");
		return;
	}
	assert_int_equal(ret, 0);
	print_message("cuda device 0: %s (%s, compute %u.%u)\n", d[0].name,
		      d[0].type, d[0].api_version / 10, d[0].api_version % 10);
	vk = cu;
	check_matmul(EDGEQ_DTYPE_F32, 67, 512, 1);
	check_matmul(EDGEQ_DTYPE_F16, 67, 2304, 1);
	check_matmul(EDGEQ_DTYPE_Q8_0, 97, 512, 1);
	check_matmul(EDGEQ_DTYPE_Q4_0, 67, 2304, 1);
	test_rmsnorm(state);
	test_rope(state);
	test_rope_freq(state);
	arena_init(&a, 8 * 1000 * 4 + 8192, 21);
	for (int i = 0; i < 2; i++) {
		edgeq_op_desc_init(&op[i], i ? EDGEQ_OP_SILU_MUL : EDGEQ_OP_ADD,
				   1);
		op[i].shape[0] = 1000;
		fill(arena_take(&a, &op[i], 0, 4000), 1000, 3 + i);
		fill(arena_take(&a, &op[i], 1, 4000), 1000, 13 + i);
		arena_take(&a, &op[i], 2, 4000);
	}
	edgeq_op_desc_init(&op[2], EDGEQ_OP_STORE, 1);
	op[2].dtype = EDGEQ_DTYPE_F16;
	op[2].shape[0] = 999; /* odd rows too */
	op[2].tensors[0] = op[1].tensors[0];
	op[2].tensors[0].length = 999 * 4;
	arena_take(&a, &op[2], 1, 999 * 2);
	print_message("cuda add, silu_mul, store: max |d| = %.3g\n",
		      run_compare(cu, &a, op, 3, out, 0, 1e-6, NULL));
	/* attention is the agent's CPU kernels' */
	edgeq_op_desc_init(&op[0], EDGEQ_OP_ATTENTION, 1);
	op[0].dtype = EDGEQ_DTYPE_F16;
	assert_false(edgeq_backend_supports(cu, &op[0]));
	op[0].shape[0] = op[0].shape[1] = op[0].shape[3] = 1;
	op[0].shape[2] = 32;
	for (int i = 0; i < 4; i++)
		edgeq_op_desc_tensor(&op[0], (unsigned int)i, 1, 0, 128);
	tensors_of(&a, &op[0], t[0]);
	assert_int_equal(edgeq_backend_run(cu, op, t, st, 1), 0);
	assert_int_equal(st[0], -EOPNOTSUPP);
	arena_fini(&a);
	vk = keep;
	edgeq_backend_free(cu);
}

static void test_open_and_list(void **state)
{
	struct edgeq_backend_device d[4];
	struct edgeq_backend *b;
	struct edgeq_backend_info info;
	int n;

	assert_int_equal(edgeq_backend_list("tpu", d, 4), -EINVAL);
	assert_int_equal(edgeq_backend_open("tpu", NULL, &b), -EINVAL);
	if (!edgeq_backend_built("cuda"))
		assert_int_equal(edgeq_backend_list("cuda", d, 4),
				 -EPROTONOSUPPORT);
	assert_int_equal(edgeq_backend_list("cpu", d, 4), 1);
	assert_int_equal(edgeq_backend_open("cpu", "1", &b), -ENOENT);
	assert_int_equal(edgeq_backend_open("cpu", NULL, &b), 0);
	edgeq_backend_get_info(b, &info);
	assert_string_equal(info.backend, "cpu");
	assert_int_equal(info.mem, EDGEQ_BACKEND_MEM_HOST);
	edgeq_backend_free(b);
	edgeq_backend_free(NULL);
	NEED_VK();
	n = edgeq_backend_list("vulkan", d, 4);
	assert_true(n >= 1);
	print_message("vulkan device 0: %s (%s), host import %d\n", d[0].name,
		      d[0].type, d[0].host_import);
	assert_int_equal(edgeq_backend_open("vulkan", "99", &b), -ENOENT);
	assert_int_equal(edgeq_backend_open("vulkan", "no-such-gpu", &b),
			 -ENOENT);
	assert_int_equal(edgeq_backend_open("vulkan", "0", &b), 0);
	edgeq_backend_free(b);
	assert_int_equal(edgeq_backend_open("vulkan", d[0].name, &b), 0);
	edgeq_backend_free(b);
}

/* The CPU backend is edgeq_kq_exec() itself: the same bits. */
static void test_cpu_backend(void **state)
{
	struct edgeq_backend *c;
	struct edgeq_op_desc op;
	struct arena a;
	const unsigned int out = 2;

	assert_int_equal(edgeq_backend_open("cpu", NULL, &c), 0);
	arena_init(&a, 65536, 18);
	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 1);
	op.shape[0] = 100;
	fill(arena_take(&a, &op, 0, 400), 100, 1);
	fill(arena_take(&a, &op, 1, 400), 100, 2);
	arena_take(&a, &op, 2, 400);
	assert_true(run_compare(c, &a, &op, 1, &out, 0, 0, NULL) == 0);
	arena_fini(&a);
	edgeq_backend_free(c);
}

static int setup(void **state)
{
	int ret;

	if (!edgeq_backend_built("vulkan")) {
		vk_why = "skip: built without the Vulkan backend "
			 "(libvulkan-dev and glslc missing)";
		return 0;
	}
	ret = edgeq_backend_open("vulkan", NULL, &vk);
	if (ret) {
		static char why[160];

		snprintf(why, sizeof(why), "skip: no Vulkan device: %s",
			 strerror(-ret));
		vk_why = why;
		vk = NULL;
		/* CI installs lavapipe: there, no device is a failure */
		if (getenv("CI") && !strcmp(getenv("CI"), "true")) {
			fprintf(stderr, "CI=true but %s\n", why);
			return -1;
		}
	}
	return 0;
}

static int teardown(void **state)
{
	edgeq_backend_free(vk);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_and_list),
		cmocka_unit_test(test_cuda),
		cmocka_unit_test(test_cpu_backend),
		cmocka_unit_test(test_matvec_types),
		cmocka_unit_test(test_matmul_types),
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_rope),
		cmocka_unit_test(test_rope_freq),
		cmocka_unit_test(test_softmax_ew),
		cmocka_unit_test(test_norm_rows_gelu),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_store_q8_0),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_shared_act),
		cmocka_unit_test(test_fused),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_staging),
		cmocka_unit_test(test_float_only),
		cmocka_unit_test(test_many_mappings),
		cmocka_unit_test(test_slow_chain),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
