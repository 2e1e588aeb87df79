/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU kernels: GGUF tensor types, their block layouts (bit-exact with
 * ggml-common.h), and the per-ISA ops table chosen once at start-up.
 *
 * Contract between the kernels and the decoder:
 *  - A weight matrix W is rows x cols, row-major, each row stored as
 *    cols / blck_size(type) blocks of type_size(type) bytes
 *    (edgeq_row_size(type, cols) bytes per row).
 *  - Activations are quantized once per matvec into the weight type's
 *    vec_dot_type (Q8_0 for Q4_0/Q8_0, Q8_K for Q4_K/Q6_K, F32 for float
 *    types) with ops->quantize_act, then ops->vec_dot[type] gives one output,
 *    ops->matvec a range of rows, ops->matmul a range of rows for a batch.
 *  - Canonical reduction order (Documentation/kernels.rst): every
 *    implementation (scalar, AVX2, NEON) adds partial products in the same
 *    order with the same roundings, so results are bit-identical across ISAs
 *    and thread counts; the scalar implementation is the oracle and the tests
 *    compare exactly. Build with -ffp-contract=off (the Makefile does) so the
 *    compiler never fuses a multiply-add on its own.
 */
#ifndef EDGEQ_KERNELS_H
#define EDGEQ_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* GGUF/ggml type ids (the numbers stored in the file). */
enum edgeq_type {
	EDGEQ_TYPE_F32 = 0,
	EDGEQ_TYPE_F16 = 1,
	EDGEQ_TYPE_Q4_0 = 2,
	EDGEQ_TYPE_Q4_1 = 3,
	EDGEQ_TYPE_Q5_0 = 6,
	EDGEQ_TYPE_Q5_1 = 7,
	EDGEQ_TYPE_Q8_0 = 8,
	EDGEQ_TYPE_Q8_1 = 9,
	EDGEQ_TYPE_Q2_K = 10,
	EDGEQ_TYPE_Q3_K = 11,
	EDGEQ_TYPE_Q4_K = 12,
	EDGEQ_TYPE_Q5_K = 13,
	EDGEQ_TYPE_Q6_K = 14,
	EDGEQ_TYPE_Q8_K = 15,
	EDGEQ_TYPE_IQ4_NL = 20,
	EDGEQ_TYPE_IQ4_XS = 23,
	EDGEQ_TYPE_BF16 = 30,
	EDGEQ_TYPE_COUNT = 40,
};

#define EDGEQ_QK4_0 32
#define EDGEQ_QK4_1 32
#define EDGEQ_QK5_0 32
#define EDGEQ_QK5_1 32
#define EDGEQ_QK4_NL 32
#define EDGEQ_QK8_0 32
#define EDGEQ_QK_K 256
#define EDGEQ_K_SCALE_SIZE 12
/* Most queries one attn_scores_f16_t call takes. */
#define EDGEQ_ATTN_TQ 64

/* Block layouts; fp16 values are stored as raw uint16_t. */
struct edgeq_block_q4_0 {
	uint16_t d; /* scale (fp16) */
	uint8_t qs[EDGEQ_QK4_0 /
		   2]; /* nibbles: low = elements 0..15, high = 16..31 */
};
struct edgeq_block_q8_0 {
	uint16_t d; /* scale (fp16) */
	int8_t qs[EDGEQ_QK8_0];
};
/* value = q * d + m; nibbles as Q4_0 */
struct edgeq_block_q4_1 {
	uint16_t d, m; /* scale and min (fp16) */
	uint8_t qs[EDGEQ_QK4_1 / 2];
};
/* value = (q - 16) * d; q = nibble | bit j (j + 16 for the high nibbles) of
 * qh (little-endian) << 4 */
struct edgeq_block_q5_0 {
	uint16_t d;
	uint8_t qh[4];
	uint8_t qs[EDGEQ_QK5_0 / 2];
};
/* value = q * d + m, q as Q5_0's */
struct edgeq_block_q5_1 {
	uint16_t d, m;
	uint8_t qh[4];
	uint8_t qs[EDGEQ_QK5_1 / 2];
};
/* value = edgeq_kvalues_iq4nl[nibble] * d; nibbles as Q4_0 */
struct edgeq_block_iq4_nl {
	uint16_t d;
	uint8_t qs[EDGEQ_QK4_NL / 2];
};
/*
 * Q2_K and Q3_K element e = 128 n + 32 j + 16 h + l (n < 2, j < 4, h < 2,
 * l < 16) of sub-block e / 16 takes bits 2j..2j+1 of qs[32 n + 16 h + l];
 * Q3_K's third bit is bit 4n + j of hmask[16 h + l] (set: q, clear: q - 4).
 */
