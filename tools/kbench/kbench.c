// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kbench: per-type matvec weight-streaming speed against the measured
 * memory read bandwidth, and a digest of kernel results for comparing
 * builds (x86-64 vs aarch64).
 *
 *   kbench [-t 1,2] [-T Q4_0,Q8_0,...] [-r ROWS] [-c COLS] [-f MiB]
 *   kbench --packed      the same on the 16-row layout weights are repacked
 *                        into at load
 *   kbench --digest      one line per type: hash of quantizer, dot,
 *                        matvec, matmul and (where the selected table
 *                        packs the type) packed matmul outputs
 *   kbench --attn HD:NK:NQ --attn-path tiles|group|single|loop|q8 -i ITERS
 *                        one GQA group's attention ITERS times through
 *                        one path of the selected table (tools/kcount
 *                        --attn counts it)
 *   kbench --quant [-r ROWS] [-c COLS] [-i ITERS]
 *                        activation quantization (Q8_0, Q8_K) of ROWS
 *                        rows in cache, the selected table against the
 *                        one before it (AVX-512: AVX2; else the scalar
 *                        reference) in the same run, A B A B
 *   kbench --insn --quant -T Q8_0|Q8_K [-r ROWS] [-c COLS] -i ITERS
 *                        ITERS quantizations and nothing else, for
 *                        tools/kcount --quant
 *   kbench --insn [-b TOKENS] [--packed] -T TYPE -r ROWS -c COLS -i ITERS
 *                        ITERS products and nothing else (no bandwidth
 *                        run, no timing printed): what tools/kcount runs
 *                        under an instruction counter, twice, to take the
 *                        instructions of ITERS products by difference
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/edgeq.h>
#include <edgeq/kernels.h>

#include "kernels/kernels.h"

static const char *const all_types[] = {
	"Q4_0", "Q8_0", "Q4_K", "Q6_K", "F16",	"BF16",	  "F32",    "Q5_K",
	"Q3_K", "Q2_K", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS",
};

/* ---- digest: integer-only inputs so every build sees the same floats ---- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32);
}

static float rnd_val(void)
{
	float s = 0;

	for (int i = 0; i < 4; i++)
		s += (float)(rnd32() >> 8) * (1.0f / 16777216.0f) - 0.5f;
	return s;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int digest(void)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	const struct edgeq_kernel_ops *ref = edgeq_kernels_scalar();
	enum { N = 1024, ROWS = 19, NB = 7 };
	int bad = 0;

	printf("kernels %s\n", ops->name);
	for (size_t i = 0; i < sizeof(all_types) / sizeof(all_types[0]); i++) {
		enum edgeq_type t;
		const struct edgeq_type_traits *tt;
		size_t rs, as;
		unsigned char *w, *a;
		float x[N], y[ROWS], ym[NB * ROWS], yr[NB * ROWS];
		uint64_t h = 0xcbf29ce484222325ull;
		int diff;

		edgeq_type_from_name(all_types[i], &t);
		tt = edgeq_type_traits(t);
		rs = edgeq_row_size(t, N);
		as = edgeq_row_size(tt->vec_dot_type, N);
		w = malloc(rs * ROWS);
		a = malloc(as * NB);
		for (int r = 0; r < ROWS; r++) {
			for (int j = 0; j < N; j++)
				x[j] = rnd_val() * (float)(1 + r % 5);
			tt->from_float(x, w + r * rs, N);
		}
		for (int b = 0; b < NB; b++) {
			for (int j = 0; j < N; j++)
				x[j] = rnd_val() * 3.0f;
			ops->quantize_act(tt->vec_dot_type, x, a + b * as, N);
		}
		h = fnv(h, w, rs * ROWS);
		h = fnv(h, a, as * NB);
		ops->matvec(t, w, N, 0, ROWS, a, y);
		h = fnv(h, y, sizeof(y));
		ops->matmul(t, w, N, 0, ROWS, a, as, NB, ym, ROWS);
		ref->matmul(t, w, N, 0, ROWS, a, as, NB, yr, ROWS);
		h = fnv(h, ym, sizeof(ym));
		diff = memcmp(ym, yr, sizeof(ym)) != 0;
		/* the packed layout where the table packs this type (the
		 * values are the same, so builds that pack other types
		 * hash alike) */
		if (ops->pack16[t] && edgeq_pack16_size(t, ROWS, N)) {
			void *pw = malloc(edgeq_pack16_size(t, ROWS, N));

			if (!pw) {
				fprintf(stderr, "kbench: out of memory\n");
				return 1;
			}
			edgeq_pack16(t, w, ROWS, N, pw);
			ops->matmul_packed(t, pw, N, 0, ROWS, a, as, NB, ym,
					   ROWS);
			diff |= memcmp(ym, yr, sizeof(ym)) != 0;
			free(pw);
		}
		h = fnv(h, ym, sizeof(ym));
		bad += diff;
		printf("%-6s %016llx %s\n", tt->name, (unsigned long long)h,
		       diff ? "DIFFERS-FROM-SCALAR" : "same-as-scalar");
		free(w);
		free(a);
	}
	return bad ? 1 : 0;
}

