// SPDX-License-Identifier: LGPL-2.1-or-later
// Shared by every edgeq compute shader: the bindings and push constants
// that userspace/lib/gpu/vulkan/vk_ops.c records.
//
// Bindings 0..3 are the op's tensors t0..t3 (as edgeq_op_desc names them),
// binding 4 the chain's scratch (quantized activations, RoPE tables,
// attention scores). All are word arrays: o0..o3 and os are word offsets
// into them, so a byte-addressed quant block is read with rd8()/rd16().
// n0..n3 are the op's shape, p0..p2 its parameters.

layout(std430, set = 0, binding = 0) buffer B0 { uint t0[]; };
layout(std430, set = 0, binding = 1) buffer B1 { uint t1[]; };
layout(std430, set = 0, binding = 2) buffer B2 { uint t2[]; };
layout(std430, set = 0, binding = 3) buffer B3 { uint t3[]; };
layout(std430, set = 0, binding = 4) buffer BS { uint sc[]; };

layout(push_constant) uniform PC {
	uint o0, o1, o2, o3, os;
	uint n0, n1, n2, n3;
	uint p0, p1, p2;
} pc;

#define NAN_BITS 0x7fc00000u

float f0(uint i) { return uintBitsToFloat(t0[pc.o0 + i]); }
float f1(uint i) { return uintBitsToFloat(t1[pc.o1 + i]); }
float f2(uint i) { return uintBitsToFloat(t2[pc.o2 + i]); }
float f3(uint i) { return uintBitsToFloat(t3[pc.o3 + i]); }
float fs(uint i) { return uintBitsToFloat(sc[pc.os + i]); }

// byte @b (from the start of t0's tensor) of t0, unsigned
uint rd8_0(uint b)
{
	return (t0[pc.o0 + (b >> 2)] >> ((b & 3u) * 8u)) & 0xffu;
}

// 16-bit little-endian word at even byte @b of t0
uint rd16_0(uint b)
{
	return (t0[pc.o0 + (b >> 2)] >> ((b & 2u) * 8u)) & 0xffffu;
}

float half_to_float(uint h)
{
	return unpackHalf2x16(h).x;
}

// signed value of byte @k (0..3) of word @w
int sbyte(uint w, uint k)
{
	return int(w << (24u - 8u * k)) >> 24;
}

bool finite(float x)
{
	return !isnan(x) && !isinf(x);
}

// C's roundf(): halves away from zero
float round_away(float v)
{
	float t = trunc(v);

	if (abs(v - t) >= 0.5)
		t += sign(v);
	return t;
}

// a / b correctly rounded, as the CPU computes it: in double where the
// device has float64 (a double quotient rounded to float is the correctly
// rounded float quotient), else the driver's float division (2.5 ulp).
float div_rn(float a, float b)
{
#ifdef USE_F64
	precise double q = double(a) / double(b);

	return float(q);
#else
	precise float q = a / b;

	return q;
#endif
}

// fma(a, b, c) with one rounding, as C's fmaf(), whatever the driver makes
// of fma() (lavapipe: llvm.fmuladd, which may round twice). With float64
// the product of two floats is exact and the sum rounds once to double,
// then to float: the same as fmaf() except when the double sum lies on a
// float rounding midpoint (one case in about 2^29).
float fma_rn(float a, float b, float c)
{
#ifdef USE_F64
	precise double r = double(a) * double(b) + double(c);

	return float(r);
#else
	return fma(a, b, c);
#endif
}

// The CPU's exp (kernels/scalar.c edgeq_expf()), step for step: n by the
// 1.5 * 2^23 trick, r = x - n ln 2 in two fmas, a degree-7 Horner
// polynomial, 2^n as two exact powers of two. With float64's exact fma
// the bits are the CPU's (subnormal results aside, where a device flushes
// them); the float-only twins are within a few ulp.
float exp_ref(float x)
{
	if (isnan(x))
		return x;
	if (x < -104.0)
		return 0.0;
	if (x > 89.0)
		return uintBitsToFloat(0x7f800000u);
	precise float z = x * uintBitsToFloat(0x3fb8aa3bu);
	precise float n = (z + uintBitsToFloat(0x4b400000u)) -
			  uintBitsToFloat(0x4b400000u);
	precise float r = fma_rn(-n, uintBitsToFloat(0x3f317200u), x);

	r = fma_rn(-n, uintBitsToFloat(0x35bfbe8eu), r);
	precise float p = uintBitsToFloat(0x39500d01u);

	p = fma_rn(p, r, uintBitsToFloat(0x3ab60b61u));
	p = fma_rn(p, r, uintBitsToFloat(0x3c088889u));
	p = fma_rn(p, r, uintBitsToFloat(0x3d2aaaabu));
	p = fma_rn(p, r, uintBitsToFloat(0x3e2aaaabu));
	p = fma_rn(p, r, 0.5);
	p = fma_rn(p, r, 1.0);
	p = fma_rn(p, r, 1.0);
	int ni = int(n), n1 = ni >> 1;
	float s1 = uintBitsToFloat(uint(n1 + 127) << 23);
	float s2 = uintBitsToFloat(uint(ni - n1 + 127) << 23);
	precise float y = (p * s1) * s2;

	return y;
}

// The attention softmax's sum (kernels.h edgeq_softmax_ref()): the 16
// lanes l[t % 16] folded as edgeq_reduce8(l[k] + l[k + 8]).
float softmax_fold(float l[16])
{
	precise float v[8];

	for (uint k = 0u; k < 8u; k++)
		v[k] = l[k] + l[k + 8u];
	precise float t0 = v[0] + v[4], t1 = v[1] + v[5];
	precise float t2 = v[2] + v[6], t3 = v[3] + v[7];
	precise float s = (t0 + t2) + (t1 + t3);

	return s;
}
