// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Probation of a newly installed bundle: the daemon reports what happens
 * (load failure, OOM kill, agent crashes, throughput samples, time), this
 * decides when the bundle has failed and rolls back to the previous one,
 * recording why, or when it has passed and is marked good.
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/manifest.h>

static double jnum(json_t *o, const char *a, const char *b, const char *c)
{
	o = json_object_get(o, a);
	o = json_object_get(o, b);
	return json_number_value(json_object_get(o, c));
}

int edgeq_probation_start(struct edgeq_probation *p, struct edgeq_store *s,
			  uint64_t now_ns, struct edgeq_error *err)
{
	char man[PATH_MAX];
	json_error_t je;
	json_t *m;
	int ret;

	memset(p, 0, sizeof(*p));
	p->store = s;
	ret = edgeq_store_get(s, "current", p->bundle, sizeof(p->bundle), err);
	if (ret)
		return ret;
	edgeq_store_paths(s, p->bundle, man, NULL, sizeof(man));
	m = json_load_file(man, 0, &je);
	if (!m)
		return edgeq_error_set(err, EBADMSG, "%s: %s (line %d)", man,
				       je.text, je.line);
	p->min_tps = jnum(m, "thresholds", "slo", "min_tok_s");
	p->period_s = jnum(m, "thresholds", "probation", "period_s");
	p->window_s = jnum(m, "thresholds", "probation", "floor_window_s");
	p->max_crashes = (unsigned int)jnum(m, "thresholds", "probation",
					    "max_agent_crashes");
	json_decref(m);
	if (!p->max_crashes)
		p->max_crashes = 3;
	p->start_ns = now_ns;
	p->state = EDGEQ_PROBATION_RUNNING;
	return 0;
}

static int fail(struct edgeq_probation *p, struct edgeq_error *err,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct edgeq_probation *p, struct edgeq_error *err,
		const char *fmt, ...)
{
	char why[200];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(p->reason, sizeof(p->reason),
		 "bundle %.64s failed probation: %.160s", p->bundle, why);
	ret = edgeq_store_rollback(p->store, p->reason, err);
	if (ret)
		return ret;
	p->state = EDGEQ_PROBATION_ROLLED_BACK;
	return p->state;
}

int edgeq_probation_report(struct edgeq_probation *p,
			   enum edgeq_probation_event ev, double value,
			   uint64_t now_ns, struct edgeq_error *err)
{
	double below_s;

	if (p->state != EDGEQ_PROBATION_RUNNING)
		return p->state;
	switch (ev) {
	case EDGEQ_PROBATION_LOAD_FAILED:
		return fail(p, err, "load failure");
	case EDGEQ_PROBATION_OOM_KILL:
		return fail(p, err, "the engine was OOM-killed");
	case EDGEQ_PROBATION_AGENT_CRASH:
		if (++p->crashes >= p->max_crashes)
			return fail(p, err, "device agents crashed %u times",
				    p->crashes);
		break;
	case EDGEQ_PROBATION_THROUGHPUT:
		if (!(p->min_tps > 0) || value >= p->min_tps) {
			p->below = false;
			break;
		}
		if (!p->below) {
			p->below = true;
			p->below_since_ns = now_ns;
		}
		below_s = (double)(now_ns - p->below_since_ns) / 1e9;
		if (below_s >= p->window_s)
			return fail(
				p, err,
				"throughput %.2f tok/s under the floor of %.2f for %.0f s",
				value, p->min_tps, below_s);
		break;
	case EDGEQ_PROBATION_TICK:
		break;
	default:
		return edgeq_error_set(err, EINVAL,
				       "unknown probation event %d", (int)ev);
	}
	if ((double)(now_ns - p->start_ns) / 1e9 >= p->period_s) {
		char path[PATH_MAX];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/good", p->store->dir,
			 p->bundle);
		f = fopen(path, "we");
		if (f) {
			fputs("passed probation\n", f);
			fclose(f);
		}
		p->state = EDGEQ_PROBATION_PASSED;
	}
	return p->state;
}
