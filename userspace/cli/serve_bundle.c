// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's side of bundles: choose the verified bundle to serve, count
 * starts during probation (a daemon killed by the OOM killer or crashing
 * over and over never reports; its restarts do), and feed the probation.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/router.h>
#include <edgeq/stream.h>

#include "cli.h"
#include "serve_bundle.h"
#include "server/server.h"

/* starts without passing probation that count as a crash loop */
#define MAX_PROBATION_STARTS 3

static struct {
	bool active, probation, ticking;
	struct edgeq_store store;
	struct edgeq_probation prob;
	pthread_mutex_t lock;
	char model[PATH_MAX];
} sb = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Bump <bundle>/starts; returns the new count. */
static int count_start(const char *model)
{
	char path[PATH_MAX + 16];
	const char *slash = strrchr(model, '/');
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%.*s/starts",
		 (int)(slash ? slash - model : 1), slash ? model : ".");
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%d\n", ++n);
		fflush(f);
		fsync(fileno(f));
		fclose(f);
	}
	return n;
}

int serve_bundle_resolve(const char **model_path)
{
	const char *trust = getenv("EDGEQ_TRUST_KEY");
	struct edgeq_error err = { 0 };
	int ret, starts;

	if (!trust || !*trust)
		return 0;
	ret = edgeq_store_open(&sb.store, getenv("EDGEQ_BUNDLES"), &err);
	for (int tries = 0; !ret && tries < 3; tries++) {
		ret = edgeq_bundle_select(&sb.store, trust, NULL, sb.model,
					  sizeof(sb.model), &sb.probation,
					  &err);
		if (ret || !sb.probation)
			break;
		starts = count_start(sb.model);
		if (starts < MAX_PROBATION_STARTS)
			break;
		snprintf(
			err.msg, sizeof(err.msg),
			"bundle failed probation: started %d times without passing (crashes or OOM kills)",
			starts);
		ret = edgeq_store_rollback(&sb.store, err.msg, &err);
	}
	if (ret)
		return cli_error(
			cli_exit_for(ret), "serve",
			"trust key %s: no verified bundle to serve in %s: %s",
			trust, sb.store.dir, err.msg);
	if (*model_path && strcmp(*model_path, sb.model))
		fprintf(stderr,
			"edgeq serve: EDGEQ_TRUST_KEY is set: serving the verified bundle %s, not %s\n",
			sb.model, *model_path);
	*model_path = sb.model;
	sb.active = true;
	fprintf(stderr, "edgeq serve: bundle %s verified%s\n", sb.model,
		sb.probation ? "; on probation" : "");
	return 0;
}

static void note(int state)
{
	if (state == EDGEQ_PROBATION_ROLLED_BACK)
		fprintf(stderr,
			"edgeq serve: %s; rolled back to the previous bundle (stopping: the restart serves it)\n",
			sb.prob.reason);
	else if (state == EDGEQ_PROBATION_PASSED)
		fprintf(stderr, "edgeq serve: bundle passed its probation\n");
}

static void *ticker(void *arg)
{
	int st = EDGEQ_PROBATION_RUNNING;

	while (st == EDGEQ_PROBATION_RUNNING) {
		sleep(1);
		pthread_mutex_lock(&sb.lock);
		st = edgeq_probation_report(&sb.prob, EDGEQ_PROBATION_TICK, 0,
					    edgeq_now_ns(), NULL);
		pthread_mutex_unlock(&sb.lock);
	}
	note(st);
	return NULL;
}

void serve_bundle_loaded(void)
{
	pthread_t th;

	if (!sb.active || !sb.probation)
		return;
	if (edgeq_probation_start(&sb.prob, &sb.store, edgeq_now_ns(), NULL))
		return;
	sb.ticking = !pthread_create(&th, NULL, ticker, NULL);
	if (sb.ticking)
		pthread_detach(th);
}

void serve_bundle_load_failed(const char *why)
{
	struct edgeq_error err = { 0 };
	char reason[400];

	if (!sb.active)
		return;
	snprintf(reason, sizeof(reason),
		 "bundle failed probation: load failure: %.300s", why);
	if (edgeq_store_rollback(&sb.store, reason, &err))
		fprintf(stderr, "edgeq serve: cannot roll back: %s\n", err.msg);
	else
		fprintf(stderr,
			"edgeq serve: %s; rolled back to the previous bundle\n",
			reason);
}

