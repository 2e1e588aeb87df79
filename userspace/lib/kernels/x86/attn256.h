/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The AVX2 table's many-key attention forms (attn256.c), private to the x86
 * tables. */
#ifndef EDGEQ_KERNELS_X86_ATTN256_H
#define EDGEQ_KERNELS_X86_ATTN256_H

#include <stddef.h>
#include <stdint.h>

void edgeq_attn_scores_f16_avx2(int64_t hd, int64_t nk, const uint16_t *k,
				size_t ks, const float *q, float scale,
				float *s);
void edgeq_attn_av_f16_avx2(int64_t hd, int64_t nk, const float *a,
			    const uint16_t *v, size_t vs, float *out);
void edgeq_attn_scores_f16_g_avx2(int64_t hd, int64_t nk, const uint16_t *k,
				  size_t ks, int nq, const float *q, size_t qs,
				  float scale, float *s, size_t ss);
void edgeq_attn_av_f16_g_avx2(int64_t hd, int64_t nk, int nq, const float *a,
			      size_t as, const uint16_t *v, size_t vs,
			      float *out, size_t os);
void edgeq_attn_av_q8_0_t_avx2(int64_t hd, int64_t nk, const void *v, size_t vs,
			       int nq, const float *const *ap,
			       const int64_t *nkq, float *const *op);

#endif
