// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stream-check: drive the weight streamer over any file as if it were a
 * model of N equal layers, without a decoder. Each "token" walks every
 * layer in execution order and folds the bytes into a checksum, which must
 * equal the checksum of the file read plainly. Used by the cgroup, fallback
 * and fault tests and by tools/bench-load.
 *
 *   stream-check FILE [--layers N] [--mode mmap|preload|stream|auto]
 *                [--budget BYTES|NN%] [--tokens T] [--prefetch K]
 *                [--depth D] [--no-io-uring]
 *
 * Prints one line of key=value figures; exit 0 when every token matched,
 * 1 on a mismatch, 2 on usage, 3 on a streamer error (message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <edgeq/stream.h>

#define HEADER 4096 /* bytes before the first tensor, like a GGUF header */
#define EMBED_ROW 1152

static uint64_t fold(uint64_t h, const void *p, uint64_t n)
{
	const unsigned char *b = p;
	uint64_t i = 0;

	/* FNV-1a over 8-byte words, bytes at the tail */
	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int plain_sums(const char *path, const struct edgeq_stream_extent *e,
		      size_t n, uint64_t *sum)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t h = 0xcbf29ce484222325ull;
	char *buf = NULL;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		if (e[i].layer == EDGEQ_STREAM_EMBED)
			continue;
		buf = realloc(buf, e[i].size);
		if (!buf || pread(fd, buf, e[i].size, (off_t)e[i].offset) !=
				    (ssize_t)e[i].size) {
			free(buf);
			close(fd);
			return -EIO;
		}
		h = fold(h, buf, e[i].size);
	}
	free(buf);
	close(fd);
	*sum = h;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: stream-check FILE [--layers N] [--mode M] [--budget B|NN%%]\n"
		"                    [--tokens T] [--prefetch K] [--no-io-uring]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "layers", required_argument, NULL, 'l' },
		{ "mode", required_argument, NULL, 'm' },
		{ "budget", required_argument, NULL, 'b' },
		{ "tokens", required_argument, NULL, 't' },
		{ "prefetch", required_argument, NULL, 'k' },
		{ "depth", required_argument, NULL, 'd' },
		{ "no-io-uring", no_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	struct edgeq_stream_params p;
	struct edgeq_stream_status st;
	struct edgeq_stream_extent *ext;
	struct edgeq_error err = { 0 };
	struct edgeq_stream *s;
	const char *budget = NULL;
	uint64_t want = 0, t0, t_open, t_first = 0, t_end;
	uint64_t span, per, off, wait_ns = 0;
	unsigned layers = 16, tokens = 3;
	struct stat sb;
	size_t n = 0;
	int c, bad = 0;

	edgeq_stream_params_init(&p);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			layers = (unsigned)atoi(optarg);
			break;
		case 'm':
			if (edgeq_weights_mode_parse(optarg, &p.mode))
				usage();
			break;
		case 'b':
			budget = optarg;
			break;
		case 't':
			tokens = (unsigned)atoi(optarg);
			break;
		case 'k':
			p.prefetch = (uint32_t)atoi(optarg);
			break;
		case 'd':
			p.queue_depth = (uint32_t)atoi(optarg);
			break;
		case 'U':
			p.use_io_uring = false;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || !layers || layers > 4096)
		usage();
	p.path = argv[optind];
	p.n_layers = layers;
	if (stat(p.path, &sb) || (uint64_t)sb.st_size < HEADER + 64 * 1024) {
		fprintf(stderr, "stream-check: %s: missing or too small\n",
			p.path);
		return 2;
	}
	/* header | embedding (1/16) | layers | global (1/32) */
	span = (uint64_t)sb.st_size - HEADER;
	ext = calloc(2 * layers + 3, sizeof(*ext));
	off = HEADER;
	ext[n++] = (struct edgeq_stream_extent){
		off, span / 16 / EMBED_ROW * EMBED_ROW, EDGEQ_STREAM_EMBED
	};
	off += span / 16;
	per = (span - span / 16 - span / 32) / layers;
	for (unsigned l = 0; l < layers; l++) {
		/* a small "norm" and the rest of the layer */
		ext[n++] =
			(struct edgeq_stream_extent){ off, 8192, (int32_t)l };
		ext[n++] = (struct edgeq_stream_extent){ off + 8192,
							 per - 8192 - 32,
							 (int32_t)l };
		off += per;
	}
	ext[n++] = (struct edgeq_stream_extent){ off,
						 (uint64_t)sb.st_size - off,
						 EDGEQ_STREAM_GLOBAL };
	if (budget &&
	    edgeq_parse_size(budget, (uint64_t)sb.st_size, &p.budget)) {
		fprintf(stderr, "stream-check: bad budget '%s'\n", budget);
		return 2;
	}
	if (plain_sums(p.path, ext, n, &want)) {
		fprintf(stderr, "stream-check: cannot read %s\n", p.path);
		return 2;
	}

	t0 = edgeq_now_ns();
	if (edgeq_stream_open(&p, ext, n, &s, &err)) {
		fprintf(stderr, "stream-check: %s\n", err.msg);
		return 3;
	}
	t_open = edgeq_now_ns();
	for (unsigned t = 0; t < tokens; t++) {
		uint64_t h = 0xcbf29ce484222325ull;
		int32_t tok = (int32_t)(t * 7919 % 1000);
		char row[EMBED_ROW];

		if (edgeq_stream_embed_rows(s, &tok, 1, row, EMBED_ROW, &err)) {
			fprintf(stderr, "stream-check: %s\n", err.msg);
			return 3;
		}
		for (unsigned l = 0; l <= layers; l++) {
			int layer = l == layers ? EDGEQ_STREAM_GLOBAL : (int)l;

			uint64_t w0 = edgeq_now_ns();

			if (edgeq_stream_layer_begin(s, layer, &err)) {
				fprintf(stderr, "stream-check: %s\n", err.msg);
				edgeq_stream_close(s);
				return 3;
			}
			wait_ns += edgeq_now_ns() - w0;
			for (size_t i = 0; i < n; i++)
				if (ext[i].layer == layer)
					h = fold(h, edgeq_stream_get(s, i),
						 ext[i].size);
			edgeq_stream_layer_end(s, layer);
		}
		if (!t)
			t_first = edgeq_now_ns();
		bad += h != want;
	}
	t_end = edgeq_now_ns();
	edgeq_stream_status(s, &st);
	printf("mode=%s io_uring=%d direct=%d fixed_buffers=%d align=%u "
	       "budget=%llu resident=%llu pool=%llu layers_resident=%u "
	       "layers_streamed=%u open_s=%.3f first_s=%.3f wait_s=%.3f tok_s=%.2f "
	       "bytes_read=%llu retries=%llu stalls=%llu mismatches=%d "
	       "peak_rss=%llu fallback=\"%s\"\n",
	       edgeq_weights_mode_name(st.mode), st.io_uring, st.direct,
	       st.fixed_buffers, st.align, (unsigned long long)st.budget,
	       (unsigned long long)st.resident_bytes,
	       (unsigned long long)st.pool_bytes, st.layers_resident,
	       st.layers_streamed, (t_open - t0) / 1e9, (t_first - t0) / 1e9,
	       wait_ns / 1e9,
	       tokens > 1 ? (tokens - 1) / ((t_end - t_first) / 1e9) : 0.0,
	       (unsigned long long)st.bytes_read,
	       (unsigned long long)st.retries, (unsigned long long)st.stalls,
	       bad, (unsigned long long)edgeq_peak_rss(), st.fallback);
	edgeq_stream_close(s);
	free(ext);
	return bad ? 1 : 0;
}
