// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix-vector and matrix-matrix products, one workgroup of 32 per output
// row (quantized weights: per 32 output rows) and activation row
// (gl_WorkGroupID.z). t0 weight [n0 rows][n1 cols]
// of the type selected by WT_*, t2 out [n2][n0]. F32/F16 weights read the
// f32 activations of t1; quantized weights read the activations quantized
// by q8_0.comp or q8_k.comp into scratch (word os).
//
// The reduction order is the CPU scalar reference's (kernels/scalar.c), so
// the result is the same float: F32/F16 put element j in lane j % 32 (a
// thread here) and fold the lanes as fold32(); quantized types run one
// row per thread: each block's exact integer sum, then the float chain
// acc = fma_rn(d_w * d_a, isum, acc) in block order.

layout(local_size_x = 32) in;

shared float lane[32];

uint out_row()
{
	return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

#if defined(WT_F32) || defined(WT_F16)
float wval(uint row, uint j)
{
#ifdef WT_F32
	return uintBitsToFloat(t0[pc.o0 + row * pc.n1 + j]);
#else
	return half_to_float(rd16_0((row * pc.n1 + j) * 2u));
#endif
}

float row_dot(uint row, uint b, uint tid)
{
	precise float acc = 0.0;
	uint j, k;

	for (j = tid; j < pc.n1; j += 32u)
		acc = fma_rn(wval(row, j), f1(b * pc.n1 + j), acc);
	lane[tid] = acc;
	barrier();
	if (tid != 0u)
		return 0.0;
	precise float v[8];

	for (k = 0u; k < 8u; k++)
		v[k] = (lane[k] + lane[k + 8u]) + (lane[k + 16u] + lane[k + 24u]);
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
float row_dot(uint row, uint b, uint tid)
{
	uint nblk = pc.n1 / 32u, i, j, k;
	uint rb = row * nblk * BLK;
	uint ab = pc.os + b * nblk * 9u;
	precise float acc = 0.0;

	for (i = 0u; i < nblk; i++) {
		uint wb = rb + i * BLK, a = ab + i * 9u;
		int s = 0;

#ifdef WT_Q8_0
		for (j = 0u; j < 8u; j++) {
			uint qw = rd32_0(wb + 2u + 4u * j), aw = sc[a + 1u + j];

			for (k = 0u; k < 4u; k++)
				s += sbyte(qw, k) * sbyte(aw, k);
		}
#else
		for (j = 0u; j < 4u; j++) {
			/* bytes 4j..4j+3: elements 4j+k (low nibbles) and
			 * 16+4j+k (high) */
			uint qw = rd32_0(wb + 2u + 4u * j);
			uint lo = sc[a + 1u + j], hi = sc[a + 5u + j];

			for (k = 0u; k < 4u; k++) {
				int ql = int((qw >> (8u * k)) & 15u) - 8;
				int qh = int((qw >> (8u * k + 4u)) & 15u) - 8;

				s += ql * sbyte(lo, k) + qh * sbyte(hi, k);
			}
		}
#endif
		precise float d = half_to_float(rd16_0(wb)) *
				  uintBitsToFloat(sc[a]);

		acc = fma_rn(d, float(s), acc);
	}
	return acc;
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

// One thread per row, as for Q8_0 and Q4_0: per super-block the exact
// integer sums from whole words, then the float chain (Q4_K: the scale
// step, then the mins step) in super-block order.
float row_dot(uint row, uint b, uint tid)
{
	uint nsb = pc.n1 / 256u, i, j, w, k;
	uint rb = row * nsb * BLK;
	uint ab = pc.os + b * nsb * 81u;
	precise float acc = 0.0;

	for (i = 0u; i < nsb; i++) {
		uint wb = rb + i * BLK, a = ab + i * 81u;
		float da = uintBitsToFloat(sc[a]);
		int isum = 0;
#ifdef WT_Q4_K
		int summ = 0;

		for (j = 0u; j < 8u; j++) {
			/* sub-block j: the low (j even) or high nibbles of
			 * pair j / 2's 32 bytes */
			uint qb = wb + 16u + (j / 2u) * 32u, sh = (j & 1u) * 4u;
			int scl, mn, s = 0;

			for (w = 0u; w < 8u; w++) {
				uint qw = t0[pc.o0 + (qb >> 2) + w];
				uint aw = sc[a + 1u + 8u * j + w];

				for (k = 0u; k < 4u; k++)
					s += int((qw >> (8u * k + sh)) & 15u) *
					     sbyte(aw, k);
			}
			q4k_scale_min(wb + 4u, j, scl, mn);
			isum += scl * s;
			summ += mn * (int(sc[a + 65u + 2u * j]) +
				      int(sc[a + 66u + 2u * j]));
		}
		precise float dall = half_to_float(rd16_0(wb)) * da;
		precise float dmin = half_to_float(rd16_0(wb + 2u)) * da;

		acc = fma_rn(dall, float(isum), acc);
		acc = fma_rn(-dmin, float(summ), acc);
#else
		for (j = 0u; j < 16u; j++) {
			/* group j: elements 16j..16j+15, i.e. half h, quarter
			 * qu, low bytes l = 16 (j % 2) + k */
			uint h = j / 8u, qu = (j % 8u) / 2u, l = 16u * (j % 2u);
			uint lb = wb + h * 64u + l + ((qu & 1u) != 0u ? 32u : 0u);
			uint hb = wb + 128u + h * 32u + l;
			int s = 0;

			for (w = 0u; w < 4u; w++) {
				uint lw = rd32_0(lb + 4u * w);
				uint hw = rd32_0(hb + 4u * w);
				uint aw = sc[a + 1u + 4u * j + w];

				for (k = 0u; k < 4u; k++) {
					uint lo = (lw >> (8u * k)) & 0xffu;
					uint hi = (hw >> (8u * k)) & 0xffu;
					uint q = (qu < 2u ? (lo & 15u) : (lo >> 4)) |
						 (((hi >> (2u * qu)) & 3u) << 4);

					s += (int(q) - 32) * sbyte(aw, k);
				}
			}
			isum += (int(rd8_0(wb + 192u + j) << 24) >> 24) * s;
		}
		precise float d = half_to_float(rd16_0(wb + 208u)) * da;

		acc = fma_rn(d, float(isum), acc);
#endif
	}
	return acc;
}
#endif

#ifdef ROW_PER_THREAD
void main()
{
	uint row = out_row() * 32u + gl_LocalInvocationID.x;
	uint b = gl_WorkGroupID.z;

	if (row < pc.n0)
		t2[pc.o2 + b * pc.n0 + row] =
			floatBitsToUint(row_dot(row, b, 0u));
}
#else
void main()
{
	uint row = out_row(), b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
	float y;

	if (row >= pc.n0)
		return;
	y = row_dot(row, b, tid);
	if (tid == 0u)
		t2[pc.o2 + b * pc.n0 + row] = floatBitsToUint(y);
}
#endif
