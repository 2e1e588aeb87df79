// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernels' thread pool: every job runs once per thread, back to back and
 * after the workers went to sleep; parallel matvec is bit-identical to the
 * single-threaded one for any thread count; matmul equals repeated matvec;
 * the matvec benchmark times either layout and refuses what it cannot.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <edgeq/edgeq.h>
#include <edgeq/kernels.h>

#include "kernels/kernels.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static float rnd_normal(void)
{
	float s = 0;

	for (int i = 0; i < 4; i++)
		s += (float)((rnd() >> 40) * (1.0 / (1 << 24))) - 0.5f;
	return s * 1.7f;
}

struct count_job {
	_Atomic int calls[16];
	_Atomic int total;
	int nth_seen;
};

static void count_task(void *arg, int ith, int nth)
{
	struct count_job *j = arg;

	atomic_fetch_add(&j->calls[ith], 1);
	atomic_fetch_add(&j->total, 1);
	j->nth_seen = nth;
}

static void test_pool_runs_each_thread_once(void **state)
{
	for (int n = 1; n <= 4; n++) {
		struct edgeq_threadpool *tp;
		struct count_job j;
		int rounds = getenv("EDGEQ_TEST_QEMU") ? 100 : 2000;

		assert_int_equal(edgeq_threadpool_new(n, 0, &tp, NULL), 0);
		assert_int_equal(edgeq_threadpool_size(tp), n);
		memset(&j, 0, sizeof(j));
		for (int r = 0; r < rounds; r++) {
			edgeq_threadpool_run(tp, count_task, &j);
			/* each round completes before run returns */
			assert_int_equal(atomic_load(&j.total), (r + 1) * n);
		}
		for (int i = 0; i < n; i++)
			assert_int_equal(atomic_load(&j.calls[i]), rounds);
		assert_int_equal(j.nth_seen, n);
		edgeq_threadpool_free(tp);
	}
}

/* Idle gaps longer than the spin budget: workers sleep on the futex and
 * must still wake for the next job. */
static void test_pool_wakes_sleepers(void **state)
{
	struct edgeq_threadpool *tp;
	struct count_job j;
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	assert_int_equal(
		edgeq_threadpool_new(3, EDGEQ_THREADPOOL_NO_PIN, &tp, NULL), 0);
	assert_int_equal(edgeq_threadpool_pinned(tp), 0);
	memset(&j, 0, sizeof(j));
	for (int r = 0; r < 20; r++) {
		nanosleep(&ts, NULL);
		edgeq_threadpool_run(tp, count_task, &j);
		assert_int_equal(atomic_load(&j.total), (r + 1) * 3);
	}
	edgeq_threadpool_free(tp);
	/* a NULL pool runs inline; free accepts NULL */
	memset(&j, 0, sizeof(j));
	edgeq_threadpool_run(NULL, count_task, &j);
	assert_int_equal(atomic_load(&j.total), 1);
	edgeq_threadpool_free(NULL);
}

struct bind_probe {
	struct edgeq_threadpool *tp;
	int before, after; /* CPUs the thread may run on */
};

static int allowed_cpus(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	return CPU_COUNT(&set);
}

static void *bind_thread(void *arg)
{
	struct bind_probe *b = arg;
	struct count_job j;

	memset(&j, 0, sizeof(j));
	b->before = allowed_cpus();
	edgeq_threadpool_run(b->tp, count_task, &j);
	b->after = allowed_cpus();
	return NULL;
}

/* probe on a thread of its own, so the test runner's thread stays free */
static struct bind_probe probe_bind(struct edgeq_threadpool *tp)
{
	struct bind_probe b = { tp, 0, 0 };
	size_t sz = 1u << 20;
	pthread_attr_t attr;
	pthread_t th;
	void *stk;

	/* a stack of our own, as the pool's workers have: qemu-user 7.2 (the
	 * cross tests) hangs in pthread_create when glibc maps it */
	stk = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	assert_true(stk != MAP_FAILED);
	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstack(&attr, stk, sz), 0);
	assert_int_equal(pthread_create(&th, &attr, bind_thread, &b), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	munmap(stk, sz);
	return b;
}

/*
 * A thread that runs a job on a pinned pool with a CPU to spare is bound
 * to one CPU (thread 0's), every such thread, not only the pool's creator;
 * a pool that takes every CPU leaves its callers free, and so does NO_PIN.
 */
