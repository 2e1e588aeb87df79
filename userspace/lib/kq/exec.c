// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CPU execution of one edgeq op (the CPU agent's executor). Matrix ops go
 * through the engine's kernels table (edgeq_kernels_select()): activations
 * quantized once into the weight type's vec_dot_type, then the table's
 * matvec/matmul, so results are bit-identical with the engine's CPU path.
 * Element-wise ops are plain loops in a fixed order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/kq.h>
#include "kernels/kernels.h"

static float bits_to_float(uint64_t v)
{
	uint32_t u = (uint32_t)v;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* a * b * c elements of @esize bytes fit in @len (no overflow). */
static bool fits(uint64_t len, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t esize)
{
	uint64_t n;

	if (__builtin_mul_overflow(a, b, &n) ||
	    __builtin_mul_overflow(n, c, &n) ||
	    __builtin_mul_overflow(n, esize, &n))
		return false;
	return n <= len;
}

static int exec_matmul(const struct edgeq_op_desc *op, void *const t[],
		       uint64_t nb)
{
	const struct edgeq_kernel_ops *k = edgeq_kernels_select();
	const struct edgeq_type_traits *tr = edgeq_type_traits(op->dtype);
	uint64_t rows = op->shape[0], cols = op->shape[1];
	size_t wrow, arow;
	uint64_t b;
	void *act;

	if (!tr || !tr->weight || !k->vec_dot[op->dtype])
		return -EOPNOTSUPP;
	wrow = edgeq_row_size(op->dtype, (int64_t)cols);
	arow = edgeq_row_size(tr->vec_dot_type, (int64_t)cols);
	if (!wrow || !arow || !fits(op->tensors[0].length, rows, wrow, 1, 1) ||
	    !fits(op->tensors[1].length, nb, cols, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, nb, rows, 1, sizeof(float)))
		return -EINVAL;
	act = malloc(arow * nb);
	if (!act)
		return -ENOMEM;
	for (b = 0; b < nb; b++) {
		int r = k->quantize_act(tr->vec_dot_type,
					(const float *)t[1] + b * cols,
					(char *)act + b * arow, (int64_t)cols);
		if (r && r != -EDOM) {
			free(act);
			return r;
		}
	}
	if (nb == 1)
		k->matvec((enum edgeq_type)op->dtype, t[0], (int64_t)cols, 0,
			  (int64_t)rows, act, t[2]);
	else
		k->matmul((enum edgeq_type)op->dtype, t[0], (int64_t)cols, 0,
			  (int64_t)rows, act, arow, (int64_t)nb, t[2],
			  (int64_t)rows);
	free(act);
	return 0;
}

static int exec_rmsnorm(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t n = op->shape[0], rows = op->ndims == 2 ? op->shape[1] : 1;
	float eps = bits_to_float(op->param[0]);
	uint64_t r, i;

	if (!fits(op->tensors[0].length, rows, n, 1, sizeof(float)) ||
	    !fits(op->tensors[1].length, n, 1, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, rows, n, 1, sizeof(float)))
		return -EINVAL;
	for (r = 0; r < rows; r++) {
		const float *x = (const float *)t[0] + r * n, *w = t[1];
		float *y = (float *)t[2] + r * n, scale;
		/* As the decoder's rmsnorm() */
		double ss = edgeq_sumsq_ref(x, (int64_t)n);

		scale = (float)(1.0 / sqrt(ss / (double)n + eps));
		for (i = 0; i < n; i++)
			y[i] = x[i] * scale * w[i];
	}
	return 0;
}

/* Rotate @heads rows of @hd in place by the cos/sin pairs @cs (as the
 * decoder's rope_apply()). */
static void rope_rotate(float *x, uint64_t heads, uint64_t hd, uint64_t n_rot,
			const float *cs, bool neox)
{
	for (uint64_t h = 0; h < heads; h++) {
		float *v = x + h * hd;

		for (uint64_t i = 0; i < n_rot / 2; i++) {
			float co = cs[2 * i], si = cs[2 * i + 1];
			uint64_t a = neox ? i : 2 * i;
			uint64_t b = neox ? i + n_rot / 2 : 2 * i + 1;
			float x0 = v[a], x1 = v[b];

			v[a] = x0 * co - x1 * si;
			v[b] = x0 * si + x1 * co;
		}
	}
}

uint32_t edgeq_op_rope_dims(const struct edgeq_op_desc *op)
{
	uint64_t hd = op->shape[1], n_rot = op->param[1] >> 32;

	if (!n_rot)
		n_rot = hd;
	return n_rot % 2 || n_rot > hd || n_rot > UINT32_MAX ? 0 :
							       (uint32_t)n_rot;
}

uint64_t edgeq_op_rope_tokens(const struct edgeq_op_desc *op)
{
	return op->opcode == EDGEQ_OP_ROPE_FREQ && op->ndims == 3 ?
		       op->shape[2] :
		       1;
}

/* The position of token @t of @op: ROPE's integer, ROPE_FREQ's float, or
 * with a token dim (EDGEQ_F_TOKENS) (p0 + t) times the position scale,
 * as the decoder's rope_tables() scales its positions. */
static float rope_pos(const struct edgeq_op_desc *op, uint64_t t)
{
	float scale;

	if (op->opcode != EDGEQ_OP_ROPE_FREQ)
		return (float)op->param[0];
	if (op->ndims != 3)
		return bits_to_float(op->param[0]);
	scale = bits_to_float(op->param[0] >> 32);
	if (scale == 0.0f)
		scale = 1.0f;
	return (float)((op->param[0] & 0xffffffffu) + t) * scale;
}

void edgeq_op_rope_table(const struct edgeq_op_desc *op, const float *freq,
			 float *cs)
{
	uint32_t n_rot = edgeq_op_rope_dims(op);
	uint64_t n_tok = edgeq_op_rope_tokens(op);
	float base = bits_to_float(op->param[1]), mul = 1.0f;

	if (op->opcode == EDGEQ_OP_ROPE_FREQ) {
		if (op->param[1] & 0xffffffffu)
			mul = base;
	} else if (base == 0.0f) {
		base = 10000.0f;
	}
	/* inverse frequencies in double, angles in float */
	for (uint32_t i = 0; i < n_rot / 2; i++) {
		float f = freq ? freq[i] :
				 (float)pow((double)base,
					    -2.0 * (double)i / (double)n_rot);

		for (uint64_t t = 0; t < n_tok; t++) {
			float th = rope_pos(op, t) * f;
			float *c = cs + t * n_rot;

			c[2 * i] = cosf(th) * mul;
			c[2 * i + 1] = sinf(th) * mul;
		}
	}
}

/* ROPE (base, position) and ROPE_FREQ (the model's frequencies, scaled
 * position, cos/sin factor): the decoder's rope_tables() per op. */
static int exec_rope(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t heads = op->shape[0], hd = op->shape[1];
	uint64_t n_tok = edgeq_op_rope_tokens(op);
	uint32_t n_rot = edgeq_op_rope_dims(op);
	bool freq = op->opcode == EDGEQ_OP_ROPE_FREQ;
	float *cs;

	if (!n_rot || n_tok > UINT32_MAX ||
	    !fits(op->tensors[0].length, n_tok, heads, hd, sizeof(float)) ||
	    (freq && !fits(op->tensors[1].length, n_rot / 2, 1, 1, 4)))
		return -EINVAL;
	cs = malloc(n_tok * n_rot * sizeof(float));
	if (!cs)
		return -ENOMEM;
	edgeq_op_rope_table(op, freq ? t[1] : NULL, cs);
	for (uint64_t k = 0; k < n_tok; k++)
		rope_rotate((float *)t[0] + k * heads * hd, heads, hd, n_rot,
			    cs + k * n_rot, op->flags & EDGEQ_OPF_ROPE_NEOX);
	free(cs);
	return 0;
}

/* As the decoder's attention (kernels.h edgeq_softmax_ref()): edgeq_expf,
 * the 16-lane sum and its fold, one reciprocal. */
static void softmax_row(float *x, uint64_t n)
{
	edgeq_softmax_ref(x, (int64_t)n);
}

static int exec_softmax(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t n = op->shape[0], rows = op->shape[1], r;

	if (!fits(op->tensors[0].length, rows, n, 1, sizeof(float)))
		return -EINVAL;
	for (r = 0; r < rows; r++)
		softmax_row((float *)t[0] + r * n, n);
	return 0;
}

/* One query row @q [heads][hd] over @npos rows of K @kc and V @vc into
 * @o, as the decoder's att_task(). */
static void attend(const struct edgeq_op_desc *op, const float *q,
		   const char *kc, const char *vc, float *o, uint64_t npos,
		   size_t hrow, float scale, float *scores, void *qh)
{
	const struct edgeq_kernel_ops *k = edgeq_kernels_select();
	uint64_t heads = op->shape[0], kvh = op->shape[1], hd = op->shape[2];

	for (uint64_t h = 0; h < heads; h++) {
		const float *qr = q + h * hd;
		float *out = o + h * hd;
		uint64_t g = h / (heads / kvh), p;

		if (op->dtype == EDGEQ_DTYPE_Q8_0)
			k->quantize_act(EDGEQ_TYPE_Q8_0, qr, qh, (int64_t)hd);
		for (p = 0; p < npos; p++) {
			const void *kr = kc + (p * kvh + g) * hrow;
			float s;

			if (op->dtype == EDGEQ_DTYPE_F16)
				s = k->dot_f16((int64_t)hd, kr, qr);
			else if (op->dtype == EDGEQ_DTYPE_Q8_0)
				s = k->vec_dot[EDGEQ_TYPE_Q8_0]((int64_t)hd, kr,
								qh);
			else
				s = k->dot_f32((int64_t)hd, kr, qr);
			scores[p] = s * scale;
		}
		softmax_row(scores, npos);
		memset(out, 0, hd * sizeof(float));
		for (p = 0; p < npos; p++) {
			const void *vr = vc + (p * kvh + g) * hrow;

			if (op->dtype == EDGEQ_DTYPE_F16)
				k->axpy_f16((int64_t)hd, scores[p], vr, out);
			else if (op->dtype == EDGEQ_DTYPE_Q8_0)
				k->axpy_q8_0((int64_t)hd, scores[p], vr, out);
			else
				k->axpy_f32((int64_t)hd, scores[p], vr, out);
		}
	}
}

void edgeq_op_attn_span(const struct edgeq_op_desc *op, uint64_t t,
			uint64_t *first, uint64_t *end)
{
	uint64_t n_tok = op->param[1] & 0xffffffffu, win = op->param[1] >> 32;

	if (!n_tok)
		n_tok = 1;
	*end = op->shape[3] - n_tok + t + 1;
	*first = win && *end > win ? *end - win : 0;
}

/* ATTENTION: one query (param[1] 0), or a prompt's n_tok queries each
 * over its causal, optionally windowed, rows (EDGEQ_F_TOKENS). */
static int exec_attention(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t heads = op->shape[0], kvh = op->shape[1], hd = op->shape[2];
	uint64_t npos = op->shape[3], n_tok = op->param[1] & 0xffffffffu;
	size_t hrow; /* bytes of one head's K or V row */
	float *scores, scale;

	switch (op->dtype) {
	case EDGEQ_DTYPE_F32:
		hrow = hd * 4;
		break;
	case EDGEQ_DTYPE_F16:
		hrow = hd * 2;
		break;
	case EDGEQ_DTYPE_Q8_0:
		hrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, (int64_t)hd);
		if (!hrow)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!n_tok)
		n_tok = 1;
	if (heads % kvh || n_tok > npos ||
	    !fits(op->tensors[0].length, n_tok, heads, hd, 4) ||
	    !fits(op->tensors[1].length, npos, kvh, hrow, 1) ||
	    !fits(op->tensors[2].length, npos, kvh, hrow, 1) ||
	    !fits(op->tensors[3].length, n_tok, heads, hd, 4))
		return -EINVAL;
	scores = malloc(npos * sizeof(float) + hrow);
	if (!scores)
		return -ENOMEM;
	scale = op->param[0] ? bits_to_float(op->param[0]) :
			       1.0f / sqrtf((float)hd);
	for (uint64_t i = 0; i < n_tok; i++) {
		uint64_t first, end, off;

		edgeq_op_attn_span(op, i, &first, &end);
		off = first * kvh * hrow;
		attend(op, (const float *)t[0] + i * heads * hd,
		       (const char *)t[1] + off, (const char *)t[2] + off,
		       (float *)t[3] + i * heads * hd, end - first, hrow, scale,
		       scores, scores + npos);
	}
	free(scores);
	return 0;
}