struct edgeq_block_q2_K {
	uint8_t scales[EDGEQ_QK_K / 16]; /* low nibble scale, high nibble min */
	uint8_t qs[EDGEQ_QK_K / 4];
	uint16_t d, dmin;
};
struct edgeq_block_q3_K {
	uint8_t hmask[EDGEQ_QK_K / 8];
	uint8_t qs[EDGEQ_QK_K / 4];
	uint8_t scales[12]; /* 16 six-bit scales, value s - 32 */
	uint16_t d;
};
/* Q4_K plus a fifth bit: element 32 j + l of sub-block j has bit j of
 * qh[l] as its bit 4 */
struct edgeq_block_q5_K {
	uint16_t d, dmin;
	uint8_t scales[EDGEQ_K_SCALE_SIZE];
	uint8_t qh[EDGEQ_QK_K / 8];
	uint8_t qs[EDGEQ_QK_K / 2];
};
/* 8 sub-blocks of 32, each as an IQ4_NL block's nibbles, with a six-bit
 * scale ls (value d * (ls - 32)): low 4 bits in scales_l, high 2 in
 * scales_h */
struct edgeq_block_iq4_xs {
	uint16_t d;
	uint16_t scales_h;
	uint8_t scales_l[EDGEQ_QK_K / 64];
	uint8_t qs[EDGEQ_QK_K / 2];
};
struct edgeq_block_q4_K {
	uint16_t d;    /* super-block scale for the scales (fp16) */
	uint16_t dmin; /* super-block scale for the mins (fp16) */
	uint8_t scales[EDGEQ_K_SCALE_SIZE]; /* 8 scales + 8 mins, 6 bits each */
	uint8_t qs[EDGEQ_QK_K / 2];	    /* 4-bit quants */
};
struct edgeq_block_q6_K {
	uint8_t ql[EDGEQ_QK_K / 2];	/* low 4 bits */
	uint8_t qh[EDGEQ_QK_K / 4];	/* high 2 bits */
	int8_t scales[EDGEQ_QK_K / 16]; /* 8-bit scales */
	uint16_t d;			/* super-block scale (fp16) */
};
struct edgeq_block_q8_K {
	float d; /* activation block for K-quant dots */
	int8_t qs[EDGEQ_QK_K];
	int16_t bsums[EDGEQ_QK_K / 16]; /* sums of groups of 16 */
};

_Static_assert(sizeof(struct edgeq_block_q4_0) == 18, "q4_0 layout");
_Static_assert(sizeof(struct edgeq_block_q8_0) == 34, "q8_0 layout");
_Static_assert(sizeof(struct edgeq_block_q4_K) == 144, "q4_K layout");
_Static_assert(sizeof(struct edgeq_block_q6_K) == 210, "q6_K layout");
_Static_assert(sizeof(struct edgeq_block_q8_K) == 292, "q8_K layout");
_Static_assert(sizeof(struct edgeq_block_q4_1) == 20, "q4_1 layout");
_Static_assert(sizeof(struct edgeq_block_q5_0) == 22, "q5_0 layout");
_Static_assert(sizeof(struct edgeq_block_q5_1) == 24, "q5_1 layout");
_Static_assert(sizeof(struct edgeq_block_iq4_nl) == 18, "iq4_nl layout");
_Static_assert(sizeof(struct edgeq_block_q2_K) == 84, "q2_K layout");
_Static_assert(sizeof(struct edgeq_block_q3_K) == 110, "q3_K layout");
_Static_assert(sizeof(struct edgeq_block_q5_K) == 176, "q5_K layout");
_Static_assert(sizeof(struct edgeq_block_iq4_xs) == 136, "iq4_xs layout");

/* The 16 IQ4_NL / IQ4_XS values (ggml's kvalues_iq4nl). */
extern const int8_t edgeq_kvalues_iq4nl[16];

/* ---- scalar conversions (exact IEEE round-to-nearest-even) ---- */

float edgeq_fp16_to_fp32(uint16_t h);
uint16_t edgeq_fp32_to_fp16(float f);
float edgeq_bf16_to_fp32(uint16_t h);
uint16_t edgeq_fp32_to_bf16(float f);
void edgeq_fp16_to_fp32_row(const uint16_t *x, float *y, int64_t n);
void edgeq_fp32_to_fp16_row(const float *x, uint16_t *y, int64_t n);

/* ---- type traits ---- */

/* y[0..n) = dequantized x (n a multiple of blck_size). */
typedef void (*edgeq_to_float_fn)(const void *x, float *y, int64_t n);
/*
 * Reference quantizer (ggml's reference algorithms; deterministic, used to
 * write GGUF files). Returns 0, -EINVAL when n is not a multiple of the block
 * size, -EDOM when x holds NaN/Inf (those blocks are written as zeros).
 */
