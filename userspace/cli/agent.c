// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq agent: a CPU agent for an edgeq.ko queue. It attaches to the queue,
 * executes the ops it receives with the engine's CPU kernels and reports
 * their results, standing in for an NPU or GPU on boxes without one.
 */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/edgeq.h>
#include <edgeq/kq.h>

#include "cli.h"

#define OPS(...) (agent_mask(__VA_ARGS__, -1))

static const char *opt_queue;
static const char *opt_profile = "cpu";
static double opt_speed;
static uint64_t opt_count;
static int opt_delay_us;
static bool opt_verbose;

static const struct cli_option agent_opts[] = {
	{ "queue", 'q', CLI_STR, &opt_queue, "NAME", "queue to serve (npu0)" },
	{ "profile", 'P', CLI_STR, &opt_profile, "npu|gpu|cpu",
	  "ops accepted and default speed (default cpu)" },
	{ "speed", 's', CLI_DOUBLE, &opt_speed, "X",
	  "device speed relative to this CPU (npu 2, gpu 4, cpu 1)" },
	{ "count", 'n', CLI_U64, &opt_count, "N", "exit after N ops" },
	{ "delay-us", 0, CLI_INT, &opt_delay_us, "US",
	  "extra device latency per op" },
	{ "verbose", 'v', CLI_FLAG, &opt_verbose, NULL, "a line per op" },
	CLI_OPTIONS_END
};

struct agent_profile {
	const char *name;
	uint64_t op_mask;
	double speed;
};

static uint64_t agent_mask(int first, ...)
{
	uint64_t m = 0;
	va_list ap;
	int op;

	va_start(ap, first);
	for (op = first; op >= 0; op = va_arg(ap, int))
		m |= 1ULL << op;
	va_end(ap);
	return m;
}

static volatile sig_atomic_t agent_stop;

static void agent_signal(int sig)
{
	agent_stop = 1;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000),
			       (long)(ns % 1000000000) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !agent_stop)
		;
}

/* Executes one op; returns its status for the kernel. */
static int agent_run_one(struct edgeq_kq *kq, const struct edgeq_agent_op *a)
{
	void *t[EDGEQ_MAX_TENSORS] = { 0 };
	unsigned int i;
	int ret;

	for (i = 0; i < a->op.ntensors && i < EDGEQ_MAX_TENSORS; i++) {
		ret = edgeq_kq_agent_map(kq, a->client_id, &a->op.tensors[i],
					 &t[i]);
		if (ret)
			return ret;
	}
	return edgeq_kq_exec(&a->op, t);
}

static int cmd_agent(int argc, char **argv)
{
	const struct agent_profile profiles[] = {
		{ "cpu", (1ULL << EDGEQ_OP_COUNT) - 1, 1.0 },
		{ "gpu", (1ULL << EDGEQ_OP_COUNT) - 1, 4.0 },
		/* NPUs run matrices and simple element-wise ops only. */
		{ "npu",
		  OPS(EDGEQ_OP_NOP, EDGEQ_OP_MATVEC, EDGEQ_OP_MATMUL,
		      EDGEQ_OP_SILU_MUL, EDGEQ_OP_ADD),
		  2.0 },
	};
	const struct cli_command *self = cli_find("agent");
	const struct agent_profile *prof = NULL;
	struct edgeq_agent_op ops[32];
	struct edgeq_agent_done done[32];
	struct sigaction sa = { .sa_handler = agent_signal };
	struct edgeq_kq *kq;
	uint64_t served = 0;
	size_t i;
	int first, ret, n;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "agent",
				 "unexpected argument '%s'", argv[first]);
	if (!opt_queue)
		return cli_error(EXIT_USAGE, "agent",
				 "--queue NAME is required");
	for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, opt_profile))
			prof = &profiles[i];
	if (!prof)
		return cli_error(EXIT_USAGE, "agent",
				 "unknown profile '%s' (npu, gpu or cpu)",
				 opt_profile);
	if (opt_speed == 0)
		opt_speed = prof->speed;
	if (opt_speed < 0.01 || opt_speed > 1000 || opt_delay_us < 0)
		return cli_error(
			EXIT_USAGE, "agent",
			"--speed must be in 0.01..1000, --delay-us >= 0");

	ret = edgeq_kq_open(opt_queue, 0, &kq);
	if (ret)
		return cli_error(
			cli_exit_for(ret), "agent",
			"cannot open queue %s: %s (is edgeq.ko loaded?)",
			opt_queue, strerror(-ret));
	ret = edgeq_kq_agent_attach(kq, prof->op_mask);
	if (ret) {
		edgeq_kq_close(kq);
		return cli_error(
			cli_exit_for(ret), "agent", "cannot attach to %s: %s%s",
			opt_queue, strerror(-ret),
			ret == -EBUSY ? " (another agent is attached)" : "");
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "edgeq agent: serving %s (profile %s, speed %.2f)\n",
		opt_queue, prof->name, opt_speed);

	while (!agent_stop && (!opt_count || served < opt_count)) {
		n = edgeq_kq_agent_next(kq, ops, 32);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			ret = n;
			break;
		}
		for (i = 0; i < (size_t)n; i++) {
			uint64_t t0 = edgeq_now_ns(), dt;

			memset(&done[i], 0, sizeof(done[i]));
			done[i].tag = ops[i].tag;
			done[i].status = agent_run_one(kq, &ops[i]);
			dt = edgeq_now_ns() - t0;
			if (opt_speed < 1.0)
				sleep_ns((uint64_t)((double)dt / opt_speed) -
					 dt);
			if (opt_delay_us)
				sleep_ns((uint64_t)opt_delay_us * 1000);
			done[i].busy_ns = (uint64_t)((double)dt / opt_speed) +
					  (uint64_t)opt_delay_us * 1000;
			if (opt_verbose)
				fprintf(stderr,
					"op %u cookie %llu from pid %u: %d (%llu ns)\n",
					ops[i].op.opcode,
					(unsigned long long)ops[i].op.cookie,
					ops[i].client_pid, done[i].status,
					(unsigned long long)done[i].busy_ns);
		}
		/* An op may have timed out meanwhile: report the others. */
		for (i = 0; i < (size_t)n; i++) {
			ret = edgeq_kq_agent_done(kq, &done[i], 1);
			if (ret < 0 && ret != -ENOENT)
				break;
		}
		if (ret < 0 && ret != -ENOENT)
			break;
		ret = 0;
		served += (uint64_t)n;
	}
	edgeq_kq_close(kq);
	if (ret < 0 && !agent_stop)
		return cli_error(cli_exit_for(ret), "agent", "queue %s: %s",
				 opt_queue, strerror(-ret));
	fprintf(stderr, "edgeq agent: %llu ops served\n",
		(unsigned long long)served);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	agent, "serve an edgeq.ko queue with the CPU kernels",
	"usage: edgeq agent --queue NAME [--profile npu|gpu|cpu] [--speed X]\n"
	"\n"
	"Attach to /dev/edgeq/NAME as its agent and execute the ops clients\n"
	"submit with the engine's CPU kernels. A profile restricts the ops\n"
	"accepted (npu: matrices, silu_mul and add; no softmax, norms or\n"
	"RoPE) and scales the speed: below 1 the agent sleeps to be slower,\n"
	"above 1 it reports proportionally less busy time. Needs edgeq.ko\n"
	"and CAP_SYS_ADMIN.",
	agent_opts, cmd_agent);
