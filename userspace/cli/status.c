// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq status: the pressure monitor's state, once (human or --json), or one
 * JSON line per change (--watch), driven by an io_uring poll on the
 * monitor's fd the way the engine's event loop drives it.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <liburing.h>

#include <edgeq/pressure.h>

#include "cli.h"
#include "pressure_cli.h"

int pressure_cli_start(const char *cmd, const struct pressure_cli_opts *po,
		       struct edgeq_pressure **out)
{
	struct edgeq_pressure_opts o;
	struct edgeq_error err = { 0 };
	int ret;

	edgeq_pressure_opts_init(&o);
	o.no_bpf = po->no_bpf;
	o.sysfs_root = po->sysfs_root;
	o.proc_root = po->proc_root;
	o.devices_conf = po->devices_conf;
	o.cgroup = po->cgroup;
	o.cool_bind = po->cool_bind;
	if (po->refresh_ms > 0)
		o.refresh_ms = (uint32_t)po->refresh_ms;
	if (po->rate_burst > 0)
		o.rate_burst = (uint32_t)po->rate_burst;
	if (po->stall_warn_us > 0)
		o.stall_warn_ns = (uint64_t)po->stall_warn_us * 1000;
	ret = edgeq_pressure_new(&o, out, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), cmd, "%s", err.msg);
	return EXIT_OK;
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_mc(FILE *out, int32_t v)
{
	if (v == EDGEQ_PRESSURE_NONE)
		fputs("null", out);
	else
		fprintf(out, "%d", v);
}

static void json_stall(FILE *out, const struct edgeq_pressure_stall *s)
{
	fprintf(out, "{\"count\": %llu, \"total_ns\": %llu, \"max_ns\": %llu}",
		(unsigned long long)s->count, (unsigned long long)s->total_ns,
		(unsigned long long)s->max_ns);
}

static void json_avg(FILE *out, double v)
{
	if (v < 0)
		fputs("null", out);
	else
		fprintf(out, "%.2f", v);
}

static void json_event(FILE *out, const struct edgeq_pressure_event *ev)
{
	fprintf(out,
		"{\"kind\": \"%s\", \"ts_ns\": %llu, \"id\": %u, \"value\": %lld, "
		"\"prev\": %lld, \"aux\": %llu, \"level\": %u, \"flags\": %u, "
		"\"name\": ",
		edgeq_pressure_event_name(ev->kind),
		(unsigned long long)ev->ts_ns, ev->id, (long long)ev->value,
		(long long)ev->prev, (unsigned long long)ev->aux, ev->level,
		ev->flags);
	json_str(out, ev->name);
	fputc('}', out);
}