/* ---- a fixed number of products, for an instruction counter ---- */

static int count_run(const char *type, long rows, long cols, long nb,
		     bool packed, long iters)
{
	struct edgeq_matvec_bench b;
	struct edgeq_error err = { 0 };
	int ret;

	if (iters < 1 || strchr(type, ',')) {
		fprintf(stderr, "kbench: --insn takes one type (-T) and -i N "
				"(N >= 1)\n");
		return 2;
	}
	/* one matrix (footprint 1 byte): the same weights every product */
	ret = edgeq_kernels_bench_tokens(type, rows, cols, nb, packed, 1, 1,
					 (int)iters, &b, &err);
	if (ret) {
		fprintf(stderr, "kbench: %s\n", err.msg);
		return ret == -EOPNOTSUPP ? 3 : 1;
	}
	printf("kernels %s type %s rows %ld cols %ld tokens %ld layout %s "
	       "weight_bytes %zu iters %ld\n",
	       b.kernels, type, rows, cols, nb, packed ? "packed" : "file",
	       b.weight_bytes, iters);
	return 0;
}

/*
 * ---- attention, for an instruction counter and a timer: @nq queries
 * (a GQA group's heads, of several tokens for "tiles") over @nk keys of
 * head size @hd, @iters times, through one path of the selected table:
 * "tiles" (attn_scores_f16_t, keys in lanes, then attn_av_f16_t or _g),
 * "q8" (a Q8_0 cache, as model/decode.c's att_block_q8: the queries
 * quantized, one Q8_0 matmul of the keys, the scale, then attn_av_q8_0_t),
 * "group" (attn_*_g), "single" (attn_scores_f16 and attn_av_f16 per
 * query) or "loop" (dot_f16 and axpy_f16 per key), with the softmax
 * between, as model/decode.c runs them; prints ns per (key, query) pair
 * of each phase, in cache ----
 */
