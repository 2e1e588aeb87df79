// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory read bandwidth: the roofline's denominator. Pinned threads stream
 * through disjoint slices of a buffer several times larger than the
 * last-level cache; the best of a few passes is reported, since anything
 * else running on the machine only makes a pass slower.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/edgeq.h>
#include <edgeq/kernels.h>
#include <edgeq/stream.h>

#include "kernels/kernels.h"

struct bw_job {
	const unsigned char *buf;
	size_t bytes;
	int fill; /* 1: write the slice (first touch), 0: read */
	uint64_t (*read)(const void *p, size_t bytes);
	uint64_t sink[EDGEQ_THREADPOOL_MAX];
};

static void bw_task(void *arg, int ith, int nth)
{
	struct bw_job *j = arg;
	size_t per = j->bytes / (size_t)nth;
	const unsigned char *p = j->buf + per * (size_t)ith;

	if (j->fill)
		memset((void *)p, 0x5a, per);
	else
		j->sink[ith] = j->read(p, per); /* keeps the loads alive */
}

/* Below this a pass is too short, or too near the caches, to mean DRAM. */
#define MEMBW_MIN_BYTES (64u << 20)

/*
 * Eight times the last-level cache, 256 MiB to 1 GiB, but never more than a
 * quarter of what the process may still take (MemAvailable, and its memory
 * cgroup's limit less its usage): the measurement is a diagnostic and must
 * not be what pushes a process in a tight cgroup into the OOM killer.
 * 0 when even MEMBW_MIN_BYTES would not fit.
 */
static size_t default_bytes(void)
{
	long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	struct edgeq_mem_info mi;
	size_t b;

	if (llc <= 0)
		llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
	b = llc > 0 ? (size_t)llc * 8 : 0;
	if (b < (256u << 20))
		b = 256u << 20;
	if (b > (1u << 30))
		b = 1u << 30;
	if (!edgeq_mem_probe(NULL, &mi) && mi.available / 4 < b)
		b = (size_t)(mi.available / 4);
	return b < MEMBW_MIN_BYTES ? 0 : b;
}

int edgeq_membw_measure(int nthreads, size_t bytes, int runs, double *gbps)
{
	struct edgeq_threadpool *tp = NULL;
	struct bw_job *j;
	double best = 0;
	void *buf;
	int ret;

	if (nthreads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n < 1 ? 1 : n > 64 ? 64 : (int)n;
	}
	if (nthreads < 0 || nthreads > EDGEQ_THREADPOOL_MAX || runs < 0 ||
	    !gbps)
		return -EINVAL;
	if (!bytes)
		bytes = default_bytes();
	if (!bytes)
		return -ENOMEM; /* no room to measure without risking the OOM */
	if (!runs)
		runs = 3;
	bytes &= ~(size_t)(4096 * (size_t)nthreads - 1);
	if (bytes < 4096 * (size_t)nthreads)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		free(j);
		return -ENOMEM;
	}
	madvise(buf, bytes, MADV_HUGEPAGE);
	ret = edgeq_threadpool_new(nthreads, 0, &tp, NULL);
	if (ret)
		goto out;
	j->buf = buf;
	j->bytes = bytes;
	j->read = edgeq_kernels_select()->stream_read;
	j->fill = 1;
	edgeq_threadpool_run(tp, bw_task, j); /* first touch, by each thread */
	j->fill = 0;
	for (int r = 0; r < runs; r++) {
		uint64_t t0 = edgeq_now_ns(), dt;

		edgeq_threadpool_run(tp, bw_task, j);
		dt = edgeq_now_ns() - t0;
		if (dt && (double)bytes / (double)dt > best)
			best = (double)bytes / (double)dt; /* bytes/ns = GB/s */
	}
	*gbps = best;
out:
	edgeq_threadpool_free(tp);
	munmap(buf, bytes);
	free(j);
	return ret;
}