typedef int (*edgeq_from_float_fn)(const float *x, void *y, int64_t n);

struct edgeq_type_traits {
	const char *name; /* "Q4_K", as llama.cpp names it */
	enum edgeq_type type;
	uint32_t blck_size;	      /* elements per block */
	uint32_t type_size;	      /* bytes per block */
	enum edgeq_type vec_dot_type; /* activation type its dots take */
	bool is_quantized;
	bool weight; /* a weight type the decoder supports */
	edgeq_to_float_fn to_float;
	edgeq_from_float_fn from_float; /* NULL for Q8_K (activations only) */
};

/*
 * Traits of a supported type (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K and the
 * activation type Q8_K); NULL for any other id, including types GGUF knows
 * but edgeq does not support (Q5_K, ...): refuse those by edgeq_type_name().
 */
const struct edgeq_type_traits *edgeq_type_traits(uint32_t type);
/* The ggml name of any GGUF type id ("Q5_K"), "unknown" when not a GGUF id. */
const char *edgeq_type_name(uint32_t type);
/* Parse a name ("q4_k" or "Q4_K"): 0, or -ENOENT (unknown), -EOPNOTSUPP
 * (a known GGUF type edgeq does not support). *type is set in both cases. */
int edgeq_type_from_name(const char *name, enum edgeq_type *type);
/* Bytes of a row of @n elements; 0 when @n is not a multiple of the block
 * size, the type is unsupported, or the size would overflow. */
size_t edgeq_row_size(uint32_t type, int64_t n);

/* ---- the ops table ---- */

/* Dot product of one weight row @w (type T, n elements) with an activation
 * row @a already in T's vec_dot_type. */
typedef float (*edgeq_vec_dot_fn)(int64_t n, const void *w, const void *a);

struct edgeq_kernel_ops {
	const char *name; /* "scalar", "avx2", "avx512", "neon", "neon-i8mm" */
	edgeq_vec_dot_fn vec_dot[EDGEQ_TYPE_COUNT]; /* by weight type */

	/*
	 * Quantize activations x[0..n) into @vdt (Q8_0, Q8_K, or F32 = copy).
	 * Returns 0, -EINVAL (bad n or type), or -EDOM when x holds NaN/Inf:
	 * the output is still written and the dots it feeds give NaN.
	 */
	int (*quantize_act)(enum edgeq_type vdt, const float *x, void *y,
			    int64_t n);

	/*
	 * y[r] = W[r] . a for r in [row0, row1). @w is the whole matrix (row r
	 * starts at r * row_size), @a one activation row in vec_dot_type, @y
	 * the whole output vector.
	 */
	void (*matvec)(enum edgeq_type type, const void *w, int64_t n,
		       int64_t row0, int64_t row1, const void *a, float *y);
	/*
	 * Batched: y[b * ldy + r] = W[r] . a_b for r in [row0, row1), b < nb,
	 * a_b at a + b * a_stride bytes. Each output equals vec_dot exactly.
	 */
	void (*matmul)(enum edgeq_type type, const void *w, int64_t n,
		       int64_t row0, int64_t row1, const void *a,
		       size_t a_stride, int64_t nb, float *y, int64_t ldy);

	/*
	 * Optional (NULL: none): matvec and matmul over weights repacked by
	 * edgeq_pack16() (the types with pack16[type] set), same arguments
	 * and the same outputs bit for bit as matvec and matmul over the file
	 * layout. @w is the packed matrix; rows are any range.
	 */
	bool pack16[EDGEQ_TYPE_COUNT];
	void (*matvec_packed)(enum edgeq_type type, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      float *y);
	void (*matmul_packed)(enum edgeq_type type, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      size_t a_stride, int64_t nb, float *y,
			      int64_t ldy);

