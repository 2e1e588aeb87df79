// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq calibrate: this machine's CPU profile, measured. The placer and
 * `edgeq plan --placement` weigh the CPU against the device queues with
 * [device.cpu] of devices.ini, whose built-in numbers are a generic guess
 * (20 GB/s, 50 GFLOP/s); a wrong guess puts ops where they run slower.
 * This measures what the engine's own kernels reach here: memory read
 * bandwidth (what decode is bound by), the arithmetic rate of the prompt's
 * matmul with its weights in cache (Q4_0 and Q8_0, the slower counts), and
 * the fixed cost of one parallel op, and writes them as a [device.cpu]
 * section that edgeq_devprofs_load_all() lays over the configured profile.
 *
 * With --backend (vulkan, cpu) it measures an agent's execution backend
 * instead, through the interface the agent runs its queue's ops with:
 * the matvec's weight GB/s over a matrix larger than the caches, a cached
 * matmul's GFLOP/s, the cost of a one-op chain (launch_us) and of each
 * further op in a chain (op_us), as [device.PROFILE] (default gpu). Other
 * sections of the file are kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/backend.h>
#include <edgeq/kernels.h>
#include <edgeq/kq.h>
#include <edgeq/ledger.h>
#include <edgeq/placement.h>

#include "cli.h"

static const char *opt_out, *opt_backend, *opt_device, *opt_profile;
static int opt_threads;
static bool opt_json, opt_quick, opt_dry_run;

static const struct cli_option calibrate_opts[] = {
	{ "output", 'o', CLI_STR, &opt_out, "FILE",
	  "where to write (default: $EDGEQ_CALIBRATION, else /var/lib/edgeq/calibration.ini)" },
	{ "threads", 't', CLI_INT, &opt_threads, "N",
	  "threads, as the engine would run (default: one per online CPU)" },
	{ "backend", 0, CLI_STR, &opt_backend, "vulkan|cpu",
	  "measure an agent's execution backend, not the CPU's kernels" },
	{ "device", 0, CLI_STR, &opt_device, "N|NAME",
	  "with --backend: which device (see edgeq agent --list-devices)" },
	{ "profile", 'P', CLI_STR, &opt_profile, "NAME",
	  "with --backend: the [device.NAME] section to write (default gpu)" },
	{ "quick", 0, CLI_FLAG, &opt_quick, NULL,
	  "smaller buffers and fewer passes (a rougher figure, for tests)" },
	{ "dry-run", 0, CLI_FLAG, &opt_dry_run, NULL,
	  "measure and print, write nothing" },
	{ "json", 0, CLI_FLAG, &opt_json, NULL, "print the figures as JSON" },
	CLI_OPTIONS_END
};

struct figures {
	double mem_gbs, gflops, gflops_q4, gflops_q8, op_us, launch_us;
	const char *kernels;
	char device[EDGEQ_BACKEND_NAME_MAX];
	int threads;
};

static int measure(struct figures *f)
{
	struct edgeq_matmul_bench q4, q8;
	struct edgeq_error err = { 0 };
	size_t bytes = opt_quick ? 64u << 20 : 0;
	int ret;

	ret = edgeq_membw_measure(f->threads, bytes, opt_quick ? 2 : 5,
				  &f->mem_gbs);
	if (ret)
		return cli_error(cli_exit_for(ret), "calibrate",
				 "memory bandwidth: %s", strerror(-ret));
	/* 256 x 2048 weights (512 KiB of Q8_0) stay in cache; 64 tokens */
	ret = edgeq_kernels_bench_matmul("Q4_0", 256, 2048, 64, f->threads,
					 opt_quick ? 8 : 64, &q4, &err);
	if (!ret)
		ret = edgeq_kernels_bench_matmul("Q8_0", 256, 2048, 64,
						 f->threads, opt_quick ? 8 : 64,
						 &q8, &err);
	if (ret)
		return cli_error(cli_exit_for(ret), "calibrate", "matmul: %s",
				 err.msg);
	f->gflops_q4 = q4.gflops;
	f->gflops_q8 = q8.gflops;
	f->gflops = q4.gflops < q8.gflops ? q4.gflops : q8.gflops;
	f->op_us = q4.dispatch_us < q8.dispatch_us ? q4.dispatch_us :
						     q8.dispatch_us;
	f->kernels = q4.kernels;
	return 0;
}

/* ---- an execution backend, as an agent runs it */

/* A memfd holding one op's tensors (as a client registers them). */
struct arena {
	int fd;
	void *map;
	size_t size, used;
	uint64_t id;
};

static int arena_new(struct arena *a, size_t size, uint64_t id)
{
	a->size = (size + 4095) & ~(size_t)4095;
	a->used = 0;
	a->id = id;
	return edgeq_kq_memfd("calibrate", a->size, &a->fd, &a->map);
}

