// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * NEON attention over many keys of an F16 cache at once, and the group
 * forms that share each key and value row's conversion among a GQA group's
 * queries (x86/attn512.c has the AVX-512 design). The values are the
 * per-key ops' bit for bit:
 *
 *  - a score is dot_f16's steps: element j in lane j % 32 (eight
 *    float32x4, lanes 4c..4c+3 in vector c), fused multiply-adds from +0 in
 *    element order, the fold (l[k] + l[k+8]) + (l[k+16] + l[k+24]) and
 *    edgeq_reduce8; only four keys' last steps run side by side;
 *  - a weighted value is axpy_f16's: out[j] = 0, then per key in order
 *    out[j] = fmaf(a[t], v_t[j], out[j]), with the output row held in
 *    registers across the keys instead of loaded and stored per key.
 *
 * Head sizes that are not a multiple of 32 (scores) or 16 (values) take
 * the table's dot_f16 / axpy_f16 for the whole row or its tail.
 */
#include <arm_neon.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/arm64/neon_fold.h"
#include "kernels/fold_lanes.h"

#define AI static inline __attribute__((always_inline))

AI float32x4_t f16x4(const uint16_t *p)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* edgeq_reduce8's last steps, (t0 + t2) + (t1 + t3), of four keys at once:
 * the 64-bit zips pair t0 t1 with t2 t3 of two keys, one add gives
 * [t0+t2, t1+t3] of each, the pairwise add the sums in key order */
AI float32x4_t reduce4x4(const float32x4_t t[4])
{
	float64x2_t a = vreinterpretq_f64_f32(t[0]),
		    b = vreinterpretq_f64_f32(t[1]),
		    c = vreinterpretq_f64_f32(t[2]),
		    d = vreinterpretq_f64_f32(t[3]);
	float32x4_t p = vaddq_f32(vreinterpretq_f32_f64(vzip1q_f64(a, b)),
				  vreinterpretq_f32_f64(vzip2q_f64(a, b)));
	float32x4_t r = vaddq_f32(vreinterpretq_f32_f64(vzip1q_f64(c, d)),
				  vreinterpretq_f32_f64(vzip2q_f64(c, d)));

	return vpaddq_f32(p, r);
}

/*
 * QB queries (1 or 2, a constant) against the keys: per 32 elements the
 * key's 8 vectors are converted once and each query's 8 chains take them.
 * Keys in fours, so four folds reduce together.
 */
AI void scores_q(const int QB, int64_t hd, int64_t nk, const uint16_t *k,
		 size_t ks, const float *q, size_t qs, float scale, float *s,
		 size_t ss)
{
	int64_t t = 0;

	for (; t < nk; t += 4) {
		int nkb = nk - t < 4 ? (int)(nk - t) : 4;
		float32x4_t f[2][4];

		for (int i = 0; i < nkb; i++) {
			const uint16_t *kr = k + (t + i) * ks;
			float32x4_t a[2][8];

#pragma GCC unroll 2
			for (int j = 0; j < QB; j++)
#pragma GCC unroll 8
				for (int c = 0; c < 8; c++)
					a[j][c] = vdupq_n_f32(0);
			for (int64_t e = 0; e < hd; e += 32) {
				float32x4_t kv[8];

#pragma GCC unroll 8
				for (int c = 0; c < 8; c++)
					kv[c] = f16x4(kr + e + 4 * c);
#pragma GCC unroll 2
				for (int j = 0; j < QB; j++)
#pragma GCC unroll 8
					for (int c = 0; c < 8; c++)
						a[j][c] = vfmaq_f32(
							a[j][c], kv[c],
							vld1q_f32(q + j * qs +
								  e + 4 * c));
			}
#pragma GCC unroll 2
			for (int j = 0; j < QB; j++)
				f[j][i] = edgeq_neon_fold_t(a[j]);
		}
#pragma GCC unroll 2
		for (int j = 0; j < QB; j++) {
			if (nkb == 4) {
				vst1q_f32(s + j * ss + t,
					  vmulq_n_f32(reduce4x4(f[j]), scale));
				continue;
			}
			for (int i = 0; i < nkb; i++)
				s[j * ss + t + i] =
					edgeq_neon_reduce_t(f[j][i]) * scale;
		}
	}
}

