/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `edgeq run --queue`: the decode steps on edgeq queues (run_placement.c). */
#ifndef EDGEQ_CLI_RUN_PLACEMENT_H
#define EDGEQ_CLI_RUN_PLACEMENT_H

struct edgeq_ctx;
struct run_placement;

/*
 * Place @c's ops on the CPU and the queues of @queues ("npu0[=PROFILE],..."):
 * the kq backend, the module's sysfs for their state and the pressure
 * monitor for throttling. Prints the problem and returns an exit status
 * (EXIT_UNAVAIL when a queue is not there), or 0.
 */
int run_placement_start(struct edgeq_ctx *c, const char *queues,
			struct run_placement **out);
/* A summary line on stderr (unless @quiet), then undo start. NULL is fine. */
void run_placement_stop(struct run_placement *rp, bool quiet);

#endif
