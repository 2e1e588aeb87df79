// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gguf-gen: write a deterministic synthetic llama-family GGUF model.
 *
 *   gguf-gen -o FILE [--shape tiny|1b|micro] [--type TYPE]
 *            [--seed N] [--arch llama|qwen2|qwen3|gemma2|gemma3|phi3] [--tied]
 *            [--vocab N]
 *
 * Weights are uniform random from the seed, scaled by 1/sqrt(fan-in) so
 * activations stay near unit variance; norms are 1 +- small noise. The
 * vocabulary is <unk> <s> </s>, the 256 byte-fallback tokens <0xXX>, the
 * printable ASCII characters, then generated pieces ("\xe2\x96\x81" + letters),
 * so any text tokenizes. TYPE is f32, f16, bf16, q8_0, q4_0, q6_k (every
 * matrix of that type), or one of llama-quantize's mixes, written as its
 * llama_tensor_get_type picks them for a dense llama without an
 * importance matrix: q4_k (= q4_k_m), q5_k_m, q3_k_m, q2_k, q4_1, q5_0,
 * q5_1, iq4_nl, iq4_xs (output.weight Q6_K, attn_v/ffn_down/attn_output
 * per layer as llama.cpp bumps them; see mix_type). Quantization uses the
 * kernels' reference quantizers, so the file is the same on every
 * machine. --block-scale X scales every block's output matrices
 * (attn_output, ffn_down) by X: the residual stream then stays near the
 * token's embedding, so the next token is nearly a function of the
 * current one, the same through the first layers as through all of them
 * and at another weight type: a bandwidth-sized model whose drafts a
 * self-draft or a cheaper copy gets right (speculation's benchmarks).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <edgeq/gguf.h>

#include "kernels/kernels.h"

struct shape {
	const char *name;
	uint32_t n_embd, n_ff, n_layer, n_head, n_head_kv, n_vocab, n_ctx;
};

static const struct shape shapes[] = {
	{ "tiny", 256, 512, 2, 4, 2, 512, 256 },
	{ "1b", 2048, 8192, 16, 32, 8, 32000, 4096 },
	{ "micro", 32, 64, 1, 2, 1, 300, 64 }, /* fuzz seed; no K-quants */
};

struct tensor {
	char name[64];
	uint32_t n_dims;
	uint64_t ne[2];
	uint32_t type;
	uint64_t offset, size;
	float scale; /* uniform in [-scale, scale]; < 0: norm (1 + noise) */
	int bias;
};

static uint64_t rng_state;

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- a tiny GGUF writer ---- */

static FILE *out;
static uint64_t written;

static void w_raw(const void *p, size_t n)
{
	if (fwrite(p, 1, n, out) != n) {
		perror("gguf-gen: write");
		exit(1);
	}
	written += n;
}

static void w_u32(uint32_t v)
{
	w_raw(&v, 4);
}
static void w_u64(uint64_t v)
{
	w_raw(&v, 8);
}
static void w_f32(float v)
{
	w_raw(&v, 4);
}

static void w_str(const char *s, size_t n)
{
	w_u64(n);
	w_raw(s, n);
}

static void kv_str(const char *k, const char *v)
{
	w_str(k, strlen(k));
	w_u32(8);
	w_str(v, strlen(v));
}

static void kv_u32(const char *k, uint32_t v)
{
	w_str(k, strlen(k));
	w_u32(4);
	w_u32(v);
}

static void kv_f32(const char *k, float v)
{
	w_str(k, strlen(k));
	w_u32(6);
	w_f32(v);
}

static void kv_bool(const char *k, int v)
{
	uint8_t b = (uint8_t)v;

	w_str(k, strlen(k));
	w_u32(7);
	w_raw(&b, 1);
}

/* ---- the vocabulary ---- */

static char **vocab;
static uint32_t *vocab_len;
static float *vocab_score;
static int32_t *vocab_type;

static void vocab_build(uint32_t n)
{
	static const char letters[] = "etaoinshrdlcumwfgypbvkjxqz";
	uint32_t i = 0, a, b, c, k;
	char buf[16];

	vocab = calloc(n, sizeof(*vocab));
	vocab_len = calloc(n, sizeof(*vocab_len));
	vocab_score = calloc(n, sizeof(*vocab_score));
	vocab_type = calloc(n, sizeof(*vocab_type));
	if (!vocab || !vocab_len || !vocab_score || !vocab_type)
		exit(1);
#define ADD(s, len, t)                                                       \
	do {                                                                 \
		if (i < n) {                                                 \
			vocab[i] = malloc((len) + 1);                        \
			memcpy(vocab[i], s, len);                            \
			vocab_len[i] = (uint32_t)(len);                      \
			vocab_type[i] = t;                                   \
			vocab_score[i] = i < 259 ? 0.0f : -(float)(i - 259); \
			i++;                                                 \
		}                                                            \
	} while (0)
	ADD("<unk>", 5, 2);
	ADD("<s>", 3, 3);
	ADD("</s>", 4, 3);
	for (k = 0; k < 256; k++) {
		snprintf(buf, sizeof(buf), "<0x%02X>", k);
		ADD(buf, 6, 6);
	}
	ADD("\xe2\x96\x81", 3, 1);
	for (k = 0; k < 26; k++) {
		memcpy(buf, "\xe2\x96\x81", 3);
		buf[3] = letters[k];
		ADD(buf, 4, 1);
	}
	for (k = 33; k < 127; k++) {
		buf[0] = (char)k;
		ADD(buf, 1, 1);
	}
	/* letter pairs, then "_xy", then triples, then "_xyz" */
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++) {
			buf[0] = letters[a];
			buf[1] = letters[b];
			ADD(buf, 2, 1);
		}
	for (a = 0; a < 26; a++)
		for (b = 0; b < 26; b++) {
			memcpy(buf, "\xe2\x96\x81", 3);
			buf[3] = letters[a];
			buf[4] = letters[b];
			ADD(buf, 5, 1);
		}
	for (a = 0; a < 26 && i < n; a++)
		for (b = 0; b < 26; b++)
			for (c = 0; c < 26; c++) {
				buf[0] = letters[a];
				buf[1] = letters[b];
				buf[2] = letters[c];
				ADD(buf, 3, 1);
			}
	for (a = 0; a < 26 && i < n; a++)
		for (b = 0; b < 26; b++)
			for (c = 0; c < 26; c++) {
				memcpy(buf, "\xe2\x96\x81", 3);
				buf[3] = letters[a];
				buf[4] = letters[b];
				buf[5] = letters[c];
				ADD(buf, 6, 1);
			}
	for (k = 0; i < n; k++) { /* filler, never produced by merges */
		snprintf(buf, sizeof(buf), "<extra_%u>", k);
		ADD(buf, strlen(buf), 4);
	}
#undef ADD
}