static void test_pool_binds_callers(void **state)
{
	struct edgeq_threadpool *tp;
	struct bind_probe b;
	int ncpu = allowed_cpus();

	assert_int_equal(
		edgeq_threadpool_new(2, EDGEQ_THREADPOOL_NO_PIN, &tp, NULL), 0);
	b = probe_bind(tp);
	assert_true(b.before >= 1);
	assert_int_equal(b.after, b.before);
	edgeq_threadpool_free(tp);

	if (ncpu < 2 || ncpu > EDGEQ_THREADPOOL_MAX)
		skip();
	/* every CPU taken: the caller stays free, the workers are pinned */
	assert_int_equal(edgeq_threadpool_new(ncpu, 0, &tp, NULL), 0);
	if (!edgeq_threadpool_pinned(tp)) {
		edgeq_threadpool_free(tp);
		skip(); /* hwloc found no topology here */
	}
	assert_int_equal(edgeq_threadpool_pinned(tp), ncpu - 1);
	b = probe_bind(tp);
	assert_int_equal(b.after, b.before);
	edgeq_threadpool_free(tp);
	if (ncpu < 3) {
		print_message(
			"2 CPUs: no pool smaller than the machine to bind\n");
		return;
	}
	assert_int_equal(edgeq_threadpool_new(2, 0, &tp, NULL), 0);
	assert_int_equal(edgeq_threadpool_pinned(tp), 2);
	for (int i = 0; i < 2; i++) {
		b = probe_bind(tp);
		assert_int_equal(b.after, 1);
	}
	edgeq_threadpool_free(tp);
}

static void test_pool_rejects(void **state)
{
	struct edgeq_threadpool *tp = NULL;
	struct edgeq_error err;

	assert_int_equal(edgeq_threadpool_new(0, 0, &tp, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "thread count"));
	assert_int_equal(edgeq_threadpool_new(EDGEQ_THREADPOOL_MAX + 1, 0, &tp,
					      &err),
			 -EINVAL);
	assert_null(tp);
}

static const enum edgeq_type types[] = {
	EDGEQ_TYPE_F32,	 EDGEQ_TYPE_F16,    EDGEQ_TYPE_BF16,   EDGEQ_TYPE_Q8_0,
	EDGEQ_TYPE_Q4_0, EDGEQ_TYPE_Q4_K,   EDGEQ_TYPE_Q6_K,   EDGEQ_TYPE_Q5_K,
	EDGEQ_TYPE_Q3_K, EDGEQ_TYPE_Q2_K,   EDGEQ_TYPE_Q4_1,   EDGEQ_TYPE_Q5_0,
	EDGEQ_TYPE_Q5_1, EDGEQ_TYPE_IQ4_NL, EDGEQ_TYPE_IQ4_XS,
};

/* A weight matrix quantized from random floats, and nb activation rows. */
static void make_problem(enum edgeq_type t, int64_t n, int64_t rows, int64_t nb,
			 void **w, void **a, size_t *as)
{
	const struct edgeq_type_traits *tt = edgeq_type_traits(t);
	size_t rs = edgeq_row_size(t, n);
	float *x = malloc(n * sizeof(float));

	*as = edgeq_row_size(tt->vec_dot_type, n);
	*w = malloc(rs * rows);
	*a = malloc(*as * nb);
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < n; j++)
			x[j] = rnd_normal();
		tt->from_float(x, (char *)*w + r * rs, n);
	}
	for (int64_t b = 0; b < nb; b++) {
		for (int64_t j = 0; j < n; j++)
			x[j] = rnd_normal();
		edgeq_quantize_act_ref(tt->vec_dot_type, x,
				       (char *)*a + b * *as, n);
	}
	free(x);
}

static void test_par_matvec_any_thread_count(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	static const int64_t row_counts[] = { 1, 15, 37, 300 };
	struct edgeq_threadpool *tp[4] = { NULL };

	for (int n = 2; n <= 4; n++)
		assert_int_equal(edgeq_threadpool_new(n, 0, &tp[n - 1], NULL),
				 0);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		for (size_t ri = 0;
		     ri < sizeof(row_counts) / sizeof(row_counts[0]); ri++) {
			int64_t n = 512, rows = row_counts[ri];
			void *w, *a;
			size_t as;
			float *y1 = malloc(rows * sizeof(float)),
			      *yn = malloc(rows * sizeof(float));

			make_problem(types[ti], n, rows, 1, &w, &a, &as);
			edgeq_par_matvec(NULL, ops, types[ti], w, n, rows, a,
					 y1);
			for (int64_t r = 0; r < rows; r++)
				assert_true(
					y1[r] ==
					ops->vec_dot[types[ti]](
						n,
						(char *)w +
							r * edgeq_row_size(
								    types[ti],
								    n),
						a));
			for (int t = 2; t <= 4; t++) {
				memset(yn, 0xff, rows * sizeof(float));
				edgeq_par_matvec(tp[t - 1], ops, types[ti], w,
						 n, rows, a, yn);
				assert_memory_equal(y1, yn,
						    rows * sizeof(float));
			}
			free(w);
			free(a);
			free(y1);
			free(yn);
		}
	}
	for (int n = 2; n <= 4; n++)
		edgeq_threadpool_free(tp[n - 1]);
}

