// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The weight streamer's read engine: io_uring with a fixed file, registered
 * buffers and batched submission, or a pread thread pool when io_uring is
 * not there (ENOSYS under qemu-user or an old kernel, EPERM from a seccomp
 * profile or kernel.io_uring_disabled). Short reads and transient errors are
 * retried here; the owner only ever sees a whole range or a clear error.
 *
 * liburing 2.1 and Linux 5.15 are the floor: features newer than that are
 * probed at run time (io_uring_get_probe_ring) and have a fallback.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "stream/sio.h"

/* Older headers lack the DIO alignment query (Linux 6.1). */
#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif
#define STATX_DIO_MEM_ALIGN_OFF 0x98	/* __u32 stx_dio_mem_align */
#define STATX_DIO_OFFSET_ALIGN_OFF 0x9c /* __u32 stx_dio_offset_align */

#define SIO_MIN_ALIGN 4096u
#define SIO_STOP_TAG 0

struct sio {
	struct sio_params p;
	int fd;	 /* the read descriptor: O_DIRECT when direct */
	int bfd; /* buffered descriptor for small and fallback reads */
	bool direct;
	bool uring;
	bool fixed_file;
	bool fixed_bufs;
	bool have_read; /* IORING_OP_READ (5.6); else READV */
	bool have_read_fixed;
	uint32_t align;
	uint32_t dio_align; /* what the file system asked for */
	uint64_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char reason[256];

	pthread_mutex_t lock;
	pthread_cond_t cond;  /* work for the pool, quiescence for close */
	struct sio_req *head; /* requests not yet handed to the kernel */
	struct sio_req *tail;
	unsigned inflight;
	bool stop;
	struct io_uring ring;
	pthread_t *threads;
	unsigned n_threads;

	atomic_uint_fast64_t bytes, reads, retries;
};

static pthread_once_t faults_once = PTHREAD_ONCE_INIT;
static struct sio_faults faults;

int sio_faults_parse(const char *spec, struct sio_faults *f)
{
	struct sio_faults n = { 0 };
	char buf[256], *save = NULL, *tok;

	if (!spec)
		return -EINVAL;
	if (strlen(spec) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		long v = 1;
		int *dst;

		if (eq) {
			char *end;

			*eq = '\0';
			v = strtol(eq + 1, &end, 10);
			if (*end || v < 0 || v > 1000000)
				return -EINVAL;
		}
		if (!strcmp(tok, "short"))
			dst = &n.short_reads;
		else if (!strcmp(tok, "eio"))
			dst = &n.eio;
		else if (!strcmp(tok, "nodirect"))
			dst = &n.no_direct;
		else if (!strcmp(tok, "enomem"))
			dst = &n.enomem;
		else
			return -EINVAL;
		*dst = (int)v;
	}
	*f = n;
	return 0;
}

static void faults_from_env(void)
{
	const char *e = getenv("EDGEQ_STREAM_FAULTS");

	if (e && *e)
		sio_faults_parse(e, &faults); /* a bad spec arms nothing */
}

struct sio_faults *sio_faults(void)
{
	pthread_once(&faults_once, faults_from_env);
	return &faults;
}

