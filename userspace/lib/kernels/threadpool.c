// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernels' thread pool: persistent workers, pinned with hwloc
 * (performance cores first, one thread per core before SMT siblings), and a
 * dispatch cheap enough for the ~100+ parallel matvecs of one decoded token.
 *
 * A job is published by bumping a generation counter; workers spin on it
 * for a short while (back-to-back matvecs arrive within microseconds) and
 * then sleep on it with futex(2). Completion is a counter the caller spins
 * on, then sleeps on, the same way. Sleepers are counted so the common case
 * (everyone spinning) makes no system call.
 *
 * With pinning and a CPU to spare, the thread that runs a job is bound to
 * thread 0's CPU on its first job on the pool (each thread, once): a caller
 * left free shares a worker's CPU whenever the scheduler wakes it there,
 * and then the two spin against each other for a time slice (a 1 ms pass
 * took 5-11 ms, one in four session runs at 2 threads on 2 CPUs). When the
 * pool takes every CPU the caller stays free: bound, it would leave the
 * process's other threads (a server's HTTP threads, a session's consumers)
 * only what preemption gives them, and a fast model's tokens would reach a
 * stream in one piece.
 *
 * Parallel matvec/matmul hand out row chunks from an atomic counter,
 * guided (each a share of the rows left, down to 16): a fixed chunk of an
 * eighth of the rows left the caller waiting half a chunk per op on
 * average, 0.5-2 ms of a batched decode step at 2 threads. Every output row is computed whole by one thread with the same kernel, so
 * results never depend on the thread count or on which thread took which
 * chunk.
 */
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <edgeq/edgeq.h>

#include "kernels/kernels.h"

/* How long an idle thread spins before it sleeps. */
#define SPIN_NS 100000
/*
 * Worker stacks are mapped here and handed to pthread_attr_setstack():
 * qemu-user 7.2 (the cross tests' aarch64 runner) hangs in pthread_create
 * when glibc allocates the stack itself. 8 MiB like glibc's default, with a
 * guard page, reserved lazily.
 */
#define STACK_SIZE (8u << 20)
#define GUARD_SIZE 65536u

struct edgeq_threadpool {
	int n;			    /* threads, the caller included */
	pthread_t *th;		    /* th[1..n-1] are the workers */
	_Atomic uint32_t gen;	    /* futex word: job generation */
	_Atomic uint32_t pending;   /* futex word: workers still running */
	_Atomic int sleepers;	    /* workers asleep on gen */
	_Atomic int caller_waiting; /* caller asleep on pending */
	_Atomic bool stop;
	edgeq_task_fn fn; /* the current job */
	void *arg;
	bool timing;	   /* count the caller's wait (profiles) */
	uint64_t wait_ns;  /* caller's time waiting for the workers */
	int pinned;	   /* threads pinned to a CPU */
	uint64_t id;	   /* unique per pool: which one a caller is bound to */
	bool bind_callers; /* fewer threads than CPUs: callers are bound */
	void **stacks;	   /* per worker, mapped by us (see STACK_SIZE) */
	hwloc_topology_t topo; /* NULL when hwloc failed */
	hwloc_bitmap_t *sets;  /* per thread, NULL entries: unpinned */
};

static _Atomic uint64_t pool_ids;
/* the pool the calling thread is bound to (0: none) */
static __thread uint64_t bound_to;

/* edgeq_thread_scratch(): a thread's buffer, freed by the key's
 * destructor when the thread exits (a session's engine and pool threads
 * come and go with it; a plain __thread pointer leaked each one's) */
static __thread void *tl_scratch;
static __thread size_t tl_scratch_cap;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

static void scratch_free(void *p)
{
	free(p);
}

static void scratch_key_init(void)
{
	scratch_key_ok = !pthread_key_create(&scratch_key, scratch_free);
}

