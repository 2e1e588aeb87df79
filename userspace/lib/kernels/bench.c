// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-type matvec microbenchmark: weight-streaming GB/s of the selected
 * kernels, to compare with edgeq_membw_measure(). Matrices are cycled over
 * a footprint larger than the caches so each matvec reads from memory, as
 * the decoder does for every layer of every token.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <edgeq/kernels.h>

#include "kernels/kernels.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n timings (sorts them). */
static double median_ns(uint64_t *times, int n)
{
	qsort(times, (size_t)n, sizeof(*times), cmp_u64);
	return (double)times[n / 2];
}

/* @type by name, or -EINVAL saying why. */
static int bench_type(const char *type, enum edgeq_type *t,
		      struct edgeq_error *err)
{
	int ret = edgeq_type_from_name(type, t);

	if (ret)
		return edgeq_error_set(err, EINVAL, "type %s: %s", type,
				       ret == -ENOENT ? "unknown" :
							"not supported");
	return 0;
}

struct fill_job {
	unsigned char *w;
	size_t bytes;
	const struct edgeq_type_traits *tt;
	size_t rs;
};

/* Random bytes with sane fp16 scales: contents do not change the speed. */
static void fill_task(void *arg, int ith, int nth)
{
	struct fill_job *f = arg;
	size_t per = f->bytes / (size_t)nth, off = per * (size_t)ith;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(ith + 1);

	if (ith == nth - 1)
		per = f->bytes - off;
	for (size_t i = 0; i < per; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		f->w[off + i] = (unsigned char)(s >> 32) &
				0x3b; /* keeps fp16 finite */
	}
}

/*
 * Products of one matrix by @nb activation rows (1: decode's matvec, more:
 * a prompt's matmul, timed per product), in either layout: the file's
 * rows, or (@packed) the 16-row groups the decoder repacks into at load,
 * each matrix packed from a filled one.
 */
static int bench_matvec(const char *type, int64_t rows, int64_t cols,
			int64_t nb, int nthreads, size_t footprint, int iters,
			bool packed, struct edgeq_matvec_bench *out,
			struct edgeq_error *err)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	const struct edgeq_type_traits *tt;
	struct edgeq_threadpool *tp = NULL;
	struct fill_job fj;
	enum edgeq_type t;
	size_t rs, mbytes, as, nmat;
	unsigned char *w = NULL, *pw = NULL;
	void *a = NULL;
	float *x = NULL, *y = NULL;
	uint64_t *times = NULL;
	size_t psz = 0;
	double med;
	int ret;

	ret = bench_type(type, &t, err);
	if (ret)
		return ret;
	tt = edgeq_type_traits(t);
	rs = edgeq_row_size(t, cols);
	if (!tt->weight || rows < 1 || !rs || rows > (1 << 24) || nb < 1 ||
	    nb > 512)
		return edgeq_error_set(err, EINVAL,
				       "bad shape %lld x %lld x %lld for %s",
				       (long long)rows, (long long)cols,
				       (long long)nb, tt->name);
	if (packed && !ops->pack16[t])
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"the %s kernels have no packed %s layout", ops->name,
			tt->name);
	/* whole blocks (checked above): the packed size is never 0 */
	if (packed)
		psz = edgeq_pack16_size(t, rows, cols);
	if (!footprint)
		footprint = 1024u << 20;
	mbytes = rs * (size_t)rows;
	nmat = footprint / mbytes ? footprint / mbytes : 1;
	if (!iters)
		iters = (int)nmat < 16 ? 16 : (int)nmat;
	as = edgeq_row_size(tt->vec_dot_type, cols);
	w = mmap(NULL, nmat * mbytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED)
		return edgeq_error_set(err, ENOMEM, "cannot map %zu bytes",
				       nmat * mbytes);
	madvise(w, nmat * mbytes, MADV_HUGEPAGE);
	a = malloc(as * (size_t)nb);
	x = malloc((size_t)cols * sizeof(float));
	y = malloc((size_t)(rows * nb) * sizeof(float));
	times = calloc((size_t)iters, sizeof(*times));
	if (!a || !x || !y || !times) {
		ret = edgeq_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	ret = edgeq_threadpool_new(nthreads, 0, &tp, err);
	if (ret)
		goto out;
	fj = (struct fill_job){ w, nmat * mbytes, tt, rs };
	edgeq_threadpool_run(tp, fill_task, &fj);
	if (packed) {
		pw = mmap(NULL, nmat * psz, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pw == MAP_FAILED) {
			pw = NULL;
			ret = edgeq_error_set(err, ENOMEM,
					      "cannot map %zu bytes",
					      nmat * psz);
			goto out;
		}
		madvise(pw, nmat * psz, MADV_HUGEPAGE);
		for (size_t i = 0; i < nmat; i++)
			edgeq_pack16(t, w + i * mbytes, rows, cols,
				     pw + i * psz);
		munmap(w, nmat * mbytes);
		w = NULL;
	}
	for (int64_t b = 0; b < nb; b++) {
		for (int64_t j = 0; j < cols; j++)
			x[j] = (float)(((j + b) * 7919) % 257) / 128.0f - 1.0f;
		ops->quantize_act(tt->vec_dot_type, x,
				  (char *)a + (size_t)b * as, cols);
	}
	for (int i = 0; i < iters; i++) {
		uint64_t t0 = edgeq_now_ns();

		if (pw)
			edgeq_par_matmul_packed(
				tp, ops, t, pw + (size_t)(i % (int)nmat) * psz,
				cols, rows, a, as, nb, y, rows);
		else if (nb > 1)
			edgeq_par_matmul(tp, ops, t,
					 w + (size_t)(i % (int)nmat) * mbytes,
					 cols, rows, a, as, nb, y, rows);
		else
			edgeq_par_matvec(tp, ops, t,
					 w + (size_t)(i % (int)nmat) * mbytes,
					 cols, rows, a, y);
		times[i] = edgeq_now_ns() - t0;
	}
	med = median_ns(times, iters);
	out->us_per_matvec = med / 1e3;
	/* the bytes the kernel streams: the packed copy is a little larger */
	out->gbps = (double)(pw ? psz : mbytes) / med;
	out->weight_bytes = pw ? psz : mbytes;
	out->kernels = ops->name;
out:
	edgeq_threadpool_free(tp);
	if (w)
		munmap(w, nmat * mbytes);
	if (pw)
		munmap(pw, nmat * psz);
	free(a);
	free(x);
	free(y);
	free(times);
	return ret;
}

