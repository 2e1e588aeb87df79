// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The weight streamer: serves tensor bytes layer by layer in execution order
 * from resident buffers, a pool of streaming slots, or a mapping of the file.
 *
 * A "unit" is what is loaded as one: a layer, the global tensors (output
 * norm and matrix) or the token embedding. Each unit has a fixed buffer
 * layout: its tensors' file ranges, widened to the O_DIRECT alignment and
 * merged where they touch, packed one after the other. The same layout is
 * used in a resident buffer and in a pool slot, so a tensor's address is
 * always buffer + its offset in the layout.
 *
 * Execution order is the cycle 0, 1, .., n-1, GLOBAL, 0, ... Units 0..R-1 of
 * the cycle are resident (R from the budget; all of them in preload), the
 * rest go through k+1 slots: the one computing and k being read.
 *
 * Threads: one compute thread calls begin/get/end/embed_rows; sio's thread
 * completes reads (on_read_done); set_budget may come from any thread and
 * is applied by the compute thread at the next layer_begin.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <edgeq/stream.h>

#include "stream/sio.h"

#define CHUNK_BYTES (1u << 20) /* one read request */
#define HUGE_BYTES (2u << 20)
#define DEFAULT_PREFETCH 2
#define MAX_PREFETCH 16

struct load {
	int pending; /* chunk reads outstanding */
	int err;     /* first error, -errno */
};

struct range {
	uint64_t off; /* aligned file offset */
	uint64_t len; /* aligned length */
	uint64_t bo;  /* offset in the unit's buffer */
};

struct unit {
	uint64_t bytes; /* buffer bytes of the layout */
	uint32_t first_range, n_ranges;
	struct sio_req *reqs; /* one per chunk, reused for every load */
	uint32_t n_reqs;
	void *res;	/* resident buffer, or NULL */
	size_t res_len; /* its mapping length */
	struct load res_load;
	bool want_res; /* the budget says: keep resident */
	int slot;      /* pool slot holding it, or -1 */
	bool in_use;   /* between layer_begin and layer_end */
};

struct slot {
	void *buf;
	size_t len;
	int unit; /* whose bytes it holds (or is reading), -1 */
	struct load ld;
	int buf_index;
};

struct ext {
	uint64_t off, size;
	uint32_t unit;
	uint64_t bo; /* offset in the unit's buffer */
};

struct edgeq_stream {
	struct edgeq_stream_params p;
	enum edgeq_weights_mode mode;
	struct sio *io;
	uint32_t align;
	uint64_t file_size;

	struct ext *ext;
	size_t n_ext;
	struct range *ranges;
	struct unit *units; /* n_layers + 1 (GLOBAL) + 1 (EMBED) */
	uint32_t n_cycle;   /* n_layers + 1 */
	uint32_t embed;	    /* index of the EMBED unit */
	int64_t embed_ext;  /* the embedding extent, -1 */
	uint64_t model_bytes;

	struct slot slots[MAX_PREFETCH + 1];
	uint32_t n_slots;
	uint64_t slot_bytes;

	void *map; /* mmap mode */
	size_t map_len;
	int numa_node; /* -1: no binding */

	pthread_mutex_t lock; /* loads' pending/err */
	pthread_cond_t cond;

	_Atomic uint64_t budget_target;
	uint64_t budget; /* applied */
	uint64_t resident_bytes;
	uint64_t stalls, alloc_failures;
	char why[160]; /* why this mode */

	/* pre-faults the resident buffers, last first (see populate_main) */
	pthread_t pop_thread;
	bool pop_running;
	atomic_bool pop_stop;
	_Atomic uint64_t prefaulted;
	struct iovec *pop; /* the buffers at open, in execution order */
	uint32_t n_pop;
};

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v & ~(a - 1);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

const char *edgeq_weights_mode_name(enum edgeq_weights_mode m)
{
	switch (m) {
	case EDGEQ_WEIGHTS_MMAP:
		return "mmap";
	case EDGEQ_WEIGHTS_PRELOAD:
		return "preload";
	case EDGEQ_WEIGHTS_STREAM:
		return "stream";
	default:
		return "auto";
	}
}

int edgeq_weights_mode_parse(const char *name, enum edgeq_weights_mode *m)
{
	static const enum edgeq_weights_mode all[] = { EDGEQ_WEIGHTS_AUTO,
						       EDGEQ_WEIGHTS_MMAP,
						       EDGEQ_WEIGHTS_PRELOAD,
						       EDGEQ_WEIGHTS_STREAM };

	for (unsigned i = 0; i < 4; i++) {
		if (name && !strcmp(name, edgeq_weights_mode_name(all[i]))) {
			*m = all[i];
			return 0;
		}
	}
	return -EINVAL;
}