static void test_par_matmul_equals_matvec(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	struct edgeq_threadpool *tp;

	assert_int_equal(edgeq_threadpool_new(2, 0, &tp, NULL), 0);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		/* 70 tokens spans two token blocks; 45 rows leaves partial tiles */
		int64_t n = 256 * 3, rows = 45, nb = 70, ldy = rows + 3;
		void *w, *a;
		size_t as;
		float *ym = malloc(nb * ldy * sizeof(float)),
		      *yv = malloc(rows * sizeof(float));

		make_problem(types[ti], n, rows, nb, &w, &a, &as);
		edgeq_par_matmul(tp, ops, types[ti], w, n, rows, a, as, nb, ym,
				 ldy);
		for (int64_t b = 0; b < nb; b++) {
			edgeq_par_matvec(NULL, ops, types[ti], w, n, rows,
					 (char *)a + b * as, yv);
			assert_memory_equal(ym + b * ldy, yv,
					    rows * sizeof(float));
		}
		/* and the scalar oracle agrees bit for bit */
		edgeq_par_matmul(NULL, edgeq_kernels_scalar(), types[ti], w, n,
				 rows, a, as, nb, ym, ldy);
		for (int64_t b = 0; b < nb; b++) {
			edgeq_par_matvec(tp, ops, types[ti], w, n, rows,
					 (char *)a + b * as, yv);
			assert_memory_equal(ym + b * ldy, yv,
					    rows * sizeof(float));
		}
		free(w);
		free(a);
		free(ym);
		free(yv);
	}
	edgeq_threadpool_free(tp);
}

/* ---- the chunks parallel matvec hands out ---- */

#define MAX_CHUNKS 256
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t chunk_r0[MAX_CHUNKS], chunk_r1[MAX_CHUNKS];
static int n_chunks;

static void rec_matvec(enum edgeq_type type, const void *w, int64_t n,
		       int64_t row0, int64_t row1, const void *a, float *y)
{
	pthread_mutex_lock(&chunk_lock);
	if (n_chunks < MAX_CHUNKS) {
		chunk_r0[n_chunks] = row0;
		chunk_r1[n_chunks] = row1;
	}
	n_chunks++;
	pthread_mutex_unlock(&chunk_lock);
	for (int64_t r = row0; r < row1; r++)
		y[r] += 1; /* each row once: ends at exactly 1 */
}

static int cmp_r0(const void *a, const void *b)
{
	int64_t x = chunk_r0[*(const int *)a], z = chunk_r0[*(const int *)b];

	return x < z ? -1 : x > z;
}

/*
 * Guided chunks: every row exactly once, chunks start at multiples of 16
 * (the packed row groups), shrink as the rows run out (the first is a
 * quarter of the rows at 2 threads, the last ones 16 rows), so threads of
 * different speeds finish together; one thread takes the rows in one call.
 */
