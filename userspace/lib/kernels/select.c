// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Choosing the ops table once at start-up: the best the CPU runs (cpuid on
 * x86-64, AT_HWCAP and AT_HWCAP2 on aarch64), or the one EDGEQ_KERNELS names. Each ISA
 * build references only its own table (x86/ or arm64/ files are built for
 * their ISA alone). This file is built without ISA flags so the probes run
 * on any CPU.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#if defined(__x86_64__)
static const struct edgeq_kernel_ops *isa_table(const char *name)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
	    !__builtin_cpu_supports("f16c"))
		return NULL;
	if (!strcmp(name, "avx2"))
		return &edgeq_kernel_ops_avx2;
	if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vnni"))
		return edgeq_kernel_ops_avx512();
	return NULL;
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1 << 9)
#endif

#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif

static const struct edgeq_kernel_ops *isa_table(const char *name)
{
	unsigned long hw = getauxval(AT_HWCAP);

	if (!(hw & HWCAP_ASIMDDP) || !(hw & HWCAP_FPHP))
		return NULL;
	if (!strcmp(name, "neon"))
		return &edgeq_kernel_ops_neon;
	if (!strcmp(name, "neon-i8mm") && (getauxval(AT_HWCAP2) & HWCAP2_I8MM))
		return edgeq_kernel_ops_neon_i8mm();
	return NULL;
}
#else
static const struct edgeq_kernel_ops *isa_table(const char *name)
{
	return NULL;
}
#endif

const struct edgeq_kernel_ops *edgeq_kernels_scalar(void)
{
	return &edgeq_kernel_ops_scalar;
}

const struct edgeq_kernel_ops *edgeq_kernels_by_name(const char *name)
{
	if (!strcmp(name, "scalar"))
		return &edgeq_kernel_ops_scalar;
	return isa_table(name);
}

static const struct edgeq_kernel_ops *selected;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

static void select_best(void)
{
	const char *env = getenv("EDGEQ_KERNELS");
	static const char *const order[] = { "avx512", "avx2", "neon-i8mm",
					     "neon", "scalar" };

	if (env && *env && (selected = edgeq_kernels_by_name(env)))
		return;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((selected = edgeq_kernels_by_name(order[i])))
			return;
}

const struct edgeq_kernel_ops *edgeq_kernels_select(void)
{
	pthread_once(&select_once, select_best);
	return selected;
}