/*
 * Rows of one tensor, split over threads (row r by thread r % n). Each row
 * has its own RNG stream, so the file does not depend on the thread count.
 */
struct fill_job {
	const struct tensor *t;
	uint64_t seed, index;
	uint8_t *out;
	uint64_t ith, nth;
};

static void *fill_rows(void *arg)
{
	const struct fill_job *j = arg;
	const struct tensor *t = j->t;
	const struct edgeq_type_traits *tr = edgeq_type_traits(t->type);
	size_t rs = edgeq_row_size(t->type, (int64_t)t->ne[0]);
	float *row = malloc(sizeof(float) * t->ne[0]);
	uint64_t r, k;

	if (!row)
		abort();
	for (r = j->ith; r < t->ne[1]; r += j->nth) {
		uint64_t st = (j->seed * 0x100000001b3ull + j->index) *
				      0x9e3779b97f4a7c15ull ^
			      (r + 1) * 0xc2b2ae3d27d4eb4full;

		for (k = 0; k < t->ne[0]; k++) {
			double u = (double)(rng_next(&st) >> 11) *
					   (1.0 / 9007199254740992.0) * 2.0 -
				   1.0;

			if (t->scale == -2)
				row[k] = 1.0f + (float)(k % 8) * 0.5f;
			else if (t->scale < 0)
				row[k] = 1.0f + 0.1f * (float)u;
			else
				row[k] = (float)u * t->scale;
		}
		if (t->type == EDGEQ_TYPE_F32)
			memcpy(j->out + r * rs, row, rs);
		else
			tr->from_float(row, j->out + r * rs, (int64_t)t->ne[0]);
	}
	free(row);
	return NULL;
}

