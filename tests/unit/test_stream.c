// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The weight streamer on a synthetic file: every mode, with and without
 * io_uring, serves exactly the file's bytes; injected faults (short reads,
 * EIO, no O_DIRECT, ENOMEM while growing) and a file truncated, modified or
 * replaced while running give the documented behaviour; the budget shrinks
 * and grows while layers are being served.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/stream.h>

#include "stream/sio.h"

#define N_LAYERS 6
#define PER_LAYER 5
#define ROW 96
#define VOCAB 300

struct fixture {
	char dir[256];
	char path[300];
	uint8_t *data;
	size_t size;
	struct edgeq_stream_extent ext[N_LAYERS * PER_LAYER + 3];
	size_t n_ext;
	uint64_t model_bytes;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void add(struct fixture *f, uint64_t *off, uint64_t size, int layer)
{
	struct edgeq_stream_extent *e = &f->ext[f->n_ext++];

	*off = (*off + 31) & ~31ull; /* GGUF's default alignment */
	e->offset = *off;
	e->size = size;
	e->layer = layer;
	*off += size;
	f->model_bytes += size;
}

/* A GGUF-like file: a header, the embedding, layers of mixed tensor sizes
 * (a few small "norms", large matrices), the global tensors at the end. */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("EDGEQ_TEST_TMP");
	uint64_t off = 1000;
	int fd;

	snprintf(f->dir, sizeof(f->dir), "%s/stream.XXXXXX",
		 tmp && *tmp ? tmp : "/var/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/model.bin", f->dir);
	add(f, &off, (uint64_t)VOCAB * ROW, EDGEQ_STREAM_EMBED);
	for (int l = 0; l < N_LAYERS; l++) {
		add(f, &off, 1024, l);
		add(f, &off, 300000 + 4096 * (uint64_t)l, l);
		add(f, &off, 2100000, l); /* more than one read chunk */
		add(f, &off, 1024, l);
		add(f, &off, 77777, l);
	}
	add(f, &off, 2048, EDGEQ_STREAM_GLOBAL);
	add(f, &off, 500000, EDGEQ_STREAM_GLOBAL);
	f->size = off + 123; /* not a multiple of the block size */
	f->data = malloc(f->size);
	for (size_t i = 0; i < f->size; i += 8) {
		uint64_t v = next_rand();

		memcpy(f->data + i, &v, f->size - i < 8 ? f->size - i : 8);
	}
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->data, f->size), (ssize_t)f->size);
	close(fd);
	*state = f;
	return 0;
}

/* Put the fixture's file back after a test that damaged it. */
static void restore(struct fixture *f)
{
	char tmp[320];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", f->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->data, f->size), (ssize_t)f->size);
	close(fd);
	assert_int_equal(rename(tmp, f->path), 0);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->path);
	rmdir(f->dir);
	free(f->data);
	free(f);
	memset(sio_faults(), 0, sizeof(struct sio_faults));
	return 0;
}

static int open_stream(struct fixture *f, enum edgeq_weights_mode mode,
		       uint64_t budget, bool uring, struct edgeq_stream **s,
		       struct edgeq_error *err)
{
	struct edgeq_stream_params p;

	edgeq_stream_params_init(&p);
	p.path = f->path;
	p.mode = mode;
	p.budget = budget;
	p.n_layers = N_LAYERS;
	p.use_io_uring = uring;
	return edgeq_stream_open(&p, f->ext, f->n_ext, s, err);
}

/* One token's pass: every layer then the global tensors, each compared
 * with the file. Returns the first error of layer_begin. */
static int pass(struct fixture *f, struct edgeq_stream *s,
		struct edgeq_error *err)
{
	for (int l = 0; l <= N_LAYERS; l++) {
		int layer = l == N_LAYERS ? EDGEQ_STREAM_GLOBAL : l;
		int ret = edgeq_stream_layer_begin(s, layer, err);

		if (ret)
			return ret;
		for (size_t i = 0; i < f->n_ext; i++) {
			const void *p;

			if (f->ext[i].layer != layer)
				continue;
			p = edgeq_stream_get(s, i);
			assert_non_null(p);
			assert_memory_equal(p, f->data + f->ext[i].offset,
					    f->ext[i].size);
		}
		edgeq_stream_layer_end(s, layer);
	}
	return 0;
}