void edgeq_attn_scores_f16_neon(int64_t hd, int64_t nk, const uint16_t *k,
				size_t ks, const float *q, float scale,
				float *s)
{
	if (hd % 32) {
		for (int64_t t = 0; t < nk; t++)
			s[t] = edgeq_kernel_ops_neon.dot_f16(hd, k + t * ks,
							     q) *
			       scale;
		return;
	}
	scores_q(1, hd, nk, k, ks, q, 0, scale, s, 0);
}

void edgeq_attn_scores_f16_g_neon(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *q, size_t qs,
				  float scale, float *s, size_t ss)
{
	int j = 0;

	if (hd % 32 == 0)
		for (; j + 2 <= nq; j += 2)
			scores_q(2, hd, nk, k, ks, q + j * qs, qs, scale,
				 s + j * ss, ss);
	for (; j < nq; j++)
		edgeq_attn_scores_f16_neon(hd, nk, k, ks, q + j * qs, scale,
					   s + j * ss);
}

/*
 * The weighted values of QB queries (1 or 2): per 32 output elements (16
 * for a tail of 16) the QB output rows stay in registers across the keys,
 * each value row converted once and applied in key order.
 */
AI void av_q(const int QB, const int W, int64_t j, int64_t nk, const float *a,
	     size_t as, const uint16_t *v, size_t vs, float *out, size_t os)
{
	float32x4_t o[2][8];

#pragma GCC unroll 2
	for (int i = 0; i < QB; i++)
#pragma GCC unroll 8
		for (int c = 0; c < W / 4; c++)
			o[i][c] = vdupq_n_f32(0);
	for (int64_t t = 0; t < nk; t++) {
		const uint16_t *r = v + t * vs + j;
		float32x4_t x[8];

#pragma GCC unroll 8
		for (int c = 0; c < W / 4; c++)
			x[c] = f16x4(r + 4 * c);
#pragma GCC unroll 2
		for (int i = 0; i < QB; i++) {
			float w = a[i * as + t];

#pragma GCC unroll 8
			for (int c = 0; c < W / 4; c++)
				o[i][c] = vfmaq_n_f32(o[i][c], x[c], w);
		}
	}
#pragma GCC unroll 2
	for (int i = 0; i < QB; i++)
#pragma GCC unroll 8
		for (int c = 0; c < W / 4; c++)
			vst1q_f32(out + i * os + j + 4 * c, o[i][c]);
}

AI void av_rows(const int QB, int64_t hd, int64_t nk, const float *a, size_t as,
		const uint16_t *v, size_t vs, float *out, size_t os)
{
	int64_t j = 0;

	for (; j + 32 <= hd; j += 32)
		av_q(QB, 32, j, nk, a, as, v, vs, out, os);
	if (j + 16 <= hd) {
		av_q(QB, 16, j, nk, a, as, v, vs, out, os);
		j += 16;
	}
	if (j == hd)
		return;
	for (int i = 0; i < QB; i++) {
		memset(out + i * os + j, 0, (size_t)(hd - j) * sizeof(float));
		for (int64_t t = 0; t < nk; t++)
			edgeq_kernel_ops_neon.axpy_f16(hd - j, a[i * as + t],
						       v + t * vs + j,
						       out + i * os + j);
	}
}

void edgeq_attn_av_f16_neon(int64_t hd, int64_t nk, const float *a,
			    const uint16_t *v, size_t vs, float *out)
{
	av_rows(1, hd, nk, a, 0, v, vs, out, 0);
}

void edgeq_attn_av_f16_g_neon(int64_t hd, int64_t nk, int nq, const float *a,
			      size_t as, const uint16_t *v, size_t vs,
			      float *out, size_t os)
{
	int i = 0;

	for (; i + 2 <= nq; i += 2)
		av_rows(2, hd, nk, a + i * as, as, v, vs, out + i * os, os);
	if (i < nq)
		av_rows(1, hd, nk, a + i * as, as, v, vs, out + i * os, os);
}