static int attn_run(const char *spec, const char *path, long iters)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	void (*sm)(float *, int64_t) = ops->softmax ? ops->softmax :
						      edgeq_softmax_ref;
	long hd, nk, nq;
	uint16_t *k, *v;
	float *q, *att, *out;
	uint8_t *kq = NULL, *vq = NULL, *qa = NULL;
	bool q8 = !strcmp(path, "q8");
	bool tiles = !strcmp(path, "tiles");
	bool group = tiles || q8 || !strcmp(path, "group"),
	     single = !strcmp(path, "single");
	uint64_t ns[3] = { 0, 0, 0 }; /* scores, softmax, values */
	const float *qp[EDGEQ_ATTN_TQ];
	float *sp[EDGEQ_ATTN_TQ];
	int64_t nkq[EDGEQ_ATTN_TQ];

	if (sscanf(spec, "%ld:%ld:%ld", &hd, &nk, &nq) != 3 || hd < 1 ||
	    hd > 1024 || nk < 1 || nk > 65536 || nq < 1 || nq > EDGEQ_ATTN_TQ ||
	    iters < 1 || (!group && !single && strcmp(path, "loop"))) {
		fprintf(stderr,
			"kbench: --attn HD:NK:NQ (head size 1-1024, "
			"1-65536 keys, 1-%d queries), --attn-path "
			"tiles|group|single|loop|q8 and -i N (N >= 1)\n",
			EDGEQ_ATTN_TQ);
		return 2;
	}
	if ((q8 && (!ops->attn_av_q8_0_t || hd % 32)) ||
	    (tiles && !ops->attn_scores_f16_t) ||
	    (group && !ops->attn_scores_f16_g) ||
	    (single && !ops->attn_scores_f16)) {
		fprintf(stderr, "kbench: the %s table has no %s attention\n",
			ops->name, path);
		return 3;
	}
	k = malloc((size_t)(nk * hd) * sizeof(*k));
	v = malloc((size_t)(nk * hd) * sizeof(*v));
	q = malloc((size_t)(nq * hd) * sizeof(*q));
	att = malloc((size_t)(nq * nk) * sizeof(*att));
	out = malloc((size_t)(nq * hd) * sizeof(*out));
	if (!k || !v || !q || !att || !out) {
		fprintf(stderr, "kbench: out of memory\n");
		return 1;
	}
	for (long i = 0; i < nk * hd; i++) {
		k[i] = edgeq_fp32_to_fp16(rnd_val());
		v[i] = edgeq_fp32_to_fp16(rnd_val());
	}
	for (long i = 0; i < nq * hd; i++)
		q[i] = rnd_val();
	for (long j = 0; j < nq; j++) {
		qp[j] = q + j * hd;
		sp[j] = att + j * nk;
		nkq[j] = nk;
	}
	if (q8) { /* the rows as a Q8_0 cache's, and room for the queries */
		size_t qrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, hd);
		float *row = malloc((size_t)hd * sizeof(*row));

		kq = malloc((size_t)nk * qrow);
		vq = malloc((size_t)nk * qrow);
		qa = malloc((size_t)nq * qrow);
		if (!row || !kq || !vq || !qa) {
			fprintf(stderr, "kbench: out of memory\n");
			return 1;
		}
		for (long t = 0; t < nk; t++) {
			for (long e = 0; e < hd; e++)
				row[e] = edgeq_fp16_to_fp32(k[t * hd + e]);
			edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, row,
					       kq + t * qrow, hd);
			for (long e = 0; e < hd; e++)
				row[e] = edgeq_fp16_to_fp32(v[t * hd + e]);
			edgeq_quantize_act_ref(EDGEQ_TYPE_Q8_0, row,
					       vq + t * qrow, hd);
		}
		free(row);
	}
	for (long it = 0; it < iters; it++) {
		uint64_t t0 = edgeq_now_ns(), t1, t2;

		if (q8) {
			size_t qrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, hd);

			for (long j = 0; j < nq; j++)
				ops->quantize_act(EDGEQ_TYPE_Q8_0, q + j * hd,
						  qa + j * qrow, hd);
			ops->matmul(EDGEQ_TYPE_Q8_0, kq, hd, 0, nk, qa, qrow,
				    nq, att, nk);
			for (long i = 0; i < nq * nk; i++)
				att[i] *= 0.125f;
		} else if (tiles)
			ops->attn_scores_f16_t(hd, nk, k, hd, (int)nq, qp, nkq,
					       0.125f, sp);
		else if (group)
			ops->attn_scores_f16_g(hd, nk, k, hd, (int)nq, q, hd,
					       0.125f, att, nk);
		for (long j = 0; j < nq && !group; j++)
			if (single)
				ops->attn_scores_f16(hd, nk, k, hd, q + j * hd,
						     0.125f, att + j * nk);
			else
				for (long t = 0; t < nk; t++)
					att[j * nk + t] =
						ops->dot_f16(hd, k + t * hd,
							     q + j * hd) *
						0.125f;
		t1 = edgeq_now_ns();
		for (long j = 0; j < nq; j++)
			sm(att + j * nk, nk);
		t2 = edgeq_now_ns();
		ns[0] += t1 - t0;
		ns[1] += t2 - t1;
		if (q8) {
			float *op[EDGEQ_ATTN_TQ];

			for (long j = 0; j < nq; j++)
				op[j] = out + j * hd;
			ops->attn_av_q8_0_t(hd, nk, vq,
					    edgeq_row_size(EDGEQ_TYPE_Q8_0, hd),
					    (int)nq, (const float *const *)sp,
					    nkq, op);
		} else if (tiles && ops->attn_av_f16_t) {
			float *op[EDGEQ_ATTN_TQ];

			for (long j = 0; j < nq; j++)
				op[j] = out + j * hd;
			ops->attn_av_f16_t(hd, nk, v, hd, (int)nq,
					   (const float *const *)sp, nkq, op);
		} else if (group)
			ops->attn_av_f16_g(hd, nk, (int)nq, att, nk, v, hd, out,
					   hd);
		for (long j = 0; j < nq && !group; j++)
			if (single) {
				ops->attn_av_f16(hd, nk, att + j * nk, v, hd,
						 out + j * hd);
			} else {
				memset(out + j * hd, 0, hd * sizeof(*out));
				for (long t = 0; t < nk; t++)
					ops->axpy_f16(hd, att[j * nk + t],
						      v + t * hd, out + j * hd);
			}
		ns[2] += edgeq_now_ns() - t2;
	}
	printf("kernels %s attn hd %ld keys %ld queries %ld path %s pairs %ld "
	       "iters %ld check %a\n",
	       ops->name, hd, nk, nq, path, nk * nq, iters, (double)out[0]);
	/* in cache (the working set is one group's keys and values): what
	 * the arithmetic costs, per (key, query) pair */
	printf("ns per pair: scores %.3f softmax %.3f values %.3f\n",
	       (double)ns[0] / (double)(iters * nk * nq),
	       (double)ns[1] / (double)(iters * nk * nq),
	       (double)ns[2] / (double)(iters * nk * nq));
	free(k);
	free(v);
	free(q);
	free(att);
	free(out);
	free(kq);
	free(vq);
	free(qa);
	return 0;
}

