// SPDX-License-Identifier: LGPL-2.1-or-later
// Attention, one workgroup of 32 per query head and token: t0 q [p1
// tokens][n0 heads][n2 head_dim] f32, t1 K and t2 V [n3 positions][n1 kv
// heads][n2] of the type KV_* selects, t3 out [p1][n0][n2] f32; p0 the
// score scale (float bits); p1 the queries (0: one), each causal over the
// rows up to its own, e = n3 - p1 + token + 1, from e - p2 when p2 (a
// sliding window) is set. Scratch at os: p1 * n0 * n3 floats of scores.
//
// In the CPU's order (kq/exec.c exec_attention()): each score is one
// thread's dot product with the reference's lanes and fold (F32, F16) or
// block chain over the query quantized to Q8_0 (Q8_0); the softmax is
// the decoder's (edgeq_softmax_ref(): exp_ref, 16 lanes, one reciprocal);
// each output element accumulates positions in order.
layout(local_size_x = 32) in;

#define MAXQB 16u /* Q8_0 blocks of a head: head_dim <= 512 */

shared float qd[MAXQB];
shared uint qq[MAXQB * 8u];
shared float inv_sum;

uint rd8_1(uint b) { return (t1[pc.o1 + (b >> 2)] >> ((b & 3u) * 8u)) & 0xffu; }
uint rd8_2(uint b) { return (t2[pc.o2 + (b >> 2)] >> ((b & 3u) * 8u)) & 0xffu; }
uint rd16_1(uint b) { return (t1[pc.o1 + (b >> 2)] >> ((b & 2u) * 8u)) & 0xffffu; }
uint rd16_2(uint b) { return (t2[pc.o2 + (b >> 2)] >> ((b & 2u) * 8u)) & 0xffffu; }

#ifdef KV_F32
#define KVAL(r, j) uintBitsToFloat(t1[pc.o1 + (r) * pc.n2 + (j)])
#define VVAL(r, j) uintBitsToFloat(t2[pc.o2 + (r) * pc.n2 + (j)])
#endif
#ifdef KV_F16
#define KVAL(r, j) half_to_float(rd16_1(((r) * pc.n2 + (j)) * 2u))
#define VVAL(r, j) half_to_float(rd16_2(((r) * pc.n2 + (j)) * 2u))
#endif

float score(uint qh, uint r)
{
	uint hd = pc.n2, j;
	precise float acc = 0.0;
#ifdef KV_Q8_0
	uint rb = r * (hd / 32u) * 34u;

	for (j = 0u; j < hd / 32u; j++) {
		uint kb = rb + j * 34u, k;
		int s = 0;

		for (k = 0u; k < 32u; k++)
			s += (int(rd8_1(kb + 2u + k) << 24) >> 24) *
			     sbyte(qq[j * 8u + k / 4u], k & 3u);
		precise float dk = half_to_float(rd16_1(kb)) * qd[j];

		acc = fma_rn(dk, float(s), acc);
	}
	return acc;
#else
	precise float l[32];
	uint k;

	for (k = 0u; k < 32u; k++)
		l[k] = 0.0;
	for (j = 0u; j < hd; j++)
		l[j % 32u] = fma_rn(KVAL(r, j), f0(qh * hd + j), l[j % 32u]);
	precise float v[8];

	for (k = 0u; k < 8u; k++)
		v[k] = (l[k] + l[k + 8u]) + (l[k + 16u] + l[k + 24u]);
	precise float a0 = v[0] + v[4], a1 = v[1] + v[5];
	precise float a2 = v[2] + v[6], a3 = v[3] + v[7];
	precise float res = (a0 + a2) + (a1 + a3);

	return res;
#endif
}

void main()
{
	uint h = gl_WorkGroupID.x, tok = gl_WorkGroupID.y;
	uint tid = gl_LocalInvocationID.x, ntok = max(pc.p1, 1u);
	uint heads = pc.n0, kvh = pc.n1, hd = pc.n2;
	uint qh = tok * heads + h, e = pc.n3 - ntok + tok + 1u;
	uint first = pc.p2 != 0u && e > pc.p2 ? e - pc.p2 : 0u;
	uint npos = e - first;
	uint g = h / (heads / kvh), p, d, s0 = pc.os + qh * pc.n3;
	float scale = uintBitsToFloat(pc.p0);

#ifdef KV_Q8_0
	/* the query head to Q8_0, as quantize_act (q8_0.comp) */
	if (tid < hd / 32u) {
		uint x = qh * hd + tid * 32u, j, w;
		float amax = 0.0;

		for (j = 0u; j < 32u; j++)
			amax = max(amax, abs(f0(x + j)));
		precise float dd = div_rn(amax, 127.0);
		float d16 = half_to_float(packHalf2x16(vec2(dd, 0.0)) & 0xffffu);
		precise float id = d16 != 0.0 ? div_rn(1.0, dd) : 0.0;

		qd[tid] = d16;
		for (w = 0u; w < 8u; w++) {
			uint packed = 0u;

			for (j = 0u; j < 4u; j++) {
				precise float v = f0(x + w * 4u + j) * id;

				packed |= (uint(int(round_away(v))) & 0xffu)
					  << (8u * j);
			}
			qq[tid * 8u + w] = packed;
		}
	}
	barrier();
#endif
	for (p = tid; p < npos; p += 32u) {
		precise float s = score(qh, (first + p) * kvh + g) * scale;

		sc[s0 + p] = floatBitsToUint(s);
	}
	memoryBarrierBuffer();
	barrier();
	if (tid == 0u) {
		float mx = uintBitsToFloat(0xff800000u);
		precise float l[16];

		for (p = 0u; p < npos; p++)
			if (uintBitsToFloat(sc[s0 + p]) > mx)
				mx = uintBitsToFloat(sc[s0 + p]);
		for (p = 0u; p < 16u; p++)
			l[p] = 0.0;
		for (p = 0u; p < npos; p++) {
			precise float dd = uintBitsToFloat(sc[s0 + p]) - mx;
			float e = exp_ref(dd);

			sc[s0 + p] = floatBitsToUint(e);
			l[p % 16u] += e;
		}
		inv_sum = div_rn(1.0, softmax_fold(l));
	}
	memoryBarrierBuffer();
	barrier();
	for (d = tid; d < hd; d += 32u) {
		precise float acc = 0.0;

		for (p = 0u; p < npos; p++) {
			precise float a = uintBitsToFloat(sc[s0 + p]) * inv_sum;
			uint r = (first + p) * kvh + g;
#ifdef KV_Q8_0
			uint vb = r * (hd / 32u) * 34u + (d / 32u) * 34u;
			precise float sa = a * half_to_float(rd16_2(vb));

			acc = fma_rn(sa, float(int(rd8_2(vb + 2u + d % 32u) << 24) >> 24), acc);
#else
			acc = fma_rn(a, VVAL(r, d), acc);
#endif
		}
		t3[pc.o3 + qh * hd + d] = floatBitsToUint(acc);
	}
}
