// SPDX-License-Identifier: LGPL-2.1-or-later
// y = x * scale * w with scale = 1 / sqrt(mean(x^2) + eps), one workgroup
// per row: t0 x [n1][n0], t1 w [n0], t2 y [n1][n0], p0 eps (float bits).
// As the decoder's rmsnorm(): the sum of squares in double, in element
// order, where the device has float64 (rmsnorm.comp); in float otherwise
// (rmsnorm_f32.comp, a relative error of n0 * 2^-24 more).
layout(local_size_x = 64) in;

shared float scale;

void main()
{
	uint n = pc.n0, tid = gl_LocalInvocationID.x, i;
	uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
	uint b = row * n;

	if (row >= pc.n1) // the whole group: no barrier is left waiting
		return;

	if (tid == 0u) {
		float eps = uintBitsToFloat(pc.p0);
#ifdef RMS_F64
		precise double ss = 0.0LF;

		for (i = 0u; i < n; i++) {
			precise double x = double(f0(b + i)) * double(f0(b + i));

			ss += x;
		}
		precise double r = 1.0LF / sqrt(ss / double(n) + double(eps));

		scale = float(r);
#else
		float ss = 0.0;

		for (i = 0u; i < n; i++)
			ss = fma(f0(b + i), f0(b + i), ss);
		scale = 1.0 / sqrt(ss / float(n) + eps);
#endif
	}
	barrier();
	for (i = tid; i < n; i += 64u) {
		precise float y = f0(b + i) * scale * f1(i);

		t2[pc.o2 + b + i] = floatBitsToUint(y);
	}
}
