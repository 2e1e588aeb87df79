// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Device profiles: sections of share/edgeq/profiles.ini, and `local`, which is
 * measured on the machine edgeq runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "kernels/kernels.h"

#include <edgeq/ledger.h>

#ifndef EDGEQ_DATADIR
#define EDGEQ_DATADIR "/usr/local/share/edgeq"
#endif

static char found_path[PATH_MAX];

static bool readable(const char *p)
{
	return p && access(p, R_OK) == 0;
}

const char *edgeq_profile_path(const char *path)
{
	char exe[PATH_MAX - 64];
	ssize_t n;
	char *slash;

	if (path && *path)
		return path;
	path = getenv("EDGEQ_PROFILES");
	if (path && *path)
		return path;
	/* next to the command: build/edgeq -> share/edgeq (source tree) and
	 * PREFIX/bin/edgeq -> PREFIX/share/edgeq (installed) */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(found_path, sizeof(found_path),
				 "%s/../share/edgeq/profiles.ini", exe);
			if (readable(found_path))
				return found_path;
		}
	}
	if (readable(EDGEQ_DATADIR "/profiles.ini"))
		return EDGEQ_DATADIR "/profiles.ini";
	return "share/edgeq/profiles.ini";
}

struct load_state {
	const char *want;
	struct edgeq_profile *p;
	bool found;
	char names[512];
	char bad[160];
};

static void add_name(char *names, size_t len, const char *section)
{
	size_t n = strlen(names);

	if (strstr(names, section) && n)
		return; /* cheap dedupe: sections come in one block each */
	snprintf(names + n, len - n, "%s%s", n ? ", " : "", section);
}

/*
 * cpu_stream_gbps = TYPE:GB/s[,TYPE:GB/s...]: a known weight type each,
 * a positive figure, at most as many as the profile holds.
 */
static int parse_cpu_stream(struct load_state *st, const char *section,
			    const char *value)
{
	struct edgeq_profile *p = st->p;
	const char *s = value;

	p->n_cpu_stream = 0;
	while (*s) {
		const char *colon = strchr(s, ':');
		size_t len = colon ? (size_t)(colon - s) : 0;
		unsigned int i = p->n_cpu_stream;
		enum edgeq_type t;
		char *end;
		double v;

		if (!colon || !len || len >= sizeof(p->cpu_stream[0].type) ||
		    i >= sizeof(p->cpu_stream) / sizeof(p->cpu_stream[0]))
			goto bad;
		memcpy(p->cpu_stream[i].type, s, len);
		p->cpu_stream[i].type[len] = 0;
		if (edgeq_type_from_name(p->cpu_stream[i].type, &t))
			goto bad;
		v = strtod(colon + 1, &end);
		if (end == colon + 1 || !(v > 0) || (*end && *end != ',') ||
		    (*end == ',' && !end[1]))
			goto bad;
		p->cpu_stream[i].bw = v * 1e9;
		p->n_cpu_stream++;
		s = *end ? end + 1 : end;
	}
	if (p->n_cpu_stream)
		return 1;
bad:
	snprintf(
		st->bad, sizeof(st->bad),
		"[%s] cpu_stream_gbps = '%s' is not TYPE:GB/s[,TYPE:GB/s...] (a known weight type, a positive figure, at most %zu)",
		section, value,
		sizeof(p->cpu_stream) / sizeof(p->cpu_stream[0]));
	return 0;
}

static int on_key(void *user, const char *section, const char *key,
		  const char *value)
{
	struct load_state *st = user;
	struct edgeq_profile *p = st->p;
	char *end;
	double v;

	add_name(st->names, sizeof(st->names), section);
	if (strcmp(section, st->want))
		return 1;
	st->found = true;
	if (!strcmp(key, "desc")) {
		snprintf(p->desc, sizeof(p->desc), "%s", value);
		return 1;
	}
	if (!strcmp(key, "family")) {
		snprintf(p->family, sizeof(p->family), "%s", value);
		return 1;
	}
	if (!strcmp(key, "cpu_stream_gbps"))
		return parse_cpu_stream(st, section, value);
	v = strtod(value, &end);
	if (end == value || *end || v < 0) {
		snprintf(st->bad, sizeof(st->bad),
			 "[%s] %s = '%s' is not a non-negative number", section,
			 key, value);
		return 0;
	}
	if (!strcmp(key, "mem_bw_gbps"))
		p->mem_bw = v * 1e9;
	else if (!strcmp(key, "efficiency"))
		p->efficiency = v;
	else if (!strcmp(key, "ram_gib"))
		p->ram = (uint64_t)(v * (1ull << 30));
	else if (!strcmp(key, "reserved_gib"))
		p->reserved = (uint64_t)(v * (1ull << 30));
	else if (!strcmp(key, "flash_bw_gbps"))
		p->flash_bw = v * 1e9;
	else if (!strcmp(key, "fault_latency_us"))
		p->fault_latency = v * 1e-6;
	else if (!strcmp(key, "page_size"))
		p->page_size = (uint32_t)v;
	else if (!strcmp(key, "compute_gflops"))
		p->compute = v * 1e9;
	else if (!strcmp(key, "throttle"))
		p->throttle = v;
	else if (!strcmp(key, "cores"))
		p->cores = (int)v;
	else if (!strcmp(key, "cpu_ghz"))
		p->cpu_ghz = v;
	else {
		snprintf(st->bad, sizeof(st->bad), "[%s] unknown key '%s'",
			 section, key);
		return 0;
	}
	return 1;
}