/* Take the pieces, scores and types of another GGUF's SentencePiece vocabulary. */
static uint32_t vocab_from(const char *path)
{
	const struct edgeq_gguf_kv *tk, *sc = NULL, *ty = NULL;
	struct edgeq_gguf_str *strs;
	struct edgeq_error err = { 0 };
	struct edgeq_gguf_str model;
	struct edgeq_gguf *g;
	uint32_t n, i;

	if (edgeq_gguf_open(path, &g, &err) ||
	    edgeq_gguf_get_str(g, "tokenizer.ggml.model", &model, &err) ||
	    !edgeq_gguf_str_eq(model, "llama") ||
	    edgeq_gguf_get_arr(g, "tokenizer.ggml.tokens", EDGEQ_GGUF_STRING,
			       &tk, &err)) {
		fprintf(stderr,
			"gguf-gen: %s: no SentencePiece vocabulary %s\n", path,
			err.msg);
		exit(1);
	}
	edgeq_gguf_get_arr(g, "tokenizer.ggml.scores", EDGEQ_GGUF_FLOAT32, &sc,
			   &err);
	edgeq_gguf_get_arr(g, "tokenizer.ggml.token_type", EDGEQ_GGUF_INT32,
			   &ty, &err);
	n = (uint32_t)tk->arr_n;
	strs = calloc(n, sizeof(*strs));
	vocab = calloc(n, sizeof(*vocab));
	vocab_len = calloc(n, sizeof(*vocab_len));
	vocab_score = calloc(n, sizeof(*vocab_score));
	vocab_type = calloc(n, sizeof(*vocab_type));
	if (!strs || !vocab || !vocab_len || !vocab_score || !vocab_type)
		exit(1);
	edgeq_gguf_arr_strings(tk, strs);
	for (i = 0; i < n; i++) {
		vocab[i] = malloc(strs[i].len + 1);
		if (!vocab[i])
			exit(1);
		memcpy(vocab[i], strs[i].ptr, strs[i].len);
		vocab_len[i] = (uint32_t)strs[i].len;
		vocab_score[i] = sc && sc->arr_n == n ?
					 (float)edgeq_gguf_arr_num(sc, i) :
					 0.0f;
		vocab_type[i] = ty && ty->arr_n == n ?
					(int32_t)edgeq_gguf_arr_num(ty, i) :
					1;
	}
	free(strs);
	edgeq_gguf_close(g);
	return n;
}

static int usage(int st)
{
	fprintf(st ? stderr : stdout,
		"usage: gguf-gen -o FILE [--shape tiny|1b|micro]\n"
		"                [--type f32|f16|bf16|q8_0|q4_0|q6_k|q4_k|q4_k_m|q5_k_m|q3_k_m|\n"
		"                        q2_k|q4_1|q5_0|q5_1|iq4_nl|iq4_xs]\n"
		"                [--seed N] [--arch llama|qwen2|qwen3|gemma2|gemma3|phi3] [--tied] [--rope-freqs] [--rope-llama3]\n"
		"                [--sliding-window N]\n"
		"                [--vocab-from GGUF] (a SentencePiece vocabulary to use)\n"
		"                [--layers N] [--block-scale X] (0 < X <= 1: the blocks'\n"
		"                output matrices scaled by X, so the embedding's path\n"
		"                decides the next token: a draft agrees with the target)\n");
	return st;
}

/* A --type: the main tensor type, general.file_type (llama_ftype) and
 * whether llama-quantize's mix rules apply. */
struct ftype {
	const char *name, *label; /* label: in general.name */
	uint32_t type, file_type;
	bool mix;
};

static const struct ftype ftypes[] = {
	{ "f32", "F32", EDGEQ_TYPE_F32, 0, false },
	{ "f16", "F16", EDGEQ_TYPE_F16, 1, false },
	{ "bf16", "BF16", EDGEQ_TYPE_BF16, 32, false },
	{ "q8_0", "Q8_0", EDGEQ_TYPE_Q8_0, 7, false },
	{ "q4_0", "Q4_0", EDGEQ_TYPE_Q4_0, 2, false },
	{ "q6_k", "Q6_K", EDGEQ_TYPE_Q6_K, 18, false },
	{ "q4_k", "Q4_K", EDGEQ_TYPE_Q4_K, 15, true },
	{ "q4_k_m", "Q4_K_M", EDGEQ_TYPE_Q4_K, 15, true },
	{ "q5_k_m", "Q5_K_M", EDGEQ_TYPE_Q5_K, 17, true },
	{ "q3_k_m", "Q3_K_M", EDGEQ_TYPE_Q3_K, 12, true },
	{ "q2_k", "Q2_K", EDGEQ_TYPE_Q2_K, 10, true },
	{ "q4_1", "Q4_1", EDGEQ_TYPE_Q4_1, 3, true },
	{ "q5_0", "Q5_0", EDGEQ_TYPE_Q5_0, 8, true },
	{ "q5_1", "Q5_1", EDGEQ_TYPE_Q5_1, 9, true },
	{ "iq4_nl", "IQ4_NL", EDGEQ_TYPE_IQ4_NL, 25, true },
	{ "iq4_xs", "IQ4_XS", EDGEQ_TYPE_IQ4_XS, 30, true },
};