void pressure_cli_json(FILE *out, const struct edgeq_pressure *p,
		       const struct edgeq_pressure_state *s,
		       const struct edgeq_pressure_event *ev, unsigned int n_ev)
{
	const struct edgeq_pressure_probe *pr;
	const struct edgeq_pressure_mem *m = &s->mem;
	struct edgeq_pressure_stall sys = m->direct;
	unsigned int i, n;

	sys.count += m->memcg.count;
	sys.total_ns += m->memcg.total_ns;
	if (m->memcg.max_ns > sys.max_ns)
		sys.max_ns = m->memcg.max_ns;
	fprintf(out, "{\"source\": \"%s\", \"fallback_reason\": ",
		edgeq_pressure_source_name(s->source));
	if (edgeq_pressure_fallback_reason(p)[0])
		json_str(out, edgeq_pressure_fallback_reason(p));
	else
		fputs("null", out);
	fprintf(out, ", \"seq\": %llu, \"time_ns\": %llu",
		(unsigned long long)s->seq, (unsigned long long)s->updated_ns);
	fprintf(out,
		", \"memory\": {\"level\": \"%s\", \"stall_ms_per_s\": %.3f, "
		"\"available\": %llu, \"total\": %llu, \"psi_some_avg10\": ",
		edgeq_mem_level_name(m->level), m->stall_ms_per_s,
		(unsigned long long)m->available, (unsigned long long)m->total);
	json_avg(out, m->psi_some_avg10);
	fputs(", \"psi_full_avg10\": ", out);
	json_avg(out, m->psi_full_avg10);
	fputs(", \"own_psi_some_avg10\": ", out);
	json_avg(out, m->own_psi_some_avg10);
	fputs(", \"reclaim\": {\"system\": ", out);
	json_stall(out, &sys);
	fputs(", \"direct\": ", out);
	json_stall(out, &m->direct);
	fputs(", \"memcg\": ", out);
	json_stall(out, &m->memcg);
	fputs(", \"own\": ", out);
	json_stall(out, &m->own);
	fprintf(out,
		"}, \"throttled\": %llu, \"kswapd_wakeups\": %llu, \"oom_victims\": %llu}",
		(unsigned long long)m->throttled,
		(unsigned long long)m->kswapd_wakeups,
		(unsigned long long)m->oom_victims);

	fputs(", \"devices\": [", out);
	for (i = 0; i < s->n_devices; i++) {
		const struct edgeq_pressure_device *d = &s->devices[i];

		fprintf(out, "%s{\"name\": ", i ? ", " : "");
		json_str(out, d->name);
		fputs(", \"temp_mc\": ", out);
		json_mc(out, d->temp_mc);
		fputs(", \"headroom_mc\": ", out);
		json_mc(out, d->headroom_mc);
		fprintf(out, ", \"throttle\": %.3f, \"level\": %u}",
			d->throttle, d->level);
	}
	fputs("], \"zones\": [", out);
	for (i = 0; i < s->n_zones; i++) {
		const struct edgeq_pressure_zone *z = &s->zones[i];

		fprintf(out, "%s{\"id\": %d, \"type\": ", i ? ", " : "", z->id);
		json_str(out, z->type);
		fputs(", \"device\": ", out);
		json_str(out, z->device);
		fputs(", \"temp_mc\": ", out);
		json_mc(out, z->temp_mc);
		fprintf(out, ", \"trend_mcps\": %d, \"next_trip_mc\": ",
			z->trend_mcps);
		json_mc(out, z->next_trip_mc);
		fputs(", \"headroom_mc\": ", out);
		json_mc(out, z->headroom_mc);
		fprintf(out, ", \"level\": %u, \"trips\": %llu}", z->level,
			(unsigned long long)z->trips);
	}
	fputs("], \"cooling_devices\": [", out);
	for (i = 0; i < s->n_cdevs; i++) {
		const struct edgeq_pressure_cdev *c = &s->cdevs[i];

		fprintf(out, "%s{\"id\": %d, \"type\": ", i ? ", " : "", c->id);
		json_str(out, c->type);
		fputs(", \"device\": ", out);
		json_str(out, c->device);
		fprintf(out, ", \"cur_state\": %llu, \"max_state\": %llu}",
			(unsigned long long)c->cur_state,
			(unsigned long long)c->max_state);
	}
	fputs("], \"frequencies\": [", out);
	for (i = 0; i < s->n_freqs; i++) {
		const struct edgeq_pressure_freq *f = &s->freqs[i];

		fprintf(out, "%s{\"name\": ", i ? ", " : "");
		json_str(out, f->name);
		fputs(", \"device\": ", out);
		json_str(out, f->device);
		fprintf(out,
			", \"cur\": %llu, \"max\": %llu, \"cap\": %llu, "
			"\"thermal_pressure\": %.4f, \"throttle\": %.4f, "
			"\"unit\": \"%s\"}",
			(unsigned long long)f->cur, (unsigned long long)f->max,
			(unsigned long long)f->cap, f->pressure, f->throttle,
			strcmp(f->name, "cpu") ? "Hz" : "kHz");
	}
	fputs("], \"queues\": [", out);
	for (i = 0; i < s->n_queues; i++) {
		const struct edgeq_pressure_queue *q = &s->queues[i];

		fprintf(out,
			"%s{\"id\": %u, \"state\": %u, \"max_inflight\": %u, \"agent\": %u, "
			"\"submits\": %llu, \"completes\": %llu, \"throttles\": %llu, "
			"\"timeouts\": %llu}",
			i ? ", " : "", q->id, q->state, q->max_inflight,
			q->agent, (unsigned long long)q->submits,
			(unsigned long long)q->completes,
			(unsigned long long)q->throttles,
			(unsigned long long)q->timeouts);
	}
	/* bindings stepped from userspace (--cool-bind); null: unknown */
	fputs("], \"cool_bindings\": [", out);
	for (i = 0; i < s->n_cool; i++) {
		const struct edgeq_pressure_cool *c = &s->cool[i];
		const int32_t mc[3] = { c->temp_mc, c->trip_mc, c->hyst_mc };
		const char *k[3] = { "temp_mc", "trip_mc", "hyst_mc" };

		fprintf(out, "%s{\"queue\": ", i ? ", " : "");
		json_str(out, c->queue);
		fputs(", \"zone\": ", out);
		json_str(out, c->zone);
		for (int j = 0; j < 3; j++) {
			if (mc[j] == EDGEQ_PRESSURE_NONE)
				fprintf(out, ", \"%s\": null", k[j]);
			else
				fprintf(out, ", \"%s\": %d", k[j], mc[j]);
		}
		fprintf(out, ", \"state\": %u, \"max_state\": %u, \"error\": ",
			c->state, c->max_state);
		if (c->error)
			json_str(out, strerror(-c->error));
		else
			fputs("null", out);
		fputc('}', out);
	}
	fprintf(out, "], \"events\": %llu, \"dropped\": %llu, \"probes\": [",
		(unsigned long long)s->events, (unsigned long long)s->dropped);
	n = edgeq_pressure_probes(p, &pr);
	for (i = 0; i < n; i++) {
		fprintf(out,
			"%s{\"prog\": \"%s\", \"tracepoint\": \"%s\", \"attached\": %s, "
			"\"error\": ",
			i ? ", " : "", pr[i].prog, pr[i].tracepoint,
			pr[i].attached ? "true" : "false");
		if (pr[i].err)
			json_str(out, strerror(-pr[i].err));
		else
			fputs("null", out);
		fputc('}', out);
	}
	fputc(']', out);
	if (n_ev) {
		/* "event": the last one; "new_events": all since the last line */
		fputs(", \"event\": ", out);
		json_event(out, &ev[n_ev - 1]);
		fputs(", \"new_events\": [", out);
		for (i = 0; i < n_ev; i++) {
			if (i)
				fputs(", ", out);
			json_event(out, &ev[i]);
		}
		fputc(']', out);
	}
	fputc('}', out);
}

