/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The weight streamer: how tensor bytes get from the model file into memory
 * under a resident budget (Documentation/weights-streaming.rst).
 *
 * The decoder describes the file as extents (offset, size, layer) in the
 * order it wants; the streamer serves them layer by layer in execution order
 * (layers 0..n-1, then EDGEQ_STREAM_GLOBAL) with one of three modes:
 *
 *   preload  every layer read with O_DIRECT at full queue depth into aligned
 *            (huge-page) buffers; layer_begin(L) waits only for layer L
 *   stream   the first layers that fit in the budget stay resident; the
 *            others are read into a pool of registered buffers, k layers
 *            ahead of the one computing; embedding rows are read one by one
 *   mmap     the file is mapped (the baseline)
 *
 * One io_uring per stream (fixed file, registered buffers, batched
 * submission); a pread thread pool when io_uring is unavailable, reported in
 * the status (never printed). Nothing here prints; errors are -errno plus a
 * message in struct edgeq_error.
 */
#ifndef EDGEQ_STREAM_H
#define EDGEQ_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>
#include <edgeq/engine.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDGEQ_STREAM_GLOBAL (-1) /* output norm, output matrix */
#define EDGEQ_STREAM_EMBED (-2)	 /* the token embedding (rows only) */

/* One tensor's bytes in the file. */
struct edgeq_stream_extent {
	uint64_t offset;
	uint64_t size;
	int32_t layer; /* 0..n_layers-1, EDGEQ_STREAM_GLOBAL or _EMBED */
};

struct edgeq_stream_params {
	const char *path;
	enum edgeq_weights_mode mode; /* AUTO: chosen from budget and file */
	uint64_t budget;	      /* bytes resident; 0: from memory */
	uint32_t n_layers;
	uint32_t prefetch;    /* layers read ahead (0: 2) */
	uint32_t queue_depth; /* reads in flight (0: 32) */
	bool use_io_uring;    /* false forces the pread pool */
};

void edgeq_stream_params_init(struct edgeq_stream_params *p);

struct edgeq_stream;

/*
 * Open @p->path and start reading. @ext (@n of them) is copied; the index of
 * an extent is its handle for edgeq_stream_get().
 */
int edgeq_stream_open(const struct edgeq_stream_params *p,
		      const struct edgeq_stream_extent *ext, size_t n,
		      struct edgeq_stream **out, struct edgeq_error *err);
void edgeq_stream_close(struct edgeq_stream *s);

/* Wait until @layer (or EDGEQ_STREAM_GLOBAL) is in memory; start reading
 * the next ones. -EIO, -ENODATA (file truncated), -ESTALE (file modified),
 * -ENOMEM with a message. */
int edgeq_stream_layer_begin(struct edgeq_stream *s, int layer,
			     struct edgeq_error *err);
/* The bytes of extent @idx; valid until layer_end of its layer. */
const void *edgeq_stream_get(struct edgeq_stream *s, size_t idx);
void edgeq_stream_layer_end(struct edgeq_stream *s, int layer);
/* Whether every extent is in memory now and stays there until the next
 * layer_begin (mmap, or every layer resident and read): get() answers for
 * any layer without its layer_begin. */
bool edgeq_stream_resident(const struct edgeq_stream *s);
/* Raw rows @toks[0..n) of the EDGEQ_STREAM_EMBED extent into @dst. */
int edgeq_stream_embed_rows(struct edgeq_stream *s, const int32_t *toks,
			    size_t n, void *dst, size_t row_size,
			    struct edgeq_error *err);

/*
 * Change the resident budget while decoding (any thread; the pressure
 * monitor calls it). It takes effect at the next layer boundary: shrinking
 * frees the resident layers furthest from use; growing makes layers resident
 * as they are next read, so no token waits for it. When memory for a new
 * buffer cannot be had, the smaller budget is kept (see the status).
 */
void edgeq_stream_set_budget(struct edgeq_stream *s, uint64_t bytes);