void *edgeq_thread_scratch(size_t n)
{
	void *p;

	if (n <= tl_scratch_cap)
		return tl_scratch;
	pthread_once(&scratch_once, scratch_key_init);
	if (!scratch_key_ok)
		return NULL;
	p = realloc(tl_scratch, n);
	if (!p)
		return NULL;
	if (pthread_setspecific(scratch_key, p)) {
		free(p);
		tl_scratch = NULL;
		tl_scratch_cap = 0;
		return NULL;
	}
	tl_scratch = p;
	tl_scratch_cap = n;
	return p;
}

struct worker_start {
	struct edgeq_threadpool *tp;
	int ith;
};

#if defined(__x86_64__)
static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}
#elif defined(__aarch64__)
static inline void cpu_relax(void)
{
	__asm__ volatile("yield" ::: "memory");
}
#else
static inline void cpu_relax(void)
{
	__asm__ volatile("" ::: "memory");
}
#endif

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/*
 * Spin while *addr == val (or, with until_zero, while *addr != 0) until the
 * spin budget is spent; true if the wait ended.
 */
static bool spin(_Atomic uint32_t *addr, uint32_t val, bool until_zero)
{
	uint64_t end = 0;

	for (unsigned i = 1;; i++) {
		uint32_t v = atomic_load_explicit(addr, memory_order_acquire);

		if (until_zero ? v == 0 : v != val)
			return true;
		cpu_relax();
		if (i % 256 == 0) {
			uint64_t now = edgeq_now_ns();

			if (!end)
				end = now + SPIN_NS;
			else if (now >= end)
				return false;
		}
	}
}

static void *worker_main(void *p)
{
	struct worker_start *ws = p;
	struct edgeq_threadpool *tp = ws->tp;
	int ith = ws->ith;
	uint32_t seen = 0;

	free(ws);
	if (tp->topo && tp->sets[ith])
		hwloc_set_cpubind(tp->topo, tp->sets[ith],
				  HWLOC_CPUBIND_THREAD);
	for (;;) {
		uint32_t g;

		if (!spin(&tp->gen, seen, false)) {
			atomic_fetch_add(&tp->sleepers, 1);
			while (atomic_load(&tp->gen) == seen)
				futex_wait(&tp->gen, seen);
			atomic_fetch_sub(&tp->sleepers, 1);
		}
		g = atomic_load_explicit(&tp->gen, memory_order_acquire);
		if (atomic_load(&tp->stop))
			return NULL;
		seen = g;
		tp->fn(tp->arg, ith, tp->n);
		if (atomic_fetch_sub(&tp->pending, 1) == 1 &&
		    atomic_load(&tp->caller_waiting))
			futex_wake(&tp->pending, 1);
	}
}