int edgeq_kernels_bench_matvec(const char *type, int64_t rows, int64_t cols,
			       int nthreads, size_t footprint, int iters,
			       struct edgeq_matvec_bench *out,
			       struct edgeq_error *err)
{
	return bench_matvec(type, rows, cols, 1, nthreads, footprint, iters,
			    false, out, err);
}

int edgeq_kernels_bench_matvec_packed(const char *type, int64_t rows,
				      int64_t cols, int nthreads,
				      size_t footprint, int iters,
				      struct edgeq_matvec_bench *out,
				      struct edgeq_error *err)
{
	return bench_matvec(type, rows, cols, 1, nthreads, footprint, iters,
			    true, out, err);
}

int edgeq_kernels_bench_tokens(const char *type, int64_t rows, int64_t cols,
			       int64_t nb, bool packed, int nthreads,
			       size_t footprint, int iters,
			       struct edgeq_matvec_bench *out,
			       struct edgeq_error *err)
{
	return bench_matvec(type, rows, cols, nb, nthreads, footprint, iters,
			    packed, out, err);
}

static void empty_task(void *arg, int ith, int nth)
{
	(void)arg;
	(void)ith;
	(void)nth;
}

int edgeq_kernels_bench_matmul(const char *type, int64_t rows, int64_t cols,
			       int64_t nb, int nthreads, int iters,
			       struct edgeq_matmul_bench *out,
			       struct edgeq_error *err)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	const struct edgeq_type_traits *tt;
	struct edgeq_threadpool *tp = NULL;
	struct fill_job fj;
	enum edgeq_type t;
	size_t rs, as;
	unsigned char *w = NULL, *a = NULL;
	float *x = NULL, *y = NULL;
	uint64_t *times = NULL;
	double med;
	int ret;

	ret = bench_type(type, &t, err);
	if (ret)
		return ret;
	tt = edgeq_type_traits(t);
	rs = edgeq_row_size(t, cols);
	if (!tt->weight || rows < 1 || !rs || rows > (1 << 16) || nb < 1 ||
	    nb > 4096)
		return edgeq_error_set(err, EINVAL,
				       "bad shape %lld x %lld x %lld for %s",
				       (long long)rows, (long long)cols,
				       (long long)nb, tt->name);
	if (!iters)
		iters = 64;
	as = edgeq_row_size(tt->vec_dot_type, cols);
	w = malloc(rs * (size_t)rows);
	a = malloc(as * (size_t)nb);
	x = malloc((size_t)cols * sizeof(float));
	y = malloc((size_t)(rows * nb) * sizeof(float));
	times = calloc((size_t)iters, sizeof(*times));
	if (!w || !a || !x || !y || !times) {
		ret = edgeq_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	ret = edgeq_threadpool_new(nthreads, 0, &tp, err);
	if (ret)
		goto out;
	fj = (struct fill_job){ w, rs * (size_t)rows, tt, rs };
	edgeq_threadpool_run(tp, fill_task, &fj);
	for (int64_t b = 0; b < nb; b++) {
		for (int64_t j = 0; j < cols; j++)
			x[j] = (float)(((j + b) * 7919) % 257) / 128.0f - 1.0f;
		ops->quantize_act(tt->vec_dot_type, x, a + (size_t)b * as,
				  cols);
	}
	edgeq_par_matmul(tp, ops, t, w, cols, rows, a, as, nb, y, rows);
	for (int i = 0; i < iters; i++) {
		uint64_t t0 = edgeq_now_ns();

		edgeq_par_matmul(tp, ops, t, w, cols, rows, a, as, nb, y, rows);
		times[i] = edgeq_now_ns() - t0;
	}
	med = median_ns(times, iters);
	out->us_per_matmul = med / 1e3;
	out->gflops = 2.0 * (double)rows * (double)cols * (double)nb / med;
	for (int i = 0; i < iters; i++) {
		uint64_t t0 = edgeq_now_ns();

		edgeq_threadpool_run(tp, empty_task, NULL);
		times[i] = edgeq_now_ns() - t0;
	}
	out->dispatch_us = median_ns(times, iters) / 1e3;
	out->kernels = ops->name;
out:
	edgeq_threadpool_free(tp);
	free(w);
	free(a);
	free(x);
	free(y);
	free(times);
	return ret;
}
