// SPDX-License-Identifier: LGPL-2.1-or-later
// Element-wise ops on n0 floats: t0 a, t1 b, t2 out; b has n1 floats,
// element i of a taking b's i % n1 (ADD's rows, one b; else n1 = n0).
// EW_ADD: a + b;
// EW_SILU_MUL: a / (1 + exp(-a)) * b, as edgeq_silu_mul_ref() (exp_ref,
// a correctly rounded division); EW_GELU_MUL: a / (1 + exp(-2 u)) * b with
// u = 0.7978845608 (a + 0.044715 a a a), as edgeq_gelu_mul_ref().
layout(local_size_x = 64) in;

void main()
{
	uint i = gl_GlobalInvocationID.x;

	if (i >= pc.n0)
		return;
	float a = f0(i), b = f1(i % pc.n1);
#ifdef EW_ADD
	precise float y = a + b;
#elif defined(EW_GELU_MUL)
	precise float c = uintBitsToFloat(0x3d372713u) * a * a * a;
	precise float u = uintBitsToFloat(0x3f4c422au) * (a + c);
	precise float den = 1.0 + exp_ref(-2.0 * u);
	precise float y = div_rn(a, den) * b;
#else
	precise float den = 1.0 + exp_ref(-a);
	precise float y = div_rn(a, den) * b;
#endif
	t2[pc.o2 + i] = floatBitsToUint(y);
}
