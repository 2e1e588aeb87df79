// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq top: a live view of the pressure monitor in plain ANSI (no curses),
 * redrawn on events and on the refresh timer, fitted to the terminal width
 * (SIGWINCH), q or Ctrl-C to quit. Works over ssh and in any terminal that
 * understands cursor-home and clear-to-end.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <edgeq/pressure.h>

#include "cli.h"
#include "pressure_cli.h"
#include "top_engine.h"

static volatile sig_atomic_t resized = 1, quit;
static struct termios saved_tio;
static bool tio_saved;

static void on_winch(int sig)
{
	resized = 1;
}

static void on_quit(int sig)
{
	quit = 1;
}

static void restore_tty(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (isatty(STDOUT_FILENO))
		fputs("\033[?25h", stdout); /* show the cursor again */
	fflush(stdout);
}

/* A line buffer cut to the terminal width. */
struct screen {
	FILE *out;
	int cols, rows, row;
	bool ansi;
};

static void line(struct screen *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void line(struct screen *sc, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (sc->ansi && sc->row >= sc->rows - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (sc->cols > 0 && (int)strlen(buf) > sc->cols)
		buf[sc->cols] = '\0';
	fputs(buf, sc->out);
	if (sc->ansi)
		fputs("\033[K", sc->out); /* clear the rest of the line */
	fputc('\n', sc->out);
	sc->row++;
}

static const char *trend_arrow(int32_t mcps)
{
	if (mcps > 200)
		return "^";
	if (mcps < -200)
		return "v";
	return "=";
}

static void fmt_c(char *buf, size_t len, int32_t mc)
{
	if (mc == EDGEQ_PRESSURE_NONE)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", mc / 1000.0);
}

static struct top_engine top_eng = { .url = "http://127.0.0.1:8080" };

static void draw(struct screen *sc, const struct edgeq_pressure *p,
		 const struct edgeq_pressure_state *s, const char *last_event)
{
	const struct edgeq_pressure_mem *m = &s->mem;
	char t[16], h[16];
	uint32_t i;

	sc->row = 0;
	if (sc->ansi)
		fputs("\033[H", sc->out);
	line(sc,
	     "edgeq top  source %s%s%s  seq %llu  events %llu dropped %llu  (q quits)",
	     edgeq_pressure_source_name(s->source),
	     edgeq_pressure_fallback_reason(p)[0] ? ": " : "",
	     edgeq_pressure_fallback_reason(p), (unsigned long long)s->seq,
	     (unsigned long long)s->events, (unsigned long long)s->dropped);
	line(sc, "%s", "");
	line(sc, "DEVICE   TEMP C  HEADROOM C  THROTTLE  LEVEL");
	for (i = 0; i < s->n_devices; i++) {
		fmt_c(t, sizeof(t), s->devices[i].temp_mc);
		fmt_c(h, sizeof(h), s->devices[i].headroom_mc);
		line(sc, "%-8s %6s  %10s  %7.0f%%  %s", s->devices[i].name, t,
		     h, s->devices[i].throttle * 100,
		     s->devices[i].level == 2 ? "CRIT" :
		     s->devices[i].level      ? "warn" :
						"ok");
	}
	if (!s->n_devices)
		line(sc,
		     "(no thermal zone or frequency domain maps to a device)");
	line(sc, "%s", "");
	line(sc,
	     "ZONE                    DEV   TEMP C  TREND C/s  NEXT TRIP  TRIPS");
	for (i = 0; i < s->n_zones; i++) {
		const struct edgeq_pressure_zone *z = &s->zones[i];

		fmt_c(t, sizeof(t), z->temp_mc);
		fmt_c(h, sizeof(h), z->next_trip_mc);
		line(sc, "%2d %-20s %-4s %7s  %s %+6.2f  %9s  %5llu", z->id,
		     z->type, z->device[0] ? z->device : "-", t,
		     trend_arrow(z->trend_mcps), z->trend_mcps / 1000.0, h,
		     (unsigned long long)z->trips);
	}
	for (i = 0; i < s->n_cdevs; i++)
		line(sc, "cooling %2d %-20s %-4s state %llu/%llu",
		     s->cdevs[i].id, s->cdevs[i].type,
		     s->cdevs[i].device[0] ? s->cdevs[i].device : "-",
		     (unsigned long long)s->cdevs[i].cur_state,
		     (unsigned long long)s->cdevs[i].max_state);
	for (i = 0; i < s->n_freqs; i++)
		line(sc, "freq    %-20s %-4s %llu/%llu %s cap %llu thr %.2f",
		     s->freqs[i].name,
		     s->freqs[i].device[0] ? s->freqs[i].device : "-",
		     (unsigned long long)s->freqs[i].cur,
		     (unsigned long long)s->freqs[i].max,
		     strcmp(s->freqs[i].name, "cpu") ? "Hz" : "kHz",
		     (unsigned long long)s->freqs[i].cap, s->freqs[i].throttle);
	line(sc, "%s", "");
	line(sc,
	     "MEMORY  %s  available %llu/%llu MiB  stall %.1f ms/s  psi some %.2f full %.2f",
	     edgeq_mem_level_name(m->level),
	     (unsigned long long)(m->available >> 20),
	     (unsigned long long)(m->total >> 20), m->stall_ms_per_s,
	     m->psi_some_avg10 < 0 ? 0 : m->psi_some_avg10,
	     m->psi_full_avg10 < 0 ? 0 : m->psi_full_avg10);
	line(sc,
	     "reclaim system %llu stalls %.1f ms   own cgroup %llu stalls %.1f ms   "
	     "throttled %llu  kswapd %llu  oom %llu",
	     (unsigned long long)(m->direct.count + m->memcg.count),
	     (m->direct.total_ns + m->memcg.total_ns) / 1e6,
	     (unsigned long long)m->own.count, m->own.total_ns / 1e6,
	     (unsigned long long)m->throttled,
	     (unsigned long long)m->kswapd_wakeups,
	     (unsigned long long)m->oom_victims);
	for (i = 0; i < s->n_queues; i++)
		line(sc,
		     "queue %u  cooling %u  max inflight %u  submits %llu completes %llu",
		     s->queues[i].id, s->queues[i].state,
		     s->queues[i].max_inflight,
		     (unsigned long long)s->queues[i].submits,
		     (unsigned long long)s->queues[i].completes);
	line(sc, "%s", "");
	{
		char eng[1024], *ln, *save = NULL;

		top_engine_sample(&top_eng);
		top_engine_format(&top_eng, eng, sizeof(eng));
		for (ln = strtok_r(eng, "\n", &save); ln;
		     ln = strtok_r(NULL, "\n", &save))
			line(sc, "%s", ln);
	}
	line(sc, "last event: %s", last_event[0] ? last_event : "-");
	if (sc->ansi)
		fputs("\033[J", sc->out); /* clear below */
	fflush(sc->out);
}

static void on_event(void *ctx, const struct edgeq_pressure_event *ev)
{
	snprintf(ctx, 160, "%s id %u value %lld prev %lld level %u %.24s",
		 edgeq_pressure_event_name(ev->kind), ev->id,
		 (long long)ev->value, (long long)ev->prev, ev->level,
		 ev->name);
}

static int top_iterations;
static struct pressure_cli_opts top_po;

static const struct cli_option top_opts[] = {
	{ "iterations", 'n', CLI_INT, &top_iterations, "N",
	  "draw N frames then exit (0: until q)" },
	{ "url", 0, CLI_STR, &top_eng.url, "URL",
	  "the edgeq serve to show (http://127.0.0.1:8080)" },
	{ "unix-socket", 0, CLI_STR, &top_eng.unix_socket, "PATH",
	  "or its unix socket" },
	{ "api-key", 0, CLI_STR, &top_eng.api_key, "TOKEN",
	  "a key that may read /metrics" },
	PRESSURE_CLI_OPTIONS(top_po),
	CLI_OPTIONS_END
};

static int cmd_top(int argc, char **argv)
{
	const struct cli_command *self = cli_find("top");
	struct edgeq_pressure_state *s;
	struct screen sc = { .out = stdout, .cols = 0, .rows = 1000 };
	char last[160] = "";
	struct edgeq_pressure *p;
	int first, ret, frames = 0;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "top", "unexpected argument '%s'",
				 argv[first]);
	ret = pressure_cli_start("top", &top_po, &p);
	if (ret)
		return ret;
	s = malloc(sizeof(*s));
	if (!s) {
		edgeq_pressure_free(p);
		return cli_error(EXIT_NORES, "top", "out of memory");
	}
	edgeq_pressure_set_event_fn(p, on_event, last);
	sc.ansi = isatty(STDOUT_FILENO);
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved_tio)) {
		struct termios raw = saved_tio;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tio_saved = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	atexit(restore_tty);
	signal(SIGWINCH, on_winch);
	signal(SIGINT, on_quit);
	signal(SIGTERM, on_quit);
	if (sc.ansi)
		fputs("\033[?25l\033[2J", stdout); /* hide cursor, clear */

	while (!quit) {
		struct pollfd pfd[2] = {
			{ .fd = edgeq_pressure_fd(p), .events = POLLIN },
			{ .fd = STDIN_FILENO, .events = POLLIN },
		};

		if (resized) {
			struct winsize ws;

			resized = 0;
			if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) &&
			    ws.ws_col) {
				sc.cols = ws.ws_col;
				sc.rows = ws.ws_row;
			}
			if (sc.ansi)
				fputs("\033[2J", stdout);
		}
		edgeq_pressure_get(p, s);
		draw(&sc, p, s, last);
		if (!sc.ansi)
			putchar('\n');
		if (top_iterations > 0 && ++frames >= top_iterations)
			break;
		ret = poll(pfd, tio_saved ? 2 : 1, 1000);
		if (ret < 0 && errno != EINTR)
			break;
		if (ret > 0 && (pfd[1].revents & POLLIN)) {
			char c;

			if (read(STDIN_FILENO, &c, 1) == 1 &&
			    (c == 'q' || c == 'Q'))
				break;
		}
		if (ret > 0 && (pfd[0].revents & POLLIN))
			edgeq_pressure_consume(p);
	}
	if (sc.ansi)
		fputs("\033[2J\033[H", stdout);
	restore_tty();
	free(s);
	edgeq_pressure_free(p);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	top, "live view of thermal and memory pressure (q quits)",
	"usage: edgeq top [-n N] [--no-bpf] [--url URL | --unix-socket PATH] [--api-key K]\n\n"
	"A live terminal view of the pressure monitor: devices with temperature,\n"
	"headroom and throttle; zones with trend; cooling states and frequencies;\n"
	"memory pressure and reclaim stalls. Redraws on every event and once a\n"
	"second; plain ANSI, so it works over ssh. q or Ctrl-C quits. Without a\n"
	"terminal it prints frames one after another (-n limits them).",
	top_opts, cmd_top);