/*
 * ---- keys in lanes: a prompt's queries over tiles of 4 keys ----
 *
 * x86/attn512.c's design on 4-lane vectors: with 4 keys' rows transposed
 * (kt[d * 4 + i] = element d of key i), each step of dot_f16's canonical
 * order (32 lane chains from +0, (l[k] + l[k+8]) + (l[k+16] + l[k+24]),
 * then ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7))) is one vector
 * operation over the 4 keys, so no fold across lanes is left; the
 * transposition is paid once per tile for all of a block's queries.
 */
AI void transpose4(float32x4_t r[4])
{
	float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
	float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);

	r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0),
						vreinterpretq_f64_f32(t2)));
	r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1),
						vreinterpretq_f64_f32(t3)));
	r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0),
						vreinterpretq_f64_f32(t2)));
	r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1),
						vreinterpretq_f64_f32(t3)));
}

/*
 * The 4 keys' scores of one query: the fold's steps in its order. With HD
 * 64 or 128 (a constant) the query's elements come reordered as the fold
 * consumes them (qr[(g * 4 + u) * HD / 32 + h] = q[order[g] + 8u + 32h]),
 * so one vector load feeds four fmla by lane; with HD 0 (any other head
 * size) each element is loaded and broadcast. More than one query per
 * call spills the A78's 32 registers (tools/kcount --attn 64:256:32:
 * 36.8 and 37.2 cycles a pair with 2 and 4 queries, 34.5 with 1).
 */
#define MULSN(a, s) vmulq_n_f32((a), (s))

AI float32x4_t tile_scores4(const int HD, int64_t hd, const float *kt,
			    const float *q, float scale)
{
	static const int ord[8] = EDGEQ_FOLD_ORDER;
	float32x4_t x, t02, t1, res = vdupq_n_f32(0), qv = vdupq_n_f32(0);

	if (HD)
		hd = HD;
#pragma GCC unroll 8
	for (int g = 0; g < 8; g++) {
		float32x4_t p = vdupq_n_f32(0), p2 = vdupq_n_f32(0);

#pragma GCC unroll 4
		for (int u = 0; u < 4; u++) {
			float32x4_t a = vdupq_n_f32(0);

#pragma GCC unroll 4
			for (int64_t h = 0; h < hd / 32; h++) {
				int64_t d = ord[g] + 8 * u + 32 * h;
				const int idx =
					(g * 4 + u) * (HD / 32) + (int)h;
				float32x4_t kv = vld1q_f32(kt + d * 4);

				if (!HD) {
					a = vfmaq_f32(a, kv,
						      vld1q_dup_f32(q + d));
					continue;
				}
				if (idx % 4 == 0)
					qv = vld1q_f32(q + idx);
				a = vfmaq_laneq_f32(a, kv, qv, idx % 4);
			}
			EDGEQ_FOLD_LANE(u, a, p, p2, vaddq_f32);
		}
		EDGEQ_FOLD_STEP(g, vaddq_f32(p, p2), x, t02, t1, res, scale,
				vaddq_f32, MULSN);
	}
	return res;
}

void edgeq_attn_scores_f16_t_neon(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *const *qp,
				  const int64_t *nkq, float scale,
				  float *const *sp)
{
	static const int ord[8] = EDGEQ_FOLD_ORDER;
	float kt[256 * 4] __attribute__((aligned(16)));
	/* 64- and 128-element heads: the queries in the fold's order */
	float qr[EDGEQ_ATTN_TQ * 128] __attribute__((aligned(16)));
	bool perm = hd == 64 || hd == 128;

	if (hd % 32 || hd > 256 || nq > EDGEQ_ATTN_TQ) {
		for (int j = 0; j < nq; j++)
			edgeq_attn_scores_f16_neon(hd, nkq[j], k, ks, qp[j],
						   scale, sp[j]);
		return;
	}
	for (int j = 0; perm && j < nq; j++) {
		int64_t e = 0;

		for (int g = 0; g < 8; g++)
			for (int u = 0; u < 4; u++)
				for (int64_t h = 0; h < hd / 32; h++)
					qr[j * 128 + e++] =
						qp[j][ord[g] + 8 * u + 32 * h];
	}
	for (int64_t t = 0; t < nk; t += 4) {
		int nt = nk - t < 4 ? (int)(nk - t) : 4;

		for (int64_t d0 = 0; d0 < hd; d0 += 4) {
			float32x4_t r[4];

			for (int i = 0; i < 4; i++)
				r[i] = i < nt ? f16x4(k + (t + i) * ks + d0) :
						vdupq_n_f32(0);
			transpose4(r);
			for (int c = 0; c < 4; c++)
				vst1q_f32(kt + (d0 + c) * 4, r[c]);
		}
		for (int j = 0; j < nq; j++) {
			int64_t left = nkq[j] - t;
			float32x4_t res;
			float l4[4];

			if (left <= 0)
				continue;
			res = hd == 64	? tile_scores4(64, 64, kt, qr + j * 128,
						       scale) :
			      hd == 128 ? tile_scores4(128, 128, kt,
						       qr + j * 128, scale) :
					  tile_scores4(0, hd, kt, qp[j], scale);
			if (left >= 4) {
				vst1q_f32(sp[j] + t, res);
				continue;
			}
			vst1q_f32(l4, res);
			for (int e = 0; e < left; e++)
				sp[j][t + e] = l4[e];
		}
	}
}