void edgeq_stream_params_init(struct edgeq_stream_params *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = EDGEQ_WEIGHTS_AUTO;
	p->prefetch = DEFAULT_PREFETCH;
	p->queue_depth = 32;
	p->use_io_uring = true;
}

/* ---- buffers: huge pages where they help, on the computing CPUs' node */

static int compute_node(void)
{
	cpu_set_t set;

	if (numa_available() < 0 || numa_num_configured_nodes() < 2)
		return -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			return numa_node_of_cpu(cpu);
	return -1;
}

static void *buf_alloc(struct edgeq_stream *s, uint64_t len, size_t *maplen)
{
	size_t want = align_up(len ? len : 1, 4096);
	size_t map;
	char *p, *a;

	if (sio_fault_take(&sio_faults()->enomem))
		return NULL;
	/* huge-page alignment only where the rounding costs little */
	if (want < HUGE_BYTES || align_up(want, HUGE_BYTES) - want > want / 8) {
		p = mmap(NULL, want, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		*maplen = want;
		a = p;
	} else {
		/* over-map, then trim to a 2 MiB boundary so THP can back it */
		want = align_up(want, HUGE_BYTES);
		map = want + HUGE_BYTES;
		p = mmap(NULL, map, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		a = (char *)align_up((uintptr_t)p, HUGE_BYTES);
		if (a > p)
			munmap(p, (size_t)(a - p));
		if (a + want < p + map)
			munmap(a + want, (size_t)(p + map - (a + want)));
		madvise(a, want, MADV_HUGEPAGE);
		*maplen = want;
	}
	if (s->numa_node >= 0)
		numa_tonode_memory(a, *maplen, s->numa_node);
	return a;
}

/* ---- loads */

static void on_read_done(void *user, struct sio_req *r, int res)
{
	struct edgeq_stream *s = user;
	struct load *ld = r->owner;

	pthread_mutex_lock(&s->lock);
	if (res && !ld->err)
		ld->err = res;
	if (--ld->pending == 0)
		pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Start reading unit @u into @buf; completion is seen in @ld. */
static void load_start(struct edgeq_stream *s, uint32_t u, void *buf,
		       int buf_index, struct load *ld)
{
	struct unit *un = &s->units[u];
	struct sio_req *batch[256];
	unsigned nb = 0;

	pthread_mutex_lock(&s->lock);
	ld->pending = (int)un->n_reqs;
	ld->err = 0;
	pthread_mutex_unlock(&s->lock);
	for (uint32_t i = 0; i < un->n_reqs; i++) {
		struct sio_req *r = &un->reqs[i];

		/* r->off/len/buf offset were laid out at open */
		r->buf = (char *)buf + r->user;
		r->buf_index = buf_index;
		r->owner = ld;
		batch[nb++] = r;
		if (nb == 256) {
			sio_submit(s->io, batch, nb);
			nb = 0;
		}
	}
	if (nb)
		sio_submit(s->io, batch, nb);
}

static int load_wait(struct edgeq_stream *s, struct load *ld, bool *waited)
{
	int err;

	pthread_mutex_lock(&s->lock);
	if (ld->pending && waited)
		*waited = true;
	while (ld->pending)
		pthread_cond_wait(&s->cond, &s->lock);
	err = ld->err;
	pthread_mutex_unlock(&s->lock);
	return err;
}

static bool load_busy(struct edgeq_stream *s, struct load *ld)
{
	bool busy;

	pthread_mutex_lock(&s->lock);
	busy = ld->pending != 0;
	pthread_mutex_unlock(&s->lock);
	return busy;
}

/* ---- the budget: which cycle units stay resident */

static uint64_t cycle_bytes(const struct edgeq_stream *s)
{
	uint64_t t = 0;

	for (uint32_t u = 0; u < s->n_cycle; u++)
		t += s->units[u].bytes;
	return t;
}

/* Mark what the budget @b allows: a prefix of the cycle, then the
 * embedding when everything else fits. */
static void plan(struct edgeq_stream *s, uint64_t b)
{
	uint64_t all = cycle_bytes(s), used;
	uint32_t u;

	s->budget = b;
	if (b >= all) {
		for (u = 0; u < s->n_cycle; u++)
			s->units[u].want_res = true;
		s->units[s->embed].want_res = b >=
					      all + s->units[s->embed].bytes;
		return;
	}
	used = (uint64_t)s->n_slots * s->slot_bytes;
	for (u = 0; u < s->n_cycle; u++) {
		used += s->units[u].bytes;
		s->units[u].want_res = used <= b;
	}
	/* a prefix only: once one does not fit, none after it */
	for (u = 1; u < s->n_cycle; u++)
		if (!s->units[u - 1].want_res)
			s->units[u].want_res = false;
	s->units[s->embed].want_res = false;
}

/*
 * Fresh anonymous memory costs its first touch: a 2 MiB page is zeroed (and
 * in a VM, backed by the host) when the O_DIRECT read pins it, and that
 * happens in the thread that submits the reads, one page after another,
 * while the disk waits for the next request (perf: clear_page under
 * io_uring_enter, 55 % of a cold preload). This thread faults the resident
 * buffers in from the other end (last unit, last page first) with
 * MADV_POPULATE_WRITE, so the two meet in the middle and the fault work is
 * split across two cores. POPULATE_WRITE never changes a present page, so it
 * is safe on pages a read has already filled. Linux < 5.14: EINVAL, nothing
 * done.
 */
static void *populate_main(void *arg)
{
	struct edgeq_stream *s = arg;

	for (uint32_t i = s->n_pop; i-- > 0;) {
		size_t off = s->pop[i].iov_len;

		while (off > 0 && !atomic_load(&s->pop_stop)) {
			size_t n = off >= HUGE_BYTES ? HUGE_BYTES : off;

			off -= n;
			if (madvise((char *)s->pop[i].iov_base + off, n,
				    MADV_POPULATE_WRITE)) {
				if (errno == EINVAL)
					return NULL;
				continue;
			}
			atomic_fetch_add(&s->prefaulted, n);
		}
	}
	return NULL;
}

static void populate_start(struct edgeq_stream *s)
{
	const char *e = getenv("EDGEQ_WEIGHTS_POPULATE");

	if (e && !strcmp(e, "0")) /* for A/B measurements */
		return;
	s->pop = calloc(s->embed + 1, sizeof(*s->pop));
	if (!s->pop)
		return;
	for (uint32_t u = 0; u <= s->embed; u++) {
		if (!s->units[u].res)
			continue;
		s->pop[s->n_pop].iov_base = s->units[u].res;
		s->pop[s->n_pop++].iov_len = s->units[u].res_len;
	}
	atomic_store(&s->pop_stop, false);
	s->pop_running =
		!pthread_create(&s->pop_thread, NULL, populate_main, s);
}

/* Before any resident buffer is unmapped. */
static void populate_join(struct edgeq_stream *s)
{
	if (!s->pop_running)
		return;
	atomic_store(&s->pop_stop, true);
	pthread_join(s->pop_thread, NULL);
	s->pop_running = false;
}

static void drop_resident(struct edgeq_stream *s, uint32_t u)
{
	struct unit *un = &s->units[u];

	populate_join(s);
	munmap(un->res, un->res_len);
	s->resident_bytes -= un->res_len;
	un->res = NULL;
	un->res_len = 0;
}

/* Free the resident buffers the budget no longer allows (not while in use
 * or being read: those go at their layer_end or at a later boundary). */
static void apply_budget(struct edgeq_stream *s)
{
	uint64_t b = atomic_load(&s->budget_target);

	if (b != s->budget)
		plan(s, b);
	for (uint32_t u = 0; u <= s->embed; u++) {
		struct unit *un = &s->units[u];

		if (un->res && !un->want_res && !un->in_use &&
		    !load_busy(s, &un->res_load))
			drop_resident(s, u);
	}
}

/* Make @u resident: allocate and start reading. False when memory is
 * short: the smaller budget is kept. */
static bool promote(struct edgeq_stream *s, uint32_t u)
{
	struct unit *un = &s->units[u];
	size_t len;
	void *b = buf_alloc(s, un->bytes, &len);

	if (!b) {
		s->alloc_failures++;
		atomic_store(&s->budget_target, s->resident_bytes);
		plan(s, s->resident_bytes);
		return false;
	}
	un->res = b;
	un->res_len = len;
	s->resident_bytes += len;
	load_start(s, u, b, -1, &un->res_load);
	return true;
}

static bool in_window(struct edgeq_stream *s, uint32_t cur, uint32_t u)
{
	for (uint32_t i = 0; i <= s->p.prefetch; i++)
		if ((cur + i) % s->n_cycle == u)
			return true;
	return false;
}

/* A slot whose contents are not needed soon, or -1. */
static int free_slot(struct edgeq_stream *s, uint32_t cur)
{
	for (uint32_t i = 0; i < s->n_slots; i++) {
		struct slot *sl = &s->slots[i];

		if (sl->unit >= 0 && (s->units[sl->unit].in_use ||
				      in_window(s, cur, (uint32_t)sl->unit)))
			continue;
		if (load_busy(s, &sl->ld))
			continue;
		if (!sl->buf) {
			sl->buf = buf_alloc(s, s->slot_bytes, &sl->len);
			if (!sl->buf)
				return -1;
			s->resident_bytes += sl->len;
		}
		return (int)i;
	}
	return -1;
}

static bool slot_load(struct edgeq_stream *s, uint32_t cur, uint32_t u)
{
	int i = free_slot(s, cur);
	struct slot *sl;

	if (i < 0)
		return false;
	sl = &s->slots[i];
	if (sl->unit >= 0)
		s->units[sl->unit].slot = -1;
	sl->unit = (int)u;
	s->units[u].slot = i;
	load_start(s, u, sl->buf, sl->buf_index, &sl->ld);
	return true;
}

/* Start reading the k units after @cur that are not in memory yet. */
static void prefetch(struct edgeq_stream *s, uint32_t cur)
{
	for (uint32_t i = 1; i <= s->p.prefetch && i < s->n_cycle; i++) {
		uint32_t u = (cur + i) % s->n_cycle;
		struct unit *un = &s->units[u];

		if (un->res)
			continue;
		if (un->want_res &&
		    (un->slot < 0 || !load_busy(s, &s->slots[un->slot].ld)) &&
		    promote(s, u)) {
			if (un->slot >= 0)
				s->slots[un->slot].unit = -1;
			un->slot = -1;
			continue;
		}
		if (un->slot >= 0)
			continue;
		if (!slot_load(s, cur, u))
			break;
	}
}

static int load_error(struct edgeq_stream *s, int layer, int e,
		      struct edgeq_error *err)
{
	const char *p = s->p.path;

	switch (e) {
	case -ENODATA:
		return edgeq_error_set(
			err, ENODATA,
			"%s: the file was truncated while the model was running (layer %d)",
			p, layer);
	case -ESTALE:
		return edgeq_error_set(
			err, ESTALE,
			"%s: the file was modified while the model was running (layer %d); restart with the new file",
			p, layer);
	case -ENOMEM:
		return edgeq_error_set(
			err, ENOMEM,
			"%s: no memory for a weight buffer (layer %d); lower --weights-budget",
			p, layer);
	default:
		return edgeq_error_set(
			err, -e,
			"%s: reading layer %d failed after %d tries: %s", p,
			layer, SIO_MAX_TRIES, strerror(-e));
	}
}

static int unit_of(const struct edgeq_stream *s, int layer, uint32_t *u)
{
	if (layer == EDGEQ_STREAM_GLOBAL)
		*u = s->n_cycle - 1;
	else if (layer >= 0 && (uint32_t)layer < s->p.n_layers)
		*u = (uint32_t)layer;
	else
		return -EINVAL;
	return 0;
}

int edgeq_stream_layer_begin(struct edgeq_stream *s, int layer,
			     struct edgeq_error *err)
{
	struct unit *un;
	bool waited = false;
	uint32_t u;
	int e;

	if (unit_of(s, layer, &u))
		return edgeq_error_set(err, EINVAL, "no layer %d", layer);
	if (s->mode == EDGEQ_WEIGHTS_MMAP)
		return 0;
	un = &s->units[u];
	apply_budget(s);
	e = sio_check_file(s->io);
	if (e)
		return load_error(s, layer, e, err);

	if (!un->res && un->want_res && un->slot < 0)
		promote(s, u);
	if (un->res) {
		e = load_wait(s, &un->res_load, &waited);
		if (e) {
			/* a read ahead failed: once more, now, before giving up */
			load_start(s, u, un->res, -1, &un->res_load);
			e = load_wait(s, &un->res_load, &waited);
		}
		if (e) {
			drop_resident(s, u);
			return load_error(s, layer, e, err);
		}
	} else {
		struct slot *sl;

		if (un->slot < 0 && !slot_load(s, u, u))
			return edgeq_error_set(
				err, ENOMEM,
				"%s: no free weight buffer for layer %d (budget too small?)",
				s->p.path, layer);
		sl = &s->slots[un->slot];
		e = load_wait(s, &sl->ld, &waited);
		if (e) {
			load_start(s, u, sl->buf, sl->buf_index, &sl->ld);
			e = load_wait(s, &sl->ld, &waited);
		}
		if (e) {
			sl->unit = -1;
			un->slot = -1;
			return load_error(s, layer, e, err);
		}
	}
	/* the bytes are in memory: were they read from the file we opened? */
	e = sio_check_file(s->io);
	if (e)
		return load_error(s, layer, e, err);
	if (waited)
		s->stalls++;
	un->in_use = true;
	prefetch(s, u);
	return 0;
}

const void *edgeq_stream_get(struct edgeq_stream *s, size_t idx)
{
	const struct ext *x;
	const struct unit *un;

	if (idx >= s->n_ext)
		return NULL;
	x = &s->ext[idx];
	if (s->mode == EDGEQ_WEIGHTS_MMAP)
		return (const char *)s->map + x->off;
	un = &s->units[x->unit];
	if (un->res)
		return (const char *)un->res + x->bo;
	if (un->slot >= 0)
		return (const char *)s->slots[un->slot].buf + x->bo;
	return NULL;
}

bool edgeq_stream_resident(const struct edgeq_stream *s)
{
	if (s->mode == EDGEQ_WEIGHTS_MMAP)
		return true;
	for (uint32_t u = 0; u < s->n_cycle + 1; u++) {
		const struct unit *un = &s->units[u];

		if (!un->res || un->res_load.pending || un->res_load.err)
			return false;
	}
	return true;
}

void edgeq_stream_layer_end(struct edgeq_stream *s, int layer)
{
	uint32_t u;

	if (s->mode == EDGEQ_WEIGHTS_MMAP || unit_of(s, layer, &u))
		return;
	s->units[u].in_use = false;
	if (s->units[u].res && !s->units[u].want_res)
		drop_resident(s, u);
}

/*
 * A prompt's embedding rows from the file: each row's pages asked for
 * first, so the rows the page cache lacks are read together (from flash,
 * one after another, they cost a read each: ~0.1-0.5 ms, 19 ms of a cold
 * 64-token pass in a VM) and the copies below wait once.
 */
static void embed_readahead(struct edgeq_stream *s, const struct ext *x,
			    const int32_t *toks, size_t n, size_t row_size,
			    uint64_t rows)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < n; i++) {
		uint64_t off;

		if (toks[i] < 0 || (uint64_t)toks[i] >= rows)
			continue; /* the copy loop names it */
		off = x->off + (uint64_t)toks[i] * row_size;
		if (s->mode == EDGEQ_WEIGHTS_MMAP) {
			uintptr_t a = (uintptr_t)s->map + off;
			uintptr_t b = a + row_size;

			a &= ~(pg - 1);
			(void)madvise((void *)a, b - a, MADV_WILLNEED);
		} else {
			sio_readahead(s->io, off, row_size);
		}
	}
}

int edgeq_stream_embed_rows(struct edgeq_stream *s, const int32_t *toks,
			    size_t n, void *dst, size_t row_size,
			    struct edgeq_error *err)
{
	const struct ext *x;
	struct unit *un;
	uint64_t rows;

	if (s->embed_ext < 0)
		return edgeq_error_set(err, EINVAL,
				       "the model has no token embedding");
	x = &s->ext[s->embed_ext];
	if (!row_size || x->size % row_size)
		return edgeq_error_set(
			err, EINVAL,
			"embedding row size %zu does not divide the tensor (%llu bytes)",
			row_size, (unsigned long long)x->size);
	rows = x->size / row_size;
	un = &s->units[x->unit];
	if (n > 1 &&
	    !(un->res && !load_busy(s, &un->res_load) && !un->res_load.err))
		embed_readahead(s, x, toks, n, row_size, rows);
	for (size_t i = 0; i < n; i++) {
		char *d = (char *)dst + i * row_size;
		uint64_t off;
		int e;

		if (toks[i] < 0 || (uint64_t)toks[i] >= rows)
			return edgeq_error_set(
				err, EINVAL,
				"token %d out of range (vocabulary %llu)",
				toks[i], (unsigned long long)rows);
		off = (uint64_t)toks[i] * row_size;
		if (s->mode == EDGEQ_WEIGHTS_MMAP) {
			memcpy(d, (const char *)s->map + x->off + off,
			       row_size);
			continue;
		}
		if (un->res && !load_busy(s, &un->res_load) &&
		    !un->res_load.err) {
			memcpy(d, (const char *)un->res + x->bo + off,
			       row_size);
			continue;
		}
		e = sio_pread_small(s->io, d, row_size, x->off + off);
		if (e)
			return load_error(s, -2, e, err);
	}
	return 0;
}

void edgeq_stream_set_budget(struct edgeq_stream *s, uint64_t bytes)
{
	atomic_store(&s->budget_target, bytes);
}

/* ---- open: lay out the units, choose what is resident, start reading */

static int cmp_ext_off(const void *a, const void *b, void *arg)
{
	const struct ext *ext = arg;
	uint64_t x = ext[*(const uint32_t *)a].off;
	uint64_t y = ext[*(const uint32_t *)b].off;

	return x < y ? -1 : x > y;
}

static int layout(struct edgeq_stream *s, struct edgeq_error *err)
{
	uint32_t n_units = s->n_cycle + 1, nr = 0;
	uint32_t *order;

	order = calloc(s->n_ext ? s->n_ext : 1, sizeof(*order));
	s->ranges = calloc(s->n_ext ? s->n_ext : 1, sizeof(*s->ranges));
	if (!order || !s->ranges) {
		free(order);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->n_ext; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, s->n_ext, sizeof(*order), cmp_ext_off, s->ext);

	for (uint32_t u = 0; u < n_units; u++) {
		struct unit *un = &s->units[u];
		uint64_t bo = 0;

		un->first_range = nr;
		un->slot = -1;
		for (size_t k = 0; k < s->n_ext; k++) {
			struct ext *x = &s->ext[order[k]];
			uint64_t a, b;

			if (x->unit != u)
				continue;
			a = align_down(x->off, s->align);
			b = align_up(x->off + x->size, s->align);
			if (nr > un->first_range &&
			    a <= s->ranges[nr - 1].off +
					    s->ranges[nr - 1].len) {
				struct range *r = &s->ranges[nr - 1];
				uint64_t end = r->off + r->len;

				if (b > end) {
					r->len = b - r->off;
					bo += b - end;
				}
			} else {
				s->ranges[nr].off = a;
				s->ranges[nr].len = b - a;
				s->ranges[nr].bo = bo;
				bo += b - a;
				nr++;
			}
			x->bo = s->ranges[nr - 1].bo +
				(x->off - s->ranges[nr - 1].off);
		}
		un->n_ranges = nr - un->first_range;
		un->bytes = bo;
		/* the chunk requests, laid out once */
		for (uint32_t i = 0; i < un->n_ranges; i++)
			un->n_reqs +=
				(uint32_t)((s->ranges[un->first_range + i].len +
					    CHUNK_BYTES - 1) /
					   CHUNK_BYTES);
		un->reqs =
			calloc(un->n_reqs ? un->n_reqs : 1, sizeof(*un->reqs));
		if (!un->reqs) {
			free(order);
			return edgeq_error_set(err, ENOMEM, "out of memory");
		}
		for (uint32_t i = 0, q = 0; i < un->n_ranges; i++) {
			const struct range *r = &s->ranges[un->first_range + i];

			for (uint64_t o = 0; o < r->len;
			     o += CHUNK_BYTES, q++) {
				struct sio_req *rq = &un->reqs[q];
				uint64_t l = r->len - o;

				rq->off = r->off + o;
				rq->len = (uint32_t)(l < CHUNK_BYTES ?
							     l :
							     CHUNK_BYTES);
				/* buffer offset, made a pointer at load time */
				rq->user = r->bo + o;
			}
		}
	}
	free(order);
	return 0;
}

static int check_extents(struct edgeq_stream *s,
			 const struct edgeq_stream_extent *ext, size_t n,
			 struct edgeq_error *err)
{
	s->ext = calloc(n ? n : 1, sizeof(*s->ext));
	if (!s->ext)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	s->n_ext = n;
	s->embed_ext = -1;
	for (size_t i = 0; i < n; i++) {
		const struct edgeq_stream_extent *e = &ext[i];
		struct ext *x = &s->ext[i];

		if (e->offset > s->file_size ||
		    e->size > s->file_size - e->offset)
			return edgeq_error_set(
				err, EINVAL,
				"%s: tensor %zu [%llu, +%llu) lies beyond the end of the file (%llu bytes)",
				s->p.path, i, (unsigned long long)e->offset,
				(unsigned long long)e->size,
				(unsigned long long)s->file_size);
		if (e->layer == EDGEQ_STREAM_EMBED) {
			if (s->embed_ext >= 0)
				return edgeq_error_set(err, EINVAL,
						       "two token embeddings");
			s->embed_ext = (int64_t)i;
			x->unit = s->embed;
		} else if (e->layer == EDGEQ_STREAM_GLOBAL) {
			x->unit = s->n_cycle - 1;
		} else if (e->layer >= 0 &&
			   (uint32_t)e->layer < s->p.n_layers) {
			x->unit = (uint32_t)e->layer;
		} else {
			return edgeq_error_set(
				err, EINVAL,
				"tensor %zu: layer %d out of range", i,
				e->layer);
		}
		x->off = e->offset;
		x->size = e->size;
		s->model_bytes += e->size;
	}
	return 0;
}

static int open_mmap(struct edgeq_stream *s, struct edgeq_error *err)
{
	int fd = open(s->p.path, O_RDONLY | O_CLOEXEC);
	int e;

	if (fd < 0) {
		e = errno;
		return edgeq_error_set(err, e, "%s: %s", s->p.path,
				       strerror(e));
	}
	s->map_len = s->file_size ? s->file_size : 1;
	s->map = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		return edgeq_error_set(err, e, "%s: mmap: %s", s->p.path,
				       strerror(e));
	}
	return 0;
}