bool sio_fault_take(int *counter)
{
	int v = __atomic_load_n(counter, __ATOMIC_RELAXED);

	while (v > 0) {
		if (__atomic_compare_exchange_n(counter, &v, v - 1, false,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/* Block size of the device under @st: the partition's or its disk's queue. */
static uint32_t blockdev_lbs(dev_t dev)
{
	static const char *const fmt[] = {
		"/sys/dev/block/%u:%u/queue/logical_block_size",
		"/sys/dev/block/%u:%u/../queue/logical_block_size",
	};
	char path[128];

	for (unsigned i = 0; i < 2; i++) {
		unsigned long v;
		FILE *f;

		snprintf(path, sizeof(path), fmt[i], major(dev), minor(dev));
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%lu", &v) == 1 && v >= 512 && v <= 65536 &&
		    !(v & (v - 1))) {
			fclose(f);
			return (uint32_t)v;
		}
		fclose(f);
	}
	return 0;
}

static uint32_t dio_alignment(int fd, dev_t dev)
{
	struct statx sx;
	uint32_t mem = 0, off = 0;

	memset(&sx, 0, sizeof(sx));
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) &&
	    (sx.stx_mask & STATX_DIOALIGN)) {
		const unsigned char *b = (const unsigned char *)&sx;

		memcpy(&mem, b + STATX_DIO_MEM_ALIGN_OFF, sizeof(mem));
		memcpy(&off, b + STATX_DIO_OFFSET_ALIGN_OFF, sizeof(off));
		if (off && mem)
			return off > mem ? off : mem;
		/* 0 means: this file cannot take O_DIRECT */
		return 0;
	}
	off = blockdev_lbs(dev);
	return off ? off : SIO_MIN_ALIGN;
}

static const char *uring_reason(int e, char *buf, size_t len)
{
	int disabled = -1;
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");

	if (f) {
		if (fscanf(f, "%d", &disabled) != 1)
			disabled = -1;
		fclose(f);
	}
	if (e == ENOSYS)
		snprintf(
			buf, len,
			"io_uring_setup: not implemented (kernel without io_uring, or qemu-user)");
	else if (e == EPERM && disabled > 0)
		snprintf(
			buf, len,
			"io_uring_setup: not permitted (kernel.io_uring_disabled=%d)",
			disabled);
	else if (e == EPERM)
		snprintf(
			buf, len,
			"io_uring_setup: not permitted (seccomp profile or missing privilege)");
	else
		snprintf(buf, len, "io_uring_setup: %s", strerror(e));
	return buf;
}

static void append_reason(struct sio *s, const char *what)
{
	size_t n = strlen(s->reason);

	snprintf(s->reason + n, sizeof(s->reason) - n, "%s%s", n ? "; " : "",
		 what);
}

/* ---- request bookkeeping (under s->lock) */

static void push_locked(struct sio *s, struct sio_req *r)
{
	r->next = NULL;
	if (s->tail)
		s->tail->next = r;
	else
		s->head = r;
	s->tail = r;
}

static struct sio_req *pop_locked(struct sio *s)
{
	struct sio_req *r = s->head;

	if (r) {
		s->head = r->next;
		if (!s->head)
			s->tail = NULL;
	}
	return r;
}

static void prep_locked(struct sio *s, struct io_uring_sqe *sqe,
			struct sio_req *r)
{
	char *buf = (char *)r->buf + r->done;
	unsigned len = r->len - r->done;
	uint64_t off = r->off + r->done;
	int fd = s->fixed_file ? 0 : s->fd;

	if (s->fixed_bufs && s->have_read_fixed && r->buf_index >= 0) {
		io_uring_prep_read_fixed(sqe, fd, buf, len, off, r->buf_index);
	} else if (s->have_read) {
		io_uring_prep_read(sqe, fd, buf, len, off);
	} else {
		r->iov.iov_base = buf;
		r->iov.iov_len = len;
		io_uring_prep_readv(sqe, fd, &r->iov, 1, off);
	}
	if (s->fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, r);
}

/* Hand queued requests to the ring, up to the depth, in one submission. */
static void fill_locked(struct sio *s)
{
	unsigned n = 0;

	while (s->head && s->inflight < s->p.depth) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

		if (!sqe)
			break;
		prep_locked(s, sqe, pop_locked(s));
		s->inflight++;
		n++;
	}
	if (n)
		io_uring_submit(&s->ring);
}