static void print_temp(FILE *out, int32_t mc)
{
	if (mc == EDGEQ_PRESSURE_NONE)
		fputs("     -", out);
	else
		fprintf(out, "%6.1f", mc / 1000.0);
}

static void print_human(const struct edgeq_pressure *p,
			const struct edgeq_pressure_state *s)
{
	const struct edgeq_pressure_mem *m = &s->mem;
	const struct edgeq_pressure_probe *pr;
	unsigned int i, n, missing = 0;

	printf("source: %s", edgeq_pressure_source_name(s->source));
	if (edgeq_pressure_fallback_reason(p)[0])
		printf(" (%s)", edgeq_pressure_fallback_reason(p));
	printf("\nmemory: %s, %.1f ms/s stalled, %llu MiB available of %llu MiB",
	       edgeq_mem_level_name(m->level), m->stall_ms_per_s,
	       (unsigned long long)(m->available >> 20),
	       (unsigned long long)(m->total >> 20));
	if (m->psi_some_avg10 >= 0)
		printf(", psi some %.2f full %.2f", m->psi_some_avg10,
		       m->psi_full_avg10);
	putchar('\n');
	if (s->source == EDGEQ_PRESSURE_SRC_BPF)
		printf("reclaim: system %llu stalls %.3f ms (direct %llu, memcg %llu), "
		       "own cgroup %llu stalls %.3f ms, max %.3f ms; throttled %llu, "
		       "kswapd wakeups %llu, oom victims %llu\n",
		       (unsigned long long)(m->direct.count + m->memcg.count),
		       (m->direct.total_ns + m->memcg.total_ns) / 1e6,
		       (unsigned long long)m->direct.count,
		       (unsigned long long)m->memcg.count,
		       (unsigned long long)m->own.count, m->own.total_ns / 1e6,
		       (m->direct.max_ns > m->memcg.max_ns ? m->direct.max_ns :
							     m->memcg.max_ns) /
			       1e6,
		       (unsigned long long)m->throttled,
		       (unsigned long long)m->kswapd_wakeups,
		       (unsigned long long)m->oom_victims);
	printf("devices:%s\n", s->n_devices ? "" : " none mapped");
	for (i = 0; i < s->n_devices; i++) {
		const struct edgeq_pressure_device *d = &s->devices[i];

		printf("  %-6s temp ", d->name);
		print_temp(stdout, d->temp_mc);
		printf(" C  headroom ");
		print_temp(stdout, d->headroom_mc);
		printf(" C  throttle %.2f  level %u\n", d->throttle, d->level);
	}
	printf("thermal zones:%s\n", s->n_zones ? "" : " none");
	for (i = 0; i < s->n_zones; i++) {
		const struct edgeq_pressure_zone *z = &s->zones[i];

		printf("  %2d %-20s %-4s ", z->id, z->type,
		       z->device[0] ? z->device : "-");
		print_temp(stdout, z->temp_mc);
		printf(" C  trend %+.2f C/s  next trip ",
		       z->trend_mcps / 1000.0);
		print_temp(stdout, z->next_trip_mc);
		printf(" C  level %u\n", z->level);
	}
	if (s->n_cdevs)
		printf("cooling devices:\n");
	for (i = 0; i < s->n_cdevs; i++)
		printf("  %2d %-20s %-4s %llu/%llu\n", s->cdevs[i].id,
		       s->cdevs[i].type,
		       s->cdevs[i].device[0] ? s->cdevs[i].device : "-",
		       (unsigned long long)s->cdevs[i].cur_state,
		       (unsigned long long)s->cdevs[i].max_state);
	for (i = 0; i < s->n_cool; i++) {
		const struct edgeq_pressure_cool *c = &s->cool[i];

		printf("%s  %s <- %s: state %u/%u",
		       i ? "" : "cooling bound here:\n", c->queue, c->zone,
		       c->state, c->max_state);
		if (c->error)
			printf(" (%s)", strerror(-c->error));
		putchar('\n');
	}
	if (s->n_freqs)
		printf("frequencies:\n");
	for (i = 0; i < s->n_freqs; i++)
		printf("  %-20s %-4s %llu / %llu %s, capped at %llu, throttle %.2f\n",
		       s->freqs[i].name,
		       s->freqs[i].device[0] ? s->freqs[i].device : "-",
		       (unsigned long long)s->freqs[i].cur,
		       (unsigned long long)s->freqs[i].max,
		       strcmp(s->freqs[i].name, "cpu") ? "Hz" : "kHz",
		       (unsigned long long)s->freqs[i].cap,
		       s->freqs[i].throttle);
	n = edgeq_pressure_probes(p, &pr);
	if (n) {
		printf("tracepoints:");
		for (i = 0; i < n; i++)
			if (pr[i].attached)
				printf(" %s", pr[i].tracepoint);
		putchar('\n');
		for (i = 0; i < n; i++)
			if (!pr[i].attached)
				printf("%s %s (%s)",
				       missing++ ? "," : "not attached:",
				       pr[i].tracepoint, strerror(-pr[i].err));
		if (missing)
			putchar('\n');
	}
}