/* ---- speed ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* rows x cols activations in [-2, 2] and room for them quantized (Q8_K,
 * the larger); 0, or 1 after saying why. */
static int quant_input(long rows, long cols, float **x, void **y)
{
	*x = malloc((size_t)(rows * cols) * sizeof(**x));
	*y = malloc(edgeq_row_size(EDGEQ_TYPE_Q8_K, cols) * (size_t)rows);
	if (!*x || !*y) {
		fprintf(stderr, "kbench: out of memory\n");
		free(*x);
		free(*y);
		return 1;
	}
	for (long i = 0; i < rows * cols; i++)
		(*x)[i] = (float)((unsigned long)i * 2654435761u % 2001) /
				  500.0f -
			  2.0f;
	return 0;
}

/* ns per block of @vdt for @q over rows x cols (best of 3). */
static double quant_ns(int (*q)(enum edgeq_type, const float *, void *,
				int64_t),
		       enum edgeq_type vdt, const float *x, void *y, long rows,
		       long cols, long iters)
{
	size_t rs = edgeq_row_size(vdt, cols);
	int64_t bs = vdt == EDGEQ_TYPE_Q8_0 ? 32 : 256;
	double best = 0;

	for (int rep = 0; rep < 3; rep++) {
		double t0 = now_s(), t;

		for (long it = 0; it < iters; it++)
			for (long r = 0; r < rows; r++)
				q(vdt, x + r * cols, (char *)y + r * rs, cols);
		t = (now_s() - t0) * 1e9 / ((double)iters * rows * cols / bs);
		if (!rep || t < best)
			best = t;
	}
	return best;
}