static const struct ftype *parse_type(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(ftypes) / sizeof(ftypes[0]); i++)
		if (!strcasecmp(s, ftypes[i].name))
			return &ftypes[i];
	fprintf(stderr, "gguf-gen: unknown type '%s'\n", s);
	exit(2);
}

static bool more_bits(uint32_t l, uint32_t n)
{
	return l < n / 8 || l >= 7 * n / 8 || (l - n / 8) % 3 == 2;
}

enum cat { C_EMBD, C_OUTPUT, C_Q, C_K, C_V, C_O, C_GATE, C_UP, C_DOWN };

/*
 * The type of a matrix in a --type mix, as llama.cpp's
 * llama_tensor_get_type chooses it for a dense, non-Falcon model without
 * an importance matrix (layer @l of @nl; @gqa = n_head / n_head_kv).
 */
static uint32_t mix_type(const struct ftype *f, enum cat c, uint32_t l,
			 uint32_t nl, uint32_t gqa, bool tied)
{
	if (!f->mix)
		return f->type;
	if (c == C_OUTPUT || (tied && c == C_EMBD))
		return EDGEQ_TYPE_Q6_K;
	switch (f->file_type) {
	case 10: /* Q2_K */
		if (c == C_V)
			return gqa >= 4 ? EDGEQ_TYPE_Q4_K : EDGEQ_TYPE_Q3_K;
		if (c == C_DOWN || c == C_O)
			return EDGEQ_TYPE_Q3_K;
		break;
	case 12: /* Q3_K_M */
		if (c == C_V)
			return l < 2 ? EDGEQ_TYPE_Q5_K : EDGEQ_TYPE_Q4_K;
		if (c == C_DOWN)
			return l < nl / 16 ? EDGEQ_TYPE_Q5_K : EDGEQ_TYPE_Q4_K;
		if (c == C_O)
			return EDGEQ_TYPE_Q4_K;
		break;
	case 15: /* Q4_K_M */
	case 17: /* Q5_K_M */
		if ((c == C_V || c == C_DOWN) && more_bits(l, nl))
			return EDGEQ_TYPE_Q6_K;
		break;
	case 25: /* IQ4_NL */
	case 30: /* IQ4_XS */
		if ((c == C_V && gqa >= 4) || (c == C_DOWN && l < nl / 8))
			return EDGEQ_TYPE_Q5_K;
		break;
	}
	return f->type;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "shape", required_argument, NULL, 's' },
		{ "type", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'S' },
		{ "arch", required_argument, NULL, 'a' },
		{ "tied", no_argument, NULL, 'T' },
		{ "rope-freqs", no_argument, NULL, 'R' },
		{ "rope-llama3", no_argument, NULL, '3' },
		{ "sliding-window", required_argument, NULL, 'W' },
		{ "vocab-from", required_argument, NULL, 'V' },
		{ "layers", required_argument, NULL, 'L' },
		{ "block-scale", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *path = NULL, *arch = "llama";
	struct shape sh = shapes[0];
	const struct ftype *ft = parse_type("q4_0");
	uint32_t l, i, nt = 0;
	uint64_t seed = 1, off = 0;
	struct tensor *ts;
	int tied = 0, rope_freqs = 0, rope_llama3 = 0, c, qwen, qwen3, gemma3,
	    gemma2, phi3;
	uint32_t hd, swa = 0;
	float bscale = 1.0f;
	const char *vfrom = NULL;
	long nthr;
	char key[128], tmp[200], *end;

	while ((c = getopt_long(argc, argv, "o:s:t:S:a:TR3W:V:L:B:h", lo,
				NULL)) != -1) {
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case 's':
			if (!strcmp(optarg, "tiny"))
				sh = shapes[0];
			else if (!strcmp(optarg, "1b"))
				sh = shapes[1];
			else if (!strcmp(optarg, "micro"))
				sh = shapes[2];
			else
				return usage(2);
			break;
		case 't':
			ft = parse_type(optarg);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			arch = optarg;
			break;
		case 'T':
			tied = 1;
			break;
		case 'V':
			vfrom = optarg;
			break;
		case 'R':
			rope_freqs = 1;
			break;
		case '3':
			rope_llama3 = 1;
			break;
		case 'W':
			swa = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'L':
			sh.n_layer = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'B':
			bscale = strtof(optarg, &end);
			if (*end || !(bscale > 0 && bscale <= 1))
				return usage(2);
			break;
		case 'h':
			return usage(0);
		default:
			return usage(2);
		}
	}
	if (!path || optind != argc || sh.n_layer == 0)
		return usage(2);
	if (strcmp(arch, "llama") && strcmp(arch, "qwen2") &&
	    strcmp(arch, "qwen3") && strcmp(arch, "gemma3") &&
	    strcmp(arch, "gemma2") && strcmp(arch, "phi3"))
		return usage(2);
	/* phi3: fused q|k|v and gate|up, 3/4 of each head rotated (as
	 * Phi-4-mini), long-RoPE factors past 64 positions, attn_factor */
	phi3 = !strcmp(arch, "phi3");
	qwen = !strcmp(arch, "qwen2");
	gemma3 = !strcmp(arch, "gemma3");
	/* gemma2: gemma3's layer without head norms, every other layer
	 * sliding, and caps low enough to bite on these weights */
	gemma2 = !strcmp(arch, "gemma2");
	/* gemma3 is qwen3's attention plus post-norms, GELU and a sliding
	 * window (of 8 here, so that short prompts slide) */
	qwen3 = !strcmp(arch, "qwen3") || gemma3;
	/* Qwen3's heads are twice embedding / heads wide (0.6B: 1024, 16
	 * heads of 128), so the attention is wider than the embedding */
	hd = (qwen3 ? 2 : 1) * sh.n_embd / sh.n_head;
	if (vfrom)
		sh.n_vocab = vocab_from(vfrom);

	ts = calloc(16 * sh.n_layer + 8, sizeof(*ts));
	if (!ts)
		return 1;