bool serve_bundle_report(enum edgeq_probation_event ev, double value)
{
	struct edgeq_error err = { 0 };
	bool first;
	int st;

	if (!sb.active || !sb.probation || !sb.ticking)
		return false;
	pthread_mutex_lock(&sb.lock);
	first = sb.prob.state == EDGEQ_PROBATION_RUNNING;
	st = edgeq_probation_report(&sb.prob, ev, value, edgeq_now_ns(), &err);
	pthread_mutex_unlock(&sb.lock);
	if (st < 0)
		fprintf(stderr, "edgeq serve: probation: %s\n", err.msg);
	if (st != EDGEQ_PROBATION_ROLLED_BACK || !first)
		return false;
	note(st);
	return true;
}

/* "local", "local-or-private", "local-or-public", "any" -> route mask */
static uint32_t routes_of(const char *policy)
{
	const uint32_t l = 1u << EDGEQ_ROUTE_LOCAL,
		       pv = 1u << EDGEQ_ROUTE_PRIVATE,
		       pb = 1u << EDGEQ_ROUTE_PUBLIC;

	if (!strcmp(policy, "local"))
		return l;
	if (!strcmp(policy, "local-or-private"))
		return l | pv;
	if (!strcmp(policy, "local-or-public"))
		return l | pb;
	if (!strcmp(policy, "any") || !strcmp(policy, "local-or-any"))
		return l | pv | pb;
	return 0;
}

static int refuse_bundle(const char *why)
{
	serve_bundle_load_failed(why);
	return cli_error(EXIT_BADINPUT, "serve",
			 "the bundle's %s; it cannot be served here", why);
}

int serve_bundle_apply(struct srv_config *cfg)
{
	char path[PATH_MAX + 32], why[300];
	const char *slash = strrchr(sb.model, '/');
	struct edgeq_mem_info mi;
	json_t *m, *th, *routing, *v;
	json_int_t budget = 0;
	double thr = 0, crit = 0, ttft = 0;
	int ret = 0;

	if (!sb.active)
		return 0;
	snprintf(path, sizeof(path), "%.*s/manifest.json",
		 (int)(slash ? slash - sb.model : 1), slash ? sb.model : ".");
	m = json_load_file(path, 0, NULL);
	if (!m)
		return refuse_bundle("manifest could not be read again");
	th = json_object_get(m, "thresholds");
	json_unpack(th, "{s?I, s?{s?F, s?F}, s?{s?F}}", "memory_budget",
		    &budget, "thermal", "throttle_c", &thr, "critical_c", &crit,
		    "slo", "ttft_s", &ttft);
	if (budget < 0 || thr < 0 || crit < 0 || ttft < 0 ||
	    (thr > 0 && crit > 0 && crit <= thr)) {
		snprintf(
			why, sizeof(why),
			"thresholds are inconsistent (memory_budget %lld, throttle %.1f C, critical %.1f C, ttft %.2f s)",
			(long long)budget, thr, crit, ttft);
		ret = refuse_bundle(why);
		goto out;
	}
	if (budget > 0 && !edgeq_mem_probe(NULL, &mi)) {
		/* before the model loads: what the process may still take */
		uint64_t room = mi.available;

		if ((uint64_t)budget > room) {
			snprintf(
				why, sizeof(why),
				"memory budget of %.0f MiB is more than this box can give (%.0f MiB available)",
				budget / 1048576.0, room / 1048576.0);
			ret = refuse_bundle(why);
			goto out;
		}
		if (!cfg->weights_budget ||
		    cfg->weights_budget > (uint64_t)budget)
			cfg->weights_budget = (uint64_t)budget;
	}
	routing = json_object_get(m, "routing");
	for (int c = 0; c < EDGEQ_PRIVACY_COUNT; c++) {
		const char *name = edgeq_privacy_name((enum edgeq_privacy)c);
		const char *pol;
		uint32_t mask;

		v = json_object_get(routing, name);
		if (!v)
			continue;
		pol = json_string_value(v);
		mask = pol ? routes_of(pol) : 0;
		if (!mask || (c == EDGEQ_PRIVACY_CONFIDENTIAL && mask != 1u)) {
			snprintf(
				why, sizeof(why),
				"routing policy for %s is '%.60s': %s", name,
				pol ? pol : "(not a string)",
				mask ? "confidential requests never leave the box" :
				       "use local, local-or-private, local-or-public or any");
			ret = refuse_bundle(why);
			goto out;
		}
		cfg->class_routes[c] = mask;
	}
	cfg->throttle_c = thr;
	cfg->critical_c = crit;
	cfg->ttft_slo_s = ttft;
	fprintf(stderr,
		"edgeq serve: bundle applies: memory budget %s%.0f MiB, throttle %.1f C, critical %.1f C, TTFT SLO %.2f s, routing by class\n",
		budget ? "" : "none ", budget / 1048576.0, thr, crit, ttft);
out:
	json_decref(m);
	return ret;
}