static void check_embed(struct fixture *f, struct edgeq_stream *s)
{
	int32_t toks[4] = { 0, 299, 7, 150 };
	uint8_t rows[4 * ROW];
	struct edgeq_error err;

	assert_int_equal(edgeq_stream_embed_rows(s, toks, 4, rows, ROW, &err),
			 0);
	for (int i = 0; i < 4; i++)
		assert_memory_equal(rows + i * ROW,
				    f->data + f->ext[0].offset +
					    (size_t)toks[i] * ROW,
				    ROW);
	toks[0] = VOCAB;
	assert_int_equal(edgeq_stream_embed_rows(s, toks, 1, rows, ROW, &err),
			 -EINVAL);
}

static void run_mode(struct fixture *f, enum edgeq_weights_mode mode,
		     uint64_t budget, bool uring)
{
	struct edgeq_stream_status st;
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s;

	assert_int_equal(open_stream(f, mode, budget, uring, &s, &err), 0);
	check_embed(f, s);
	for (int t = 0; t < 3; t++)
		assert_int_equal(pass(f, s, &err), 0);
	check_embed(f, s);
	edgeq_stream_status(s, &st);
	assert_int_equal(st.mode, mode);
	assert_int_equal(st.model_bytes, f->model_bytes);
	if (mode != EDGEQ_WEIGHTS_MMAP) {
		assert_int_equal(st.io_uring, uring);
		if (!uring)
			assert_non_null(strstr(st.fallback, "pread"));
		assert_true(st.bytes_read > 0);
	}
	if (mode == EDGEQ_WEIGHTS_PRELOAD)
		assert_int_equal(st.layers_streamed, 0);
	if (mode == EDGEQ_WEIGHTS_STREAM) {
		assert_true(st.layers_streamed > 0);
		/* the pool is the floor; a layer's page rounding the slack */
		assert_true(st.resident_bytes <=
			    (budget > st.pool_bytes ? budget : st.pool_bytes) +
				    (1u << 20));
		/* every streamed layer is read again each token */
		assert_true(st.bytes_read > 2 * f->model_bytes / 3);
	}
	edgeq_stream_close(s);
}

static void test_modes_uring(void **state)
{
	struct fixture *f = *state;

	run_mode(f, EDGEQ_WEIGHTS_MMAP, 0, true);
	run_mode(f, EDGEQ_WEIGHTS_PRELOAD, 0, true);
	run_mode(f, EDGEQ_WEIGHTS_STREAM, f->model_bytes * 3 / 4, true);
	run_mode(f, EDGEQ_WEIGHTS_STREAM, 1, true); /* nothing resident */
}

static void test_modes_pread(void **state)
{
	struct fixture *f = *state;

	run_mode(f, EDGEQ_WEIGHTS_PRELOAD, 0, false);
	run_mode(f, EDGEQ_WEIGHTS_STREAM, f->model_bytes * 3 / 4, false);
	run_mode(f, EDGEQ_WEIGHTS_STREAM, 1, false);
}

static void test_env_forces_pread(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	setenv("EDGEQ_NO_IO_URING", "1", 1);
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, true, &s, NULL), 0);
	unsetenv("EDGEQ_NO_IO_URING");
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_false(st.io_uring);
	assert_non_null(strstr(st.fallback, "io_uring off by request"));
	edgeq_stream_close(s);
}