#define T(nm, a, b, ty, sc, bi)                                    \
	do {                                                       \
		struct tensor *t_ = &ts[nt++];                     \
		snprintf(t_->name, sizeof(t_->name), "%.63s", nm); \
		t_->n_dims = (b) ? 2 : 1;                          \
		t_->ne[0] = a;                                     \
		t_->ne[1] = (b) ? (b) : 1;                         \
		t_->type = ty;                                     \
		t_->scale = sc;                                    \
		t_->bias = bi;                                     \
	} while (0)
	{
		uint32_t E = sh.n_embd, F = sh.n_ff, qd = hd * sh.n_head;
		uint32_t F2 = 2 * F; /* phi3's gate | up */
		uint32_t kvd = hd * sh.n_head_kv;
		uint32_t gqa = sh.n_head / sh.n_head_kv, nl = sh.n_layer;
		float se = 1.0f, sE = sqrtf(3.0f / (float)E),
		      sF = sqrtf(3.0f / (float)F);

#define MT(c) mix_type(ft, c, l, nl, gqa, tied)
		l = 0;
		T("token_embd.weight", E, sh.n_vocab, MT(C_EMBD), se, 0);
		T("output_norm.weight", E, 0, EDGEQ_TYPE_F32, -1, 0);
		if (rope_freqs) /* Llama 3 style per-dimension divisors */
			T("rope_freqs.weight", hd / 2, 0, EDGEQ_TYPE_F32, -2,
			  0);
		if (phi3) { /* divisors: long beyond 64 positions, short */
			T("rope_factors_long.weight", (hd * 3 / 4) / 2, 0,
			  EDGEQ_TYPE_F32, -2, 0);
			T("rope_factors_short.weight", (hd * 3 / 4) / 2, 0,
			  EDGEQ_TYPE_F32, -1, 0);
		}
		if (!tied)
			T("output.weight", E, sh.n_vocab, MT(C_OUTPUT),
			  2.0f * sE, 0);
		for (l = 0; l < sh.n_layer; l++) {
#define LT(sfx, a, b, ty, sc, bi)                                \
	do {                                                     \
		snprintf(tmp, sizeof(tmp), "blk.%u.%s", l, sfx); \
		T(tmp, a, b, ty, sc, bi);                        \
	} while (0)
			LT("attn_norm.weight", E, 0, EDGEQ_TYPE_F32, -1, 0);
			if (phi3) {
				LT("attn_qkv.weight", E, qd + 2 * kvd, MT(C_Q),
				   sE, 0);
			} else {
				LT("attn_q.weight", E, qd, MT(C_Q), sE, 0);
				LT("attn_k.weight", E, kvd, MT(C_K), sE, 0);
				LT("attn_v.weight", E, kvd, MT(C_V), sE, 0);
			}
			if (qwen) {
				LT("attn_q.bias", qd, 0, EDGEQ_TYPE_F32, 0.1f,
				   1);
				LT("attn_k.bias", kvd, 0, EDGEQ_TYPE_F32, 0.1f,
				   1);
				LT("attn_v.bias", kvd, 0, EDGEQ_TYPE_F32, 0.1f,
				   1);
			}
			if (qwen3) {
				LT("attn_q_norm.weight", hd, 0, EDGEQ_TYPE_F32,
				   -1, 0);
				LT("attn_k_norm.weight", hd, 0, EDGEQ_TYPE_F32,
				   -1, 0);
			}
			LT("attn_output.weight", qd, E, MT(C_O),
			   bscale * sqrtf(3.0f / (float)qd), 0);
			if (gemma3 || gemma2)
				LT("post_attention_norm.weight", E, 0,
				   EDGEQ_TYPE_F32, -1, 0);
			LT("ffn_norm.weight", E, 0, EDGEQ_TYPE_F32, -1, 0);
			if (phi3) {
				LT("ffn_up.weight", E, F2, MT(C_UP), sE, 0);
			} else {
				LT("ffn_gate.weight", E, F, MT(C_GATE), sE, 0);
				LT("ffn_up.weight", E, F, MT(C_UP), sE, 0);
			}
			LT("ffn_down.weight", F, E, MT(C_DOWN), bscale * sF, 0);
			if (gemma3 || gemma2)
				LT("post_ffw_norm.weight", E, 0, EDGEQ_TYPE_F32,
				   -1, 0);
#undef LT
		}
#undef MT
	}