static void arena_free(struct arena *a)
{
	munmap(a->map, a->size);
	close(a->fd);
}

/* Tensor @i of @op: @bytes of the arena (256-aligned), filled with @b. */
static void arena_take(struct arena *a, struct edgeq_op_desc *op,
		       unsigned int i, size_t bytes, int b,
		       struct edgeq_backend_tensor *t)
{
	a->used = (a->used + 255) & ~(size_t)255;
	edgeq_op_desc_tensor(op, i, 1, a->used, bytes);
	memset((char *)a->map + a->used, b, bytes);
	t[i] = (struct edgeq_backend_tensor){ .base = a->map,
					      .map_len = a->size,
					      .offset = a->used,
					      .length = bytes,
					      .id = a->id };
	a->used += bytes;
}

/*
 * @n copies of a Q4_0 matvec (rows x cols; nb > 1: matmul over nb tokens)
 * as one chain, @reps times after a warm-up (imports, device copies); the
 * median seconds per chain, or a negative errno.
 */
static double time_chain(struct edgeq_backend *b, uint64_t rows, uint64_t cols,
			 uint64_t nb, unsigned int n, int reps, uint64_t id)
{
	/* Q4_0 blocks of 32 weights: 18 bytes; 0x88 nibbles, scale 0x3c00 */
	size_t wbytes = rows * (cols / 32) * 18, ab = nb * cols * 4,
	       yb = nb * rows * 4;
	struct edgeq_backend_tensor t[8][EDGEQ_MAX_TENSORS];
	struct edgeq_op_desc op[8];
	struct arena a;
	double times[64], ret = 0;
	int st[8];

	if (n > 8 || reps > 64 || arena_new(&a, wbytes + ab + yb + 1024, id))
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		edgeq_op_desc_init(&op[i],
				   nb > 1 ? EDGEQ_OP_MATMUL : EDGEQ_OP_MATVEC,
				   i + 1);
		op[i].dtype = EDGEQ_DTYPE_Q4_0;
		op[i].shape[0] = rows;
		op[i].shape[1] = cols;
		if (nb > 1)
			op[i].shape[2] = nb;
		a.used = 0; /* every op of the chain on the same tensors */
		arena_take(&a, &op[i], 0, wbytes, 0x11, t[i]);
		arena_take(&a, &op[i], 1, ab, 0, t[i]);
		arena_take(&a, &op[i], 2, yb, 0, t[i]);
	}
	{
		/* the (shared) weights: blocks of scale 1.0 (f16 0x3c00) */
		unsigned char *w = (unsigned char *)a.map + t[0][0].offset;

		for (size_t k = 0; k + 18 <= wbytes; k += 18) {
			w[k] = 0x00;
			w[k + 1] = 0x3c;
			memset(w + k + 2, 0x88, 16);
		}
	}
	for (int r = -1; r < reps && !ret; r++) {
		uint64_t t0 = edgeq_now_ns();
		int e = edgeq_backend_run(b, op, (const void *)t, st, n);

		if (e || st[n - 1])
			ret = e ? e : st[n - 1];
		else if (r >= 0)
			times[r] = (double)(edgeq_now_ns() - t0) / 1e9;
	}
	edgeq_backend_forget(b, id);
	arena_free(&a);
	if (ret)
		return ret;
	return edgeq_stats_percentile(times, (size_t)reps, 50);
}

static int measure_backend(struct figures *f)
{
	struct edgeq_backend_info info;
	struct edgeq_backend *b = NULL;
	uint64_t big = opt_quick ? 4096 : 8192;
	double t_big, t_mm, t1, t8;
	int ret, reps = opt_quick ? 5 : 21;

	ret = edgeq_backend_open(opt_backend, opt_device, &b);
	if (ret)
		return cli_error(ret == -EINVAL ? EXIT_USAGE : EXIT_UNAVAIL,
				 "calibrate", "--backend %s%s%s: %s",
				 opt_backend, opt_device ? " --device " : "",
				 opt_device ? opt_device : "",
				 ret == -EPROTONOSUPPORT ?
					 "not built in (no libvulkan/glslc)" :
				 ret == -ENOENT ? "no such device" :
				 ret == -ENODEV ? "no driver or device" :
						  strerror(-ret));
	edgeq_backend_get_info(b, &info);
	snprintf(f->device, sizeof(f->device), "%s", info.device);
	f->kernels = info.backend;
	/* weights larger than the caches: what decode reads per token */
	t_big = time_chain(b, big, 4096, 1, 1, reps, 1);
	/* a cached matmul: the arithmetic rate */
	t_mm = t_big < 0 ? t_big : time_chain(b, 256, 2048, 64, 1, reps, 2);
	/* a one-op chain, and each op more of a chain */
	t1 = t_mm < 0 ? t_mm : time_chain(b, 64, 256, 1, 1, reps, 3);
	t8 = t1 < 0 ? t1 : time_chain(b, 64, 256, 1, 8, reps, 4);
	edgeq_backend_free(b);
	if (t8 < 0)
		return cli_error(cli_exit_for((int)t8), "calibrate",
				 "--backend %s: running a matvec: %s",
				 opt_backend, strerror((int)-t8));
	f->mem_gbs = (double)big * (4096 / 32) * 18 / t_big / 1e9;
	f->gflops = 2.0 * 256 * 2048 * 64 / t_mm / 1e9;
	f->gflops_q4 = f->gflops;
	f->launch_us = t1 * 1e6;
	f->op_us = t8 > t1 ? (t8 - t1) / 7 * 1e6 : 0;
	return 0;
}