	/* Attention helpers (n = head dimension, any n >= 1). */
	float (*dot_f32)(int64_t n, const float *x, const float *y);
	float (*dot_f16)(int64_t n, const uint16_t *k, const float *q);
	/* y[i] += a * v[i] (one fused multiply-add per element) */
	void (*axpy_f32)(int64_t n, float a, const float *v, float *y);
	void (*axpy_f16)(int64_t n, float a, const uint16_t *v, float *y);
	/* v: n / 32 Q8_0 blocks */
	void (*axpy_q8_0)(int64_t n, float a, const void *v, float *y);
	/*
	 * Optional (NULL: the caller loops over dot_f16 / axpy_f16): one query
	 * against nk keys of an F16 cache, key t at k + t * ks (elements):
	 * s[t] = dot_f16(hd, key t, q) * scale; and the weighted values
	 * out[j] = 0, then for t in order out[j] = fmaf(a[t], v_t[j], out[j]).
	 * Bit-identical to those loops.
	 */
	void (*attn_scores_f16)(int64_t hd, int64_t nk, const uint16_t *k,
				size_t ks, const float *q, float scale,
				float *s);
	void (*attn_av_f16)(int64_t hd, int64_t nk, const float *a,
			    const uint16_t *v, size_t vs, float *out);
	/*
	 * Optional (NULL: the caller loops over the two above): @nq queries
	 * that share the keys (a GQA group's heads), query i at q + i * qs,
	 * its scores at s + i * ss, its weights at a + i * as, its output at
	 * out + i * os; each query's values bit-identical to the single-query
	 * forms (the keys' conversions are shared, not the arithmetic).
	 */
	void (*attn_scores_f16_g)(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *q, size_t qs,
				  float scale, float *s, size_t ss);
	void (*attn_av_f16_g)(int64_t hd, int64_t nk, int nq, const float *a,
			      size_t as, const uint16_t *v, size_t vs,
			      float *out, size_t os);
	/*
	 * Optional (NULL: the caller uses the forms above): a prompt's
	 * queries that share a KV head (a GQA group's heads of several
	 * tokens, up to EDGEQ_ATTN_TQ), query i at qp[i] seeing the first
	 * nkq[i] <= nk keys, its scores at sp[i]. Keys go in tiles of 16,
	 * each converted and transposed once for all the queries, so one key
	 * per vector lane; each lane's arithmetic is dot_f16's canonical
	 * steps, so every score is attn_scores_f16's bit for bit.
	 */
	void (*attn_scores_f16_t)(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *const *qp,
				  const int64_t *nkq, float scale,
				  float *const *sp);
	/*
	 * Optional (NULL: the caller uses attn_av_f16_g): the weighted values
	 * of the same queries, query i's weights at ap[i] over its first
	 * nkq[i] keys, its output at op[i]; each value row converted once
	 * for all of them, every output attn_av_f16's bit for bit.
	 */
	void (*attn_av_f16_t)(int64_t hd, int64_t nk, const uint16_t *v,
			      size_t vs, int nq, const float *const *ap,
			      const int64_t *nkq, float *const *op);
	/*
	 * Optional (NULL: the caller loops over axpy_q8_0): the same for a
	 * Q8_0 cache, value row t of hd / 32 blocks at v + t * vs bytes:
	 * out = 0, then for t in order and each block b,
	 * out[32b + j] = fmaf(a[t] * d_tb, (float)q_tb[j], out[32b + j]),
	 * axpy_q8_0's steps; each row's integers converted once for all the
	 * queries.
	 */
	void (*attn_av_q8_0_t)(int64_t hd, int64_t nk, const void *v, size_t vs,
			       int nq, const float *const *ap,
			       const int64_t *nkq, float *const *op);
	/* Optional (NULL: edgeq_softmax_ref): the same values. */
	void (*softmax)(float *x, int64_t n);
	/* Optional (NULL: edgeq_silu_mul_ref): the same values. */
	void (*silu_mul)(float *o, const float *x, int64_t n);
	/* Optional (NULL: edgeq_gelu_mul_ref): the same values. */
	void (*gelu_mul)(float *o, const float *x, int64_t n);

	/* Read @bytes (a multiple of 128) as fast as loads go; returns a value
	 * that depends on the data (for memory bandwidth measurements). */
	uint64_t (*stream_read)(const void *p, size_t bytes);
};

/*
 * The best table for this CPU (AVX-512 VNNI, else AVX2+FMA+F16C on x86-64;
 * NEON with dotprod on aarch64; else scalar), chosen once;
 * EDGEQ_KERNELS=scalar|avx2|avx512|neon forces one (an unavailable choice
 * falls back to the best available). All give bit-identical results.
 */
const struct edgeq_kernel_ops *edgeq_kernels_select(void);
/* The scalar reference (the test oracle). */
const struct edgeq_kernel_ops *edgeq_kernels_scalar(void);
/* A table by name if this build and CPU can run it, else NULL. */
const struct edgeq_kernel_ops *edgeq_kernels_by_name(const char *name);

/*
 * Weights in groups of 16 interleaved rows (kernels/pack.c): the bytes a
 * rows x n matrix of @type takes packed (0: no packed form of @type, or a
 * bad shape), and the packing itself (@out that many bytes).
 */
size_t edgeq_pack16_size(enum edgeq_type type, int64_t rows, int64_t n);
void edgeq_pack16(enum edgeq_type type, const void *w, int64_t rows, int64_t n,
		  void *out);

