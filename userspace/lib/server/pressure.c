// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine session's pressure monitor, as the server uses it: the CPU's
 * throttle the router plans with, the states /metrics exports, the log
 * lines of the monitor and of the weights budget it moves, and the hand-off
 * to the daemon's placement hook.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/pressure.h>

#include "server/internal.h"

/*
 * The session's monitor changed (on its thread; also the first state,
 * while the session is still being made): keep what the router and
 * /metrics use, log a budget the memory level moved, pass it on.
 */
void srv_on_pressure(void *arg, const struct edgeq_pressure_state *st,
		     uint64_t budget_was, uint64_t budget)
{
	struct srv *s = arg;
	struct srv_pressure p = { 0 };
	uint32_t i;

	p.valid = true;
	p.source = edgeq_pressure_source_name(st->source);
	p.mem_some10 =
		st->mem.psi_some_avg10 >= 0 ? st->mem.psi_some_avg10 / 100 : -1;
	p.stall_ms_per_s = st->mem.stall_ms_per_s;
	p.mem_level = (int)st->mem.level;
	p.throttle = 1;
	for (i = 0; i < st->n_devices && p.n_dev < SRV_MAX_DEVICES; i++) {
		snprintf(p.dev[p.n_dev].name, sizeof(p.dev[0].name), "%s",
			 st->devices[i].name);
		p.dev[p.n_dev].throttle = st->devices[i].throttle;
		p.dev[p.n_dev].temp_mc = st->devices[i].temp_mc;
		p.dev[p.n_dev].level = st->devices[i].level;
		/* the engine runs on the CPU */
		if (!strcmp(st->devices[i].name, "cpu")) {
			p.throttle = st->devices[i].throttle;
			p.have_throttle = true;
		}
		p.n_dev++;
	}
	pthread_mutex_lock(&s->lock);
	s->pressure = p;
	pthread_mutex_unlock(&s->lock);
	if (budget != budget_was) {
		char f[64];

		snprintf(f, sizeof(f), "EDGEQ_WEIGHTS_BUDGET=%llu",
			 (unsigned long long)budget);
		srv_log(SRV_NOTICE,
			(const char *const[]){ "EDGEQ_EVENT=weights-budget", f,
					       NULL },
			"memory level %s: weights budget %llu -> %llu MiB",
			edgeq_mem_level_name(st->mem.level),
			(unsigned long long)(budget_was >> 20),
			(unsigned long long)(budget >> 20));
	}
	if (s->cfg.on_pressure)
		s->cfg.on_pressure(s->cfg.hook_arg, st);
}

/* Say which monitor the session follows, or why none. */
void srv_log_pressure(struct srv *s)
{
	struct edgeq_pressure_state *st;
	const char *why = NULL;
	int ret;

	if (!s->cfg.pressure)
		return;
	st = malloc(sizeof(*st));
	if (!st)
		return;
	ret = edgeq_session_pressure(s->sess, st, &why);
	if (ret)
		srv_log(SRV_WARN,
			(const char *const[]){
				"EDGEQ_EVENT=pressure-unavailable", NULL },
			"no pressure monitor (%s): the router plans with unthrottled speed",
			why);
	else
		srv_log(SRV_NOTICE,
			(const char *const[]){ "EDGEQ_EVENT=pressure", NULL },
			"pressure monitor: %s%s%s",
			edgeq_pressure_source_name(st->source),
			*why ? "; BPF not used: " : "", why);
	free(st);
}

/* The share of peak speed left now (1 when nothing throttles). */
double srv_throttle(struct srv *s)
{
	double t = 1;

	pthread_mutex_lock(&s->lock);
	if (s->pressure.valid && s->pressure.have_throttle &&
	    s->pressure.throttle > 0)
		t = s->pressure.throttle;
	pthread_mutex_unlock(&s->lock);
	return t;
}