/* The streaming pool: k+1 slots of the largest cycle unit, registered. */
static int make_pool(struct edgeq_stream *s, struct edgeq_error *err)
{
	struct iovec iov[MAX_PREFETCH + 1];

	for (uint32_t i = 0; i < s->n_slots; i++) {
		struct slot *sl = &s->slots[i];

		sl->buf = buf_alloc(s, s->slot_bytes, &sl->len);
		if (!sl->buf)
			return edgeq_error_set(
				err, ENOMEM,
				"no memory for the weight stream pool (%u x %llu bytes)",
				s->n_slots, (unsigned long long)s->slot_bytes);
		s->resident_bytes += sl->len;
		iov[i].iov_base = sl->buf;
		iov[i].iov_len = sl->len;
	}
	if (!sio_register_buffers(s->io, iov, s->n_slots))
		for (uint32_t i = 0; i < s->n_slots; i++)
			s->slots[i].buf_index = (int)i;
	return 0;
}

/*
 * AUTO: a model that fits and whose file is already in the page cache is
 * mapped (mmap costs minor faults only, a preload would copy it again);
 * a cold one is preloaded with O_DIRECT; one that does not fit, streamed.
 */
static enum edgeq_weights_mode choose_auto(struct edgeq_stream *s)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	double cached = -1;
	int fd;

	if (s->p.budget >= cycle_bytes(s) && sio_is_direct(s->io)) {
		for (size_t i = 0; i < s->n_ext; i++) {
			if (s->ext[i].off < lo)
				lo = s->ext[i].off;
			if (s->ext[i].off + s->ext[i].size > hi)
				hi = s->ext[i].off + s->ext[i].size;
		}
		fd = open(s->p.path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && hi > lo &&
		    edgeq_file_cached_share(fd, lo, hi - lo, 1024, &cached))
			cached = -1;
		if (fd >= 0)
			close(fd);
	}
	return edgeq_weights_choose(s->p.budget, cycle_bytes(s),
				    sio_is_direct(s->io), cached, s->why,
				    sizeof(s->why));
}