/*
 * ---- a block's weighted values: value rows converted once per chunk ----
 *
 * Per query, axpy_f16's steps (out = 0, then per key in order
 * out[j] = fmaf(a[t], v_t[j], out[j])) over an F16 cache, or axpy_q8_0's
 * (per block b, out = fmaf(a[t] * d_tb, (float)q_tb, out)) over a Q8_0
 * one; a chunk of value rows is converted (halves or integers to float
 * exactly, scales to float) once for all the block's queries, then two
 * queries at a time run over it a 16-element slice of the row at a time,
 * their sums in registers (more spill the A78's 32 registers), each
 * query's sums kept in its output row between chunks (a float store and
 * load change no bit).
 */
#define AV_CHUNK 64

/* QB queries over keys [t0, t1) of the chunk at vf, elements e0..e0+15;
 * with @df (a Q8_0 cache) the weight of row t is a[t] * its scale */
AI void av_slice(const int QB, int64_t hd, const float *vf, const float *df,
		 int64_t c0, int64_t t0, int64_t t1, int e0,
		 const float *const *a, float *const *o)
{
	float32x4_t acc[2][4];

#pragma GCC unroll 2
	for (int j = 0; j < QB; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			acc[j][c] = t0 ? vld1q_f32(o[j] + e0 + 4 * c) :
					 vdupq_n_f32(0);
	for (int64_t t = t0; t < t1; t++) {
		const float *r = vf + (t - c0) * hd + e0;
		float32x4_t x[4];

#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			x[c] = vld1q_f32(r + 4 * c);
#pragma GCC unroll 2
		for (int j = 0; j < QB; j++) {
			float s = df ? a[j][t] * df[(t - c0) * (hd / 32) +
						    e0 / 32] :
				       a[j][t];

#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				acc[j][c] = vfmaq_n_f32(acc[j][c], x[c], s);
		}
	}
#pragma GCC unroll 2
	for (int j = 0; j < QB; j++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			vst1q_f32(o[j] + e0 + 4 * c, acc[j][c]);
}

/* Row t of the chunk from c0 as floats at vf (@vs: elements of an F16
 * row, bytes of a Q8_0 one), a Q8_0 row's block scales at df. */
AI void av_convert(const bool Q8, int64_t hd, const void *v, size_t vs,
		   int64_t t, int64_t c0, float *vf, float *df)
{
	float *r = vf + (t - c0) * hd;

	if (!Q8) {
		const uint16_t *h = (const uint16_t *)v + t * vs;

		for (int64_t e = 0; e < hd; e += 8) {
			float16x8_t x = vreinterpretq_f16_u16(vld1q_u16(h + e));

			vst1q_f32(r + e, vcvt_f32_f16(vget_low_f16(x)));
			vst1q_f32(r + e + 4, vcvt_high_f32_f16(x));
		}
		return;
	}
	const struct edgeq_block_q8_0 *x =
		(const void *)((const uint8_t *)v + t * vs);

	for (int b = 0; b < hd / 32; b++) {
		/* the scale by the conversion instruction, not a call */
		df[(t - c0) * (hd / 32) + b] = vgetq_lane_f32(
			vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(x[b].d))),
			0);
		for (int k = 0; k < 32; k += 8) {
			int16x8_t q = vmovl_s8(vld1_s8(x[b].qs + k));

			vst1q_f32(r + 32 * b + k,
				  vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))));
			vst1q_f32(r + 32 * b + k + 4,
				  vcvtq_f32_s32(vmovl_s16(vget_high_s16(q))));
		}
	}
}