/*
 * The queues' agents as they describe themselves ($EDGEQ_RUN_DIR, default
 * /run/edgeq, agent-QUEUE: pid, backend, device, memory path); those whose
 * process is gone are left out.
 */
static void print_agents(void)
{
	const char *dir = getenv("EDGEQ_RUN_DIR");
	struct dirent *e;
	unsigned int n = 0;
	DIR *d;

	d = opendir(dir ? dir : "/run/edgeq");
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[512], line[320], backend[320] = "?",
					   device[320] = "?";
		char mem[320] = "?";
		int pid = 0;
		FILE *f;

		if (strncmp(e->d_name, "agent-", 6))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir ? dir : "/run/edgeq",
			 e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (!strncmp(line, "pid=", 4))
				pid = atoi(line + 4);
			else if (!strncmp(line, "backend=", 8))
				snprintf(backend, sizeof(backend), "%s",
					 line + 8);
			else if (!strncmp(line, "device=", 7))
				snprintf(device, sizeof(device), "%s",
					 line + 7);
			else if (!strncmp(line, "memory=", 7))
				snprintf(mem, sizeof(mem), "%s", line + 7);
		}
		fclose(f);
		if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
			continue;
		printf("%s  %-6s %s on %s, memory %s (pid %d)\n",
		       n++ ? "" : "agents:\n", e->d_name + 6, backend, device,
		       mem, pid);
	}
	closedir(d);
}