int edgeq_stream_open(const struct edgeq_stream_params *p,
		      const struct edgeq_stream_extent *ext, size_t n,
		      struct edgeq_stream **out, struct edgeq_error *err)
{
	struct sio_params sp = { 0 };
	struct edgeq_stream *s;
	int ret;

	if (!p || !p->path || (!ext && n))
		return edgeq_error_set(err, EINVAL, "no model file");
	s = calloc(1, sizeof(*s));
	if (!s)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	s->p = *p;
	if (!s->p.prefetch)
		s->p.prefetch = DEFAULT_PREFETCH;
	if (s->p.prefetch > MAX_PREFETCH)
		s->p.prefetch = MAX_PREFETCH;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->numa_node = compute_node();
	s->n_cycle = s->p.n_layers + 1;
	s->embed = s->n_cycle;
	s->units = calloc(s->n_cycle + 1, sizeof(*s->units));
	for (uint32_t i = 0; i <= MAX_PREFETCH; i++) {
		s->slots[i].unit = -1;
		s->slots[i].buf_index = -1;
	}
	if (!s->units) {
		ret = edgeq_error_set(err, ENOMEM, "out of memory");
		goto fail;
	}

	sp.path = p->path;
	sp.use_io_uring = p->use_io_uring;
	sp.direct = p->mode != EDGEQ_WEIGHTS_MMAP;
	sp.depth = p->queue_depth ? p->queue_depth : 32;
	sp.threads = 4;
	sp.done = on_read_done;
	sp.user = s;
	ret = sio_open(&sp, &s->io, err);
	if (ret)
		goto fail;
	s->align = sio_align(s->io);
	s->file_size = sio_file_size(s->io);
	ret = check_extents(s, ext, n, err);
	if (ret)
		goto fail;
	ret = layout(s, err);
	if (ret)
		goto fail;