/* The chunks; every query seeing a key has hd % 16 == 0 (F16) or
 * hd % 32 == 0 (Q8_0) and hd <= 256 (the caller checked) */
AI void av_t(const bool Q8, int64_t hd, int64_t nk, const void *v, size_t vs,
	     int nq, const float *const *ap, const int64_t *nkq,
	     float *const *op)
{
	float vf[AV_CHUNK * 256];
	float df[AV_CHUNK * 256 / 32];

	for (int64_t c0 = 0; c0 < nk; c0 += AV_CHUNK) {
		int64_t c1 = nk - c0 < AV_CHUNK ? nk : c0 + AV_CHUNK;
		const float *d = Q8 ? df : NULL;

		for (int64_t t = c0; t < c1; t++) {
			/* the rows are a cache row apart (all KV heads'):
			 * ask for the one 8 ahead */
			if (t + 8 < nk)
				edgeq_prefetch_row(
					(const char *)v + (size_t)(t + 8) * vs *
								  (Q8 ? 1 : 2),
					Q8 ? hd / 32 * 34 : hd * 2);
			av_convert(Q8, hd, v, vs, t, c0, vf, df);
		}
		for (int j = 0; j < nq; j += 2) {
			int qb = nq - j < 2 ? 1 : 2;
			int64_t e[2], lo;

			for (int i = 0; i < qb; i++) {
				e[i] = nkq[j + i] < c1 ? nkq[j + i] : c1;
				if (e[i] < c0)
					e[i] = c0;
			}
			lo = qb == 2 && e[1] < e[0] ? e[1] : e[0];
			for (int e0 = 0; e0 < hd; e0 += 16) {
				/* together up to the nearer end, then each
				 * query on to its own */
				if (lo > c0 && qb == 2)
					av_slice(2, hd, vf, d, c0, c0, lo, e0,
						 ap + j, op + j);
				else if (lo > c0)
					av_slice(1, hd, vf, d, c0, c0, lo, e0,
						 ap + j, op + j);
				for (int i = 0; i < qb; i++)
					if (e[i] > lo)
						av_slice(1, hd, vf, d, c0,
							 lo > c0 ? lo : c0,
							 e[i], e0, ap + j + i,
							 op + j + i);
			}
		}
	}
}

void edgeq_attn_av_f16_t_neon(int64_t hd, int64_t nk, const uint16_t *v,
			      size_t vs, int nq, const float *const *ap,
			      const int64_t *nkq, float *const *op)
{
	for (int j = 0; j < nq; j++)
		if (nkq[j] <= 0)
			memset(op[j], 0, (size_t)hd * sizeof(float));
	if (hd % 16 || hd > 256) {
		for (int j = 0; j < nq; j++)
			if (nkq[j] > 0)
				edgeq_attn_av_f16_neon(hd, nkq[j], ap[j], v, vs,
						       op[j]);
		return;
	}
	av_t(false, hd, nk, v, vs, nq, ap, nkq, op);
}

void edgeq_attn_av_q8_0_t_neon(int64_t hd, int64_t nk, const void *v, size_t vs,
			       int nq, const float *const *ap,
			       const int64_t *nkq, float *const *op)
{
	for (int j = 0; j < nq; j++)
		if (nkq[j] <= 0)
			memset(op[j], 0, (size_t)hd * sizeof(float));
	if (hd % 32 || hd > 256) {
		for (int j = 0; j < nq; j++) {
			if (nkq[j] <= 0)
				continue;
			memset(op[j], 0, (size_t)hd * sizeof(float));
			for (int64_t t = 0; t < nkq[j]; t++)
				edgeq_kernel_ops_neon.axpy_q8_0(
					hd, ap[j][t],
					(const uint8_t *)v + t * vs, op[j]);
		}
		return;
	}
	av_t(true, hd, nk, v, vs, nq, ap, nkq, op);
}
