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

#include "cli.h"
#include "serve_bundle.h"

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