/* --watch */
#define WATCH_MAX_EVENTS 64

struct watch_ctx {
	struct edgeq_pressure_event ev[WATCH_MAX_EVENTS];
	unsigned int n;
};

static void on_event(void *ctx, const struct edgeq_pressure_event *ev)
{
	struct watch_ctx *w = ctx;

	if (w->n == WATCH_MAX_EVENTS) { /* keep the newest */
		memmove(w->ev, w->ev + 1, sizeof(w->ev) - sizeof(w->ev[0]));
		w->n--;
	}
	w->ev[w->n++] = *ev;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

/* Wait until the monitor's fd is readable or @timeout_ms passed. With
 * io_uring the poll stays armed across timeouts and is re-armed after it
 * fires, as the engine's loop would do. */
static int wait_ready(struct edgeq_pressure *p, struct io_uring *ring,
		      bool uring, bool *armed, uint64_t timeout_ms)
{
	if (uring) {
		struct __kernel_timespec ts = {
			.tv_sec = (long long)(timeout_ms / 1000),
			.tv_nsec = (long long)(timeout_ms % 1000) * 1000000,
		};
		struct io_uring_cqe *cqe;
		int ret;

		if (!*armed) {
			ret = edgeq_pressure_poll_add(p, ring, 1);
			if (ret)
				return ret;
			ret = io_uring_submit(ring);
			if (ret < 0)
				return ret;
			*armed = true;
		}
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR)
			return 0;
		if (ret)
			return ret;
		if (cqe->user_data == 1)
			*armed = false;
		io_uring_cqe_seen(ring, cqe);
		return 0;
	} else {
		struct pollfd pfd = { .fd = edgeq_pressure_fd(p),
				      .events = POLLIN };

		if (poll(&pfd, 1, (int)timeout_ms) < 0 && errno != EINTR)
			return -errno;
		return 0;
	}
}

