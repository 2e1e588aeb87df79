/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The session's pressure monitor and the weights budget it drives. */
#ifndef EDGEQ_ENGINE_WATCH_H
#define EDGEQ_ENGINE_WATCH_H

#include <edgeq/session.h>

struct eng_watch;

/*
 * Open @p->pressure's monitor and follow it (*@out NULL when @p asks for
 * none). A monitor that cannot open is no error: eng_watch_get() says
 * why. Fails only when the thread cannot start.
 */
int eng_watch_start(struct edgeq_session *s,
		    const struct edgeq_session_params *p,
		    struct eng_watch **out, struct edgeq_error *err);
/* Stop the thread, close the monitor. NULL is ok. */
void eng_watch_stop(struct eng_watch *w);
/* As edgeq_session_pressure(). */
int eng_watch_get(struct eng_watch *w, struct edgeq_pressure_state *st,
		  const char **why);

#endif