/* Drop the file's pages from the page cache (it is written and synced). */
static void make_cold(struct fixture *f)
{
	int fd = open(f->path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fdatasync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
}

static void make_warm(struct fixture *f)
{
	char buf[65536];
	int fd = open(f->path, O_RDONLY);

	assert_true(fd >= 0);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static void test_cached_share(void **state)
{
	struct fixture *f = *state;
	double share;
	int fd;

	make_warm(f);
	fd = open(f->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(edgeq_file_cached_share(fd, 1000, f->size - 1000, 64,
						 &share),
			 0);
	assert_true(share >= 0.99);
	make_cold(f);
	assert_int_equal(edgeq_file_cached_share(fd, 1000, f->size - 1000, 64,
						 &share),
			 0);
	if (share > 0.5) {
		close(fd);
		skip(); /* a file system that ignores POSIX_FADV_DONTNEED */
	}
	assert_true(share < 0.1);
	/* beyond the end: nothing to look at */
	assert_int_equal(
		edgeq_file_cached_share(fd, f->size + 1, 10, 8, &share), 0);
	close(fd);
}

static void test_choose(void **state)
{
	char why[160];

	assert_int_equal(edgeq_weights_choose(100, 200, true, 1.0, why,
					      sizeof(why)),
			 EDGEQ_WEIGHTS_STREAM);
	assert_non_null(strstr(why, "budget"));
	assert_int_equal(edgeq_weights_choose(200, 200, true, 0.95, why,
					      sizeof(why)),
			 EDGEQ_WEIGHTS_MMAP);
	assert_non_null(strstr(why, "page cache"));
	assert_int_equal(edgeq_weights_choose(200, 200, true, 0.2, why,
					      sizeof(why)),
			 EDGEQ_WEIGHTS_PRELOAD);
	assert_non_null(strstr(why, "cold"));
	assert_int_equal(edgeq_weights_choose(200, 200, true, -1, NULL, 0),
			 EDGEQ_WEIGHTS_PRELOAD);
	assert_int_equal(edgeq_weights_choose(200, 200, false, 0, why,
					      sizeof(why)),
			 EDGEQ_WEIGHTS_MMAP);
	assert_non_null(strstr(why, "O_DIRECT"));
}

/* auto: warm and fitting -> mmap, cold -> preload, too big -> stream;
 * the same bytes in each */
static void test_auto_mode(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;
	double share;
	int fd;

	make_warm(f);
	assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_AUTO, 4ull << 30, true,
				     &s, NULL),
			 0);
	edgeq_stream_status(s, &st);
	assert_int_equal(st.mode, EDGEQ_WEIGHTS_MMAP);
	assert_true(strstr(st.why, "page cache") || !st.direct);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_close(s);

	make_cold(f);
	fd = open(f->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(edgeq_file_cached_share(fd, 0, f->size, 64, &share),
			 0);
	close(fd);
	assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_AUTO, 4ull << 30, true,
				     &s, NULL),
			 0);
	edgeq_stream_status(s, &st);
	if (share > 0.5) {
		/* tmpfs and the like keep the pages: still warm, still mmap */
		assert_int_equal(st.mode, EDGEQ_WEIGHTS_MMAP);
	} else if (st.direct) {
		assert_int_equal(st.mode, EDGEQ_WEIGHTS_PRELOAD);
		assert_non_null(strstr(st.why, "cold"));
	} else {
		assert_int_equal(st.mode, EDGEQ_WEIGHTS_MMAP);
	}
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_close(s);

	make_warm(f);
	assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_AUTO, f->model_bytes / 3,
				     true, &s, NULL),
			 0);
	edgeq_stream_status(s, &st);
	assert_int_equal(st.mode, EDGEQ_WEIGHTS_STREAM);
	assert_non_null(strstr(st.why, "budget"));
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_close(s);

	/* a requested mode says so */
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_string_equal(st.why, "requested");
	edgeq_stream_close(s);
}

/* preload faults its buffers in from a second thread (the last first),
 * ahead of the reads; the bytes are the same with and without it, and
 * closing while it runs is safe */
