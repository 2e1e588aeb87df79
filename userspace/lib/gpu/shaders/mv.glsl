// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix-vector and matrix-matrix products, one workgroup of 32 per output
// row (quantized weights: per 32 output rows) and tile of TT activation
// rows (gl_WorkGroupID.z; mv_*.comp TT 1, mm_*.comp 8). t0 weight [n0
// rows][n1 cols] of the type selected by WT_*, t2 out [n2][n0]. F32/F16
// weights read the f32 activations of t1; quantized weights read the
// activations quantized by q8_0.comp or q8_k.comp into scratch (word os).
//
// The reduction order is the CPU scalar reference's (kernels/scalar.c), so
// the result is the same float: F32/F16 put element j in lane j % 32 (a
// thread here) and fold the lanes as fold32(); quantized types run one
// row per thread: each block's exact integer sum, then the float chain
// acc = fma_rn(d_w * d_a, isum, acc) in block order.
//
// A tile reads (and unpacks) each weight word once for its rows, each row
// keeping its own sums and chain: the same floats as one row at a time.
// A tile's rows past the last are skipped (a MATVEC is a tile of one;
// quantized types point them at the last row's activations).

layout(local_size_x = 32) in;

#ifndef TT
#define TT 1u /* activation rows a workgroup takes */
#endif