	if (!s->p.budget) {
		struct edgeq_mem_info mi;

		if (!edgeq_mem_probe(NULL, &mi))
			s->p.budget = edgeq_weights_default_budget(&mi, 0);
	}
	s->mode = p->mode;
	snprintf(s->why, sizeof(s->why), "requested");
	if (s->mode == EDGEQ_WEIGHTS_AUTO)
		s->mode = choose_auto(s);
	if (s->mode == EDGEQ_WEIGHTS_MMAP) {
		ret = open_mmap(s, err);
		if (ret)
			goto fail;
		*out = s;
		return 0;
	}

	for (uint32_t u = 0; u < s->n_cycle; u++)
		if (align_up(s->units[u].bytes, 4096) > s->slot_bytes)
			s->slot_bytes = align_up(s->units[u].bytes, 4096);
	s->n_slots = s->p.prefetch + 1;
	if (s->n_slots > s->n_cycle)
		s->n_slots = s->n_cycle;
	if (s->mode == EDGEQ_WEIGHTS_PRELOAD)
		s->p.budget =
			UINT64_MAX; /* everything; set_budget may lower it */
	atomic_store(&s->budget_target, s->p.budget);
	plan(s, s->p.budget);
	if (!s->units[s->n_cycle - 1].want_res) {
		ret = make_pool(s, err);
		if (ret)
			goto fail;
	}
	/* in execution order: resident units first, then the embedding; the
	 * first streamed units start with the first layer_begin */
	for (uint32_t u = 0; u <= s->embed; u++) {
		if (!s->units[u].want_res)
			continue;
		if (!promote(s, u)) {
			ret = edgeq_error_set(
				err, ENOMEM,
				"%s: no memory to preload layer %u (%llu bytes); try --weights stream",
				p->path, u,
				(unsigned long long)s->units[u].bytes);
			goto fail;
		}
	}
	populate_start(s);
	if (!s->units[0].want_res && s->n_cycle)
		slot_load(s, s->n_cycle - 1, 0);
	prefetch(s, 0);
	*out = s;
	return 0;
fail:
	edgeq_stream_close(s);
	return ret;
}