/* mkdir -p of @path's directory (its last component is the file). */
static int make_parent(const char *path)
{
	char d[4096], *p;

	if (strlen(path) >= sizeof(d))
		return -ENAMETOOLONG;
	strcpy(d, path);
	p = strrchr(d, '/');
	if (!p || p == d)
		return 0;
	*p = '\0';
	for (p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(d, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The lines of @path outside section [@section] (none if it is absent). */
static void copy_other_sections(const char *path, const char *section, FILE *o)
{
	char line[1024], head[80];
	bool skip = false;
	FILE *in = fopen(path, "r");

	if (!in)
		return;
	snprintf(head, sizeof(head), "[%s]", section);
	while (fgets(line, sizeof(line), in)) {
		const char *p = line + strspn(line, " \t");

		if (*p == '[')
			skip = !strncmp(p, head, strlen(head));
		if (!skip)
			fputs(line, o);
	}
	fclose(in);
}

/* Written whole or not at all: a temporary file, then rename. */
static int write_profile(const char *path, const struct figures *f)
{
	char tmp[4200], when[64], section[64];
	time_t now = time(NULL);
	struct tm tm;
	FILE *o;
	int ret;

	ret = make_parent(path);
	if (ret)
		return cli_error(cli_exit_for(ret), "calibrate",
				 "%s: cannot create its directory: %s", path,
				 strerror(-ret));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	o = fopen(tmp, "w");
	if (!o)
		return cli_error(errno == ENOSPC ? EXIT_NORES : EXIT_FAIL,
				 "calibrate", "%s: %s", tmp, strerror(errno));
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	snprintf(section, sizeof(section), "device.%s",
		 opt_backend ? (opt_profile ? opt_profile : "gpu") : "cpu");
	copy_other_sections(path, section, o);
	if (opt_backend)
		fprintf(o,
			"[%s]\n"
			"# measured by edgeq calibrate, %s: %s backend on %s\n"
			"gflops = %.1f\nmem_gbs = %.2f\nlaunch_us = %.2f\n"
			"op_us = %.2f\n",
			section, when, f->kernels, f->device, f->gflops,
			f->mem_gbs, f->launch_us, f->op_us);
	else
		fprintf(o,
			"[%s]\n"
			"# measured by edgeq calibrate, %s: %s kernels, %d threads\n"
			"# (matmul Q4_0 %.1f, Q8_0 %.1f GFLOP/s; the slower counts)\n"
			"gflops = %.1f\nmem_gbs = %.2f\nop_us = %.2f\n",
			section, when, f->kernels, f->threads, f->gflops_q4,
			f->gflops_q8, f->gflops, f->mem_gbs, f->op_us);
	if (fflush(o) || ferror(o) || fsync(fileno(o))) {
		ret = errno ? errno : EIO;
		fclose(o);
		unlink(tmp);
		return cli_error(ret == ENOSPC ? EXIT_NORES : EXIT_FAIL,
				 "calibrate", "%s: %s", path, strerror(ret));
	}
	if (fclose(o) || rename(tmp, path)) {
		ret = errno;
		unlink(tmp);
		return cli_error(ret == ENOSPC ? EXIT_NORES : EXIT_FAIL,
				 "calibrate", "%s: %s", path, strerror(ret));
	}
	return 0;
}

static int cmd_calibrate(int argc, char **argv)
{
	const struct cli_command *self = cli_find("calibrate");
	struct edgeq_device_profile profs[16];
	const struct edgeq_device_profile *builtin;
	struct figures f = { 0 };
	const char *out;
	int ret, arg, n;

	ret = cli_parse(self, argc, argv, &arg);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	if (arg < argc)
		return cli_error(EXIT_USAGE, "calibrate",
				 "unexpected argument '%s'", argv[arg]);
	if (opt_threads < 0 || opt_threads > 1024)
		return cli_error(EXIT_USAGE, "calibrate",
				 "--threads must be 1..1024");
	out = opt_out;
	if (!out) {
		out = getenv("EDGEQ_CALIBRATION");
		if (!out || !*out)
			out = "/var/lib/edgeq/calibration.ini";
	}
	f.threads = opt_threads ? opt_threads :
				  (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (f.threads < 1)
		f.threads = 1;
	if (!opt_backend && (opt_device || opt_profile))
		return cli_error(EXIT_USAGE, "calibrate",
				 "--device and --profile go with --backend");
	if (opt_profile && (!*opt_profile || strlen(opt_profile) >= 32 ||
			    strpbrk(opt_profile, "[] \t=#;")))
		return cli_error(EXIT_USAGE, "calibrate",
				 "--profile '%s': not a profile name",
				 opt_profile);
	n = edgeq_devprofs_load(NULL, profs, 16, NULL);
	builtin = n > 0 ? edgeq_devprof_find(
				  profs, (size_t)n,
				  opt_backend ?
					  (opt_profile ? opt_profile : "gpu") :
					  "cpu") :
			  NULL;
	ret = opt_backend ? measure_backend(&f) : measure(&f);
	if (ret)
		return ret;
	if (!opt_dry_run) {
		ret = write_profile(out, &f);
		if (ret)
			return ret;
	}
	if (opt_json) {
		json_t *j = json_pack(
			"{s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:o,s:f,s:f}", "kernels",
			f.kernels, "threads", f.threads, "mem_gbs", f.mem_gbs,
			"gflops", f.gflops, "gflops_q4_0", f.gflops_q4,
			"gflops_q8_0", f.gflops_q8, "op_us", f.op_us, "written",
			opt_dry_run ? json_null() : json_string(out),
			"builtin_mem_gbs", builtin ? builtin->mem_gbs : 0.0,
			"builtin_gflops", builtin ? builtin->gflops : 0.0);

		if (opt_backend) {
			json_object_set_new(j, "device", json_string(f.device));
			json_object_set_new(j, "launch_us",
					    json_real(f.launch_us));
			json_object_set_new(
				j, "profile",
				json_string(opt_profile ? opt_profile : "gpu"));
		}

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		return EXIT_OK;
	}
	if (opt_backend) {
		printf("%s backend on %s       measured   built-in [device.%s]\n",
		       f.kernels, f.device, opt_profile ? opt_profile : "gpu");
		printf("  matvec weights, GB/s         %9.2f  %9.2f\n",
		       f.mem_gbs, builtin ? builtin->mem_gbs : 0.0);
		printf("  cached matmul, GFLOP/s       %9.1f  %9.1f\n",
		       f.gflops, builtin ? builtin->gflops : 0.0);
		printf("  a one-op chain, us           %9.1f  %9.1f\n",
		       f.launch_us, builtin ? builtin->launch_us : 0.0);
		printf("  each further op, us          %9.1f  %9.1f\n", f.op_us,
		       builtin ? builtin->op_us : 0.0);
		goto done;
	}
	printf("cpu (%s kernels, %d threads)     measured   built-in\n",
	       f.kernels, f.threads);
	printf("  memory read bandwidth, GB/s  %9.2f  %9.2f\n", f.mem_gbs,
	       builtin ? builtin->mem_gbs : 0.0);
	printf("  matmul, GFLOP/s              %9.1f  %9.1f  (Q4_0 %.1f, Q8_0 %.1f)\n",
	       f.gflops, builtin ? builtin->gflops : 0.0, f.gflops_q4,
	       f.gflops_q8);
	printf("  one parallel op, us          %9.2f  %9.2f\n", f.op_us,
	       builtin ? builtin->op_us : 0.0);
done:
	if (opt_dry_run)
		printf("not written (--dry-run)\n");
	else
		printf("written to %s: the placer and edgeq plan --placement use it\n",
		       out);
	return EXIT_OK;
}

EDGEQ_COMMAND(
	calibrate, "measure this machine's CPU profile for the placer",
	"usage: edgeq calibrate [-o FILE] [-t N] [--quick] [--dry-run] [--json]\n"
	"       edgeq calibrate --backend vulkan|cpu [--device N|NAME] [-P PROFILE] [...]\n"
	"\n"
	"Measures what the engine's kernels reach on this machine's CPU: memory\n"
	"read bandwidth, the prompt matmul's arithmetic rate with its weights in\n"
	"cache, and the fixed cost of one parallel op. Writes them as [device.cpu]\n"
	"(gflops, mem_gbs, op_us) to FILE, which the placer and 'edgeq plan\n"
	"--placement' lay over devices.ini: $EDGEQ_CALIBRATION, else\n"
	"/var/lib/edgeq/calibration.ini. With --backend, measures an agent's\n"
	"execution backend instead (matvec GB/s, matmul GFLOP/s, launch_us, op_us)\n"
	"as [device.PROFILE] (default gpu); other sections of FILE are kept.\n"
	"Run it on a quiet machine.",
	calibrate_opts, cmd_calibrate);