uint out_row()
{
	return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

#if defined(WT_F32) || defined(WT_F16)
shared float lane[TT * 32u];

float wval(uint row, uint j)
{
#ifdef WT_F32
	return uintBitsToFloat(t0[pc.o0 + row * pc.n1 + j]);
#else
	return half_to_float(rd16_0((row * pc.n1 + j) * 2u));
#endif
}

// Row @row against the tile's @nt activation rows from @b0: lane tid's
// sums, then thread t (< nt) folds row b0 + t's lanes.
float row_dot(uint row, uint b0, uint nt, uint tid)
{
	precise float acc[TT];
	uint j, k, t;

	for (t = 0u; t < TT; t++)
		acc[t] = 0.0;
	for (j = tid; j < pc.n1; j += 32u) {
		float w = wval(row, j);

		for (t = 0u; t < TT; t++) {
			if (t >= nt)
				break;
			acc[t] = fma_rn(w, f1((b0 + t) * pc.n1 + j), acc[t]);
		}
	}
	for (t = 0u; t < TT; t++)
		lane[t * 32u + tid] = acc[t];
	barrier();
	if (tid >= nt)
		return 0.0;
	precise float v[8];
	uint l = tid * 32u;

	for (k = 0u; k < 8u; k++)
		v[k] = (lane[l + k] + lane[l + k + 8u]) +
		       (lane[l + k + 16u] + lane[l + k + 24u]);
	precise float a0 = v[0] + v[4], a1 = v[1] + v[5];
	precise float a2 = v[2] + v[6], a3 = v[3] + v[7];
	precise float r = (a0 + a2) + (a1 + a3);

	return r;
}
#endif

#if defined(WT_Q8_0) || defined(WT_Q4_0)
#define ROW_PER_THREAD 1
#ifdef WT_Q8_0
#define BLK 34u
#else
#define BLK 18u
#endif
// the 4 bytes at even byte @b of t0 (blocks are 2-byte aligned)
uint rd32_0(uint b)
{
	uint w = pc.o0 + (b >> 2);

	return (b & 2u) != 0u ? (t0[w] >> 16) | (t0[w + 1u] << 16) : t0[w];
}

// One thread per row: each block's exact integer sum from whole words
// (4 weight bytes, 4 activation bytes at a time; the order of integer
// additions does not matter), then the float chain in block order, as
// the CPU's. No thread waits on another, so a workgroup is 32 rows.
void row_dot(uint row, uint ab[TT], uint nt, out float res[TT])
{
	uint nblk = pc.n1 / 32u, i, j, k, t;
	uint rb = row * nblk * BLK;
	precise float acc[TT];

	for (t = 0u; t < TT; t++)
		acc[t] = 0.0;
	for (i = 0u; i < nblk; i++) {
		uint wb = rb + i * BLK;
		int s[TT];

		for (t = 0u; t < TT; t++)
			s[t] = 0;
#ifdef WT_Q8_0
		for (j = 0u; j < 8u; j++) {
			uint qw = rd32_0(wb + 2u + 4u * j);

			for (t = 0u; t < TT; t++) {
				if (t >= nt)
					break;
				uint aw = sc[ab[t] + i * 9u + 1u + j];

				for (k = 0u; k < 4u; k++)
					s[t] += sbyte(qw, k) * sbyte(aw, k);
			}
		}
#else
		for (j = 0u; j < 4u; j++) {
			/* bytes 4j..4j+3: elements 4j+k (low nibbles) and
			 * 16+4j+k (high) */
			uint qw = rd32_0(wb + 2u + 4u * j);

			for (t = 0u; t < TT; t++) {
				if (t >= nt)
					break;
				uint lo = sc[ab[t] + i * 9u + 1u + j];
				uint hi = sc[ab[t] + i * 9u + 5u + j];

				for (k = 0u; k < 4u; k++) {
					int ql = int((qw >> (8u * k)) & 15u) - 8;
					int qh = int((qw >> (8u * k + 4u)) & 15u) - 8;

					s[t] += ql * sbyte(lo, k) + qh * sbyte(hi, k);
				}
			}
		}
#endif
		float dw = half_to_float(rd16_0(wb));

		for (t = 0u; t < TT; t++) {
			precise float d = dw * uintBitsToFloat(sc[ab[t] + i * 9u]);

			acc[t] = fma_rn(d, float(s[t]), acc[t]);
		}
	}
	for (t = 0u; t < TT; t++)
		res[t] = acc[t];
}

// scratch words of one activation row's Q8_0 blocks
uint act_words()
{
	return pc.n1 / 32u * 9u;
}
#endif

#if defined(WT_Q4_K) || defined(WT_Q6_K)
#define ROW_PER_THREAD 1
#ifdef WT_Q4_K
#define BLK 144u
#else
#define BLK 210u
#endif

// the 4 bytes at even byte @b of t0 (Q6_K blocks are 2-byte aligned)
uint rd32_0(uint b)
{
	uint w = pc.o0 + (b >> 2);

	return (b & 2u) != 0u ? (t0[w] >> 16) | (t0[w + 1u] << 16) : t0[w];
}

#ifdef WT_Q4_K
/* Q4_K's 6-bit scale and min of sub-block j, from the bytes at @s */
void q4k_scale_min(uint s, uint j, out int d, out int m)
{
	if (j < 4u) {
		d = int(rd8_0(s + j) & 63u);
		m = int(rd8_0(s + j + 4u) & 63u);
	} else {
		d = int((rd8_0(s + j + 4u) & 15u) | ((rd8_0(s + j - 4u) >> 6) << 4));
		m = int((rd8_0(s + j + 4u) >> 4) | ((rd8_0(s + j) >> 6) << 4));
	}
}
#endif

// s[t] += the 4 quants of @q (a byte each, less @bias) times the 4 int8
// activations of word @off of the tile's row t, for its @nt rows
void tile_dot4(uint q, int bias, uint ab[TT], uint off, uint nt,
	       inout int s[TT])
{
	uint t, k;

	for (t = 0u; t < TT; t++) {
		if (t >= nt)
			break;
		uint aw = sc[ab[t] + off];

		for (k = 0u; k < 4u; k++)
			s[t] += (int((q >> (8u * k)) & 0xffu) - bias) *
				sbyte(aw, k);
	}
}

// One thread per row, as for Q8_0 and Q4_0: per super-block the exact
// integer sums from whole words, then the float chain (Q4_K: the scale
// step, then the mins step) in super-block order.
void row_dot(uint row, uint ab[TT], uint nt, out float res[TT])
{
	uint nsb = pc.n1 / 256u, i, j, w, t;
	uint rb = row * nsb * BLK;
	precise float acc[TT];

	for (t = 0u; t < TT; t++)
		acc[t] = 0.0;
	for (i = 0u; i < nsb; i++) {
		uint wb = rb + i * BLK;
		int isum[TT];

		for (t = 0u; t < TT; t++)
			isum[t] = 0;
#ifdef WT_Q4_K
		int summ[TT];

		for (t = 0u; t < TT; t++)
			summ[t] = 0;
		for (j = 0u; j < 8u; j++) {
			/* sub-block j: the low (j even) or high nibbles of
			 * pair j / 2's 32 bytes */
			uint qb = wb + 16u + (j / 2u) * 32u, sh = (j & 1u) * 4u;
			int scl, mn, s[TT];

			for (t = 0u; t < TT; t++)
				s[t] = 0;
			for (w = 0u; w < 8u; w++) {
				uint qw = (t0[pc.o0 + (qb >> 2) + w] >> sh) &
					  0x0f0f0f0fu;

				tile_dot4(qw, 0, ab, i * 81u + 1u + 8u * j + w,
					  nt, s);
			}
			q4k_scale_min(wb + 4u, j, scl, mn);
			for (t = 0u; t < TT; t++) {
				uint a = ab[t] + i * 81u;

				isum[t] += scl * s[t];
				summ[t] += mn * (int(sc[a + 65u + 2u * j]) +
						 int(sc[a + 66u + 2u * j]));
			}
		}
		float dw = half_to_float(rd16_0(wb));
		float dmw = half_to_float(rd16_0(wb + 2u));

		for (t = 0u; t < TT; t++) {
			float da = uintBitsToFloat(sc[ab[t] + i * 81u]);
			precise float dall = dw * da;
			precise float dmin = dmw * da;

			acc[t] = fma_rn(dall, float(isum[t]), acc[t]);
			acc[t] = fma_rn(-dmin, float(summ[t]), acc[t]);
		}
#else
		for (j = 0u; j < 16u; j++) {
			/* group j: elements 16j..16j+15, i.e. half h, quarter
			 * qu, low bytes l = 16 (j % 2) + k */
			uint h = j / 8u, qu = (j % 8u) / 2u, l = 16u * (j % 2u);
			uint lb = wb + h * 64u + l + ((qu & 1u) != 0u ? 32u : 0u);
			uint hb = wb + 128u + h * 32u + l;
			int s[TT], sg = int(rd8_0(wb + 192u + j) << 24) >> 24;

			for (t = 0u; t < TT; t++)
				s[t] = 0;
			for (w = 0u; w < 4u; w++) {
				uint lw = rd32_0(lb + 4u * w);
				uint hw = rd32_0(hb + 4u * w);
				/* the 4 six-bit quants, a byte each */
				uint q = (qu < 2u ? lw : lw >> 4) & 0x0f0f0f0fu;

				q |= ((hw >> (2u * qu)) & 0x03030303u) << 4;
				tile_dot4(q, 32, ab, i * 81u + 1u + 4u * j + w,
					  nt, s);
			}
			for (t = 0u; t < TT; t++)
				isum[t] += sg * s[t];
		}
		float dw = half_to_float(rd16_0(wb + 208u));

		for (t = 0u; t < TT; t++) {
			precise float d =
				dw * uintBitsToFloat(sc[ab[t] + i * 81u]);

			acc[t] = fma_rn(d, float(isum[t]), acc[t]);
		}
#endif
	}
	for (t = 0u; t < TT; t++)
		res[t] = acc[t];
}

// scratch words of one activation row's Q8_K super-blocks
uint act_words()
{
	return pc.n1 / 256u * 81u;
}
#endif

#ifdef ROW_PER_THREAD
void main()
{
	uint row = out_row() * 32u + gl_LocalInvocationID.x;
	uint b0 = gl_WorkGroupID.z * TT, t, ab[TT];
	float res[TT];

	if (row >= pc.n0)
		return;
	/* a tile past the last activation row: those rows not computed */
	for (t = 0u; t < TT; t++)
		ab[t] = pc.os + min(b0 + t, max(pc.n2, 1u) - 1u) * act_words();
	row_dot(row, ab, min(pc.n2 - b0, TT), res);
	for (t = 0u; t < TT; t++)
		if (b0 + t < max(pc.n2, 1u))
			t2[pc.o2 + (b0 + t) * pc.n0 + row] =
				floatBitsToUint(res[t]);
}
#else
void main()
{
	uint row = out_row(), b0 = gl_WorkGroupID.z * TT;
	uint tid = gl_LocalInvocationID.x;
	float y;

	if (row >= pc.n0)
		return;
	y = row_dot(row, b0, min(pc.n2 - b0, TT), tid);
	if (tid < min(pc.n2 - b0, TT))
		t2[pc.o2 + (b0 + tid) * pc.n0 + row] = floatBitsToUint(y);
}
#endif