void edgeq_stream_close(struct edgeq_stream *s)
{
	if (!s)
		return;
	populate_join(s);
	sio_close(s->io); /* waits for reads in flight */
	if (s->units) {
		for (uint32_t u = 0; u <= s->embed; u++) {
			if (s->units[u].res)
				munmap(s->units[u].res, s->units[u].res_len);
			free(s->units[u].reqs);
		}
	}
	for (uint32_t i = 0; i <= MAX_PREFETCH; i++)
		if (s->slots[i].buf)
			munmap(s->slots[i].buf, s->slots[i].len);
	if (s->map)
		munmap(s->map, s->map_len);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->pop);
	free(s->units);
	free(s->ranges);
	free(s->ext);
	free(s);
}

void edgeq_stream_status(struct edgeq_stream *s, struct edgeq_stream_status *st)
{
	memset(st, 0, sizeof(*st));
	st->mode = s->mode;
	st->model_bytes = s->model_bytes;
	st->prefetch = s->p.prefetch;
	snprintf(st->why, sizeof(st->why), "%s", s->why);
	if (s->io) {
		st->io_uring = sio_is_uring(s->io);
		st->direct = sio_is_direct(s->io);
		st->fixed_buffers = sio_has_fixed_buffers(s->io);
		st->align = s->align;
		snprintf(st->fallback, sizeof(st->fallback), "%s",
			 sio_fallback_reason(s->io));
		sio_counters(s->io, &st->bytes_read, &st->reads, &st->retries);
	}
	if (s->mode == EDGEQ_WEIGHTS_MMAP) {
		st->budget = s->p.budget;
		return;
	}
	st->budget = s->budget;
	st->resident_bytes = s->resident_bytes;
	for (uint32_t i = 0; i < s->n_slots; i++)
		st->pool_bytes += s->slots[i].len;
	for (uint32_t u = 0; u < s->n_cycle; u++) {
		if (s->units[u].res)
			st->layers_resident++;
		else
			st->layers_streamed++;
	}
	st->stalls = s->stalls;
	st->alloc_failures = s->alloc_failures;
	st->prefaulted = atomic_load(&s->prefaulted);
}
