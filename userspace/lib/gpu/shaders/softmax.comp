// SPDX-License-Identifier: LGPL-2.1-or-later
// Softmax in place on t0 [n1 rows][n0]: one invocation per row, in the
// CPU's order (edgeq_softmax_ref(): max, exp_ref, the 16-lane sum and its
// fold, one correctly rounded reciprocal, a product per element).
#version 450
#extension GL_GOOGLE_include_directive : require
#define USE_F64 1
#include "common.glsl"

layout(local_size_x = 64) in;

void main()
{
	uint r = gl_GlobalInvocationID.x, n = pc.n0, i, x;
	float mx = uintBitsToFloat(0xff800000u);
	precise float l[16];
	float inv;

	if (r >= pc.n1)
		return;
	x = r * n;
	for (i = 0u; i < n; i++)
		if (f0(x + i) > mx)
			mx = f0(x + i);
	for (i = 0u; i < 16u; i++)
		l[i] = 0.0;
	for (i = 0u; i < n; i++) {
		precise float d = f0(x + i) - mx;
		float e = exp_ref(d);

		t0[pc.o0 + x + i] = floatBitsToUint(e);
		l[i % 16u] += e;
	}
	inv = div_rn(1.0, softmax_fold(l));
	for (i = 0u; i < n; i++) {
		precise float y = f0(x + i) * inv;

		t0[pc.o0 + x + i] = floatBitsToUint(y);
	}
}
