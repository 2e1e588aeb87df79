/* SPDX-License-Identifier: GPL-2.0-or-later */
/* edgeq bench --streams: the engine session under concurrent streams. */
#ifndef EDGEQ_CLI_BENCH_SESSION_H
#define EDGEQ_CLI_BENCH_SESSION_H

#include <stdbool.h>

/* Returns an exit status; prints the table (or JSON) on stdout. */
int bench_streams(const char *path, int threads, int streams, int n_gen,
		  bool json);

#endif
