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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <edgeq/kernels.h>
#include <edgeq/placement.h>

#include "cli.h"

static const char *opt_out;
static int opt_threads;
static bool opt_json, opt_quick, opt_dry_run;

static const struct cli_option calibrate_opts[] = {
	{ "output", 'o', CLI_STR, &opt_out, "FILE",
	  "where to write (default: $EDGEQ_CALIBRATION, else /var/lib/edgeq/calibration.ini)" },
	{ "threads", 't', CLI_INT, &opt_threads, "N",
	  "threads, as the engine would run (default: one per online CPU)" },
	{ "quick", 0, CLI_FLAG, &opt_quick, NULL,
	  "smaller buffers and fewer passes (a rougher figure, for tests)" },
	{ "dry-run", 0, CLI_FLAG, &opt_dry_run, NULL,
	  "measure and print, write nothing" },
	{ "json", 0, CLI_FLAG, &opt_json, NULL, "print the figures as JSON" },
	CLI_OPTIONS_END
};

struct figures {
	double mem_gbs, gflops, gflops_q4, gflops_q8, op_us;
	const char *kernels;
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

/* Written whole or not at all: a temporary file, then rename. */
static int write_profile(const char *path, const struct figures *f)
{
	char tmp[4200], when[64];
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
	fprintf(o,
		"# measured by edgeq calibrate, %s: %s kernels, %d threads\n"
		"# (matmul Q4_0 %.1f, Q8_0 %.1f GFLOP/s; the slower counts)\n"
		"[device.cpu]\n"
		"gflops = %.1f\nmem_gbs = %.2f\nop_us = %.2f\n",
		when, f->kernels, f->threads, f->gflops_q4, f->gflops_q8,
		f->gflops, f->mem_gbs, f->op_us);
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
	n = edgeq_devprofs_load(NULL, profs, 16, NULL);
	builtin = n > 0 ? edgeq_devprof_find(profs, (size_t)n, "cpu") : NULL;
	ret = measure(&f);
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

		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		return EXIT_OK;
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
	"\n"
	"Measures what the engine's kernels reach on this machine's CPU: memory\n"
	"read bandwidth, the prompt matmul's arithmetic rate with its weights in\n"
	"cache, and the fixed cost of one parallel op. Writes them as [device.cpu]\n"
	"(gflops, mem_gbs, op_us) to FILE, which the placer and 'edgeq plan\n"
	"--placement' lay over devices.ini: $EDGEQ_CALIBRATION, else\n"
	"/var/lib/edgeq/calibration.ini. Run it on a quiet machine.",
	calibrate_opts, cmd_calibrate);