static void profile_defaults(struct edgeq_profile *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->family, sizeof(p->family), "%s", name);
	p->efficiency = 0.85;
	p->throttle = 1.0;
	p->page_size = 4096;
	p->fault_latency = 80e-6;
	p->flash_bw = 1e9;
}

static int parse_file(const char *path, struct load_state *st,
		      struct edgeq_error *err)
{
	int ret = ini_parse(path, on_key, st);

	if (ret == -1)
		return edgeq_error_set(
			err, ENOENT,
			"profiles file %s: cannot open it (set --profiles or EDGEQ_PROFILES)",
			path);
	if (ret)
		return edgeq_error_set(err, EINVAL,
				       "profiles file %s line %d: %s", path,
				       ret,
				       st->bad[0] ? st->bad : "syntax error");
	return 0;
}

int edgeq_profile_load(const char *path, const char *name,
		       struct edgeq_profile *p, struct edgeq_error *err)
{
	struct load_state st = { .want = name, .p = p };
	const char *file = edgeq_profile_path(path);
	int ret;

	profile_defaults(p, name);
	ret = parse_file(file, &st, err);
	if (ret && !(ret == -ENOENT && !strcmp(name, "local")))
		return ret;
	if (!strcmp(name, "local"))
		return 0; /* the caller measures: edgeq_profile_local() */
	if (!st.found)
		return edgeq_error_set(err, ENOENT,
				       "no profile '%s' in %s (there: %s)",
				       name, file, st.names);
	return 0;
}

int edgeq_profile_list(const char *path, char *buf, size_t len,
		       struct edgeq_error *err)
{
	struct edgeq_profile scratch;
	struct load_state st = { .want = "", .p = &scratch };
	int ret = parse_file(edgeq_profile_path(path), &st, err);

	if (ret)
		return ret;
	snprintf(buf, len, "%s", st.names);
	return 0;
}

/* ---- live measurement of `local` ---- */

struct bw_slice {
	const uint64_t *p;
	size_t n;
	unsigned int reps;
	uint64_t sum;
};

static void *read_slice(void *arg)
{
	struct bw_slice *s = arg;
	uint64_t a = 0, b = 0, c = 0, d = 0;

	for (unsigned int r = 0; r < s->reps; r++)
		for (size_t i = 0; i + 4 <= s->n; i += 4) {
			a += s->p[i];
			b += s->p[i + 1];
			c += s->p[i + 2];
			d += s->p[i + 3];
		}
	s->sum = a ^ b ^ c ^ d;
	return NULL;
}

/* Best of five passes with @nthr threads over @buf. */
static double read_bw(const uint64_t *buf, size_t bytes, int nthr,
		      unsigned int reps)
{
	struct bw_slice sl[16];
	pthread_t th[16];
	double best = 0;

	for (int pass = 0; pass < 5; pass++) {
		uint64_t t0 = edgeq_now_ns(), dt;
		int started = 0;

		for (int i = 0; i < nthr; i++) {
			sl[i].p = buf + i * (bytes / 8 / nthr);
			sl[i].n = bytes / 8 / nthr;
			sl[i].reps = reps;
			if (i == 0 ||
			    pthread_create(&th[i], NULL, read_slice, &sl[i]))
				continue;
			started |= 1 << i;
		}
		read_slice(&sl[0]);
		for (int i = 1; i < nthr; i++)
			if (started & (1 << i))
				pthread_join(th[i], NULL);
			else
				read_slice(&sl[i]);
		dt = edgeq_now_ns() - t0;
		if (dt && (double)bytes * reps * 1e9 / (double)dt > best)
			best = (double)bytes * reps * 1e9 / (double)dt;
	}
	return best;
}

