// SPDX-License-Identifier: LGPL-2.1-or-later
// y = x * scale * w with scale = 1 / sqrt(mean(x^2) + eps), one workgroup
// per row: t0 x [n1][n0], t1 w [n0], t2 y [n1][n0], p0 eps (float bits).
// As the decoder's rmsnorm(): the sum of squares in double, in
// edgeq_sumsq_ref()'s 16 lanes and fold, where the device has float64
// (rmsnorm.comp); in float otherwise (rmsnorm_f32.comp, the same lanes
// with fma, a relative error of n0 / 16 * 2^-24 more).
// p1 1 or 2: the rows are also quantized into scratch at os, Q8_0 or Q8_K
// blocks as q8_0.glsl / q8_k.glsl make them from y (each element computed
// again, the same product: no other invocation's write is read), for the
// product that reads y next; one dispatch instead of two.
layout(local_size_x = 64) in;

shared float scale;
#ifdef RMS_F64
shared double lanes[16];
#else
shared float lanes[16];
#endif

float rms_val(uint i)
{
	precise float y = f0(i) * scale * f1(i % pc.n0);

	return y;
}

#define Q8_FUSED 1
#define Q8SRC(i) rms_val(i)
#include "q8_0.glsl"
#include "q8_k.glsl"

void main()
{
	uint n = pc.n0, tid = gl_LocalInvocationID.x, i;
	uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
	uint b = row * n;

	if (row >= pc.n1) // the whole group: no barrier is left waiting
		return;

	// edgeq_sumsq_ref(): lane l sums x_i^2 for i % 16 == l in i order,
	// then the 16 lanes fold in halves (l += l + 8, + 4, + 2, + 1)
	if (tid < 16u) {
#ifdef RMS_F64
		precise double ls = 0.0LF;

		for (i = tid; i < n; i += 16u) {
			precise double x = double(f0(b + i)) * double(f0(b + i));

			ls += x;
		}
#else
		float ls = 0.0;

		for (i = tid; i < n; i += 16u)
			ls = fma(f0(b + i), f0(b + i), ls);
#endif
		lanes[tid] = ls;
	}
	barrier();
	if (tid == 0u) {
		float eps = uintBitsToFloat(pc.p0);

		for (uint w = 8u; w > 0u; w /= 2u)
			for (i = 0u; i < w; i++) {
#ifdef RMS_F64
				precise double t = lanes[i] + lanes[i + w];
#else
				float t = lanes[i] + lanes[i + w];
#endif
				lanes[i] = t;
			}
#ifdef RMS_F64
		precise double r =
			1.0LF / sqrt(lanes[0] / double(n) + double(eps));

		scale = float(r);
#else
		scale = 1.0 / sqrt(lanes[0] / float(n) + eps);
#endif
	}
	barrier();
	for (i = tid; i < n; i += 64u)
		t2[pc.o2 + b + i] = floatBitsToUint(rms_val(b + i));
	if (pc.p1 == 1u)
		for (i = tid; i < n / 32u; i += 64u)
			q8_0_block(row * (n / 32u) + i);
	else if (pc.p1 == 2u)
		for (i = tid; i < n / 256u; i += 64u)
			q8_k_block(row * (n / 256u) + i);
}
