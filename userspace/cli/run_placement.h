/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `edgeq run --queue`: the decode steps on edgeq queues (run_placement.c). */
#ifndef EDGEQ_CLI_RUN_PLACEMENT_H
#define EDGEQ_CLI_RUN_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edgeq_ctx;
struct run_placement;
struct edgeq_pressure_state;

/*
 * Place @c's ops on the CPU and the queues of @queues ("npu0[=PROFILE],..."):
 * the kq backend, the module's sysfs for their state and the pressure
 * monitor for throttling. Prints the problem and returns an exit status
 * (EXIT_UNAVAIL when a queue is not there), or 0. @who and @opt name the
 * command and option in messages; @inline_be runs the queues in-process
 * (no edgeq.ko: a test hook), whose ops fail with -ENODEV from the
 * @fail_after'th on (0: never), as a dying agent's would; @no_pressure
 * skips the monitor; @copy_budget bounds the weight copies handed to the
 * queues (edgeq_place_kq_set_copy_budget()). @queues NULL or "": the CPU
 * only, still counted.
 */
struct run_placement_opts {
	const char *who, *opt; /* command and option, for messages */
	bool inline_be, no_pressure;
	uint64_t fail_after;
	uint64_t copy_budget; /* the queues' weight copies, bytes; 0: no bound */
};
int run_placement_start_opts(struct edgeq_ctx *c, const char *queues,
			     const struct run_placement_opts *o,
			     struct run_placement **out);
/*
 * --draft-on auto: which model of a speculative pair the queues of
 * @queues should take (edgeq_place_draft_choice(), the queues' state
 * from sysfs). 0, or an exit
 * status with the problem printed (as @who, naming @opt).
 */
struct edgeq_draft_choice;
struct edgeq_model;
int run_placement_draft_choice(const char *queues,
			       const struct edgeq_model *target,
			       const struct edgeq_model *draft, double accept,
			       int max_len, const char *who, const char *opt,
			       struct edgeq_draft_choice *out);
/* Matrix ops run so far per device (names[0] is "cpu") and agent losses
 * seen (ops a queue failed); returns the number of devices. */
/* A state of a monitor followed elsewhere (serve's session): the placement
 * re-plans on it at its next token boundary. Any thread; NULL is fine. */
void run_placement_pressure(struct run_placement *rp,
			    const struct edgeq_pressure_state *st);
size_t run_placement_ops(struct run_placement *rp, const char **names,
			 uint64_t *ops, size_t max, uint64_t *lost);
/* A summary line on stderr (unless @quiet), then undo start. NULL is fine. */
void run_placement_stop(struct run_placement *rp, bool quiet);

#endif