static void requeue(struct sio *s, struct sio_req *r)
{
	pthread_mutex_lock(&s->lock);
	push_locked(s, r);
	if (s->uring)
		fill_locked(s);
	else
		pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static bool file_shrunk(struct sio *s, uint64_t end)
{
	struct stat st;

	return fstat(s->fd, &st) || (uint64_t)st.st_size < end;
}

/* One completion: retry what can be retried, else report once. */
static void complete(struct sio *s, struct sio_req *r, int res)
{
	struct sio_faults *f = sio_faults();

	atomic_fetch_add(&s->reads, 1);
	if (res >= (int)(2 * s->align) && sio_fault_take(&f->short_reads))
		res = (res / 2) & ~(int)(s->align - 1);
	if (res >= 0 && sio_fault_take(&f->eio))
		res = -EIO;

	if (res == -EAGAIN || res == -EINTR) {
		requeue(s, r);
		return;
	}
	if (res < 0) {
		atomic_fetch_add(&s->retries, 1);
		if (++r->tries < SIO_MAX_TRIES) {
			requeue(s, r);
			return;
		}
		s->p.done(s->p.user, r, res == -ENOMEM ? -ENOMEM : -EIO);
		return;
	}
	if (res == 0 && r->done < r->want) {
		/* end of file before the range: the file got shorter */
		if (file_shrunk(s, r->off + r->want) ||
		    ++r->tries >= SIO_MAX_TRIES) {
			s->p.done(s->p.user, r, -ENODATA);
			return;
		}
		requeue(s, r);
		return;
	}
	r->done += (uint32_t)res;
	atomic_fetch_add(&s->bytes, (uint64_t)res);
	if (r->done >= r->want) {
		s->p.done(s->p.user, r, 0);
		return;
	}
	/* short read: go on from the last aligned byte */
	atomic_fetch_add(&s->retries, 1);
	if (s->direct)
		r->done &= ~(s->align - 1);
	requeue(s, r);
}

static void *uring_thread(void *arg)
{
	struct sio *s = arg;

	for (;;) {
		struct io_uring_cqe *cqe;
		struct sio_req *r;
		int ret, res;

		ret = io_uring_wait_cqe(&s->ring, &cqe);
		if (ret == -EINTR || ret == -EAGAIN)
			continue;
		if (ret < 0)
			break; /* the ring is broken: close() will see inflight */
		r = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
		if (!r)
			break; /* the stop NOP */
		pthread_mutex_lock(&s->lock);
		s->inflight--;
		pthread_mutex_unlock(&s->lock);
		complete(s, r, res);
		pthread_mutex_lock(&s->lock);
		fill_locked(s);
		if (!s->inflight && !s->head)
			pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static void *pread_thread(void *arg)
{
	struct sio *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct sio_req *r = pop_locked(s);
		ssize_t n;

		if (!r) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		s->inflight++;
		pthread_mutex_unlock(&s->lock);
		n = pread(s->fd, (char *)r->buf + r->done, r->len - r->done,
			  (off_t)(r->off + r->done));
		complete(s, r, n < 0 ? -errno : (int)n);
		pthread_mutex_lock(&s->lock);
		s->inflight--;
		if (!s->inflight && !s->head)
			pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int uring_setup(struct sio *s)
{
	struct io_uring_probe *probe;
	int ret;

	ret = io_uring_queue_init(s->p.depth, &s->ring, 0);
	if (ret < 0)
		return ret;
	probe = io_uring_get_probe_ring(&s->ring);
	if (probe) {
		s->have_read = io_uring_opcode_supported(probe, IORING_OP_READ);
		s->have_read_fixed =
			io_uring_opcode_supported(probe, IORING_OP_READ_FIXED);
		io_uring_free_probe(probe);
	} else {
		/* before 5.6 there is no probe; READV and READ_FIXED are 5.1 */
		s->have_read = false;
		s->have_read_fixed = true;
	}
	s->fixed_file = !io_uring_register_files(&s->ring, &s->fd, 1);
	return 0;
}

static int open_file(struct sio *s, struct edgeq_error *err)
{
	struct stat st;
	int e;

	s->bfd = open(s->p.path, O_RDONLY | O_CLOEXEC);
	if (s->bfd < 0) {
		e = errno;
		return edgeq_error_set(err, e, "%s: %s", s->p.path,
				       strerror(e));
	}
	if (fstat(s->bfd, &st)) {
		e = errno;
		return edgeq_error_set(err, e, "%s: fstat: %s", s->p.path,
				       strerror(e));
	}
	s->size = (uint64_t)st.st_size;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->mtime = st.st_mtim;
	s->fd = -1;
	if (s->p.direct) {
		if (sio_fault_take(&sio_faults()->no_direct)) {
			errno = EINVAL;
		} else {
			s->fd = open(s->p.path,
				     O_RDONLY | O_DIRECT | O_CLOEXEC);
		}
		if (s->fd >= 0) {
			s->dio_align = dio_alignment(s->fd, st.st_dev);
			if (!s->dio_align) {
				close(s->fd);
				s->fd = -1;
				errno = EINVAL;
			}
		}
		if (s->fd < 0) {
			char why[96];

			snprintf(why, sizeof(why),
				 "O_DIRECT: %s; buffered reads",
				 strerror(errno));
			append_reason(s, why);
		}
	}
	if (s->fd >= 0) {
		s->direct = true;
		s->align = s->dio_align > SIO_MIN_ALIGN ? s->dio_align :
							  SIO_MIN_ALIGN;
	} else {
		s->fd = s->bfd;
		s->align = SIO_MIN_ALIGN;
		posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	return 0;
}

static bool uring_forced_off(void)
{
	const char *e = getenv("EDGEQ_NO_IO_URING");

	return e && *e && strcmp(e, "0") && strcmp(e, "false") &&
	       strcmp(e, "no") && strcmp(e, "off");
}

int sio_open(const struct sio_params *p, struct sio **out,
	     struct edgeq_error *err)
{
	struct sio *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	s->p = *p;
	if (!s->p.depth)
		s->p.depth = 32;
	if (!s->p.threads)
		s->p.threads = 4;
	s->fd = -1;
	s->bfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ret = open_file(s, err);
	if (ret)
		goto fail;

	if (!p->use_io_uring || uring_forced_off()) {
		append_reason(s, "io_uring off by request; pread thread pool");
	} else {
		ret = uring_setup(s);
		if (!ret) {
			s->uring = true;
		} else {
			char why[160];

			uring_reason(-ret, why, sizeof(why));
			append_reason(s, why);
			append_reason(s, "pread thread pool");
		}
	}
	s->n_threads = s->uring ? 1 : s->p.threads;
	s->threads = calloc(s->n_threads, sizeof(*s->threads));
	if (!s->threads) {
		ret = edgeq_error_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < s->n_threads; i++) {
		ret = -pthread_create(&s->threads[i], NULL,
				      s->uring ? uring_thread : pread_thread,
				      s);
		if (ret) {
			s->n_threads = i;
			edgeq_error_set(err, -ret,
					"cannot start a read thread: %s",
					strerror(-ret));
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	sio_close(s);
	return ret;
}

void sio_close(struct sio *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	while (s->n_threads && (s->inflight || s->head))
		pthread_cond_wait(&s->cond, &s->lock);
	s->stop = true;
	if (s->uring && s->n_threads) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

		if (sqe) {
			io_uring_prep_nop(sqe);
			io_uring_sqe_set_data(sqe, NULL);
			io_uring_submit(&s->ring);
		}
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->n_threads; i++)
		pthread_join(s->threads[i], NULL);
	if (s->uring)
		io_uring_queue_exit(&s->ring);
	if (s->fd >= 0 && s->fd != s->bfd)
		close(s->fd);
	if (s->bfd >= 0)
		close(s->bfd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->threads);
	free(s);
}

int sio_register_buffers(struct sio *s, const struct iovec *iov, unsigned n)
{
	int ret;

	if (!s->uring || !s->have_read_fixed)
		return -EOPNOTSUPP;
	ret = io_uring_register_buffers(&s->ring, iov, n);
	if (ret) {
		char why[96];

		snprintf(why, sizeof(why), "registering buffers: %s",
			 strerror(-ret));
		append_reason(s, why);
		return ret;
	}
	s->fixed_bufs = true;
	return 0;
}

void sio_submit(struct sio *s, struct sio_req **reqs, unsigned n)
{
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < n; i++) {
		struct sio_req *r = reqs[i];

		r->done = 0;
		r->tries = 0;
		if (r->off >= s->size)
			r->want = 0;
		else if (r->off + r->len > s->size)
			r->want = (uint32_t)(s->size - r->off);
		else
			r->want = r->len;
		push_locked(s, r);
	}
	if (s->uring)
		fill_locked(s);
	else
		pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int sio_pread_small(struct sio *s, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	int tries = 0;

	while (got < len) {
		ssize_t n = pread(s->bfd, (char *)buf + got, len - got,
				  (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || sio_fault_take(&sio_faults()->eio)) {
			if (++tries >= SIO_MAX_TRIES)
				return -EIO;
			atomic_fetch_add(&s->retries, 1);
			continue;
		}
		if (n == 0)
			return -ENODATA;
		got += (size_t)n;
		atomic_fetch_add(&s->bytes, (uint64_t)n);
	}
	atomic_fetch_add(&s->reads, 1);
	return 0;
}

void sio_readahead(struct sio *s, uint64_t off, size_t len)
{
	/* advice only: a failure changes no result */
	(void)posix_fadvise(s->bfd, (off_t)off, (off_t)len,
			    POSIX_FADV_WILLNEED);
}

int sio_check_file(struct sio *s)
{
	struct stat st;

	if (fstat(s->bfd, &st))
		return -errno;
	if ((uint64_t)st.st_size < s->size)
		return -ENODATA;
	if ((uint64_t)st.st_size != s->size ||
	    st.st_mtim.tv_sec != s->mtime.tv_sec ||
	    st.st_mtim.tv_nsec != s->mtime.tv_nsec)
		return -ESTALE;
	return 0;
}

uint32_t sio_align(const struct sio *s)
{
	return s->align;
}

uint64_t sio_file_size(const struct sio *s)
{
	return s->size;
}

bool sio_is_direct(const struct sio *s)
{
	return s->direct;
}

bool sio_is_uring(const struct sio *s)
{
	return s->uring;
}

bool sio_has_fixed_buffers(const struct sio *s)
{
	return s->fixed_bufs;
}

const char *sio_fallback_reason(const struct sio *s)
{
	return s->reason;
}

void sio_counters(const struct sio *s, uint64_t *bytes, uint64_t *reads,
		  uint64_t *retries)
{
	*bytes = atomic_load(&((struct sio *)s)->bytes);
	*reads = atomic_load(&((struct sio *)s)->reads);
	*retries = atomic_load(&((struct sio *)s)->retries);
}