void edgeq_threadpool_run(struct edgeq_threadpool *tp, edgeq_task_fn fn,
			  void *arg)
{
	uint64_t t0;
	uint32_t p;

	if (!tp || tp->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	if (tp->bind_callers && bound_to != tp->id) {
		/* once per thread and pool; a failure leaves it free */
		bound_to = tp->id;
		if (tp->topo && tp->sets[0])
			hwloc_set_cpubind(tp->topo, tp->sets[0],
					  HWLOC_CPUBIND_THREAD);
	}
	tp->fn = fn;
	tp->arg = arg;
	atomic_store(&tp->pending, (uint32_t)(tp->n - 1));
	atomic_fetch_add(&tp->gen, 1);
	if (atomic_load(&tp->sleepers))
		futex_wake(&tp->gen, INT_MAX);
	fn(arg, 0, tp->n);
	t0 = tp->timing ? edgeq_now_ns() : 0;
	if (!spin(&tp->pending, 0, true)) {
		atomic_store(&tp->caller_waiting, 1);
		while ((p = atomic_load(&tp->pending)) != 0)
			futex_wait(&tp->pending, p);
		atomic_store(&tp->caller_waiting, 0);
	}
	if (tp->timing)
		tp->wait_ns += edgeq_now_ns() - t0;
}

void edgeq_threadpool_timing(struct edgeq_threadpool *tp, bool on)
{
	if (tp)
		tp->timing = on;
}

uint64_t edgeq_threadpool_wait_ns(const struct edgeq_threadpool *tp)
{
	return tp ? tp->wait_ns : 0;
}

/*
 * CPU order for pinning: the cores of the highest-efficiency CPU kind
 * first (hwloc: higher efficiency = more performance), one PU per core,
 * then the other kinds, then SMT siblings. Returns the number of PUs.
 */
static int pin_order(hwloc_topology_t topo, hwloc_bitmap_t *out, int max)
{
	int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
	int nkinds = hwloc_cpukinds_get_nr(topo, 0);
	hwloc_bitmap_t best = hwloc_bitmap_alloc();
	int best_eff = INT_MIN, n = 0;

	if (!best)
		return 0;
	for (int k = 0; k < nkinds; k++) {
		hwloc_bitmap_t set = hwloc_bitmap_alloc();
		int eff = 0;

		if (set &&
		    !hwloc_cpukinds_get_info(topo, (unsigned)k, set, &eff, NULL,
					     NULL, 0) &&
		    eff > best_eff) {
			best_eff = eff;
			hwloc_bitmap_copy(best, set);
		}
		hwloc_bitmap_free(set);
	}
	/* pass 0: first PU of performance cores; 1: first PU of the others;
	 * 2: remaining PUs (SMT siblings) */
	for (int pass = 0; pass < 3 && n < max; pass++) {
		for (int c = 0; c < ncores && n < max; c++) {
			hwloc_obj_t core =
				hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, c);
			bool perf = nkinds < 2 ||
				    hwloc_bitmap_intersects(core->cpuset, best);
			int npu = hwloc_bitmap_weight(core->cpuset);

			if (pass < 2 && perf != (pass == 0))
				continue;
			for (int i = pass < 2 ? 0 : 1;
			     i < (pass < 2 ? 1 : npu) && n < max; i++) {
				hwloc_obj_t pu =
					hwloc_get_obj_inside_cpuset_by_type(
						topo, core->cpuset,
						HWLOC_OBJ_PU, (unsigned)i);

				if (!pu)
					continue;
				out[n] = hwloc_bitmap_dup(pu->cpuset);
				if (out[n])
					n++;
			}
		}
	}
	hwloc_bitmap_free(best);
	return n;
}

static void setup_pinning(struct edgeq_threadpool *tp, unsigned flags)
{
	hwloc_bitmap_t *order;
	int n;

	if (flags & EDGEQ_THREADPOOL_NO_PIN)
		return;
	if (hwloc_topology_init(&tp->topo))
		goto fail;
	if (hwloc_topology_load(tp->topo))
		goto fail_topo;
	order = calloc((size_t)tp->n, sizeof(*order));
	if (!order)
		goto fail_topo;
	n = pin_order(tp->topo, order, tp->n);
	if (n <= 0) {
		free(order);
		goto fail_topo;
	}
	/* more threads than CPUs: wrap around */
	for (int i = 0; i < tp->n; i++)
		tp->sets[i] = hwloc_bitmap_dup(order[i % n]);
	for (int i = 0; i < n; i++)
		hwloc_bitmap_free(order[i]);
	free(order);
	tp->bind_callers = tp->n <
			   hwloc_get_nbobjs_by_type(tp->topo, HWLOC_OBJ_PU);
	for (int i = 1; i < tp->n; i++)
		tp->pinned += tp->sets[i] != NULL;
	tp->pinned += tp->bind_callers && tp->sets[0];
	return;
fail_topo:
	hwloc_topology_destroy(tp->topo);
fail:
	tp->topo = NULL; /* no pinning, silently */
}

static int start_worker(struct edgeq_threadpool *tp, int i,
			struct worker_start *ws, pthread_attr_t *attr)
{
	void *stk = mmap(
		NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	int e;

	if (stk == MAP_FAILED)
		return ENOMEM;
	mprotect(stk, GUARD_SIZE, PROT_NONE); /* stacks grow down */
	e = pthread_attr_init(attr);
	if (!e)
		e = pthread_attr_setstack(attr, stk, STACK_SIZE);
	if (!e)
		e = pthread_create(&tp->th[i], attr, worker_main, ws);
	pthread_attr_destroy(attr);
	if (e) {
		munmap(stk, STACK_SIZE);
		return e;
	}
	tp->stacks[i] = stk;
	return 0;
}

int edgeq_threadpool_new(int nthreads, unsigned flags,
			 struct edgeq_threadpool **out, struct edgeq_error *err)
{
	struct edgeq_threadpool *tp;