struct edgeq_stream_status {
	enum edgeq_weights_mode mode;
	bool io_uring;	    /* false: pread pool (fallback says why) */
	bool direct;	    /* O_DIRECT reads */
	bool fixed_buffers; /* READ_FIXED into registered buffers */
	uint32_t align;	    /* O_DIRECT alignment in use */
	uint32_t prefetch;
	uint32_t layers_resident, layers_streamed;
	uint64_t model_bytes;	 /* tensor bytes in the file */
	uint64_t budget;	 /* the budget in force */
	uint64_t resident_bytes; /* buffers held now, pool included */
	uint64_t pool_bytes;
	uint64_t bytes_read, reads, retries;
	uint64_t stalls;	 /* layer_begin that had to wait for a read */
	uint64_t alloc_failures; /* budget growth refused for lack of memory */
	uint64_t prefaulted; /* resident bytes faulted in ahead of the reads */
	char fallback[256];  /* "" or why io_uring/O_DIRECT are not used */
	char why[160];	     /* why this mode ("requested" unless auto) */
};

void edgeq_stream_status(struct edgeq_stream *s,
			 struct edgeq_stream_status *st);
const char *edgeq_weights_mode_name(enum edgeq_weights_mode m);
/* "mmap", "preload", "stream", "auto" -> mode; -EINVAL otherwise. */
int edgeq_weights_mode_parse(const char *name, enum edgeq_weights_mode *m);

/* The status of a loaded model's weights (mmap: mode and model_bytes only). */
int edgeq_model_weights_status(const struct edgeq_model *m,
			       struct edgeq_stream_status *st);
/* edgeq_stream_set_budget() for a model; -EOPNOTSUPP in mmap mode. */
int edgeq_model_set_weights_budget(struct edgeq_model *m, uint64_t bytes);

/* ---- memory: what the budget is derived from */

struct edgeq_mem_info {
	uint64_t mem_available; /* /proc/meminfo MemAvailable (never MemFree) */
	uint64_t cg_limit;	/* tightest memory.max/high/limit_in_bytes on
				   the path to the root; UINT64_MAX: none */
	uint64_t cg_usage;  /* the cgroup's usage less inactive file pages */
	int cg_version;	    /* 0: no memory controller found, 1, 2 */
	char cg_path[256];  /* the cgroup directory that was read */
	uint64_t available; /* min(MemAvailable, limit - usage) */
};

/* Read /proc and /sys (under @root, "" or NULL for the real ones). */
int edgeq_mem_probe(const char *root, struct edgeq_mem_info *mi);
/* The default budget: what is available less @reserve for the KV cache,
 * activations and the runtime, at least 0. */
uint64_t edgeq_weights_default_budget(const struct edgeq_mem_info *mi,
				      uint64_t reserve);
/* The mode for @budget: preload when the model fits (mmap when the file
 * cannot take O_DIRECT), stream otherwise. */
enum edgeq_weights_mode edgeq_weights_choose_mode(uint64_t budget,
						  uint64_t model_bytes,
						  bool direct_ok);
/*
 * The same with the page cache in view: @cached is the share (0..1) of the
 * model's bytes already in the page cache, negative when unknown. A model
 * that fits and is at least EDGEQ_WEIGHTS_WARM resident costs mmap nothing
 * (its faults are minor), so mmap; cold, preload; too big, stream. @why
 * (@len bytes, may be NULL) says which rule decided.
 */
#define EDGEQ_WEIGHTS_WARM 0.9
enum edgeq_weights_mode edgeq_weights_choose(uint64_t budget,
					     uint64_t model_bytes,
					     bool direct_ok, double cached,
					     char *why, size_t len);
/*
 * The share of [@off, @off + @len) of @fd that is in the page cache,
 * estimated from up to @samples pages spread evenly over the range
 * (mincore on a mapping of the file; nothing is read). 0 or -errno.
 */
int edgeq_file_cached_share(int fd, uint64_t off, uint64_t len,
			    unsigned int samples, double *share);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_STREAM_H */
