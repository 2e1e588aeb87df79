// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Where the weight budget comes from: the memory cgroup this process is in
 * (v2 memory.max and memory.high, v1 memory.limit_in_bytes and the
 * hierarchical limit, on the whole path to the root) and MemAvailable.
 * Never MemFree: on unified-memory boards the page cache holds most of the
 * "used" memory and MemFree says the box is full when it is not.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <edgeq/stream.h>

#define NO_LIMIT UINT64_MAX
#define HUGE_LIMIT (1ull << 62) /* v1 writes "unlimited" as ~2^63 */

static int read_u64(const char *path, uint64_t *v)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	char *end;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	if (!strcmp(buf, "max")) {
		*v = NO_LIMIT;
		return 0;
	}
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EINVAL;
	if (*v >= HUGE_LIMIT)
		*v = NO_LIMIT;
	return 0;
}

/* "key value" files: meminfo (kB) and memory.stat (bytes). */
static int read_key(const char *path, const char *key, uint64_t *v)
{
	char line[256];
	size_t kl = strlen(key);
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long x;

		if (strncmp(line, key, kl) ||
		    (line[kl] != ' ' && line[kl] != ':'))
			continue;
		if (sscanf(line + kl + 1, " %llu", &x) == 1) {
			fclose(f);
			*v = x;
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * Mount point of the cgroup hierarchy: v2 ("cgroup2"), or the v1 one whose
 * super options list "memory". @mroot receives the hierarchy root the mount
 * shows (not "/" inside some containers).
 */
static int find_mount(const char *root, int version, char *mnt, size_t len,
		      char *mroot, size_t rlen)
{
	char path[PATH_MAX], line[1024];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char r[512], m[512], fstype[64], src[256], opts[512];
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", r, m) != 2)
			continue;
		if (sscanf(dash + 3, "%63s %255s %511s", fstype, src, opts) !=
		    3)
			continue;
		if (version == 2 && strcmp(fstype, "cgroup2"))
			continue;
		if (version == 1) {
			char *tok, *save = NULL;
			bool mem = false;

			if (strcmp(fstype, "cgroup"))
				continue;
			for (tok = strtok_r(opts, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				mem |= !strcmp(tok, "memory");
			if (!mem)
				continue;
		}
		snprintf(mnt, len, "%s%s", root, m);
		snprintf(mroot, rlen, "%s", r);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/* The cgroup path of this process for @version (1: the memory line). */
static int own_cgroup(const char *root, int version, char *cg, size_t len)
{
	char path[PATH_MAX], line[1024];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2;
		bool match = false;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		if (version == 2) {
			match = !strcmp(line, "0:") ||
				(c1 + 1 == c2 && !strncmp(line, "0", 1));
		} else {
			char *tok, *save = NULL;

			for (tok = strtok_r(c1 + 1, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				match |= !strcmp(tok, "memory");
		}
		if (match) {
			c2[1 + strcspn(c2 + 1, "\n")] = '\0';
			snprintf(cg, len, "%s", c2 + 1);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Join the mount, the cgroup path less the mount's root. */
static void cg_dir(char *out, size_t len, const char *mnt, const char *mroot,
		   const char *cg)
{
	size_t rl = strlen(mroot);

	if (strcmp(mroot, "/") && !strncmp(cg, mroot, rl))
		cg += rl;
	snprintf(out, len, "%s%s", mnt, cg);
	/* no trailing slash */
	rl = strlen(out);
	while (rl > 1 && out[rl - 1] == '/')
		out[--rl] = '\0';
}

static int probe_v1(const char *root, struct edgeq_mem_info *mi)
{
	char mnt[PATH_MAX], mroot[512], cg[512], dir[PATH_MAX],
		p[PATH_MAX + 64];
	uint64_t lim = NO_LIMIT, v, usage = 0, inact = 0;

	if (find_mount(root, 1, mnt, sizeof(mnt), mroot, sizeof(mroot)) ||
	    own_cgroup(root, 1, cg, sizeof(cg)))
		return -ENOENT;
	cg_dir(dir, sizeof(dir), mnt, mroot, cg);
	snprintf(p, sizeof(p), "%s/memory.limit_in_bytes", dir);
	if (read_u64(p, &lim))
		return -ENOENT;
	snprintf(p, sizeof(p), "%s/memory.stat", dir);
	if (!read_key(p, "hierarchical_memory_limit", &v))
		lim = min_u64(lim, v >= HUGE_LIMIT ? NO_LIMIT : v);
	if (!read_key(p, "total_inactive_file", &v) ||
	    !read_key(p, "inactive_file", &v))
		inact = v;
	snprintf(p, sizeof(p), "%s/memory.usage_in_bytes", dir);
	read_u64(p, &usage);
	mi->cg_version = 1;
	mi->cg_limit = lim;
	mi->cg_usage = usage > inact ? usage - inact : 0;
	copy_str(mi->cg_path, sizeof(mi->cg_path), dir);
	return 0;
}

static int probe_v2(const char *root, struct edgeq_mem_info *mi)
{
	char mnt[PATH_MAX], mroot[512], cg[512], dir[PATH_MAX],
		p[PATH_MAX + 64];
	uint64_t lim = NO_LIMIT, v, usage = 0, inact = 0;
	size_t ml;

	if (find_mount(root, 2, mnt, sizeof(mnt), mroot, sizeof(mroot)) ||
	    own_cgroup(root, 2, cg, sizeof(cg)))
		return -ENOENT;
	cg_dir(dir, sizeof(dir), mnt, mroot, cg);
	snprintf(p, sizeof(p), "%s/memory.current", dir);
	if (read_u64(p, &usage))
		return -ENOENT; /* no memory controller here */
	copy_str(mi->cg_path, sizeof(mi->cg_path), dir);
	snprintf(p, sizeof(p), "%s/memory.stat", dir);
	if (!read_key(p, "inactive_file", &v))
		inact = v;
	/* the tightest limit on the way up to the mount */
	ml = strlen(mnt);
	for (;;) {
		char *slash;

		snprintf(p, sizeof(p), "%s/memory.max", dir);
		if (!read_u64(p, &v))
			lim = min_u64(lim, v);
		snprintf(p, sizeof(p), "%s/memory.high", dir);
		if (!read_u64(p, &v))
			lim = min_u64(lim, v);
		if (strlen(dir) <= ml)
			break;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < ml)
			break;
		*slash = '\0';
	}
	mi->cg_version = 2;
	mi->cg_limit = lim;
	mi->cg_usage = usage > inact ? usage - inact : 0;
	return 0;
}

int edgeq_mem_probe(const char *root, struct edgeq_mem_info *mi)
{
	struct edgeq_mem_info m;
	char p[PATH_MAX];
	uint64_t kb;

	if (!root)
		root = "";
	memset(&m, 0, sizeof(m));
	m.cg_limit = NO_LIMIT;
	snprintf(p, sizeof(p), "%s/proc/meminfo", root);
	if (read_key(p, "MemAvailable", &kb))
		return -ENODATA; /* older than 3.14: refuse to guess from MemFree */
	m.mem_available = kb * 1024;
	/* v1 memory controller first: with both mounted, v1 holds memory */
	if (probe_v1(root, &m))
		probe_v2(root, &m);
	m.available = m.mem_available;
	if (m.cg_limit != NO_LIMIT)
		m.available = min_u64(
			m.available,
			m.cg_limit > m.cg_usage ? m.cg_limit - m.cg_usage : 0);
	*mi = m;
	return 0;
}

uint64_t edgeq_weights_default_budget(const struct edgeq_mem_info *mi,
				      uint64_t reserve)
{
	if (!reserve) {
		/* KV cache, activations, the runtime: an eighth, 64 MiB at least */
		reserve = mi->available / 8;
		if (reserve < (64ull << 20))
			reserve = 64ull << 20;
	}
	return mi->available > reserve ? mi->available - reserve : 0;
}

enum edgeq_weights_mode
edgeq_weights_choose_mode(uint64_t budget, uint64_t model_bytes, bool direct_ok)
{
	return edgeq_weights_choose(budget, model_bytes, direct_ok, -1, NULL,
				    0);
}

enum edgeq_weights_mode edgeq_weights_choose(uint64_t budget,
					     uint64_t model_bytes,
					     bool direct_ok, double cached,
					     char *why, size_t len)
{
	char dummy[8];
	double mib = 1048576.0;

	if (!why) {
		why = dummy;
		len = sizeof(dummy);
	}
	if (budget < model_bytes) {
		snprintf(why, len, "model %.0f MiB > budget %.0f MiB",
			 model_bytes / mib, budget / mib);
		return EDGEQ_WEIGHTS_STREAM;
	}
	if (!direct_ok) {
		snprintf(why, len, "fits; file cannot take O_DIRECT");
		return EDGEQ_WEIGHTS_MMAP;
	}
	if (cached >= EDGEQ_WEIGHTS_WARM) {
		snprintf(why, len, "fits; %.0f%% in page cache", cached * 100);
		return EDGEQ_WEIGHTS_MMAP;
	}
	if (cached >= 0)
		snprintf(why, len, "fits; cold (%.0f%% in page cache)",
			 cached * 100);
	else
		snprintf(why, len, "fits");
	return EDGEQ_WEIGHTS_PRELOAD;
}

int edgeq_file_cached_share(int fd, uint64_t off, uint64_t len,
			    unsigned int samples, double *share)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start, end, pages, hit = 0;
	struct stat sb;
	uint8_t *map;

	*share = 0;
	if (fstat(fd, &sb))
		return -errno;
	if (off >= (uint64_t)sb.st_size || !len)
		return 0;
	if (len > (uint64_t)sb.st_size - off)
		len = (uint64_t)sb.st_size - off;
	start = off / pg * pg;
	end = off + len;
	pages = (end - start + pg - 1) / pg;
	if (!samples || samples > pages)
		samples = (unsigned int)pages;
	/* a mapping costs no I/O; mincore only looks at the page cache */
	map = mmap(NULL, end - start, PROT_READ, MAP_SHARED, fd, (off_t)start);
	if (map == MAP_FAILED)
		return -errno;
	for (unsigned int i = 0; i < samples; i++) {
		uint64_t p = (uint64_t)i * pages / samples;
		unsigned char v = 0;

		if (!mincore(map + p * pg, (size_t)pg, &v) && (v & 1))
			hit++;
	}
	munmap(map, end - start);
	*share = (double)hit / samples;
	return 0;
}
