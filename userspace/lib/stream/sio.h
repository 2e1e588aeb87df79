/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sio: the weight streamer's read engine (internal to libedgeq).
 *
 * One struct sio per engine reads one model file. It owns one io_uring (fixed
 * file, registered buffers, batched submission) and a completion thread, or,
 * when io_uring cannot be used, a small pread thread pool. Requests are file
 * ranges; sio retries short reads and transient errors itself and calls the
 * owner's done() once per request, from its own thread, with 0 or -errno:
 *
 *   -EIO      the read kept failing after SIO_MAX_TRIES tries
 *   -ENODATA  the file ended before the range (truncated while running)
 *   -ESTALE   the file was modified while it was being read
 *
 * O_DIRECT is used when the file system takes it; sio_align() then gives the
 * alignment every offset, length and buffer address must have.
 */
#ifndef EDGEQ_STREAM_SIO_H
#define EDGEQ_STREAM_SIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <edgeq/edgeq.h>

#define SIO_MAX_TRIES 4

struct sio;

struct sio_req {
	uint64_t off;  /* file offset (aligned when direct) */
	uint32_t len;  /* bytes wanted (aligned when direct) */
	uint32_t want; /* bytes the file holds of [off, off+len) */
	void *buf;
	int buf_index; /* registered buffer index, or -1 */
	void *owner;   /* for the done() callback */
	uint64_t user; /* free for the owner */
	/* sio's own state */
	uint32_t done;
	int tries;
	struct sio_req *next;
	struct iovec iov;
};

typedef void (*sio_done_fn)(void *user, struct sio_req *req, int res);

struct sio_params {
	const char *path;
	bool use_io_uring; /* false: pread pool */
	bool direct;	   /* try O_DIRECT */
	unsigned depth;	   /* reads in flight (ring size) */
	unsigned threads;  /* pread pool size */
	sio_done_fn done;
	void *user;
};

/* Faults the test hook injects (EDGEQ_STREAM_FAULTS, see sio_faults_parse). */
struct sio_faults {
	int short_reads; /* this many completions come back half done */
	int eio;	 /* this many completions fail with EIO */
	int no_direct;	 /* O_DIRECT open fails with EINVAL */
	int enomem;	 /* this many buffer allocations fail (stream.c) */
};

int sio_open(const struct sio_params *p, struct sio **out,
	     struct edgeq_error *err);
void sio_close(struct sio *s);

/* Register @n buffers for READ_FIXED; a failure only means plain reads. */
int sio_register_buffers(struct sio *s, const struct iovec *iov, unsigned n);

/* Queue @n requests (a batch: one submission) */
void sio_submit(struct sio *s, struct sio_req **reqs, unsigned n);

/* Synchronous read of a small range through the buffered descriptor. */
int sio_pread_small(struct sio *s, void *buf, size_t len, uint64_t off);
/* Ask for @len bytes at @off in the page cache ahead of sio_pread_small()
 * (POSIX_FADV_WILLNEED: the reads start now, several at once). */
void sio_readahead(struct sio *s, uint64_t off, size_t len);

/* Re-check the file: -ENODATA when shorter than at open, -ESTALE when
 * modified in place, 0 otherwise. */
int sio_check_file(struct sio *s);

uint32_t sio_align(const struct sio *s);
uint64_t sio_file_size(const struct sio *s);
bool sio_is_direct(const struct sio *s);
bool sio_is_uring(const struct sio *s);
bool sio_has_fixed_buffers(const struct sio *s);
/* Why io_uring or O_DIRECT are not used ("" when they are). */
const char *sio_fallback_reason(const struct sio *s);
void sio_counters(const struct sio *s, uint64_t *bytes, uint64_t *reads,
		  uint64_t *retries);

/* Parse "short=N,eio=N,nodirect,enomem=N"; unknown keys -EINVAL. */
int sio_faults_parse(const char *spec, struct sio_faults *f);
/* The process-wide faults armed from the environment or by a test. */
struct sio_faults *sio_faults(void);
bool sio_fault_take(int *counter);

#endif