static int quant_run(long rows, long cols, long iters)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	static const enum edgeq_type vdts[] = { EDGEQ_TYPE_Q8_0,
						EDGEQ_TYPE_Q8_K };
	/* against the AVX2 form where the table is AVX-512's own */
	int (*base)(enum edgeq_type, const float *, void *, int64_t) =
		edgeq_quantize_act_ref;
	const char *base_name = "scalar";
	float *x;
	void *y;

#if defined(__x86_64__)
	if (ops->quantize_act != edgeq_kernel_ops_avx2.quantize_act &&
	    ops->quantize_act != edgeq_quantize_act_ref) {
		base = edgeq_kernel_ops_avx2.quantize_act;
		base_name = "avx2";
	}
#endif
	if (rows < 1 || cols < 256 || cols % 256 || iters < 1) {
		fprintf(stderr, "kbench: --quant needs -r >= 1, -c a multiple "
				"of 256 and -i >= 1\n");
		return 2;
	}
	if (quant_input(rows, cols, &x, &y))
		return 1;
	printf("kernels %s quantize_act %ld rows x %ld columns, ns per block "
	       "(Q8_0: 32, Q8_K: 256), best of 3, A B A B\n",
	       ops->name, rows, cols);
	for (size_t v = 0; v < 2; v++) {
		double r[4];

		for (int k = 0; k < 4; k++)
			r[k] = quant_ns(k % 2 ? ops->quantize_act : base,
					vdts[v], x, y, rows, cols, iters);
		printf("%-5s %-6s %8.2f %8.2f  %-8s %8.2f %8.2f  %.2fx\n",
		       edgeq_type_name(vdts[v]), base_name, r[0], r[2],
		       ops->name, r[1], r[3], (r[0] + r[2]) / (r[1] + r[3]));
	}
	free(x);
	free(y);
	return 0;
}

/* --insn --quant: ITERS quantizations of ROWS rows of TYPE (Q8_0, Q8_K)
 * by the selected table, nothing timed (tools/kcount --quant). */
