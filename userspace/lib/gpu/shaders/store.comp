// SPDX-License-Identifier: LGPL-2.1-or-later
// STORE: t0 x [n0] f32 into t1 y [n0], a K or V row of a cache. p0 1: F16,
// rounded to nearest even with the CPU's subnormals and NaN payloads
// (kernels/convert.c edgeq_fp32_to_fp16(), bit for bit), two per word, so
// n0 is even and the row word-aligned; p0 0: F32, copied.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

uint to_half(uint u)
{
	uint sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu, r;

	if (a > 0x7f800000u) // NaN: quiet, the top payload bits kept
		return sign | 0x7e00u | ((a >> 13) & 0x3ffu);
	if (a >= 0x477ff000u) // rounds to 65520 or more: infinity
		return sign | 0x7c00u;
	if (a < 0x38800000u) { // subnormal half
		if (a < 0x33000000u)
			return sign;
		uint mant = (a & 0x7fffffu) | 0x800000u;
		uint shift = 126u - (a >> 23), rem, hv;

		r = mant >> shift;
		rem = mant & ((1u << shift) - 1u);
		hv = 1u << (shift - 1u);
		if (rem > hv || (rem == hv && (r & 1u) != 0u))
			r++;
		return sign | r;
	}
	r = (a >> 13) - ((127u - 15u) << 10);
	uint rem = a & 0x1fffu;

	if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u))
		r++;
	return sign | r;
}

void main()
{
	uint i = gl_GlobalInvocationID.x;

	if (pc.p0 == 0u) {
		if (i < pc.n0)
			t1[pc.o1 + i] = t0[pc.o0 + i];
		return;
	}
	if (2u * i >= pc.n0)
		return;
	t1[pc.o1 + i] = to_half(t0[pc.o0 + 2u * i]) |
			(to_half(t0[pc.o0 + 2u * i + 1u]) << 16);
}