/* ---- thread pool and parallel matvec/matmul (threadpool.c) ---- */

struct edgeq_error;
struct edgeq_threadpool;

/* A job: called once on each thread, ith in [0, nth), the caller is 0. */
typedef void (*edgeq_task_fn)(void *arg, int ith, int nth);

#define EDGEQ_THREADPOOL_MAX 256
#define EDGEQ_THREADPOOL_NO_PIN (1u << 0) /* leave threads unpinned */

/*
 * A pool of @nthreads threads counting the caller (nthreads - 1 workers).
 * Workers are pinned with hwloc, performance cores first, one per core
 * before SMT siblings; with fewer threads than CPUs, a thread that runs a
 * job is bound to thread 0's CPU on its first job (it stays bound).
 * Pinning is skipped silently when hwloc fails.
 * Returns 0 or -EINVAL (count out of 1..EDGEQ_THREADPOOL_MAX), -ENOMEM,
 * -EAGAIN (thread creation).
 */
int edgeq_threadpool_new(int nthreads, unsigned flags,
			 struct edgeq_threadpool **out,
			 struct edgeq_error *err);
void edgeq_threadpool_free(struct edgeq_threadpool *tp);
/* Run @fn on every thread and return when all are done (tp NULL: inline). */
void edgeq_threadpool_run(struct edgeq_threadpool *tp, edgeq_task_fn fn,
			  void *arg);
int edgeq_threadpool_size(const struct edgeq_threadpool *tp);
/* Threads bound to a CPU (0 when hwloc was unavailable or NO_PIN). */
int edgeq_threadpool_pinned(const struct edgeq_threadpool *tp);
/*
 * Profiles: with timing on, the caller's time between finishing its own
 * share of a job and the last worker finishing (imbalance and wake-up) is
 * added up; wait_ns reads the sum (0 for a NULL pool). Caller thread only.
 */
void edgeq_threadpool_timing(struct edgeq_threadpool *tp, bool on);
uint64_t edgeq_threadpool_wait_ns(const struct edgeq_threadpool *tp);

/*
 * y[0..rows) = W a, rows split across the pool; each row is computed whole
 * by one thread, so y is bit-identical for any thread count.
 */
void edgeq_par_matvec(struct edgeq_threadpool *tp,
		      const struct edgeq_kernel_ops *ops, enum edgeq_type type,
		      const void *w, int64_t n, int64_t rows, const void *a,
		      float *y);
/* Both above on weights packed by edgeq_pack16() (ops->pack16[type]). */
void edgeq_par_matmul_packed(struct edgeq_threadpool *tp,
			     const struct edgeq_kernel_ops *ops,
			     enum edgeq_type type, const void *w, int64_t n,
			     int64_t rows, const void *a, size_t a_stride,
			     int64_t nb, float *y, int64_t ldy);
/*
 * Several matrices of one input (a layer's q, k and v; gate and up) in
 * one dispatch: their rows end to end, handed out in chunks that never
 * cross from one matrix to the next, so the pool meets one barrier
 * instead of cnt and the small matrices' tails overlap the others'. Every
 * matrix takes activations a (a_stride bytes per row, nb rows) of the
 * same vec_dot type and n columns; each output row is the single
 * matrix's, bit for bit. nb == 1: matvec (ldy unused).
 */
struct edgeq_par_mat {
	enum edgeq_type type;
	const void *w;
	bool packed; /* w is edgeq_pack16()'s form */
	int64_t rows;
	float *y;
	int64_t ldy;
};
void edgeq_par_linear_n(struct edgeq_threadpool *tp,
			const struct edgeq_kernel_ops *ops, int cnt,
			const struct edgeq_par_mat *m, int64_t n, const void *a,
			size_t a_stride, int64_t nb);
/* y[b * ldy + r] = W[r] . a_b for a batch of nb activation rows (prefill);
 * each output equals the matvec one exactly. */
void edgeq_par_matmul(struct edgeq_threadpool *tp,
		      const struct edgeq_kernel_ops *ops, enum edgeq_type type,
		      const void *w, int64_t n, int64_t rows, const void *a,
		      size_t a_stride, int64_t nb, float *y, int64_t ldy);

/* ---- internal: shared by the ISA files ---- */

/*
 * exp(x) from float operations only (scalar.c), so SIMD lanes can give the
 * same bits on every ISA; and the attention softmax in place over x[0..n):
 * m = max x (NaN skipped); e_t = edgeq_expf(x_t - m); sum over 16 lanes
 * (e_t into lane t % 16, plain adds in t order), folded as
 * edgeq_reduce8(l[k] + l[k+8]); x_t = e_t * (1 / sum).
 */
