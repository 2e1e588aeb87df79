// SPDX-License-Identifier: LGPL-2.1-or-later
// Softmax in place on t0 [n1 rows][n0]: one invocation per row, in the
// CPU's order (max, exp and a float sum in element order, one reciprocal).
// Only exp() differs from the CPU's expf(), by its last bits.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

void main()
{
	uint r = gl_GlobalInvocationID.x, n = pc.n0, i, x;
	float mx = uintBitsToFloat(0xff800000u);
	precise float sum = 0.0, inv;

	if (r >= pc.n1)
		return;
	x = r * n;
	for (i = 0u; i < n; i++)
		mx = max(mx, f0(x + i));
	for (i = 0u; i < n; i++) {
		float e = exp(f0(x + i) - mx);

		t0[pc.o0 + x + i] = floatBitsToUint(e);
		sum += e;
	}
	inv = 1.0 / sum;
	for (i = 0u; i < n; i++) {
		precise float y = f0(x + i) * inv;

		t0[pc.o0 + x + i] = floatBitsToUint(y);
	}
}
