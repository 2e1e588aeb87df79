/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libedgeq kernels: the public measurements (memory read bandwidth and a
 * per-type matvec microbenchmark) that `edgeq run` uses for its roofline
 * figure and `edgeq bench` and tools/kbench print. The kernels themselves
 * are internal (userspace/lib/kernels/kernels.h).
 */
#ifndef EDGEQ_KERNELS_PUBLIC_H
#define EDGEQ_KERNELS_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Memory read bandwidth: @nthreads threads (0 = one per online CPU) stream
 * through a buffer of @bytes (0 = 8 x the last-level cache, at least
 * 256 MiB, at most 1 GiB, and at most a quarter of the memory the process
 * may still take, its cgroup's limit included), best of @runs passes
 * (0 = 3). *gbps is in 10^9 bytes per second. Returns 0, -EINVAL, -ENOMEM
 * (also when fewer than 64 MiB could be used without risking the OOM).
 */
int edgeq_membw_measure(int nthreads, size_t bytes, int runs, double *gbps);

struct edgeq_matvec_bench {
	double gbps;	      /* weight bytes streamed per second (10^9) */
	double us_per_matvec; /* median microseconds for one matvec */
	size_t weight_bytes;  /* bytes of one matrix */
	const char *kernels;  /* the ops table used: "avx2", "neon", "scalar" */
};

/*
 * Matvec microbenchmark of a weight type ("Q4_0", "Q4_K", ...): enough
 * rows x cols matrices to fill @footprint bytes (0 = 1 GiB) are cycled so
 * each matvec reads its weights from memory, as in decoding; @nthreads
 * threads (pinned pool), @iters matvecs (0 = one pass over all matrices,
 * at least 16). Returns 0, -EINVAL (type unknown or unsupported, bad
 * shape; message in @err), -ENOMEM.
 */
int edgeq_kernels_bench_matvec(const char *type, int64_t rows, int64_t cols,
			       int nthreads, size_t footprint, int iters,
			       struct edgeq_matvec_bench *out,
			       struct edgeq_error *err);
/* The same on the 16-row packed layout the decoder repacks into at load
 * (-EOPNOTSUPP where the selected kernels have none for @type). */
int edgeq_kernels_bench_matvec_packed(const char *type, int64_t rows,
				      int64_t cols, int nthreads,
				      size_t footprint, int iters,
				      struct edgeq_matvec_bench *out,
				      struct edgeq_error *err);
/*
 * The packed layout (@packed) or the file's with @nb tokens a product (a
 * prompt's token tiles; @nb 1 is the matvec above): one product reads each
 * weight byte once for all @nb tokens. tools/kcount counts the
 * instructions it executes per weight byte.
 */
int edgeq_kernels_bench_tokens(const char *type, int64_t rows, int64_t cols,
			       int64_t nb, bool packed, int nthreads,
			       size_t footprint, int iters,
			       struct edgeq_matvec_bench *out,
			       struct edgeq_error *err);

struct edgeq_matmul_bench {
	double gflops;	      /* 2 x rows x cols x tokens per second (10^9) */
	double us_per_matmul; /* median microseconds for one matmul */
	double dispatch_us;   /* median microseconds of an empty pool run */
	const char *kernels;  /* the ops table used */
};

/*
 * Matmul microbenchmark (the prompt's kernel): one rows x cols matrix of
 * @type, small enough to stay in cache, times @nb tokens, @iters times
 * (0 = 64) on @nthreads threads (pinned pool): the arithmetic rate, not
 * the memory's. Also the fixed cost of one parallel op (an empty run of
 * the pool). Returns 0, -EINVAL (type or shape; message in @err),
 * -ENOMEM.
 */
int edgeq_kernels_bench_matmul(const char *type, int64_t rows, int64_t cols,
			       int64_t nb, int nthreads, int iters,
			       struct edgeq_matmul_bench *out,
			       struct edgeq_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_KERNELS_PUBLIC_H */