#define EDGEQ_EXPF_LO (-104.0f) /* below: 0 */
#define EDGEQ_EXPF_HI 89.0f	/* above: infinity */
#define EDGEQ_EXPF_LOG2E 0x1.715476p+0f
#define EDGEQ_EXPF_SHIFT 0x1.8p23f
#define EDGEQ_EXPF_LN2_HI 0x1.62e4p-1f
#define EDGEQ_EXPF_LN2_LO 0x1.7f7d1cp-20f
#define EDGEQ_EXPF_C2 (1.0f / 2)
#define EDGEQ_EXPF_C3 (1.0f / 6)
#define EDGEQ_EXPF_C4 (1.0f / 24)
#define EDGEQ_EXPF_C5 (1.0f / 120)
#define EDGEQ_EXPF_C6 (1.0f / 720)
#define EDGEQ_EXPF_C7 (1.0f / 5040)
float edgeq_expf(float x);
void edgeq_softmax_ref(float *x, int64_t n);
/* The FFN's gate: o[i] = o[i] / (1 + edgeq_expf(-o[i])) * x[i] (SiLU of the
 * gate times the up projection), element by element in this order. */
void edgeq_silu_mul_ref(float *o, const float *x, int64_t n);
/* The GELU gate (Gemma): GELU's tanh form written as a sigmoid,
 * 0.5 g (1 + tanh u) = g / (1 + edgeq_expf(-2 u)) with
 * u = 0.7978845608 * (g + 0.044715 * g * g * g), times x[i], in this order
 * (so a device can compute the same bits; libm's tanhf cannot be ported). */
void edgeq_gelu_mul_ref(float *o, const float *x, int64_t n);

/*
 * The sum of squares of RMSNORM: x_i * x_i in double (exact: a float's
 * square has at most 48 significant bits) into lane i % 16, plain adds in
 * i order, the 16 lanes then folded in halves (l[k] += l[k + 8], + 4,
 * + 2, + 1). Sixteen chains instead of one: a 2048-wide row's serial sum
 * was 2048 dependent double adds (~2 us a norm, 1 % of a decode step);
 * a device reproduces it with 16 threads and a tree. Every agent's
 * RMSNORM (decoder, kq stand-in, Vulkan's float64 shader, CUDA) uses it.
 */
double edgeq_sumsq_ref(const float *x, int64_t n);

/* Scalar implementations every table may reuse (exact same results). */
uint64_t edgeq_stream_read_generic(const void *p, size_t bytes);
int edgeq_quantize_act_ref(enum edgeq_type vdt, const float *x, void *y,
			   int64_t n);
/*
 * A table's quantize_act from its Q8_0 and Q8_K row quantizers (each for
 * a whole number of blocks, the reference's bytes and return value): the
 * rest (other types, partial blocks) goes to the reference.
 */
int edgeq_quantize_act_with(
	enum edgeq_type vdt, const float *x, void *y, int64_t n,
	int (*q8_0)(const float *x, struct edgeq_block_q8_0 *y, int64_t n),
	int (*q8_K)(const float *x, struct edgeq_block_q8_K *y, int64_t n));
/*
 * At least @n bytes of the calling thread's scratch (the packed drivers'
 * prepared activations), grown as needed, freed when the thread exits;
 * NULL when it cannot grow (the caller prepares in pieces on its stack).
 */
void *edgeq_thread_scratch(size_t n);
/* A Q8_K block of zeros (an all-zero block, or a scale that overflows). */
static inline void edgeq_q8_K_zero(struct edgeq_block_q8_K *y)
{
	memset(y->qs, 0, sizeof(y->qs));
	memset(y->bsums, 0, sizeof(y->bsums));
	y->d = 0;
}
#if defined(__x86_64__)
/* x86/attn512.c: the attention helpers of the AVX-512 table. */
void edgeq_attn_scores_f16_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, const float *q, float scale,
				  float *s);
void edgeq_attn_av_f16_avx512(int64_t hd, int64_t nk, const float *a,
			      const uint16_t *v, size_t vs, float *out);
void edgeq_softmax_avx512(float *x, int64_t n);
void edgeq_silu_mul_avx512(float *o, const float *x, int64_t n);
void edgeq_gelu_mul_avx512(float *o, const float *x, int64_t n);
void edgeq_attn_scores_f16_g_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				    size_t ks, int nq, const float *q,
				    size_t qs, float scale, float *s,
				    size_t ss);
void edgeq_attn_av_f16_g_avx512(int64_t hd, int64_t nk, int nq, const float *a,
				size_t as, const uint16_t *v, size_t vs,
				float *out, size_t os);