	if (nthreads < 1 || nthreads > EDGEQ_THREADPOOL_MAX)
		return edgeq_error_set(err, EINVAL,
				       "thread count %d out of range 1..%d",
				       nthreads, EDGEQ_THREADPOOL_MAX);
	tp = calloc(1, sizeof(*tp));
	if (!tp)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	tp->n = nthreads;
	tp->id = atomic_fetch_add(&pool_ids, 1) + 1;
	tp->th = calloc((size_t)nthreads, sizeof(*tp->th));
	tp->sets = calloc((size_t)nthreads, sizeof(*tp->sets));
	tp->stacks = calloc((size_t)nthreads, sizeof(*tp->stacks));
	if (!tp->th || !tp->sets || !tp->stacks) {
		free(tp->th);
		free(tp->sets);
		free(tp->stacks);
		free(tp);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	setup_pinning(tp, flags);
	for (int i = 1; i < nthreads; i++) {
		struct worker_start *ws = malloc(sizeof(*ws));
		int e = ws ? 0 : ENOMEM;
		pthread_attr_t attr;

		if (ws) {
			ws->tp = tp;
			ws->ith = i;
			e = start_worker(tp, i, ws, &attr);
		}
		if (e) {
			free(ws);
			tp->n = i; /* join the ones started */
			edgeq_threadpool_free(tp);
			return edgeq_error_set(err, e,
					       "cannot start thread %d: %s", i,
					       strerror(e));
		}
	}
	*out = tp;
	return 0;
}

void edgeq_threadpool_free(struct edgeq_threadpool *tp)
{
	if (!tp)
		return;
	atomic_store(&tp->stop, true);
	atomic_fetch_add(&tp->gen, 1);
	futex_wake(&tp->gen, INT_MAX);
	for (int i = 1; i < tp->n; i++) {
		pthread_join(tp->th[i], NULL);
		munmap(tp->stacks[i], STACK_SIZE);
	}
	for (int i = 0; i < tp->n; i++)
		hwloc_bitmap_free(tp->sets[i]);
	free(tp->stacks);
	if (tp->topo)
		hwloc_topology_destroy(tp->topo);
	free(tp->sets);
	free(tp->th);
	free(tp);
}

int edgeq_threadpool_size(const struct edgeq_threadpool *tp)
{
	return tp ? tp->n : 1;
}

int edgeq_threadpool_pinned(const struct edgeq_threadpool *tp)
{
	return tp ? tp->pinned : 0;
}

/* ---- parallel matvec / matmul ---- */

struct par_job {
	const struct edgeq_kernel_ops *ops;
	const struct edgeq_par_mat *m; /* the matrices, rows end to end */
	int64_t n;
	const void *a;
	size_t a_stride;
	int64_t nb;
	int64_t rows; /* all of them */
	int64_t chunk;
	_Atomic int64_t next;
};

/*
 * The next chunk of rows, guided: a share of what is left, so the chunks
 * shrink towards the end and the threads finish together however their
 * speeds differ; multiples of 16 rows (the packed groups), at least
 * j->chunk, and never across the end of a matrix (its rows are a
 * multiple of 16 or the chunk stops short there). False when no rows are
 * left; else *mi is the matrix and r0..r1 its rows.
 */
static bool par_next(struct par_job *j, int nth, int *mi, int64_t *r0,
		     int64_t *r1)
{
	int64_t cur = atomic_load_explicit(&j->next, memory_order_relaxed), c;
	int64_t base, end;
	int i;

	do {
		if (cur >= j->rows)
			return false;
		for (i = 0, base = 0; cur >= base + j->m[i].rows; i++)
			base += j->m[i].rows;
		end = base + j->m[i].rows;
		c = (j->rows - cur) / (2 * (int64_t)nth);
		c = (c + 15) & ~(int64_t)15;
		if (c < j->chunk)
			c = j->chunk;
		if (c > end - cur)
			c = end - cur;
	} while (!atomic_compare_exchange_weak_explicit(&j->next, &cur, cur + c,
							memory_order_relaxed,
							memory_order_relaxed));
	*mi = i;
	*r0 = cur - base;
	*r1 = cur + c - base;
	return true;
}

static void par_task(void *arg, int ith, int nth)
{
	struct par_job *j = arg;
	int64_t r0, r1;
	int i;

	while (par_next(j, nth, &i, &r0, &r1)) {
		const struct edgeq_par_mat *m = &j->m[i];

		if (m->packed && j->nb == 1)
			j->ops->matvec_packed(m->type, m->w, j->n, r0, r1, j->a,
					      m->y);
		else if (m->packed)
			j->ops->matmul_packed(m->type, m->w, j->n, r0, r1, j->a,
					      j->a_stride, j->nb, m->y, m->ldy);
		else if (j->nb == 1)
			j->ops->matvec(m->type, m->w, j->n, r0, r1, j->a, m->y);
		else
			j->ops->matmul(m->type, m->w, j->n, r0, r1, j->a,
				       j->a_stride, j->nb, m->y, m->ldy);
	}
}

void edgeq_par_linear_n(struct edgeq_threadpool *tp,
			const struct edgeq_kernel_ops *ops, int cnt,
			const struct edgeq_par_mat *m, int64_t n, const void *a,
			size_t a_stride, int64_t nb)
{
	int nth = edgeq_threadpool_size(tp);
	struct par_job j = { .ops = ops,
			     .m = m,
			     .n = n,
			     .a = a,
			     .a_stride = a_stride,
			     .nb = nb,
			     .chunk = 16 };

	for (int i = 0; i < cnt; i++)
		j.rows += m[i].rows;
	if (nth == 1) {
		j.chunk = j.rows; /* each matrix in one call */
		par_task(&j, 0, 1);
	} else {
		edgeq_threadpool_run(tp, par_task, &j);
	}
}

/* One matvec/matmul over the pool, rows in chunks; one thread: one call. */
static void par_linear(struct edgeq_threadpool *tp,
		       const struct edgeq_kernel_ops *ops, enum edgeq_type type,
		       const void *w, bool packed, int64_t n, int64_t rows,
		       const void *a, size_t a_stride, int64_t nb, float *y,
		       int64_t ldy)
{
	struct edgeq_par_mat m = { .type = type,
				   .w = w,
				   .packed = packed,
				   .rows = rows,
				   .y = y,
				   .ldy = ldy };

	edgeq_par_linear_n(tp, ops, 1, &m, n, a, a_stride, nb);
}

void edgeq_par_matvec(struct edgeq_threadpool *tp,
		      const struct edgeq_kernel_ops *ops, enum edgeq_type type,
		      const void *w, int64_t n, int64_t rows, const void *a,
		      float *y)
{
	par_linear(tp, ops, type, w, false, n, rows, a, 0, 1, y, 0);
}

void edgeq_par_matmul(struct edgeq_threadpool *tp,
		      const struct edgeq_kernel_ops *ops, enum edgeq_type type,
		      const void *w, int64_t n, int64_t rows, const void *a,
		      size_t a_stride, int64_t nb, float *y, int64_t ldy)
{
	par_linear(tp, ops, type, w, false, n, rows, a, a_stride, nb, y, ldy);
}

void edgeq_par_matmul_packed(struct edgeq_threadpool *tp,
			     const struct edgeq_kernel_ops *ops,
			     enum edgeq_type type, const void *w, int64_t n,
			     int64_t rows, const void *a, size_t a_stride,
			     int64_t nb, float *y, int64_t ldy)
{
	par_linear(tp, ops, type, w, true, n, rows, a, a_stride, nb, y, ldy);
}
