// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq agent: the agent of an edgeq.ko queue. It attaches to the queue,
 * executes the ops it receives on a backend (include/edgeq/backend.h):
 * Vulkan compute on a real GPU (or lavapipe), or the engine's CPU kernels,
 * standing in for an NPU or GPU on boxes without one. Each batch of ops
 * read from the queue is one chain: one command buffer on Vulkan. Ops the
 * backend cannot run (a dtype without a shader) run on the CPU kernels.
 * Documentation/gpu-agent.rst.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <edgeq/backend.h>
#include <edgeq/edgeq.h>
#include <edgeq/kq.h>
#include <edgeq/pressure.h>

#include "cli.h"

#define OPS(...) (agent_mask(__VA_ARGS__, -1))

static const char *opt_queue;
static const char *opt_profile;
static const char *opt_backend = "auto";
static const char *opt_device;
static bool opt_list;
static bool opt_calibrate, opt_quick;
static const char *opt_output;
static double opt_speed;
static uint64_t opt_count;
static int opt_delay_us;
static bool opt_verbose;
static uint64_t opt_device_budget;
static const char *opt_pressure = "psi";

static const struct cli_option agent_opts[] = {
	{ "queue", 'q', CLI_STR, &opt_queue, "NAME", "queue to serve (npu0)" },
	{ "backend", 'b', CLI_STR, &opt_backend, "auto|vulkan|cuda|cpu",
	  "what runs the ops (auto: vulkan when a device exists)" },
	{ "device", 'd', CLI_STR, &opt_device, "N|NAME",
	  "backend device: index or part of its name" },
	{ "list-devices", 'L', CLI_FLAG, &opt_list, NULL,
	  "list the devices of every backend and exit" },
	{ "calibrate", 0, CLI_FLAG, &opt_calibrate, NULL,
	  "measure the backend (as edgeq calibrate --backend) and exit" },
	{ "quick", 0, CLI_FLAG, &opt_quick, NULL,
	  "with --calibrate: fewer repetitions" },
	{ "output", 'o', CLI_STR, &opt_output, "FILE",
	  "with --calibrate: where the profile goes (edgeq calibrate's default)" },
	{ "profile", 'P', CLI_STR, &opt_profile, "npu|gpu|cpu",
	  "ops accepted and default speed (cpu backend: cpu, vulkan: gpu)" },
	{ "speed", 's', CLI_DOUBLE, &opt_speed, "X",
	  "simulated speed, cpu backend (npu 2, gpu 4, cpu 1; vulkan 1)" },
	{ "count", 'n', CLI_U64, &opt_count, "N", "exit after N ops" },
	{ "delay-us", 0, CLI_INT, &opt_delay_us, "US",
	  "extra device latency per op" },
	{ "verbose", 'v', CLI_FLAG, &opt_verbose, NULL, "a line per op" },
	{ "device-budget", 0, CLI_SIZE, &opt_device_budget, "SIZE",
	  "most device copies to keep (staging path), LRU released beyond" },
	{ "pressure", 0, CLI_STR, &opt_pressure, "auto|psi|off",
	  "memory pressure (psi: MemAvailable and PSI; auto: BPF too) releases device copies: half at medium, all at critical" },
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

struct agent {
	struct edgeq_kq *kq;
	struct edgeq_backend *be;    /* the chosen backend */
	struct edgeq_backend *cpu;   /* ops @be does not run; NULL when be is */
	bool vulkan_lost;	     /* the device failed: the CPU runs all */
	struct edgeq_pressure *pm;   /* memory pressure, or NULL */
	enum edgeq_mem_level level;  /* the monitor's last memory level */
	uint64_t released, releases; /* device-copy bytes and times freed */
};

static void agent_forget(void *arg, uint64_t id)
{
	struct agent *ag = arg;

	edgeq_backend_forget(ag->be, id);
}

/* The mappings of @a's tensors; its status for the kernel. */
static int agent_map(struct agent *ag, const struct edgeq_agent_op *a,
		     struct edgeq_backend_tensor *t)
{
	unsigned int i;
	int ret;

	for (i = 0; i < a->op.ntensors && i < EDGEQ_MAX_TENSORS; i++) {
		struct edgeq_kq_mapping m;

		ret = edgeq_kq_agent_mapping(ag->kq, a->client_id,
					     &a->op.tensors[i], &m);
		if (ret)
			return ret;
		t[i] = (struct edgeq_backend_tensor){
			.base = m.base,
			.map_len = m.length,
			.offset = a->op.tensors[i].offset,
			.length = a->op.tensors[i].length,
			.id = m.id,
		};
	}
	return 0;
}

static struct edgeq_backend *agent_pick(struct agent *ag,
					const struct edgeq_op_desc *op)
{
	if (!ag->cpu)
		return ag->be;
	if (ag->vulkan_lost || !edgeq_backend_supports(ag->be, op))
		return ag->cpu;
	return ag->be;
}

/*
 * Runs the @n ops read in one batch: consecutive ops for one backend as
 * one chain. An op that fails cancels the rest of its chain in the
 * backend; those are run again from there, since ops of one batch may
 * come from different clients. Writes each op's status and busy time.
 */
static void agent_run_batch(struct agent *ag, const struct edgeq_agent_op *a,
			    unsigned int n, struct edgeq_agent_done *done)
{
	static struct edgeq_op_desc ops[32];
	static struct edgeq_backend_tensor t[32][EDGEQ_MAX_TENSORS];
	static int st[32];
	unsigned int i, j, k;

	for (i = 0; i < n; i++) {
		ops[i] = a[i].op;
		st[i] = agent_map(ag, &a[i], t[i]);
		done[i].status = st[i];
		done[i].busy_ns = 0;
	}
	for (i = 0; i < n;) {
		struct edgeq_backend *b;
		uint64_t t0, dt;
		int ret;

		if (done[i].status) {
			i++;
			continue;
		}
		b = agent_pick(ag, &ops[i]);
		for (j = i + 1;
		     j < n && !done[j].status && agent_pick(ag, &ops[j]) == b;
		     j++)
			;
		t0 = edgeq_now_ns();
		ret = edgeq_backend_run(b, ops + i, t + i, st + i, j - i);
		dt = edgeq_now_ns() - t0;
		if (ret && b != ag->cpu && ag->cpu) {
			fprintf(stderr,
				"edgeq agent: the device failed (%s): the CPU "
				"kernels run every op from now on\n",
				strerror(-ret));
			ag->vulkan_lost = true;
		}
		for (k = i; k < j && st[k] != -ECANCELED; k++) {
			done[k].status = st[k];
			done[k].busy_ns = dt / (j - i);
		}
		if (ret)
			i = j; /* failed with the device, as reported */
		else
			i = k; /* from the first cancelled one */
	}
}

/*
 * One small op of every kind and dtype on zeroed tensors before attaching,
 * so that the driver's first-use work (shader compilation: seconds for
 * lavapipe under emulation) is not charged to a client's op and its
 * timeout. Returns the backend's error, if the device cannot run them.
 */
static int agent_warmup(struct agent *ag)
{
	static const uint32_t mv[] = { EDGEQ_DTYPE_F32,	 EDGEQ_DTYPE_F16,
				       EDGEQ_DTYPE_Q8_0, EDGEQ_DTYPE_Q4_0,
				       EDGEQ_DTYPE_Q4_K, EDGEQ_DTYPE_Q6_K };
	static const uint32_t kv[] = { EDGEQ_DTYPE_F32, EDGEQ_DTYPE_F16,
				       EDGEQ_DTYPE_Q8_0 };
	struct edgeq_op_desc ops[16];
	struct edgeq_backend_tensor t[16][EDGEQ_MAX_TENSORS];
	int st[16], fd, ret;
	unsigned int n = 0, i, k;
	const size_t size = 65536, slot = 4096;
	void *map;

	ret = edgeq_kq_memfd("edgeq-warmup", size, &fd, &map);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(mv) / sizeof(mv[0]); i++) {
		edgeq_op_desc_init(&ops[n], EDGEQ_OP_MATVEC, n);
		ops[n].dtype = mv[i];
		ops[n].shape[0] = 2;
		ops[n++].shape[1] = 256;
	}
	for (i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		edgeq_op_desc_init(&ops[n], EDGEQ_OP_ATTENTION, n);
		ops[n].dtype = kv[i];
		ops[n].shape[0] = ops[n].shape[1] = ops[n].shape[3] = 1;
		ops[n++].shape[2] = 32;
	}
	edgeq_op_desc_init(&ops[n], EDGEQ_OP_RMSNORM, n);
	ops[n++].shape[0] = 256;
	edgeq_op_desc_init(&ops[n], EDGEQ_OP_ROPE, n);
	ops[n].shape[0] = 1;
	ops[n++].shape[1] = 64;
	edgeq_op_desc_init(&ops[n], EDGEQ_OP_SOFTMAX, n);
	ops[n].shape[0] = 256;
	ops[n++].shape[1] = 1;
	edgeq_op_desc_init(&ops[n], EDGEQ_OP_SILU_MUL, n);
	ops[n++].shape[0] = 256;
	edgeq_op_desc_init(&ops[n], EDGEQ_OP_ADD, n);
	ops[n++].shape[0] = 256;
	for (i = 0; i < n; i++)
		for (k = 0; k < ops[i].ntensors; k++) {
			edgeq_op_desc_tensor(&ops[i], k, 0, k * slot, slot);
			t[i][k] = (struct edgeq_backend_tensor){ map, size,
								 k * slot, slot,
								 0 };
		}
	ret = edgeq_backend_run(ag->be, ops, t, st, n);
	for (i = 0; i < n && !ret; i++)
		if (st[i] && st[i] != -EOPNOTSUPP)
			ret = st[i];
	munmap(map, size);
	close(fd);
	return ret;
}