static int watch(struct edgeq_pressure *p, bool json, int count, int duration_s)
{
	struct edgeq_pressure_state *s = malloc(sizeof(*s));
	struct watch_ctx w = { .n = 0 };
	uint64_t end = duration_s > 0 ? edgeq_now_ns() + (uint64_t)duration_s *
								 1000000000ull :
					0;
	struct io_uring ring;
	bool uring, armed = false;
	int lines = 0, ret = 0;

	if (!s)
		return -ENOMEM;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	edgeq_pressure_set_event_fn(p, on_event, &w);
	/* io_uring when the kernel has it (qemu-user and seccomp may not) */
	uring = !getenv("EDGEQ_NO_IO_URING") &&
		!io_uring_queue_init(8, &ring, 0);
	edgeq_pressure_get(p, s);
	for (;;) {
		if (json) {
			pressure_cli_json(stdout, p, s, w.ev, w.n);
			putchar('\n');
		} else {
			print_human(p, s);
			putchar('\n');
		}
		fflush(stdout);
		w.n = 0;
		if (count > 0 && ++lines >= count)
			break;
		for (;;) {
			uint64_t now = edgeq_now_ns(), left = 1000;

			if (stop || (end && now >= end))
				goto out;
			if (end && (end - now) / 1000000 < left)
				left = (end - now) / 1000000 + 1;
			ret = wait_ready(p, &ring, uring, &armed, left);
			if (ret)
				goto out;
			ret = edgeq_pressure_consume(p);
			if (ret < 0)
				goto out;
			if (ret > 0)
				break;
		}
		ret = 0;
		edgeq_pressure_get(p, s);
	}
out:
	if (uring)
		io_uring_queue_exit(&ring);
	free(s);
	return ret < 0 ? ret : 0;
}

static bool st_json, st_watch;
static int st_count, st_duration;
static struct pressure_cli_opts st_po;

static const struct cli_option status_opts[] = {
	{ "json", 0, CLI_FLAG, &st_json, NULL, "print one JSON object" },
	{ "watch", 'w', CLI_FLAG, &st_watch, NULL,
	  "keep printing: one line (JSON) or block per change" },
	{ "count", 'n', CLI_INT, &st_count, "N",
	  "with --watch: stop after N prints" },
	{ "duration", 0, CLI_INT, &st_duration, "SECONDS",
	  "with --watch: stop after SECONDS" },
	PRESSURE_CLI_OPTIONS(st_po),
	CLI_OPTIONS_END
};

static int cmd_status(int argc, char **argv)
{
	const struct cli_command *self = cli_find("status");
	struct edgeq_pressure_state *s;
	struct edgeq_pressure *p;
	int first, ret;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "status",
				 "unexpected argument '%s'", argv[first]);
	ret = pressure_cli_start("status", &st_po, &p);
	if (ret)
		return ret;
	if (st_watch) {
		ret = watch(p, st_json, st_count, st_duration);
		edgeq_pressure_free(p);
		if (ret)
			return cli_error(cli_exit_for(ret), "status",
					 "watch: %s", strerror(-ret));
		return EXIT_OK;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		edgeq_pressure_free(p);
		return cli_error(EXIT_NORES, "status", "out of memory");
	}
	edgeq_pressure_get(p, s);
	if (st_json) {
		pressure_cli_json(stdout, p, s, NULL, 0);
		putchar('\n');
	} else {
		print_human(p, s);
		print_agents();
	}
	free(s);
	edgeq_pressure_free(p);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	status, "show thermal and memory pressure (BPF or PSI/sysfs)",
	"usage: edgeq status [--json] [--watch [-n N] [--duration S]] [--no-bpf]\n\n"
	"Prints the pressure monitor's state: per device temperature, headroom to\n"
	"the next trip and throttle factor; every thermal zone, cooling device and\n"
	"frequency domain; memory pressure level, reclaim stalls (system-wide and\n"
	"edgeq's own cgroup) and available memory; and which tracepoints are\n"
	"attached. \"source\" says whether it comes from BPF or from PSI and sysfs.\n"
	"--watch prints again on every change (one JSON line each with --json).",
	status_opts, cmd_status);
