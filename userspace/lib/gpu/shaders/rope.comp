// SPDX-License-Identifier: LGPL-2.1-or-later
// RoPE in place on t0 x [n2 tokens][n0 heads][n1 head_dim]: p0 rotated
// dims per head, p1 1 for NEOX halves (else adjacent pairs). The cos/sin
// tables (p0 / 2 pairs a token, one token's after another) are in scratch
// at os, computed by the host exactly as the CPU does (double inverse
// frequencies, float angles), so the rotation itself is two products and
// a sum per element, not contracted.
// With n3 > 0, the workgroups of y = 1 rotate t2 (n3 heads, the same
// head_dim, tokens and table) too: q and k in one dispatch.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

void main()
{
	uint half_rot = pc.p0 / 2u, g = gl_GlobalInvocationID.x;
	bool second = gl_WorkGroupID.y == 1u;
	uint per = (second ? pc.n3 : pc.n0) * half_rot, tok, h, i, a, b, v, c;
	float co, si, x0, x1;

	if (g >= per * max(pc.n2, 1u))
		return;
	tok = g / per;
	h = g % per / half_rot;
	i = g % half_rot;
	v = (tok * (second ? pc.n3 : pc.n0) + h) * pc.n1;
	c = tok * pc.p0;
	a = pc.p1 != 0u ? i : 2u * i;
	b = pc.p1 != 0u ? i + half_rot : 2u * i + 1u;
	co = fs(c + 2u * i);
	si = fs(c + 2u * i + 1u);
	x0 = second ? f2(v + a) : f0(v + a);
	x1 = second ? f2(v + b) : f0(v + b);
	precise float y0 = x0 * co - x1 * si;
	precise float y1 = x0 * si + x1 * co;

	if (second) {
		t2[pc.o2 + v + a] = floatBitsToUint(y0);
		t2[pc.o2 + v + b] = floatBitsToUint(y1);
	} else {
		t0[pc.o0 + v + a] = floatBitsToUint(y0);
		t0[pc.o0 + v + b] = floatBitsToUint(y1);
	}
}