/* The monitor's memory level now (the last one known without memory). */
static enum edgeq_mem_level agent_mem_level(struct agent *ag)
{
	struct edgeq_pressure_state *st = malloc(sizeof(*st));
	enum edgeq_mem_level level = ag->level;

	if (st) {
		edgeq_pressure_get(ag->pm, st);
		level = st->mem.level;
		free(st);
	}
	return level;
}

/*
 * Keeps the backend's device copies within --device-budget and what
 * memory allows: at the monitor's medium level half of them go (least
 * recently used first), at critical all; they are made again as ops need
 * them. On unified memory (a Jetson) a staging copy is a second copy of a
 * weight in the same RAM, so under pressure it is what goes first.
 */
static void agent_trim(struct agent *ag)
{
	struct edgeq_backend_info info;
	enum edgeq_mem_level level;
	uint64_t want = UINT64_MAX, freed;

	if (ag->pm && edgeq_pressure_consume(ag->pm) > 0) {
		level = agent_mem_level(ag);
		if (level != ag->level)
			fprintf(stderr, "edgeq agent: memory pressure %s\n",
				edgeq_mem_level_name(level));
		ag->level = level;
	}
	edgeq_backend_get_info(ag->be, &info);
	if (opt_device_budget)
		want = opt_device_budget;
	if (ag->level >= EDGEQ_MEM_CRITICAL)
		want = 0;
	else if (ag->level >= EDGEQ_MEM_MEDIUM && info.device_bytes / 2 < want)
		want = info.device_bytes / 2;
	if (info.device_bytes <= want)
		return;
	freed = edgeq_backend_release(ag->be, info.device_bytes - want);
	if (freed && ag->level >= EDGEQ_MEM_MEDIUM) {
		ag->released += freed;
		ag->releases++;
		if (opt_verbose || ag->releases == 1)
			fprintf(stderr,
				"edgeq agent: memory pressure %s: released %.1f MiB of device copies\n",
				edgeq_mem_level_name(ag->level),
				freed / 1048576.0);
	}
}