static void test_par_chunks_guided(void **state)
{
	static const int64_t shapes[] = { 2048, 5632, 256, 17, 16, 1000 };
	struct edgeq_kernel_ops rec = { .name = "record",
					.matvec = rec_matvec };
	struct edgeq_threadpool *tp;
	float *y = malloc(6000 * sizeof(float));
	int order[MAX_CHUNKS];

	(void)state;
	assert_non_null(y);
	for (int nth = 1; nth <= 3; nth++) {
		assert_int_equal(edgeq_threadpool_new(nth, 0, &tp, NULL), 0);
		for (size_t si = 0; si < sizeof(shapes) / sizeof(*shapes);
		     si++) {
			int64_t rows = shapes[si], prev = rows;

			memset(y, 0, 6000 * sizeof(float));
			n_chunks = 0;
			edgeq_par_matvec(tp, &rec, EDGEQ_TYPE_F32, NULL, 32,
					 rows, NULL, y);
			assert_in_range(n_chunks, 1, MAX_CHUNKS);
			for (int64_t r = 0; r < rows; r++)
				assert_true(y[r] == 1.0f);
			if (nth == 1) {
				assert_int_equal(n_chunks, 1);
				continue;
			}
			for (int i = 0; i < n_chunks; i++)
				order[i] = i;
			qsort(order, (size_t)n_chunks, sizeof(int), cmp_r0);
			assert_int_equal(chunk_r0[order[0]], 0);
			assert_int_equal(chunk_r1[order[n_chunks - 1]], rows);
			for (int i = 0; i < n_chunks; i++) {
				int64_t r0 = chunk_r0[order[i]],
					r1 = chunk_r1[order[i]];

				assert_int_equal(r0 % 16, 0);
				if (i)
					assert_int_equal(
						r0, chunk_r1[order[i - 1]]);
				/* a share of what is left, never growing */
				assert_true(r1 - r0 <= prev);
				assert_true(r1 - r0 <=
						    (((rows - r0) / (2 * nth) +
						      15) &
						     ~(int64_t)15) ||
					    r1 - r0 <= 16);
				prev = r1 - r0;
			}
			if (rows >= 2048) {
				/* big first, 16-row tail */
				assert_true(chunk_r1[order[0]] >=
					    rows / (2 * nth) - 16);
				assert_true(prev <= 16);
			}
		}
		edgeq_threadpool_free(tp);
	}
	free(y);
}

/*
 * Several matrices in one dispatch: each matrix's rows exactly once, in
 * chunks that start at a multiple of 16 of their own matrix and never
 * reach into the next (rec_matvec adds 1 to each row of the y it is given,
 * so a chunk crossing over would count rows of the wrong matrix or past
 * its end); one thread takes each matrix in one call.
 */
static void test_par_linear_n_chunks(void **state)
{
	static const int64_t rows[4] = { 2048, 17, 512, 300 };
	struct edgeq_kernel_ops rec = { .name = "record",
					.matvec = rec_matvec };
	struct edgeq_par_mat m[4];
	struct edgeq_threadpool *tp;
	float *y[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		/* a guard row past each end */
		y[i] = calloc((size_t)rows[i] + 1, sizeof(float));
		assert_non_null(y[i]);
		m[i] = (struct edgeq_par_mat){ .type = EDGEQ_TYPE_F32,
					       .rows = rows[i],
					       .y = y[i] };
	}
	for (int nth = 1; nth <= 3; nth++) {
		assert_int_equal(edgeq_threadpool_new(nth, 0, &tp, NULL), 0);
		for (int i = 0; i < 4; i++)
			memset(y[i], 0, ((size_t)rows[i] + 1) * sizeof(float));
		n_chunks = 0;
		edgeq_par_linear_n(tp, &rec, 4, m, 32, NULL, 0, 1);
		for (int i = 0; i < 4; i++) {
			for (int64_t r = 0; r < rows[i]; r++)
				assert_true(y[i][r] == 1.0f);
			assert_true(y[i][rows[i]] == 0.0f);
		}
		if (nth == 1)
			assert_int_equal(n_chunks, 4);
		else
			assert_in_range(n_chunks, 5, MAX_CHUNKS);
		for (int c = 0; c < n_chunks && c < MAX_CHUNKS; c++)
			assert_int_equal(chunk_r0[c] % 16, 0);
		edgeq_threadpool_free(tp);
	}
	for (int i = 0; i < 4; i++)
		free(y[i]);
}

/*
 * The real kernels through one dispatch: a Q4_0 and a Q8_0 matrix (both
 * take Q8_0 activations), in the file layout and packed where the table
 * packs them, for one token and for 70: every output is the single
 * matrix's, bit for bit.
 */