double edgeq_ledger_membw_at(uint64_t ws)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nthr = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu;
	size_t bytes = ws < (64u << 10) ? (64u << 10) : (size_t)ws;
	unsigned int reps;
	double one, all;
	uint64_t *buf;

	if (bytes > (1ull << 30))
		bytes = 1ull << 30;
	bytes &= ~(size_t)(32 * nthr - 1);
	/* read at least 128 MiB per pass so timing is not noise */
	reps = (unsigned int)((128ull << 20) / bytes);
	if (!reps)
		reps = 1;
	buf = malloc(bytes);
	if (!buf)
		return 0;
	memset(buf, 1, bytes);
	/* one thread and all of them: on a busy machine the threads may not
	 * get every core, and the bound is the best the memory delivered */
	one = read_bw(buf, bytes, 1, reps);
	all = nthr > 1 ? read_bw(buf, bytes, nthr, reps) : 0;
	free(buf);
	return one > all ? one : all;
}

double edgeq_ledger_membw(void)
{
	return edgeq_ledger_membw_at(128ull << 20);
}

/* Sequential read bandwidth of @path, bypassing the page cache. */
static double disk_bw(const char *path, uint64_t limit)
{
	const size_t chunk = 4u << 20;
	uint64_t done = 0, t0, dt;
	void *buf;
	int fd;
	ssize_t n;

	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (posix_memalign(&buf, 4096, chunk)) {
		close(fd);
		return 0;
	}
	t0 = edgeq_now_ns();
	while (done < limit && (n = read(fd, buf, chunk)) > 0)
		done += (uint64_t)n;
	dt = edgeq_now_ns() - t0;
	free(buf);
	close(fd);
	return dt && done >= (1u << 20) ? (double)done * 1e9 / (double)dt : 0;
}

static double temp_disk_bw(void)
{
	const char *dir = getenv("TMPDIR");
	const size_t bytes = 32u << 20;
	char path[PATH_MAX];
	double bw = 0;
	void *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/edgeq-diskbw.XXXXXX",
		 dir && *dir ? dir : "/var/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return 0;
	if (!posix_memalign(&buf, 4096, bytes)) {
		memset(buf, 0x5a, bytes);
		if (write(fd, buf, bytes) == (ssize_t)bytes && !fsync(fd))
			bw = disk_bw(path, bytes);
		free(buf);
	}
	close(fd);
	unlink(path);
	return bw;
}

static uint64_t cgroup_limit(void)
{
	char line[64];
	unsigned long long v;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "re");
	int ok;

	if (!f)
		return 0;
	ok = fgets(line, sizeof(line), f) && sscanf(line, "%llu", &v) == 1;
	fclose(f);
	return ok ? (uint64_t)v : 0;
}

static double cpu_hz(void)
{
	unsigned long long khz = 0;
	double mhz = 0;
	char line[256];
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
			"re");

	if (f) {
		if (fscanf(f, "%llu", &khz) != 1)
			khz = 0;
		fclose(f);
		if (khz)
			return (double)khz * 1e3;
	}
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
				break;
		fclose(f);
	}
	return mhz > 0 ? mhz * 1e6 : 3e9;
}

/*
 * Peak 8-bit multiply-add operations (2 per MAC) per cycle and core of the
 * kernel table this machine runs, so the prefill bound is an upper bound:
 * AVX-512 VNNI, two 64-lane vpdpbusd per cycle; AVX2, two 32-lane
 * vpmaddubsw; NEON dotprod, two 16-lane sdot; scalar, a generous 16.
 */
static double peak_ops_per_cycle(void)
{
	const char *isa = edgeq_kernels_select()->name;

	if (!strcmp(isa, "avx512"))
		return 256;
	if (!strcmp(isa, "avx2"))
		return 128;
	if (!strcmp(isa, "neon"))
		return 64;
	return 16;
}

int edgeq_profile_local(struct edgeq_profile *p, const char *disk_file,
			struct edgeq_error *err)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz :
					      0;
	uint64_t lim = cgroup_limit();
	double bw, dbw;

	if (lim && lim < ram)
		ram = lim;
	p->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (p->cores < 1)
		p->cores = 1;
	p->ram = ram;
	p->compute = p->cores * cpu_hz() * peak_ops_per_cycle();
	bw = edgeq_ledger_membw();
	if (!(bw > 0))
		return edgeq_error_set(
			err, EIO,
			"local profile: memory bandwidth measurement failed");
	p->mem_bw = bw;
	dbw = disk_file ? disk_bw(disk_file, 256ull << 20) : temp_disk_bw();
	if (dbw > 0)
		p->flash_bw = dbw;
	p->measured = true;
	if (!p->desc[0])
		snprintf(p->desc, sizeof(p->desc),
			 "this machine, measured now");
	return 0;
}