/* The monitor that drives agent_trim(); none is no error. */
static int agent_pressure(struct agent *ag)
{
	struct edgeq_pressure_opts o;
	struct edgeq_error err = { 0 };

	if (!strcmp(opt_pressure, "off"))
		return 0;
	if (strcmp(opt_pressure, "auto") && strcmp(opt_pressure, "psi"))
		return cli_error(EXIT_USAGE, "agent",
				 "--pressure must be auto, psi or off");
	edgeq_pressure_opts_init(&o);
	o.no_bpf = !strcmp(opt_pressure, "psi");
	if (edgeq_pressure_new(&o, &ag->pm, &err)) {
		fprintf(stderr,
			"edgeq agent: no pressure monitor (%s): device copies "
			"are not released under memory pressure\n",
			err.msg);
		return 0;
	}
	ag->level = agent_mem_level(ag);
	if (ag->level >= EDGEQ_MEM_MEDIUM)
		fprintf(stderr, "edgeq agent: memory pressure %s\n",
			edgeq_mem_level_name(ag->level));
	return 0;
}

/* Waits for the queue's next ops, following the monitor meanwhile. */
static int agent_wait(struct agent *ag)
{
	struct pollfd pfd[2] = { { edgeq_kq_fd(ag->kq), POLLIN, 0 },
				 { ag->pm ? edgeq_pressure_fd(ag->pm) : -1,
				   POLLIN, 0 } };

	if (!ag->pm)
		return 0;
	for (;;) {
		/* a stop signal may land between the loop's check and poll */
		if (agent_stop)
			return -EINTR;
		if (poll(pfd, 2, 200) < 0)
			return errno == EINTR ? -EINTR : -errno;
		if (pfd[0].revents)
			return 0; /* ops, or an error the read reports */
		if (pfd[1].revents & POLLIN)
			agent_trim(ag);
	}
}

