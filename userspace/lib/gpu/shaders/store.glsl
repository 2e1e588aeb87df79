// SPDX-License-Identifier: LGPL-2.1-or-later
// STORE: t0 x [n0] f32 into t1 y [n0], a K or V row of a cache. p0 1: F16,
// rounded to nearest even with the CPU's subnormals and NaN payloads
// (kernels/convert.c edgeq_fp32_to_fp16(), bit for bit), two per word, so
// n0 is even and the row word-aligned; p0 0: F32, copied; p0 2: Q8_0 as
// the CPU quantizes activations (kernels/quants.c quantize_act_q8_0()),
// one invocation per two blocks (68 bytes, 17 words), so n0 is a multiple
// of 64 and the row word-aligned.
// A second row, t2 into t3 of the same n0 and type (a K row and its V
// row), is the dispatch's workgroups of y = 1: one dispatch for both.
// Included by store.comp (float64 division) and store_f32.comp.

layout(local_size_x = 64) in;

// word k of this workgroup's source row, and word k of its destination
uint src(uint k)
{
	return gl_WorkGroupID.y == 0u ? t0[pc.o0 + k] : t2[pc.o2 + k];
}

void put(uint k, uint v)
{
	if (gl_WorkGroupID.y == 0u)
		t1[pc.o1 + k] = v;
	else
		t3[pc.o3 + k] = v;
}

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

// The Q8_0 block of x elements [x, x + 32) as 34 bytes into by[o...].
void q8_block(uint x, uint o, inout uint by[68])
{
	float amax = 0.0;
	bool fin = true;
	uint j;

	for (j = 0u; j < 32u; j++) {
		float v = uintBitsToFloat(src(x + j));

		fin = fin && finite(v);
		amax = max(amax, abs(v));
	}
	if (!fin) { // NaN scale, zero quants: the dots it feeds give NaN
		by[o] = 0x00u;
		by[o + 1u] = 0x7eu;
		for (j = 0u; j < 32u; j++)
			by[o + 2u + j] = 0u;
		return;
	}
	precise float d = div_rn(amax, 127.0);
	uint h = to_half(floatBitsToUint(d));
	precise float id = h != 0u ? div_rn(1.0, d) : 0.0;

	by[o] = h & 0xffu;
	by[o + 1u] = h >> 8;
	for (j = 0u; j < 32u; j++) {
		precise float v = uintBitsToFloat(src(x + j)) * id;

		by[o + 2u + j] = uint(int(round_away(v))) & 0xffu;
	}
}

void main()
{
	uint i = gl_GlobalInvocationID.x;

	if (pc.p0 == 2u) {
		uint by[68], w;

		if (64u * i >= pc.n0)
			return;
		q8_block(64u * i, 0u, by);
		q8_block(64u * i + 32u, 34u, by);
		for (w = 0u; w < 17u; w++)
			put(17u * i + w, by[4u * w] | (by[4u * w + 1u] << 8) |
						 (by[4u * w + 2u] << 16) |
						 (by[4u * w + 3u] << 24));
		return;
	}

	if (pc.p0 == 0u) {
		if (i < pc.n0)
			put(i, src(i));
		return;
	}
	if (2u * i >= pc.n0)
		return;
	put(i, to_half(src(2u * i)) | (to_half(src(2u * i + 1u)) << 16));
}