void edgeq_attn_av_q8_0_t_avx512(int64_t hd, int64_t nk, const void *v,
				 size_t vs, int nq, const float *const *ap,
				 const int64_t *nkq, float *const *op);
void edgeq_attn_av_f16_t_avx512(int64_t hd, int64_t nk, const uint16_t *v,
				size_t vs, int nq, const float *const *ap,
				const int64_t *nkq, float *const *op);
void edgeq_attn_scores_f16_t_avx512(int64_t hd, int64_t nk, const uint16_t *k,
				    size_t ks, int nq, const float *const *qp,
				    const int64_t *nkq, float scale,
				    float *const *sp);
/* x86/avx512_pack.c: Q4_0/Q8_0/Q4_K/Q5_K/Q6_K on 16-row packed weights. */
void edgeq_avx512_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
				int64_t row0, int64_t row1, const void *a,
				float *y);
void edgeq_avx512_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
				int64_t row0, int64_t row1, const void *a,
				size_t a_stride, int64_t nb, float *y,
				int64_t ldy);
/* x86/avx2_pack.c: Q4_0/Q8_0/IQ4_NL on 16-row packed weights, with
 * AVX-VNNI where the CPU has it (x86/avx2_pack_vnni.c). */
void edgeq_avx2_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      float *y);
void edgeq_avx2_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      size_t a_stride, int64_t nb, float *y,
			      int64_t ldy);
/* Whether those take AVX-VNNI: @on where the CPU has it (the default);
 * returns the state now (tests run both forms). */
bool edgeq_avx2_pack_vnni(bool on);
/* The same values as edgeq_quantize_act_ref, with AVX2 (x86/quant_act.c). */
int edgeq_quantize_act_avx2(enum edgeq_type vdt, const float *x, void *y,
			    int64_t n);
/* And with AVX-512, 16 Q8_0 blocks' scales at once (x86/avx512_quant.c). */
int edgeq_quantize_act_avx512(enum edgeq_type vdt, const float *x, void *y,
			      int64_t n);
#endif
#if defined(__aarch64__)
/* The same values as edgeq_quantize_act_ref, with NEON (arm64/neon_quant.c). */
int edgeq_quantize_act_neon(enum edgeq_type vdt, const float *x, void *y,
			    int64_t n);
/* arm64/neon_pack.c: Q4_0/Q8_0/Q4_K/Q5_K/Q6_K/Q3_K/Q2_K on 16-row packed
 * weights; the i8mm form takes Q4_0/Q8_0 prompts by token pairs (usmmla). */
void edgeq_neon_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      float *y);
void edgeq_neon_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      size_t a_stride, int64_t nb, float *y,
			      int64_t ldy);
void edgeq_neon_i8mm_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
				   int64_t row0, int64_t row1, const void *a,
				   size_t a_stride, int64_t nb, float *y,
				   int64_t ldy);
/* arm64/neon_attn.c: attention over many keys of an F16 cache, and the
 * GQA group forms (the ops' attn_* fields). */
void edgeq_attn_scores_f16_neon(int64_t hd, int64_t nk, const uint16_t *k,
				size_t ks, const float *q, float scale,
				float *s);
void edgeq_attn_av_f16_neon(int64_t hd, int64_t nk, const float *a,
			    const uint16_t *v, size_t vs, float *out);
void edgeq_attn_scores_f16_g_neon(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *q, size_t qs,
				  float scale, float *s, size_t ss);
void edgeq_attn_av_f16_g_neon(int64_t hd, int64_t nk, int nq, const float *a,
			      size_t as, const uint16_t *v, size_t vs,
			      float *out, size_t os);
void edgeq_attn_scores_f16_t_neon(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *const *qp,
				  const int64_t *nkq, float scale,
				  float *const *sp);
void edgeq_attn_av_f16_t_neon(int64_t hd, int64_t nk, const uint16_t *v,
			      size_t vs, int nq, const float *const *ap,
			      const int64_t *nkq, float *const *op);
void edgeq_attn_av_q8_0_t_neon(int64_t hd, int64_t nk, const void *v, size_t vs,
			       int nq, const float *const *ap,
			       const int64_t *nkq, float *const *op);
#endif
void edgeq_matvec_generic(const struct edgeq_kernel_ops *ops,
			  enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a, float *y);
void edgeq_matmul_generic(const struct edgeq_kernel_ops *ops,
			  enum edgeq_type type, const void *w, int64_t n,
			  int64_t row0, int64_t row1, const void *a,
			  size_t a_stride, int64_t nb, float *y, int64_t ldy);

