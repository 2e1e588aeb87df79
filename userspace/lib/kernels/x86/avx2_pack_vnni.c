// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The AVX2 table's packed matvec and matmul with AVX-VNNI's vpdpbusd
 * (x86/avx2_pack.h); x86/avx2_pack.c calls it where cpuid reports
 * AVX-VNNI.
 */
#pragma GCC target("avxvnni")

#define PK_VNNI 1
#define PK_FN(name) edgeq_avx2vnni_##name

#include "kernels/x86/avx2_pack.h"