static int quant_count(const char *type, long rows, long cols, long iters)
{
	const struct edgeq_kernel_ops *ops = edgeq_kernels_select();
	enum edgeq_type vdt;
	size_t rs;
	float *x;
	void *y;

	if (edgeq_type_from_name(type, &vdt) ||
	    (vdt != EDGEQ_TYPE_Q8_0 && vdt != EDGEQ_TYPE_Q8_K) || rows < 1 ||
	    cols < 256 || cols % 256 || iters < 1) {
		fprintf(stderr, "kbench: --insn --quant needs -T Q8_0|Q8_K, "
				"-r >= 1, -c a multiple of 256 and -i >= 1\n");
		return 2;
	}
	rs = edgeq_row_size(vdt, cols);
	if (quant_input(rows, cols, &x, &y))
		return 1;
	for (long it = 0; it < iters; it++)
		for (long r = 0; r < rows; r++)
			ops->quantize_act(vdt, x + r * cols, (char *)y + r * rs,
					  cols);
	printf("kernels %s quant %s blocks %ld\n", ops->name,
	       edgeq_type_name(vdt),
	       rows * cols / (vdt == EDGEQ_TYPE_Q8_0 ? 32 : 256));
	free(x);
	free(y);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kbench [-t THREADS,...] [-T TYPE,...] [-r ROWS] [-c COLS] "
		"[-f FOOTPRINT_MiB] [-i ITERS] [--packed]\n"
		"       kbench --insn [-b TOKENS] [--packed] -T TYPE -r ROWS -c COLS "
		"-i ITERS\n"
		"       kbench --attn HD:NK:NQ --attn-path tiles|group|single|loop|q8 "
		"-i ITERS\n"
		"       kbench --quant [-r ROWS] [-c COLS] [-i ITERS]\n"
		"       kbench --insn --quant -T Q8_0|Q8_K [-r ROWS] [-c COLS] "
		"-i ITERS\n"
		"       kbench --digest\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "types", required_argument, NULL, 'T' },
		{ "rows", required_argument, NULL, 'r' },
		{ "cols", required_argument, NULL, 'c' },
		{ "footprint", required_argument, NULL, 'f' },
		{ "iters", required_argument, NULL, 'i' },
		{ "digest", no_argument, NULL, 'd' },
		{ "packed", no_argument, NULL, 'p' },
		{ "insn", no_argument, NULL, 'I' },
		{ "tokens", required_argument, NULL, 'b' },
		{ "attn", required_argument, NULL, 'A' },
		{ "attn-path", required_argument, NULL, 'P' },
		{ "quant", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char threads[64] = "1,2", types[256] = "Q4_0,Q8_0,Q4_K,Q6_K,F16";
	long rows = 2048, cols = 8192, fp_mib = 1024, iters = 0, nb = 1;
	bool packed = false, insn = false, quant = false;
	bool rows_set = false, cols_set = false;
	const char *attn = NULL, *attn_path = "group";
	int c;

	while ((c = getopt_long(argc, argv, "t:T:r:c:f:i:b:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 't':
			snprintf(threads, sizeof(threads), "%s", optarg);
			break;
		case 'T':
			snprintf(types, sizeof(types), "%s", optarg);
			break;
		case 'r':
			rows = strtol(optarg, NULL, 0);
			rows_set = true;
			break;
		case 'c':
			cols = strtol(optarg, NULL, 0);
			cols_set = true;
			break;
		case 'f':
			fp_mib = strtol(optarg, NULL, 0);
			break;
		case 'i':
			iters = strtol(optarg, NULL, 0);
			break;
		case 'd':
			return digest();
		case 'p':
			packed = true;
			break;
		case 'I':
			insn = true;
			break;
		case 'b':
			nb = strtol(optarg, NULL, 0);
			break;
		case 'A':
			attn = optarg;
			break;
		case 'P':
			attn_path = optarg;
			break;
		case 'Q':
			quant = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (attn)
		return attn_run(attn, attn_path, iters);
	if (quant && insn)
		return quant_count(types, rows_set ? rows : 4,
				   cols_set ? cols : 2048, iters);
	if (quant) /* a prompt block's rows of a 1B model, in cache */
		return quant_run(rows_set ? rows : 64, cols_set ? cols : 2048,
				 iters ? iters : 100);
	if (insn)
		return count_run(types, rows, cols, nb, packed, iters);
	printf("kernels: %s   matrix %ld x %ld, footprint %ld MiB, %s layout\n",
	       edgeq_kernels_select()->name, rows, cols, fp_mib,
	       packed ? "packed 16-row" : "file");
	printf("%-6s %3s %10s %10s %8s %8s\n", "type", "t", "us/matvec", "GB/s",
	       "membw", "eff");
	for (char *ts = strtok(threads, ","); ts; ts = strtok(NULL, ",")) {
		int nt = atoi(ts);
		double bw = 0;
		char tcopy[256], *save = NULL;
		int ret = edgeq_membw_measure(nt, 0, 3, &bw);

		if (ret) {
			fprintf(stderr, "kbench: membw: %s\n", strerror(-ret));
			return 1;
		}
		snprintf(tcopy, sizeof(tcopy), "%s", types);
		for (char *ty = strtok_r(tcopy, ",", &save); ty;
		     ty = strtok_r(NULL, ",", &save)) {
			struct edgeq_matvec_bench b;
			struct edgeq_error err = { 0 };

			ret = (packed ? edgeq_kernels_bench_matvec_packed :
					edgeq_kernels_bench_matvec)(
				ty, rows, cols, nt, (size_t)fp_mib << 20,
				(int)iters, &b, &err);
			if (ret) {
				fprintf(stderr, "kbench: %s\n", err.msg);
				return 1;
			}
			printf("%-6s %3d %10.1f %10.2f %8.2f %7.1f%%\n", ty, nt,
			       b.us_per_matvec, b.gbps, bw,
			       100.0 * b.gbps / bw);
			fflush(stdout);
		}
	}
	return 0;
}