/* ADD {n, rows} (EDGEQ_F_TOKENS) adds b's one row to each of a's */
static int exec_elementwise(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t n = op->shape[0], rows = op->ndims == 2 ? op->shape[1] : 1, i;
	const float *a = t[0], *b = t[1];
	float *y = t[2];

	if (!fits(op->tensors[0].length, rows, n, 1, sizeof(float)) ||
	    !fits(op->tensors[1].length, n, 1, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, rows, n, 1, sizeof(float)))
		return -EINVAL;
	if (op->opcode == EDGEQ_OP_ADD) {
		for (uint64_t r = 0; r < rows; r++)
			for (i = 0; i < n; i++)
				y[r * n + i] = a[r * n + i] + b[i];
	} else if (op->opcode == EDGEQ_OP_GELU_MUL) {
		for (i = 0; i < n; i++) { /* out of place, any aliasing */
			float g = a[i];

			edgeq_gelu_mul_ref(&g, b + i, 1);
			y[i] = g;
		}
	} else {
		/* edgeq_silu_mul_ref(), out of place */
		for (i = 0; i < n; i++)
			y[i] = a[i] / (1.0f + edgeq_expf(-a[i])) * b[i];
	}
	return 0;
}

/* A K or V row into its cache: the decoder's kv_store() conversion
 * (Q8_0 as its activations, a non-finite block's scale NaN, no error). */