static void test_par_linear_n_equals_each(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	static const enum edgeq_type ty[2] = { EDGEQ_TYPE_Q4_0,
					       EDGEQ_TYPE_Q8_0 };
	static const int64_t rows[2] = { 45, 100 };
	const int64_t n = 512, nb = 70;
	struct edgeq_threadpool *tp;
	void *w[2], *pw[2] = { NULL, NULL }, *a[2];
	size_t as;
	float *ya[2], *yb[2];

	(void)state;
	assert_int_equal(edgeq_threadpool_new(2, 0, &tp, NULL), 0);
	for (int i = 0; i < 2; i++) {
		make_problem(ty[i], n, rows[i], nb, &w[i], &a[i], &as);
		ya[i] = malloc((size_t)(rows[i] * nb) * sizeof(float));
		yb[i] = malloc((size_t)(rows[i] * nb) * sizeof(float));
		assert_true(ya[i] && yb[i]);
		if (ops->pack16[ty[i]]) {
			pw[i] = aligned_alloc(
				64, (edgeq_pack16_size(ty[i], rows[i], n) +
				     63) & ~(size_t)63);
			assert_non_null(pw[i]);
			edgeq_pack16(ty[i], w[i], rows[i], n, pw[i]);
		}
	}
	for (int packed = 0; packed < 2; packed++)
		for (int64_t k = 1; k <= nb; k += nb - 1) {
			struct edgeq_par_mat m[2];

			for (int i = 0; i < 2; i++) {
				bool p = packed && pw[i];

				m[i] = (struct edgeq_par_mat){ .type = ty[i],
							       .w = p ? pw[i] :
									w[i],
							       .packed = p,
							       .rows = rows[i],
							       .y = ya[i],
							       .ldy = rows[i] };
				memset(ya[i], 0xff,
				       (size_t)(rows[i] * nb) * sizeof(float));
				memset(yb[i], 0,
				       (size_t)(rows[i] * nb) * sizeof(float));
			}
			/* the activations are a[0]'s for both */
			edgeq_par_linear_n(tp, ops, 2, m, n, a[0], as, k);
			for (int i = 0; i < 2; i++) {
				m[i].y = yb[i];
				edgeq_par_linear_n(NULL, ops, 1, &m[i], n, a[0],
						   as, k);
				assert_memory_equal(
					ya[i], yb[i],
					(size_t)(rows[i] * (k == 1 ? 1 : k)) *
						sizeof(float));
			}
		}
	for (int i = 0; i < 2; i++) {
		free(w[i]);
		free(pw[i]);
		free(a[i]);
		free(ya[i]);
		free(yb[i]);
	}
	edgeq_threadpool_free(tp);
}

/*
 * kbench's numbers: the file layout streams rows x row size per call, the
 * packed one the 16-row copy (partial groups padded); a type or table
 * without that layout and a shape that is not whole blocks are refused.
 */
static void test_bench_matvec_layouts(void **state)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	static const enum edgeq_type bench_types[] = { EDGEQ_TYPE_Q4_0,
						       EDGEQ_TYPE_Q4_K };
	struct edgeq_matvec_bench b;
	struct edgeq_error err;
	int ret;

	(void)state;
	for (size_t i = 0; i < sizeof(bench_types) / sizeof(bench_types[0]);
	     i++) {
		enum edgeq_type t = bench_types[i];
		const char *name = edgeq_type_name(t);

		memset(&err, 0, sizeof(err));
		assert_int_equal(edgeq_kernels_bench_matvec(name, 40, 512, 2,
							    1u << 20, 3, &b,
							    &err),
				 0);
		assert_int_equal(b.weight_bytes, 40 * edgeq_row_size(t, 512));
		assert_true(b.gbps > 0 && b.us_per_matvec > 0);
		ret = edgeq_kernels_bench_matvec_packed(name, 40, 512, 2,
							1u << 20, 3, &b, &err);
		if (!ops->pack16[t]) {
			assert_int_equal(ret, -EOPNOTSUPP);
			assert_non_null(strstr(err.msg, name));
			continue;
		}
		assert_int_equal(ret, 0);
		/* 40 rows are 3 groups of 16 */
		assert_int_equal(b.weight_bytes, edgeq_pack16_size(t, 40, 512));
		assert_true(b.weight_bytes >= 48 * edgeq_row_size(t, 512));
		assert_true(b.gbps > 0 && b.us_per_matvec > 0);
	}
	memset(&err, 0, sizeof(err));
	assert_int_equal(edgeq_kernels_bench_matvec_packed(
				 "F16", 32, 512, 1, 1u << 20, 2, &b, &err),
			 -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "F16"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(edgeq_kernels_bench_matvec_packed(
				 "Q4_K", 32, 300, 1, 1u << 20, 2, &b, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "300"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_runs_each_thread_once),
		cmocka_unit_test(test_pool_wakes_sleepers),
		cmocka_unit_test(test_pool_binds_callers),
		cmocka_unit_test(test_pool_rejects),
		cmocka_unit_test(test_par_matvec_any_thread_count),
		cmocka_unit_test(test_par_matmul_equals_matvec),
		cmocka_unit_test(test_par_chunks_guided),
		cmocka_unit_test(test_par_linear_n_chunks),
		cmocka_unit_test(test_par_linear_n_equals_each),
		cmocka_unit_test(test_bench_matvec_layouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
