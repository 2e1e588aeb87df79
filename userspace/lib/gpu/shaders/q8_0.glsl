// SPDX-License-Identifier: LGPL-2.1-or-later
// Activations to Q8_0 as the CPU's quantize_act does it (kernels/quants.c):
// one invocation per block of 32; t1 holds n1 rows of n0 floats. Out, at
// scratch word os: per block 9 words, d (the fp16-rounded scale, as float
// bits) then the 32 int8 quants packed 4 to a word.
// Included by q8_0.comp (float64 division) and q8_0_f32.comp, and (with
// Q8_FUSED, the source Q8SRC(i) defined first) by rmsnorm.glsl, which
// quantizes the rows it normalizes in the same dispatch.

#ifndef Q8SRC
#define Q8SRC(i) f1(i)
#endif

// Block g (row g / nblk of n1) into scratch at os + 9 g.
void q8_0_block(uint g)
{
	uint nblk = pc.n0 / 32u, r, i, x, o, j, w;
	float amax = 0.0, d16;
	precise float d, id;
	bool fin = true;

	r = g / nblk;
	i = g % nblk;
	x = r * pc.n0 + i * 32u;
	o = pc.os + g * 9u;
	for (j = 0u; j < 32u; j++) {
		float v = Q8SRC(x + j);

		fin = fin && finite(v);
		amax = max(amax, abs(v));
	}
	if (!fin) {
		sc[o] = NAN_BITS;
		for (w = 0u; w < 8u; w++)
			sc[o + 1u + w] = 0u;
		return;
	}
	d = div_rn(amax, 127.0);
	d16 = half_to_float(packHalf2x16(vec2(d, 0.0)) & 0xffffu);
	id = d16 != 0.0 ? div_rn(1.0, d) : 0.0;
	sc[o] = floatBitsToUint(d16);
	for (w = 0u; w < 8u; w++) {
		uint packed = 0u;

		for (j = 0u; j < 4u; j++) {
			precise float v = Q8SRC(x + w * 4u + j) * id;
			int q = int(round_away(v));

			packed |= (uint(q) & 0xffu) << (8u * j);
		}
		sc[o + 1u + w] = packed;
	}
}

#ifndef Q8_FUSED
layout(local_size_x = 64) in;

void main()
{
	uint g = gl_GlobalInvocationID.x;

	if (g < pc.n0 / 32u * pc.n1)
		q8_0_block(g);
}
#endif
