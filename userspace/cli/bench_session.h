/* SPDX-License-Identifier: GPL-2.0-or-later */
/* edgeq bench --streams: the engine session under concurrent streams. */
#ifndef EDGEQ_CLI_BENCH_SESSION_H
#define EDGEQ_CLI_BENCH_SESSION_H

#include <stdbool.h>

/* Returns an exit status; prints the table (or JSON) on stdout. */
/* @rounds: one stream and N batched taken in turns this many times (-r),
 * the decode ratio their median. @profile: also the forward pass's
 * breakdown of the first round's single and batched phases (bench
 * --profile). */
int bench_streams(const char *path, int threads, int streams, int n_gen,
		  int rounds, bool json, bool profile);

/* --draft SPEC: one stream with and without speculation, the measured
 * speedup next to the ledger's prediction. */
int bench_draft(const char *path, int threads, const char *draft, int max_len,
		int n_gen, bool json);

#endif