static int agent_list_devices(void)
{
	static const char *const kinds[] = { "vulkan", "cuda", "cpu" };
	struct edgeq_backend_device d[16];

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int n = edgeq_backend_list(kinds[k], d, 16);

		if (n == -EPROTONOSUPPORT) {
			printf("%s: not built in (needs %s at build time)\n",
			       kinds[k],
			       k ? "nvcc and cuda.h" :
				   "libvulkan-dev and glslc");
			continue;
		}
		if (n < 0) {
			printf("%s: no device (%s)\n", kinds[k],
			       !strcmp(kinds[k], "cuda") && n == -ENODEV ?
				       "no CUDA driver (libcuda.so.1) or GPU" :
				       strerror(-n));
			continue;
		}
		for (int i = 0; i < n && i < 16; i++) {
			printf("%s %d: %s (%s", kinds[k], i, d[i].name,
			       d[i].type);
			if (d[i].api_version && !strcmp(kinds[k], "cuda"))
				printf(", compute %u.%u", d[i].api_version / 10,
				       d[i].api_version % 10);
			else if (d[i].api_version)
				printf(", Vulkan %u.%u.%u",
				       d[i].api_version >> 22,
				       (d[i].api_version >> 12) & 0x3ff,
				       d[i].api_version & 0xfff);
			if (d[i].heap_bytes)
				printf(", %llu MiB",
				       (unsigned long long)(d[i].heap_bytes >>
							    20));
			if (strcmp(kinds[k], "cpu"))
				printf(", host import %s",
				       d[i].host_import ? "yes" : "no");
			printf(")%s\n", d[i].usable ? "" : " unusable");
		}
	}
	return EXIT_OK;
}