static int exec_store(const struct edgeq_op_desc *op, void *const t[])
{
	uint64_t n = op->shape[0];
	size_t row;

	if (op->dtype != EDGEQ_DTYPE_F32 && op->dtype != EDGEQ_DTYPE_F16 &&
	    op->dtype != EDGEQ_DTYPE_Q8_0)
		return -EOPNOTSUPP;
	row = edgeq_row_size(op->dtype, (int64_t)n);
	if (!row || !fits(op->tensors[0].length, n, 1, 1, sizeof(float)) ||
	    !fits(op->tensors[1].length, row, 1, 1, 1))
		return -EINVAL;
	if (op->dtype == EDGEQ_DTYPE_Q8_0) {
		int r = edgeq_kernels_select()->quantize_act(
			EDGEQ_TYPE_Q8_0, t[0], t[1], (int64_t)n);

		return r == -EDOM ? 0 : r;
	}
	if (op->dtype == EDGEQ_DTYPE_F16)
		edgeq_fp32_to_fp16_row(t[0], t[1], (int64_t)n);
	else
		memmove(t[1], t[0], n * sizeof(float));
	return 0;
}

int edgeq_kq_exec(const struct edgeq_op_desc *op, void *const t[])
{
	unsigned int nt, nd, i;

	if (edgeq_op_arity(op->opcode, &nt, &nd) || op->ntensors != nt ||
	    !edgeq_op_ndims_valid(op->opcode, op->ndims))
		return -EINVAL;
	for (i = 0; i < op->ndims; i++)
		if (!op->shape[i])
			return -EINVAL;
	switch (op->opcode) {
	case EDGEQ_OP_NOP:
		return 0;
	case EDGEQ_OP_MATVEC:
		return exec_matmul(op, t, 1);
	case EDGEQ_OP_MATMUL:
		return exec_matmul(op, t, op->shape[2]);
	case EDGEQ_OP_RMSNORM:
		return exec_rmsnorm(op, t);
	case EDGEQ_OP_ROPE:
	case EDGEQ_OP_ROPE_FREQ:
		return exec_rope(op, t);
	case EDGEQ_OP_SOFTMAX:
		return exec_softmax(op, t);
	case EDGEQ_OP_ATTENTION:
		return exec_attention(op, t);
	case EDGEQ_OP_SILU_MUL:
	case EDGEQ_OP_GELU_MUL:
	case EDGEQ_OP_ADD:
		return exec_elementwise(op, t);
	case EDGEQ_OP_STORE:
		return exec_store(op, t);
	}
	return -EOPNOTSUPP;
}
