// SPDX-License-Identifier: LGPL-2.1-or-later
// Activations to Q8_K as the CPU's quantize_act does it: one invocation
// per super-block of 256; t1 holds n1 rows of n0 floats. Out, at scratch
// word os: per super-block 81 words, d (float bits), 64 words of packed
// int8 quants, 16 group sums (int bits).
// Included by q8_k.comp (float64 division) and q8_k_f32.comp, and (with
// Q8_FUSED, the source Q8SRC(i) defined first) by rmsnorm.glsl.

#ifndef Q8SRC
#define Q8SRC(i) f1(i)
#endif

// Super-block g (row g / nsb of n1) into scratch at os + 81 g.
void q8_k_block(uint g)
{
	uint nsb = pc.n0 / 256u, r, i, x, o, j, w;
	float amax = 0.0, mx = 0.0;
	precise float iscale, d;
	bool fin = true;

	r = g / nsb;
	i = g % nsb;
	x = r * pc.n0 + i * 256u;
	o = pc.os + g * 81u;
	for (j = 0u; j < 80u; j++)
		sc[o + 1u + j] = 0u;
	for (j = 0u; j < 256u; j++) {
		float v = Q8SRC(x + j);

		fin = fin && finite(v);
		if (abs(v) > amax) {
			amax = abs(v);
			mx = v;
		}
	}
	if (!fin) {
		sc[o] = NAN_BITS;
		return;
	}
	iscale = amax != 0.0 ? div_rn(-127.0, mx) : 0.0;
	if (amax == 0.0 || isinf(iscale)) {
		sc[o] = 0u;
		return;
	}
	for (w = 0u; w < 64u; w++) {
		uint packed = 0u;

		for (j = 0u; j < 4u; j++) {
			precise float v = iscale * Q8SRC(x + w * 4u + j);
			int q = min(127, int(roundEven(v)));

			packed |= (uint(q) & 0xffu) << (8u * j);
		}
		sc[o + 1u + w] = packed;
	}
	for (j = 0u; j < 16u; j++) {
		int s = 0;

		for (w = 0u; w < 4u; w++) {
			uint p = sc[o + 1u + j * 4u + w];

			s += sbyte(p, 0u) + sbyte(p, 1u) + sbyte(p, 2u) +
			     sbyte(p, 3u);
		}
		sc[o + 65u + j] = uint(s);
	}
	d = div_rn(1.0, iscale);
	sc[o] = floatBitsToUint(d);
}

#ifndef Q8_FUSED
layout(local_size_x = 64) in;

void main()
{
	uint g = gl_GlobalInvocationID.x;

	if (g < pc.n0 / 256u * pc.n1)
		q8_k_block(g);
}
#endif