static void test_preload_prefaults(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	for (int i = 0; i < 5; i++) { /* close at once, racing the thread */
		assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true,
					     &s, NULL),
				 0);
		edgeq_stream_close(s);
	}
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	for (int i = 0; i < 400; i++) {
		edgeq_stream_status(s, &st);
		if (st.prefaulted >= st.resident_bytes)
			break;
		usleep(5000);
	}
	/* MADV_POPULATE_WRITE is Linux 5.14; the floor is 5.15 */
	assert_int_equal(st.prefaulted, st.resident_bytes);
	check_embed(f, s);
	edgeq_stream_close(s);

	setenv("EDGEQ_WEIGHTS_POPULATE", "0", 1);
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	unsetenv("EDGEQ_WEIGHTS_POPULATE");
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_int_equal(st.prefaulted, 0);
	edgeq_stream_close(s);
}

static void test_short_reads_retried(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	for (int uring = 0; uring < 2; uring++) {
		sio_faults()->short_reads = 20;
		assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, uring,
					     &s, NULL),
				 0);
		assert_int_equal(pass(f, s, NULL), 0);
		assert_int_equal(pass(f, s, NULL), 0);
		edgeq_stream_status(s, &st);
		assert_int_equal(sio_faults()->short_reads, 0);
		assert_true(st.retries >= 20);
		edgeq_stream_close(s);
	}
}

static void test_eio_retried(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	sio_faults()->eio = 3; /* fewer than SIO_MAX_TRIES on any one read */
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_true(st.retries >= 3);
	edgeq_stream_close(s);
}

static void test_eio_persistent_is_error(void **state)
{
	struct fixture *f = *state;
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s;
	int ret;

	for (int uring = 0; uring < 2; uring++) {
		assert_int_equal(open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, uring,
					     &s, &err),
				 0);
		sio_faults()->eio = 1000000;
		ret = pass(f, s, &err);
		assert_int_equal(ret, -EIO);
		assert_non_null(strstr(err.msg, "failed after"));
		/* once the disk heals, the same layer reads again */
		sio_faults()->eio = 0;
		assert_int_equal(pass(f, s, &err), 0);
		edgeq_stream_close(s);
	}
}

static void test_no_direct_falls_back(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	sio_faults()->no_direct = 1;
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_false(st.direct);
	assert_non_null(strstr(st.fallback, "O_DIRECT"));
	assert_int_equal(pass(f, s, NULL), 0);
	check_embed(f, s);
	edgeq_stream_close(s);
	/* a real O_DIRECT open on this file system reports its alignment */
	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	edgeq_stream_status(s, &st);
	if (st.direct)
		assert_true(st.align >= 512 && !(st.align & (st.align - 1)));
	edgeq_stream_close(s);
}

static void test_truncated_is_error(void **state)
{
	struct fixture *f = *state;
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s;

	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, true, &s, &err), 0);
	assert_int_equal(pass(f, s, &err), 0);
	assert_int_equal(truncate(f->path, (off_t)(f->size / 2)), 0);
	assert_int_equal(pass(f, s, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "truncated"));
	edgeq_stream_close(s);
	/* restore the fixture */
	restore(f);
}

static void test_modified_is_error(void **state)
{
	struct fixture *f = *state;
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s;
	struct timespec ts[2] = { { 0, UTIME_NOW }, { 12345, 0 } };
	int fd;

	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, false, &s, &err), 0);
	assert_int_equal(pass(f, s, &err), 0);
	fd = open(f->path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "XXXX", 4, (off_t)f->ext[5].offset), 4);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	assert_int_equal(pass(f, s, &err), -ESTALE);
	assert_non_null(strstr(err.msg, "modified"));
	edgeq_stream_close(s);
	restore(f);
}

static void test_replaced_keeps_old_file(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream *s;
	char other[320];
	int fd;

	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, true, &s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	/* a new file renamed over the path: the open file is unchanged */
	snprintf(other, sizeof(other), "%s.new", f->path);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "short", 5), 5);
	close(fd);
	assert_int_equal(rename(other, f->path), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_close(s);
	restore(f);
}