/* Opens the backend the options name; says why when it falls back. */
static int agent_open_backend(struct agent *ag)
{
	bool autop = !strcmp(opt_backend, "auto");
	int ret;

	if (!autop && strcmp(opt_backend, "vulkan") &&
	    strcmp(opt_backend, "cuda") && strcmp(opt_backend, "cpu"))
		return cli_error(
			EXIT_USAGE, "agent",
			"unknown backend '%s' (auto, vulkan, cuda or cpu)",
			opt_backend);
	if (!strcmp(opt_backend, "cuda")) {
		/* asked for: no fallback; the ops it lacks on the CPU */
		ret = edgeq_backend_open("cuda", opt_device, &ag->be);
		if (ret)
			return cli_error(
				ret == -ENOENT ? EXIT_USAGE : EXIT_UNAVAIL,
				"agent", "cuda%s%s: %s",
				opt_device ? " device " : "",
				opt_device ? opt_device : "",
				ret == -EPROTONOSUPPORT ?
					"not built in (nvcc, cuda.h)" :
				ret == -ENODEV ?
					"no CUDA driver (libcuda.so.1) or GPU" :
				ret == -ENOENT ? "no such device" :
						 strerror(-ret));
		ret = edgeq_backend_open("cpu", NULL, &ag->cpu);
		if (ret)
			return cli_error(cli_exit_for(ret), "agent",
					 "cpu backend: %s", strerror(-ret));
		return 0;
	}
	if (autop && opt_device)
		opt_backend = "vulkan";
	if (autop || !strcmp(opt_backend, "vulkan")) {
		ret = edgeq_backend_open("vulkan", opt_device, &ag->be);
		if (!ret) {
			opt_backend = "vulkan";
			ret = edgeq_backend_open("cpu", NULL, &ag->cpu);
			if (ret)
				return cli_error(cli_exit_for(ret), "agent",
						 "cpu backend: %s",
						 strerror(-ret));
			return 0;
		}
		if (!autop)
			return cli_error(
				ret == -ENOENT ? EXIT_USAGE : EXIT_UNAVAIL,
				"agent", "vulkan%s%s: %s%s",
				opt_device ? " device " : "",
				opt_device ? opt_device : "",
				ret == -EPROTONOSUPPORT ?
					"not built in (libvulkan-dev, glslc)" :
				ret == -ENOENT ? "no such device" :
				ret == -ENODEV ? "no Vulkan device" :
						 strerror(-ret),
				ret == -ENOENT ?
					" (see edgeq agent --list-devices)" :
					"");
		fprintf(stderr,
			"edgeq agent: no usable Vulkan device (%s): using the "
			"CPU backend\n",
			ret == -EPROTONOSUPPORT ? "built without Vulkan" :
						  strerror(-ret));
		opt_backend = "cpu";
	}
	ret = edgeq_backend_open("cpu", NULL, &ag->be);
	if (ret)
		return cli_error(cli_exit_for(ret), "agent", "cpu backend: %s",
				 strerror(-ret));
	return 0;
}

/*
 * --calibrate: the backend the options pick (auto: Vulkan when a device
 * is there), measured by `edgeq calibrate --backend` into [device.PROFILE]
 * (-P, default gpu; the cpu profile is the CPU's own, which `edgeq
 * calibrate` alone measures).
 */
static int agent_calibrate(struct agent *ag)
{
	const struct cli_command *cal = cli_find("calibrate");
	char *av[12];
	int ac = 0, ret;

	if (opt_profile && !strcmp(opt_profile, "cpu"))
		return cli_error(
			EXIT_USAGE, "agent",
			"--calibrate -P cpu: the cpu profile is the "
			"CPU's own (edgeq calibrate); name the agent's "
			"profile (npu or gpu)");
	ret = agent_open_backend(ag);
	if (ret)
		return ret;
	edgeq_backend_free(ag->be);
	edgeq_backend_free(ag->cpu);
	if (!cal)
		return cli_error(EXIT_FAIL, "agent", "no calibrate command");
	av[ac++] = (char *)"calibrate";
	av[ac++] = (char *)"--backend";
	av[ac++] = (char *)opt_backend;
	if (opt_device) {
		av[ac++] = (char *)"--device";
		av[ac++] = (char *)opt_device;
	}
	av[ac++] = (char *)"-P";
	av[ac++] = (char *)(opt_profile ? opt_profile : "gpu");
	if (opt_output) {
		av[ac++] = (char *)"-o";
		av[ac++] = (char *)opt_output;
	}
	if (opt_quick)
		av[ac++] = (char *)"--quick";
	av[ac] = NULL;
	return cal->main(ac, av);
}

