// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix-vector and matrix-matrix products, one workgroup of 32 per output
// row and activation row (gl_WorkGroupID.z). t0 weight [n0 rows][n1 cols]
// of the type selected by WT_*, t2 out [n2][n0]. F32/F16 weights read the
// f32 activations of t1; quantized weights read the activations quantized
// by q8_0.comp or q8_k.comp into scratch (word os).
//
// The reduction order is the CPU scalar reference's (kernels/scalar.c), so
// the result is the same float: F32/F16 put element j in lane j % 32 (a
// thread here) and fold the lanes as fold32(); quantized types compute
// each block's exact integer sum in parallel, then one thread runs the
// float chain acc = fma_rn(d_w * d_a, isum, acc) in block order.

layout(local_size_x = 32) in;

#define MAXB 1024u /* blocks of 32 per row: cols <= 32768 */

shared float lane[32];
shared int isum[MAXB];
shared int summ[MAXB / 8u];

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
#ifdef WT_Q8_0
#define BLK 34u
#else
#define BLK 18u
#endif
float row_dot(uint row, uint b, uint tid)
{
	uint nblk = pc.n1 / 32u, i, k;
	uint rb = row * nblk * BLK;
	uint ab = pc.os + b * nblk * 9u;
	precise float acc = 0.0;

	for (i = tid; i < nblk; i += 32u) {
		uint wb = rb + i * BLK, a = ab + i * 9u;
		int s = 0;

		for (k = 0u; k < 32u; k++) {
			int q;
#ifdef WT_Q8_0
			q = int(rd8_0(wb + 2u + k) << 24) >> 24;
#else
			uint byte = rd8_0(wb + 2u + (k & 15u));
			q = int(k < 16u ? (byte & 15u) : (byte >> 4)) - 8;
#endif
			s += q * sbyte(sc[a + 1u + k / 4u], k & 3u);
		}
		isum[i] = s;
	}
	barrier();
	if (tid != 0u)
		return 0.0;
	for (i = 0u; i < nblk; i++) {
		precise float d = half_to_float(rd16_0(rb + i * BLK)) *
				  uintBitsToFloat(sc[ab + i * 9u]);

		acc = fma_rn(d, float(isum[i]), acc);
	}
	return acc;
}
#endif

#if defined(WT_Q4_K) || defined(WT_Q6_K)
#ifdef WT_Q4_K
#define BLK 144u
#define ITEMS 8u /* sub-blocks of 32 */
#else
#define BLK 210u
#define ITEMS 16u /* groups of 16 */
#endif

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

float row_dot(uint row, uint b, uint tid)
{
	uint nsb = pc.n1 / 256u, it, k;
	uint rb = row * nsb * BLK;
	uint ab = pc.os + b * nsb * 81u;
	precise float acc = 0.0;

	for (it = tid; it < nsb; it += 32u) {
		isum[it] = 0;
		summ[it] = 0;
	}
	barrier();
	for (it = tid; it < nsb * ITEMS; it += 32u) {
		uint i = it / ITEMS, j = it % ITEMS;
		uint wb = rb + i * BLK, a = ab + i * 81u;
		int s = 0;
#ifdef WT_Q4_K
		int scl, mn;

		for (k = 0u; k < 32u; k++) {
			uint byte = rd8_0(wb + 16u + (j / 2u) * 32u + k);
			int q = int((j & 1u) != 0u ? (byte >> 4) : (byte & 15u));
			uint e = j * 32u + k;

			s += q * sbyte(sc[a + 1u + e / 4u], e & 3u);
		}
		q4k_scale_min(wb + 4u, j, scl, mn);
		atomicAdd(isum[i], scl * s);
		atomicAdd(summ[i], mn * (int(sc[a + 65u + 2u * j]) +
					 int(sc[a + 66u + 2u * j])));
#else
		for (k = 0u; k < 16u; k++) {
			uint e = j * 16u + k;
			uint h = e / 128u, r = e % 128u, l = r % 32u, qu = r / 32u;
			uint qlb = wb + h * 64u + l + ((qu & 1u) != 0u ? 32u : 0u);
			uint lo = rd8_0(qlb);
			uint hi = rd8_0(wb + 128u + h * 32u + l);
			uint q = (qu < 2u ? (lo & 15u) : (lo >> 4)) |
				 (((hi >> (2u * qu)) & 3u) << 4);

			s += (int(q) - 32) * sbyte(sc[a + 1u + e / 4u], e & 3u);
		}
		int scl = int(rd8_0(wb + 192u + j) << 24) >> 24;

		atomicAdd(isum[i], scl * s);
#endif
	}
	barrier();
	if (tid != 0u)
		return 0.0;
	for (it = 0u; it < nsb; it++) {
		uint wb = rb + it * BLK;
		float da = uintBitsToFloat(sc[ab + it * 81u]);
#ifdef WT_Q4_K
		precise float dall = half_to_float(rd16_0(wb)) * da;
		precise float dmin = half_to_float(rd16_0(wb + 2u)) * da;

		acc = fma_rn(dall, float(isum[it]), acc);
		acc = fma_rn(-dmin, float(summ[it]), acc);
#else
		precise float d = half_to_float(rd16_0(wb + 208u)) * da;

		acc = fma_rn(d, float(isum[it]), acc);
#endif
	}
	return acc;
}
#endif

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
