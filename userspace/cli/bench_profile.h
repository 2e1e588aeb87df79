/* SPDX-License-Identifier: GPL-2.0-or-later */
/* edgeq bench --profile: the forward pass's time, part by part. */
#ifndef EDGEQ_CLI_BENCH_PROFILE_H
#define EDGEQ_CLI_BENCH_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

/* A prefill of each of the @npp lengths (@n_batch tokens a pass, 0: the
 * engine's default) and a decode of @n_gen tokens; returns an exit
 * status, prints the breakdown (or JSON) on stdout. */
int bench_profile(const char *path, int threads, const int *pp, int npp,
		  int n_gen, uint32_t n_batch, int kv_type, bool json);

/* One breakdown as bench --profile prints it (bench --streams --profile). */
struct edgeq_decode_profile;
void bench_profile_print(const char *name, const struct edgeq_decode_profile *p,
			 double wall_s, double sample_ns, uint64_t n_tokens,
			 double bw);

#endif