#undef T
	for (i = 0; i < nt; i++) {
		size_t rs = edgeq_row_size(ts[i].type, (int64_t)ts[i].ne[0]);

		if (!rs) {
			fprintf(stderr,
				"gguf-gen: %s: row of %llu not a multiple of the %s block\n",
				ts[i].name, (unsigned long long)ts[i].ne[0],
				edgeq_type_name(ts[i].type));
			return 1;
		}
		ts[i].size = rs * ts[i].ne[1];
		ts[i].offset = off;
		off = (off + ts[i].size + 31) & ~31ull;
	}

	if (!vfrom)
		vocab_build(sh.n_vocab);
	out = fopen(path, "wbe");
	if (!out) {
		perror(path);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	w_raw("GGUF", 4);
	w_u32(3);
	w_u64(nt);
	/* the kv_* calls below */
	if (swa && (gemma2 || gemma3))
		return usage(2); /* theirs is 8 */
	w_u64(24 + (qwen3 ? 2 : 0) + gemma3 + 3 * gemma2 + 5 * rope_llama3 +
	      (swa ? 1 : 0) + 2 * phi3);
	kv_str("general.architecture", arch);
	snprintf(tmp, sizeof(tmp), "edgeq synthetic %s %s seed %llu", sh.name,
		 ft->label, (unsigned long long)seed);
	kv_str("general.name", tmp);
	kv_u32("general.alignment", 32);
	kv_u32("general.file_type", ft->file_type);
#define AK(sfx) (snprintf(key, sizeof(key), "%s.%s", arch, sfx), key)
	kv_u32(AK("context_length"), sh.n_ctx);
	kv_u32(AK("embedding_length"), sh.n_embd);
	kv_u32(AK("feed_forward_length"), sh.n_ff);
	kv_u32(AK("block_count"), sh.n_layer);
	kv_u32(AK("attention.head_count"), sh.n_head);
	kv_u32(AK("attention.head_count_kv"), sh.n_head_kv);
	kv_u32(AK("rope.dimension_count"), phi3 ? hd * 3 / 4 : hd);
	if (qwen3) {
		kv_u32(AK("attention.key_length"), hd);
		kv_u32(AK("attention.value_length"), hd);
	}
	if (gemma3 || gemma2)
		kv_u32(AK("attention.sliding_window"), 8);
	if (swa) /* llama: Mistral's window on every layer */
		kv_u32(AK("attention.sliding_window"), swa);
	if (rope_llama3) { /* Llama 3.1's bands, squeezed into 64 positions
			      * so that the tiny model's frequencies span them */
		kv_str(AK("rope.scaling.type"), "llama3");
		kv_f32(AK("rope.scaling.factor"), 8.0f);
		kv_f32(AK("rope.scaling.low_freq_factor"), 1.0f);
		kv_f32(AK("rope.scaling.high_freq_factor"), 4.0f);
		kv_u32(AK("rope.scaling.original_context_length"), 64);
	}
	if (phi3) {
		kv_u32(AK("rope.scaling.original_context_length"), 64);
		kv_f32(AK("rope.scaling.attn_factor"), 1.19f);
	}
	if (gemma2) {
		kv_f32(AK("attn_logit_softcapping"), 2.0f);
		kv_f32(AK("final_logit_softcapping"), 3.0f);
	}
	kv_f32(AK("rope.freq_base"), qwen || qwen3 ? 1000000.0f : 10000.0f);
	kv_f32(AK("attention.layer_norm_rms_epsilon"), 1e-5f);
	kv_u32(AK("vocab_size"), sh.n_vocab);
#undef AK
	kv_str("tokenizer.ggml.model", "llama");
	kv_str("tokenizer.ggml.pre", "default");
	w_str("tokenizer.ggml.tokens", 21);
	w_u32(9);
	w_u32(8);
	w_u64(sh.n_vocab);
	for (i = 0; i < sh.n_vocab; i++)
		w_str(vocab[i], vocab_len[i]);
	w_str("tokenizer.ggml.scores", 21);
	w_u32(9);
	w_u32(6);
	w_u64(sh.n_vocab);
	w_raw(vocab_score, 4ull * sh.n_vocab);
	w_str("tokenizer.ggml.token_type", 25);
	w_u32(9);
	w_u32(5);
	w_u64(sh.n_vocab);
	w_raw(vocab_type, 4ull * sh.n_vocab);
	kv_u32("tokenizer.ggml.bos_token_id", 1);
	kv_u32("tokenizer.ggml.eos_token_id", 2);
	kv_u32("tokenizer.ggml.unknown_token_id", 0);
	kv_bool("tokenizer.ggml.add_bos_token", 1);
	kv_bool("tokenizer.ggml.add_eos_token", 0);
	for (i = 0; i < nt; i++) {
		w_str(ts[i].name, strlen(ts[i].name));
		w_u32(ts[i].n_dims);
		w_u64(ts[i].ne[0]);
		if (ts[i].n_dims > 1)
			w_u64(ts[i].ne[1]);
		w_u32(ts[i].type);
		w_u64(ts[i].offset);
	}
	{
		static const uint8_t zero[32];

		w_raw(zero, (32 - written % 32) % 32);
	}
	rng_state = seed;
	nthr = sysconf(_SC_NPROCESSORS_ONLN);
	if (nthr < 1)
		nthr = 1;
	if (nthr > 16)
		nthr = 16;
	for (i = 0; i < nt; i++) {
		static const uint8_t zero[32];
		struct fill_job jobs[16];
		pthread_t th[16];
		uint8_t *buf = malloc(ts[i].size);
		long k;

		if (!buf) {
			fprintf(stderr, "gguf-gen: out of memory\n");
			return 1;
		}
		for (k = 0; k < nthr; k++) {
			jobs[k] = (struct fill_job){
				&ts[i], seed,	     i,
				buf,	(uint64_t)k, (uint64_t)nthr
			};
			if (k &&
			    pthread_create(&th[k], NULL, fill_rows, &jobs[k]))
				return 1;
		}
		fill_rows(&jobs[0]);
		for (k = 1; k < nthr; k++)
			pthread_join(th[k], NULL);
		w_raw(buf, ts[i].size);
		free(buf);
		w_raw(zero, (32 - written % 32) % 32);
	}
	free(ts);
	if (fclose(out)) {
		perror(path);
		return 1;
	}
	return 0;
}