static void test_budget_shrink_grow(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status a, b, c;
	struct edgeq_stream *s;

	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_PRELOAD, 0, true, &s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &a);
	assert_int_equal(a.layers_streamed, 0);
	/* memory pressure: a third of the model */
	edgeq_stream_set_budget(s, f->model_bytes / 3);
	assert_int_equal(pass(f, s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &b);
	assert_true(b.layers_streamed > 0);
	assert_true(b.resident_bytes < a.resident_bytes);
	assert_int_equal(b.budget, f->model_bytes / 3);
	/* pressure gone: layers become resident again as they are read */
	edgeq_stream_set_budget(s, 1ull << 40);
	assert_int_equal(pass(f, s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &c);
	assert_int_equal(c.layers_streamed, 0);
	assert_int_equal(c.alloc_failures, 0);
	edgeq_stream_close(s);
}

static void test_enomem_keeps_smaller_budget(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_status st;
	struct edgeq_stream *s;

	assert_int_equal(
		open_stream(f, EDGEQ_WEIGHTS_STREAM, 1, true, &s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	sio_faults()->enomem = 1;
	edgeq_stream_set_budget(s, 1ull << 40);
	assert_int_equal(pass(f, s, NULL), 0);
	assert_int_equal(pass(f, s, NULL), 0);
	edgeq_stream_status(s, &st);
	assert_int_equal(st.alloc_failures, 1);
	assert_true(st.budget < (1ull << 40));
	assert_true(st.layers_streamed > 0);
	edgeq_stream_close(s);
}

static void test_bad_extents(void **state)
{
	struct fixture *f = *state;
	struct edgeq_stream_params p;
	struct edgeq_stream_extent e = { f->size - 10, 11, 0 };
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s = NULL;

	edgeq_stream_params_init(&p);
	p.path = f->path;
	p.n_layers = 1;
	assert_int_equal(edgeq_stream_open(&p, &e, 1, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "beyond the end"));
	e.offset = 0;
	e.layer = 5;
	assert_int_equal(edgeq_stream_open(&p, &e, 1, &s, &err), -EINVAL);
	p.path = "/nonexistent/model.gguf";
	assert_int_equal(edgeq_stream_open(&p, &e, 1, &s, &err), -ENOENT);
	assert_null(s);
}

static void test_mode_names(void **state)
{
	enum edgeq_weights_mode m;

	assert_int_equal(edgeq_weights_mode_parse("stream", &m), 0);
	assert_int_equal(m, EDGEQ_WEIGHTS_STREAM);
	assert_int_equal(edgeq_weights_mode_parse("preload", &m), 0);
	assert_int_equal(m, EDGEQ_WEIGHTS_PRELOAD);
	assert_int_equal(edgeq_weights_mode_parse("mmap", &m), 0);
	assert_int_equal(edgeq_weights_mode_parse("fast", &m), -EINVAL);
	assert_string_equal(edgeq_weights_mode_name(EDGEQ_WEIGHTS_MMAP),
			    "mmap");
}

static void test_fault_spec(void **state)
{
	struct sio_faults fl;

	assert_int_equal(
		sio_faults_parse("short=3,eio=2,nodirect,enomem=1", &fl), 0);
	assert_int_equal(fl.short_reads, 3);
	assert_int_equal(fl.eio, 2);
	assert_int_equal(fl.no_direct, 1);
	assert_int_equal(fl.enomem, 1);
	assert_int_equal(sio_faults_parse("bogus=1", &fl), -EINVAL);
	assert_int_equal(sio_faults_parse("eio=-1", &fl), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes_uring),
		cmocka_unit_test(test_modes_pread),
		cmocka_unit_test(test_env_forces_pread),
		cmocka_unit_test(test_cached_share),
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_auto_mode),
		cmocka_unit_test(test_preload_prefaults),
		cmocka_unit_test(test_short_reads_retried),
		cmocka_unit_test(test_eio_retried),
		cmocka_unit_test(test_eio_persistent_is_error),
		cmocka_unit_test(test_no_direct_falls_back),
		cmocka_unit_test(test_truncated_is_error),
		cmocka_unit_test(test_modified_is_error),
		cmocka_unit_test(test_replaced_keeps_old_file),
		cmocka_unit_test(test_budget_shrink_grow),
		cmocka_unit_test(test_enomem_keeps_smaller_budget),
		cmocka_unit_test(test_bad_extents),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_fault_spec),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
