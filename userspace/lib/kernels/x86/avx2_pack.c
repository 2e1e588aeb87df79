// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The AVX2 table's packed matvec and matmul (x86/avx2_pack.h): this build
 * with vpmaddubsw for any AVX2 CPU, and the dispatch to the AVX-VNNI
 * build (x86/avx2_pack_vnni.c) where cpuid reports AVX-VNNI.
 */
#include <cpuid.h>
#include <pthread.h>
#include <stdlib.h>

#define PK_VNNI 0
#define PK_FN(name) edgeq_avx2plain_##name

#include "kernels/x86/avx2_pack.h"

void edgeq_avx2vnni_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
				  int64_t row0, int64_t row1, const void *a,
				  size_t a_stride, int64_t nb, float *y,
				  int64_t ldy);

static bool have_vnni, use_vnni;
static pthread_once_t vnni_once = PTHREAD_ONCE_INIT;

/* CPUID.(EAX=7, ECX=1):EAX bit 4; the OS's YMM state the table's own
 * selection (AVX2) already required. EDGEQ_AVX_VNNI=0 keeps vpmaddubsw
 * (what a Zen 2/3 or Skylake client core runs, measured on a newer one). */
static void vnni_probe(void)
{
	unsigned int eax, ebx, ecx, edx;
	const char *env = getenv("EDGEQ_AVX_VNNI");

	have_vnni = __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) &&
		    (eax & (1u << 4));
	use_vnni = have_vnni && !(env && !strcmp(env, "0"));
}

bool edgeq_avx2_pack_vnni(bool on)
{
	pthread_once(&vnni_once, vnni_probe);
	use_vnni = on && have_vnni;
	return use_vnni;
}

void edgeq_avx2_matmul_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      size_t a_stride, int64_t nb, float *y,
			      int64_t ldy)
{
	pthread_once(&vnni_once, vnni_probe);
	if (use_vnni)
		edgeq_avx2vnni_matmul_packed(t, w, n, row0, row1, a, a_stride,
					     nb, y, ldy);
	else
		edgeq_avx2plain_matmul_packed(t, w, n, row0, row1, a, a_stride,
					      nb, y, ldy);
}

void edgeq_avx2_matvec_packed(enum edgeq_type t, const void *w, int64_t n,
			      int64_t row0, int64_t row1, const void *a,
			      float *y)
{
	edgeq_avx2_matmul_packed(t, w, n, row0, row1, a, 0, 1, y, 0);
}
