/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The session's pressure monitor and the weights budget it drives. */
#ifndef EDGEQ_ENGINE_WATCH_H
#define EDGEQ_ENGINE_WATCH_H

#include <edgeq/session.h>

struct eng_watch;
struct edgeq_stream_status;

/*
 * What the watch reads and moves: the weights' status and the budget (the
 * session's, applied at a token boundary). The watch calls no session
 * function but these, so the session is the only caller of the watch.
 */
struct eng_watch_ops {
	void *arg;
	int (*weights_status)(void *arg, struct edgeq_stream_status *st);
	void (*set_budget)(void *arg, uint64_t bytes);
};

/*
 * Open @p->pressure's monitor and follow it (*@out NULL when @p asks for
 * none). A monitor that cannot open is no error: eng_watch_get() says
 * why. Fails only when the thread cannot start.
 */
int eng_watch_start(const struct eng_watch_ops *ops,
		    const struct edgeq_session_params *p,
		    struct eng_watch **out, struct edgeq_error *err);
/* Stop the thread, close the monitor. NULL is ok. */
void eng_watch_stop(struct eng_watch *w);
/* As edgeq_session_pressure(). */
int eng_watch_get(struct eng_watch *w, struct edgeq_pressure_state *st,
		  const char **why);

#endif
