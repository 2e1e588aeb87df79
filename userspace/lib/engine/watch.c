// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The session's pressure monitor: one per session, whatever its slots and
 * device queues, followed on a thread of its own.
 *
 * The thread sleeps in poll() on the monitor's fd (ring buffer, PSI
 * triggers, refresh timer) and an eventfd that stops it. On every change it
 * keeps a copy of the state (what the session's pressure call returns), lets
 * the memory level move the weights budget, and calls the session's
 * on_pressure hook with both.
 *
 * The budget: on each change of the memory level it becomes what memory
 * allows now, less a reserve for the KV caches and activations, never
 * above the configured ceiling nor the model, and only when it moves by
 * more than 5 % (a budget that follows every page of MemAvailable would
 * churn the streamer's cache). The session applies it at a token
 * boundary. Memory is the monitor's own reading (MemAvailable under its
 * proc root) capped by what the cgroup this process runs in leaves.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <edgeq/pressure.h>
#include <edgeq/stream.h>

#include "engine/watch.h"

/* what the budget leaves for KV caches, activations and the runtime */
#define WATCH_RESERVE (256ull << 20)

struct eng_watch {
	struct eng_watch_ops ops;
	struct edgeq_pressure *pm;
	uint64_t ceiling; /* the configured budget; 0: none */
	void (*hook)(void *arg, const struct edgeq_pressure_state *st,
		     uint64_t budget_was, uint64_t budget);
	void *hook_arg;
	int efd;
	pthread_t thread;
	bool started;
	int last_level; /* the memory level the budget was set for */

	pthread_mutex_t lock;		/* st */
	struct edgeq_pressure_state st; /* the latest state */
	char why[sizeof(
		((struct edgeq_error *)0)->msg)]; /* why no monitor, or no BPF */
};

/*
 * The weights budget for @st's memory level: *@was the one in force, *@now
 * the one asked for (equal: unchanged). mmap weights have none (0, 0).
 */
static void adapt_budget(struct eng_watch *w,
			 const struct edgeq_pressure_state *st, uint64_t *was,
			 uint64_t *now)
{
	struct edgeq_stream_status ws;
	struct edgeq_mem_info mi, avail;
	uint64_t cur, model, want;

	*was = *now = 0;
	if (w->ops.weights_status(w->ops.arg, &ws) ||
	    ws.mode == EDGEQ_WEIGHTS_MMAP)
		return;
	cur = *was = *now = ws.budget;
	model = ws.model_bytes;
	if ((int)st->mem.level == w->last_level || !model)
		return;
	w->last_level = (int)st->mem.level;
	memset(&avail, 0, sizeof(avail));
	avail.available = st->mem.available;
	if (!edgeq_mem_probe(NULL, &mi) && mi.cg_limit != UINT64_MAX &&
	    mi.available < avail.available)
		avail.available = mi.available; /* the cgroup leaves less */
	if (!avail.available)
		return; /* no reading: keep what is in force */
	want = edgeq_weights_default_budget(&avail, WATCH_RESERVE);
	if (w->ceiling && want > w->ceiling)
		want = w->ceiling;
	if (want > model)
		want = model;
	if (cur >= model && want >= model)
		return; /* the whole model stays resident either way */
	if (want && (want > cur + cur / 20 || want + cur / 20 < cur)) {
		w->ops.set_budget(w->ops.arg, want);
		*now = want;
	}
}

/* The monitor's state changed (or is first read): keep it, act on it. */
static void changed(struct eng_watch *w, struct edgeq_pressure_state *st)
{
	uint64_t was, now;

	edgeq_pressure_get(w->pm, st);
	pthread_mutex_lock(&w->lock);
	w->st = *st;
	pthread_mutex_unlock(&w->lock);
	adapt_budget(w, st, &was, &now);
	if (w->hook)
		w->hook(w->hook_arg, st, was, now);
}

static void *watch_main(void *arg)
{
	struct eng_watch *w = arg;
	struct edgeq_pressure_state *st = malloc(sizeof(*st));
	struct pollfd pfd[2];
	uint64_t v;

	if (!st)
		return NULL;
	changed(w, st); /* the level memory is at now */
	pfd[0].fd = edgeq_pressure_fd(w->pm);
	pfd[0].events = POLLIN;
	pfd[1].fd = w->efd;
	pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents & POLLIN) {
			if (read(w->efd, &v, sizeof(v)) < 0) {
				/* a wake-up: its value does not matter */
			}
			break;
		}
		if (pfd[0].revents & (POLLERR | POLLNVAL))
			break; /* the monitor is gone: keep its last state */
		if (pfd[0].revents & POLLIN &&
		    edgeq_pressure_consume(w->pm) > 0)
			changed(w, st);
	}
	free(st);
	return NULL;
}

int eng_watch_start(const struct eng_watch_ops *ops,
		    const struct edgeq_session_params *p,
		    struct eng_watch **out, struct edgeq_error *err)
{
	struct edgeq_error perr = { 0 };
	struct eng_watch *w;
	const char *fr;
	int ret;

	*out = NULL;
	if (!p->pressure)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	w->ops = *ops;
	w->ceiling = p->weights_budget;
	w->hook = p->on_pressure;
	w->hook_arg = p->pressure_arg;
	w->last_level = -1;
	w->efd = -1;
	pthread_mutex_init(&w->lock, NULL);
	ret = edgeq_pressure_new(p->pressure, &w->pm, &perr);
	if (ret == -EINVAL) {
		/* bad options (a cooling binding, a devices.conf asked
		 * for) are the caller's error, not a missing monitor */
		eng_watch_stop(w);
		return edgeq_error_set(err, EINVAL, "%s", perr.msg);
	}
	if (ret) {
		/* no monitor is no error: the session runs unthrottled */
		snprintf(w->why, sizeof(w->why), "%s", perr.msg);
		*out = w;
		return 0;
	}
	fr = edgeq_pressure_fallback_reason(w->pm);
	snprintf(w->why, sizeof(w->why), "%s", fr ? fr : "");
	edgeq_pressure_get(w->pm, &w->st); /* readable before the thread runs */
	w->efd = eventfd(0, EFD_CLOEXEC);
	if (w->efd < 0 || pthread_create(&w->thread, NULL, watch_main, w)) {
		eng_watch_stop(w);
		return edgeq_error_set(err, EAGAIN,
				       "cannot start the pressure thread");
	}
	w->started = true;
	*out = w;
	return 0;
}

void eng_watch_stop(struct eng_watch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (w->started) {
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* an eventfd write only fails on overflow */
		}
		pthread_join(w->thread, NULL);
	}
	if (w->efd >= 0)
		close(w->efd);
	edgeq_pressure_free(w->pm);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int eng_watch_get(struct eng_watch *w, struct edgeq_pressure_state *st,
		  const char **why)
{
	if (why)
		*why = w ? w->why : "not asked for";
	if (!w || !w->pm)
		return -ENODEV;
	pthread_mutex_lock(&w->lock);
	*st = w->st;
	pthread_mutex_unlock(&w->lock);
	return 0;
}