/* Ask for a row of @n bytes at @p: its first and last byte, as a KV head's
 * row (a cache row apart from the next) may straddle cache lines. */
static inline void edgeq_prefetch_row(const void *p, size_t n)
{
	__builtin_prefetch(p);
	__builtin_prefetch((const char *)p + n - 1);
}

/* The canonical 8-lane reduction tree: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
static inline float edgeq_reduce8(const float l[8])
{
	float t0 = l[0] + l[4], t1 = l[1] + l[5];
	float t2 = l[2] + l[6], t3 = l[3] + l[7];

	return (t0 + t2) + (t1 + t3);
}

/* Q4_K packed 6-bit scale and min of sub-block j (0..7). */
static inline void edgeq_q4_K_scale_min(int j, const uint8_t *q, uint8_t *d,
					uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
	}
}

/* The 8 six-bit scales (sc) and mins (m) of a Q4_K super-block at once. */
static inline void edgeq_q4_K_unpack_scales(const uint8_t *s, uint8_t sc[8],
					    uint8_t m[8])
{
	uint32_t u[3], a, b, c, e;

	__builtin_memcpy(u, s, 12);
	/* bytes 0-3: sc0-3 (low 6 bits); 4-7: m0-3; 8-11: sc4-7 | m4-7 nibbles,
	 * whose high 2 bits sit in the top bits of bytes 0-3 and 4-7 */
	a = u[0] & 0x3f3f3f3f;
	b = u[1] & 0x3f3f3f3f;
	c = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
	e = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
	__builtin_memcpy(sc, &a, 4);
	__builtin_memcpy(sc + 4, &c, 4);
	__builtin_memcpy(m, &b, 4);
	__builtin_memcpy(m + 4, &e, 4);
}

/* The 16 signed Q3_K sub-block scales (stored value - 32). */
static inline void edgeq_q3_K_scales(const uint8_t *s, int8_t out[16])
{
	uint32_t a[4], t;

	__builtin_memcpy(a, s, 12);
	t = a[2];
	a[2] = ((a[0] >> 4) & 0x0f0f0f0f) | (((t >> 4) & 0x03030303) << 4);
	a[3] = ((a[1] >> 4) & 0x0f0f0f0f) | (((t >> 6) & 0x03030303) << 4);
	a[0] = (a[0] & 0x0f0f0f0f) | (((t >> 0) & 0x03030303) << 4);
	a[1] = (a[1] & 0x0f0f0f0f) | (((t >> 2) & 0x03030303) << 4);
	__builtin_memcpy(out, a, 16);
	for (int i = 0; i < 16; i++)
		out[i] = (int8_t)(out[i] - 32);
}

/* The 8 signed IQ4_XS sub-block scales (ls - 32). */
static inline void edgeq_iq4_xs_scales(const struct edgeq_block_iq4_xs *b,
				       int8_t out[8])
{
	for (int ib = 0; ib < 8; ib++)
		out[ib] = (int8_t)((((b->scales_l[ib / 2] >> 4 * (ib % 2)) &
				     0xf) |
				    (((b->scales_h >> 2 * ib) & 3) << 4)) -
				   32);
}

/* Q5_0/Q5_1 high bits as a little-endian word */
static inline uint32_t edgeq_q5_qh(const uint8_t qh[4])
{
	uint32_t v;

	__builtin_memcpy(&v, qh, 4);
	return v;
}

extern const struct edgeq_kernel_ops edgeq_kernel_ops_scalar;
/* Defined only in builds for that ISA (x86/avx2.c, arm64/neon.c). */
extern const struct edgeq_kernel_ops edgeq_kernel_ops_avx2;
extern const struct edgeq_kernel_ops edgeq_kernel_ops_neon;
/* The NEON table with the Armv8.6 int8 matrix multiply (i8mm) for Q4_0 and
 * Q8_0 prompts (arm64/neon.c); the same values. */
const struct edgeq_kernel_ops *edgeq_kernel_ops_neon_i8mm(void);
/* AVX2 plus AVX-512 VNNI: Q8_0/Q4_0 dots, decode matvec for Q4_0, Q8_0,
 * Q4_K and Q6_K, prefill matmul for the same types, many-key attention and
 * the softmax (x86/avx512*.c, x86/attn512.c). */
const struct edgeq_kernel_ops *edgeq_kernel_ops_avx512(void);
/* Whether its Q4_0 matvec may use VBMI and GFNI where the CPU has them (on
 * by default; tests turn it off to check the other path). Returns whether
 * that path is on now. Not thread-safe: set it while no matvec runs. */
bool edgeq_avx512_q4_0_vbmi(bool on);

#endif /* EDGEQ_KERNELS_H */