/* Where `edgeq status` finds what each agent runs on. */
static void agent_write_state(const struct edgeq_backend_info *info)
{
	const char *dir = getenv("EDGEQ_RUN_DIR");
	char path[256];
	FILE *f;

	if (!dir)
		dir = "/run/edgeq";
	snprintf(path, sizeof(path), "%s/agent-%s", dir, opt_queue);
	f = fopen(path, "we");
	if (!f)
		return; /* optional: no run directory */
	fprintf(f, "pid=%d\nbackend=%s\ndevice=%s\nmemory=%s\n", (int)getpid(),
		info->backend, info->device, edgeq_backend_mem_name(info->mem));
	fclose(f);
}

static void agent_remove_state(void)
{
	const char *dir = getenv("EDGEQ_RUN_DIR");
	char path[256];

	snprintf(path, sizeof(path), "%s/agent-%s", dir ? dir : "/run/edgeq",
		 opt_queue);
	unlink(path);
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
	struct edgeq_backend_info info;
	struct agent ag = { 0 };
	bool sim;
	uint64_t served = 0;
	size_t i;
	int first, ret, n;

	ret = cli_parse(self, argc, argv, &first);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (first < argc)
		return cli_error(EXIT_USAGE, "agent",
				 "unexpected argument '%s'", argv[first]);
	if (opt_list)
		return agent_list_devices();
	if (opt_calibrate)
		return agent_calibrate(&ag);
	if (!opt_queue)
		return cli_error(EXIT_USAGE, "agent",
				 "--queue NAME is required");
	for (i = 0; opt_profile && i < sizeof(profiles) / sizeof(profiles[0]);
	     i++)
		if (!strcmp(profiles[i].name, opt_profile))
			prof = &profiles[i];
	if (opt_profile && !prof)
		return cli_error(EXIT_USAGE, "agent",
				 "unknown profile '%s' (npu, gpu or cpu)",
				 opt_profile);
	if (opt_speed != 0 && (opt_speed < 0.01 || opt_speed > 1000))
		return cli_error(EXIT_USAGE, "agent",
				 "--speed must be in 0.01..1000");
	if (opt_delay_us < 0)
		return cli_error(EXIT_USAGE, "agent",
				 "--delay-us must be >= 0");
	ret = agent_open_backend(&ag);
	if (ret)
		return ret;
	ret = agent_pressure(&ag);
	if (ret) {
		edgeq_backend_free(ag.be);
		edgeq_backend_free(ag.cpu);
		return ret;
	}
	sim = !strcmp(opt_backend, "cpu");
	if (!prof)
		prof = &profiles[sim ? 0 : 1];
	if (opt_speed == 0)
		opt_speed = sim ? prof->speed : 1.0;

	{
		uint64_t t0 = edgeq_now_ns();

		ret = agent_warmup(&ag);
		if (ret)
			fprintf(stderr,
				"edgeq agent: warm-up on %s failed: %s\n",
				opt_backend, strerror(-ret));
		else if (opt_verbose)
			fprintf(stderr, "edgeq agent: warm-up on %s: %.1f ms\n",
				opt_backend, (edgeq_now_ns() - t0) / 1e6);
	}
	ret = edgeq_kq_open(opt_queue, 0, &ag.kq);
	if (ret) {
		edgeq_backend_free(ag.be);
		edgeq_backend_free(ag.cpu);
		edgeq_pressure_free(ag.pm);
		return cli_error(
			cli_exit_for(ret), "agent",
			"cannot open queue %s: %s (is edgeq.ko loaded?)",
			opt_queue, strerror(-ret));
	}
	edgeq_kq_agent_on_unmap(ag.kq, agent_forget, &ag);
	ret = edgeq_kq_agent_attach(ag.kq, prof->op_mask);
	if (ret) {
		edgeq_kq_close(ag.kq);
		edgeq_backend_free(ag.be);
		edgeq_backend_free(ag.cpu);
		edgeq_pressure_free(ag.pm);
		return cli_error(
			cli_exit_for(ret), "agent", "cannot attach to %s: %s%s",
			opt_queue, strerror(-ret),
			ret == -EBUSY ? " (another agent is attached)" : "");
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	edgeq_backend_get_info(ag.be, &info);
	fprintf(stderr,
		"edgeq agent: serving %s (profile %s, speed %.2f) on %s: %s, "
		"memory %s\n",
		opt_queue, prof->name, opt_speed, info.backend, info.device,
		!strcmp(info.backend, "vulkan") &&
				info.mem == EDGEQ_BACKEND_MEM_IMPORT ?
			"imported (zero-copy, VK_EXT_external_memory_host)" :
		!strcmp(info.backend, "cuda") ?
			"host-registered (zero-copy, cuMemHostRegister)" :
		info.mem == EDGEQ_BACKEND_MEM_STAGING ?
			"staging copies (no VK_EXT_external_memory_host)" :
			"host (the mappings themselves)");
	agent_write_state(&info);

	while (!agent_stop && (!opt_count || served < opt_count)) {
		uint64_t t0, dt;

		n = agent_wait(&ag);
		if (!n)
			n = edgeq_kq_agent_next(ag.kq, ops, 32);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			ret = n;
			break;
		}
		memset(done, 0, sizeof(done[0]) * (size_t)n);
		t0 = edgeq_now_ns();
		agent_run_batch(&ag, ops, (unsigned int)n, done);
		dt = edgeq_now_ns() - t0;
		if (opt_speed < 1.0)
			sleep_ns((uint64_t)((double)dt / opt_speed) - dt);
		if (opt_delay_us)
			sleep_ns((uint64_t)opt_delay_us * 1000 * (uint64_t)n);
		for (i = 0; i < (size_t)n; i++) {
			done[i].tag = ops[i].tag;
			done[i].busy_ns = (uint64_t)((double)done[i].busy_ns /
						     opt_speed) +
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
			ret = edgeq_kq_agent_done(ag.kq, &done[i], 1);
			if (ret < 0 && ret != -ENOENT)
				break;
		}
		if (ret < 0 && ret != -ENOENT)
			break;
		ret = 0;
		served += (uint64_t)n;
		agent_trim(&ag);
	}
	edgeq_kq_close(ag.kq);
	edgeq_backend_get_info(ag.be, &info);
	edgeq_backend_free(ag.be);
	edgeq_backend_free(ag.cpu);
	edgeq_pressure_free(ag.pm);
	agent_remove_state();
	if (ret < 0 && !agent_stop)
		return cli_error(cli_exit_for(ret), "agent", "queue %s: %s",
				 opt_queue, strerror(-ret));
	fprintf(stderr, "edgeq agent: %llu ops served (%s: %llu chains)\n",
		(unsigned long long)served, info.backend,
		(unsigned long long)info.chains);
	if (ag.releases)
		fprintf(stderr,
			"edgeq agent: %.1f MiB of device copies released under memory pressure (%llu times)\n",
			ag.released / 1048576.0,
			(unsigned long long)ag.releases);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	agent, "serve an edgeq.ko queue with Vulkan, CUDA or the CPU kernels",
	"usage: edgeq agent --queue NAME [--backend auto|vulkan|cuda|cpu]\n"
	"                   [--device N|NAME] [--profile npu|gpu|cpu] [--speed X]\n"
	"       edgeq agent --list-devices\n"
	"\n"
	"Attach to /dev/edgeq/NAME as its agent and execute the ops clients\n"
	"submit: with Vulkan compute shaders on a GPU (any Vulkan 1.2 device,\n"
	"lavapipe included; the clients' memfds imported without a copy where\n"
	"the driver has VK_EXT_external_memory_host), with CUDA where it was\n"
	"built with nvcc, or with the engine's CPU kernels. auto picks vulkan\n"
	"when a usable device exists and says so when it falls back to cpu.\n"
	"A profile restricts the ops accepted (npu: matrices, silu_mul and\n"
	"add; no softmax, norms or RoPE); on the cpu backend it also scales\n"
	"the speed: below 1 the agent sleeps to be slower, above 1 it reports\n"
	"proportionally less busy time. Needs edgeq.ko and CAP_SYS_ADMIN.\n"
	"Documentation/gpu-agent.rst.",
	agent_opts, cmd_agent);
