// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pre-tokenizers of byte-level BPE vocabularies: which split rules each
 * tokenizer.ggml.pre name stands for (the patterns of the models'
 * tokenizer.json, as llama.cpp's loader lists them), and the splitting.
 *
 * A pre-tokenizer is a list of steps; each step splits every piece further:
 * a pattern's matches and the gaps between them both become pieces. Two
 * patterns, GPT-2's and Llama 3's, are run by hand-written splitters, as
 * llama.cpp runs them (they differ from the plain pattern at the edges: the
 * GPT-2 one also takes a trailing run of spaces, which the pattern leaves
 * to the gap); superbpe's digit look-ahead is one too. Everything else goes
 * through regex.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/edgeq.h>

#include "model/pretok.h"
#include "model/regex.h"
#include "model/unicode.h"

/* Steps that are not patterns. */
#define STEP_GPT2 "@gpt2"
#define STEP_LLAMA3 "@llama3"
#define STEP_DIGITS3 "@digits3" /* (?=(\d{3})+(?!\d)) */

#define CONTR "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_QWEN2                                                            \
	CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+" \
	      "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_DSV3_WORDS                                            \
	"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|" \
	"[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+"
#define RE_UPPER "((?=[\\p{L}])([^a-z]))"
#define RE_LOWER "((?=[\\p{L}])([^A-Z]))"
#define RE_UPPER_M "((?=[\\p{L}\\p{M}])([^a-z]))"
#define RE_LOWER_M "((?=[\\p{L}\\p{M}])([^A-Z]))"
#define RE_LEAD "[^\\r\\n\\p{L}\\p{N}]?"
#define RE_TAIL \
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Non-ASCII patterns, generated as octal escapes of their UTF-8. */
#define RE_DSLLM_LETTERS                                                        \
	"\\s?[A-Za-z\302\265\303\200-\303\226\303\230-\303\266\303\270-\306"    \
	"\272\306\274-\306\277\307\204-\312\223\312\225-\312\257\315\260-\315"  \
	"\263\315\266\315\267\315\273-\315\275\315\277\316\206\316\210-\316"    \
	"\212\316\214\316\216-\316\241\316\243-\317\265\317\267-\322\201\322"   \
	"\212-\324\257\324\261-\325\226\341\202\240-\341\203\205\341\216\240-"  \
	"\341\217\265\341\217\270-\341\217\275\341\262\220-\341\262\272\341"    \
	"\262\275-\341\262\277\341\264\200-\341\264\253\341\265\253-\341\265"   \
	"\267\341\265\271-\341\266\232\341\270\200-\341\274\225\341\274\230-"   \
	"\341\274\235\341\274\240-\341\275\205\341\275\210-\341\275\215\341"    \
	"\275\220-\341\275\227\341\275\231\341\275\233\341\275\235\341\275\237" \
	"-\341\275\275\341\276\200-\341\276\264\341\276\266-\341\276\274\341"   \
	"\276\276\341\277\202-\341\277\204\341\277\206-\341\277\214\341\277"    \
	"\220-\341\277\223\341\277\226-\341\277\233\341\277\240-\341\277\254"   \
	"\341\277\262-\341\277\264\341\277\266-\341\277\274\342\204\202\342"    \
	"\204\207\342\204\212-\342\204\223\342\204\225\342\204\231-\342\204"    \
	"\235\342\204\244\342\204\246\342\204\250\342\204\252-\342\204\255\342" \
	"\204\257-\342\204\264\342\204\271\342\204\274-\342\204\277\342\205"    \
	"\205-\342\205\211\342\205\216\342\206\203\342\206\204\342\260\200-"    \
	"\342\261\273\342\261\276-\342\263\244\342\263\253-\342\263\256\342"    \
	"\263\262\342\263\263\352\231\200-\352\231\255\352\232\200-\352\232"    \
	"\233\352\234\242-\352\235\257\352\235\261-\352\236\207\352\236\213-"   \
	"\352\236\216\352\255\260-\352\256\277\357\254\200-\357\254\206\357"    \
	"\254\223-\357\254\227\357\274\241-\357\274\272\357\275\201-\357\275"   \
	"\232\360\220\220\200-\360\220\221\217\360\220\222\260-\360\220\223"    \
	"\223\360\220\223\230-\360\220\223\273\360\220\262\200-\360\220\262"    \
	"\262\360\220\263\200-\360\220\263\262\360\221\242\240-\360\221\243"    \
	"\237\360\236\244\200-\360\236\245\203]+"

#define RE_DSLLM_PUNCT                                                          \
	"\\s?[!-/:-~\357\274\201-\357\274\217\357\274\232-\357\275\236\342\200" \
	"\230-\342\200\237\343\200\200-\343\200\202]+"

#define RE_CJK                                                                 \
	"[\344\270\200-\351\276\245\340\240\200-\344\270\200\352\260\200-\355" \
	"\237\277]+"

#define RE_HAN_KANA                                                            \
	"[\344\270\200-\351\276\245\343\201\200-\343\202\237\343\202\240-\343" \
	"\203\277]+"

#define RE_YOUTU_CJK                                                            \
	"[\352\260\200-\355\236\243\343\204\261-\343\206\216]+|[\357\274\201"   \
	"\342\200\246\342\200\234\342\200\235\342\200\230\342\200\231\342\200"  \
	"\224\357\274\232\357\274\233\357\274\214\343\200\201-\343\200\277\357" \
	"\270\260-\357\271\217]+|[\343\204\205-\343\204\257]+|[\344\270\200-"   \
	"\351\276\245\343\201\200-\343\202\237\343\202\240-\343\203\277]+"

#define RE_BLOOM                                                                \
	" ?[^(\\s|.,!?\342\200\246\343\200\202\357\274\214\343\200\201\340\245" \
	"\244\333\224\330\214)]+"

struct pretok_def {
	const char *names; /* space-separated */
	unsigned int flags;
	const char *steps[8];
	const char *missing; /* non-NULL: known to llama.cpp, not implemented */
};

static const struct pretok_def defs[] = {
	{ "default",
	  0,
	  { "[\\p{P}\\$\\+<=>\\^~\\|]+", STEP_GPT2, "\\p{N}+",
	    "[0-9][0-9][0-9]" },
	  NULL },
	{ "llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 "
	  "jina-v5-nano",
	  PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS,
	  { STEP_LLAMA3 },
	  NULL },
	{ "dbrx smaug-bpe", 0, { STEP_LLAMA3 }, NULL },
	{ "glm4 chatglm-bpe", PRETOK_NO_BOS, { STEP_LLAMA3 }, NULL },
	{ "jais-2",
	  0,
	  { CONTR "|" RE_LEAD "\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
		  "[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|"
		  "\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|"
		  "\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|"
		  "\\s{1,2}(?!\\S)|\\s{1}" },
	  NULL },
	{ "deepseek-llm",
	  0,
	  { "[\r\n]", RE_DSLLM_LETTERS, RE_DSLLM_PUNCT, "\\s+$", RE_CJK,
	    "\\p{N}+" },
	  NULL },
	{ "deepseek-coder",
	  0,
	  { "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}" },
	  NULL },
	{ "deepseek-v3 hunyuan-dense joyai-llm hy_v4",
	  0,
	  { "\\p{N}{1,3}", RE_HAN_KANA,
	    RE_DSV3_WORDS "[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+" },
	  NULL },
	{ "spark2_5",
	  0,
	  { "\\p{N}{1,3}", RE_HAN_KANA,
	    RE_DSV3_WORDS "|[\r\n]|\\s+(?!\\S)|\\s+", "\\p{N}" },
	  NULL },
	{ "youtu",
	  PRETOK_IGNORE_MERGES,
	  { RE_YOUTU_CJK,
	    RE_LEAD "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
		    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" CONTR "?|" RE_LEAD
		    "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
		    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" CONTR "?|\\p{N}" RE_TAIL },
	  NULL },
	{ "falcon",
	  0,
	  { "[\\p{P}\\$\\+<=>\\^~\\|`]+", STEP_GPT2, "[0-9][0-9][0-9]" },
	  NULL },
	{ "starcoder refact command-r smollm codeshell exaone minerva-7b "
	  "mellum2",
	  0,
	  { "\\p{N}", STEP_GPT2 },
	  NULL },
	{ "gpt-2 mpt olmo jais trillion granite-docling phi-2 jina-es jina-de "
	  "gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert exaone4",
	  0,
	  { STEP_GPT2 },
	  NULL },
	{ "qwen2 deepseek-r1-qwen kormo f2llmv2 stablelm2 hunyuan solar-open "
	  "megrez grok-2",
	  0,
	  { RE_QWEN2 },
	  NULL },
	{ "qwen35",
	  0,
	  { CONTR "|" RE_LEAD "[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}"
		  "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
	  NULL },
	{ "poro-chat bloom gpt3-finnish", 0, { RE_BLOOM }, NULL },
	{ "viking", 0, { RE_BLOOM, "\\p{N}" }, NULL },
	{ "tekken",
	  PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS,
	  { RE_LEAD RE_UPPER "*" RE_LOWER "+|" RE_LEAD RE_UPPER "+" RE_LOWER
			     "*|\\p{N}" RE_TAIL },
	  NULL },
	{ "chameleon",
	  PRETOK_ADD_BOS,
	  { "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
	    "([\\t\\n]|    |  )", "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]",
	    STEP_GPT2 },
	  NULL },
	{ "gpt-4o llama4 kanana2 talkie minimax-m2",
	  0,
	  { RE_LEAD RE_UPPER "*" RE_LOWER "+" CONTR "?|" RE_LEAD RE_UPPER
			     "+" RE_LOWER "*" CONTR "?|\\p{N}{1,3}" RE_TAIL },
	  NULL },
	{ "granite-embed-multi-97m",
	  PRETOK_IGNORE_MERGES,
	  { RE_LEAD RE_UPPER_M "*" RE_LOWER_M "+" CONTR "?|" RE_LEAD RE_UPPER_M
			       "+" RE_LOWER_M "*" CONTR
			       "?|\\p{N}{1,3}" RE_TAIL },
	  NULL },
	{ "superbpe", 0, { "\\p{N}+", STEP_DIGITS3 }, NULL },
	{ "bailingmoe bailingmoe2 llada-moe",
	  0,
	  { "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|" RE_LEAD
	    "\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|"
	    "\\s+(?!\\S)|\\s+" },
	  NULL },
	{ "seed-coder",
	  0,
	  { CONTR "|" RE_LEAD "\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
		  "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
	  NULL },
	{ "ufakzeka",
	  0,
	  { RE_LEAD "\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
		    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
	  NULL },
	{ "laguna", 0, { "[^\\n]+|[\\n]+", RE_QWEN2 }, NULL },
	{ "exaone-moe",
	  0,
	  { CONTR "|" RE_LEAD "(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}|"
		  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|"
		  "\\s+" },
	  NULL },
	{ "minicpm5",
	  PRETOK_IGNORE_MERGES,
	  { "\\p{N}{1,3}",
	    CONTR "|" RE_LEAD "\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
		  "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" },
	  NULL },
	/* Known to llama.cpp, refused here (never split approximately). */
	{ "gemma4 granite-embed-multi-311m sarvam-moe",
	  0,
	  { NULL },
	  "SentencePiece-style BPE over raw UTF-8 with escaped spaces" },
	{ "jina-v1-en jina-v2-code roberta-bpe",
	  0,
	  { NULL },
	  "an encoder vocabulary that appends a separator token" },
	{ "whitespace", 0, { NULL }, "the whitespace tokenizer" },
	{ "tiny_aya cohere2moe",
	  0,
	  { NULL },
	  "digit grouping by a word-boundary look-ahead" },
	{ "kimi-k2", 0, { NULL }, "Kimi-K2's own splitter" },
	{ "afmoe", 0, { NULL }, "AFMoE's digit grouping" },
};

struct pretok {
	const struct pretok_def *def;
	char name[64];
	unsigned int n_steps;
	const char *step[8];
	struct re_prog *prog[8];
};

static bool has_name(const char *names, const char *name, size_t len)
{
	const char *p = names;

	while (*p) {
		size_t l = strcspn(p, " ");

		if (l == len && !memcmp(p, name, len))
			return true;
		p += l;
		p += *p == ' ';
	}
	return false;
}

const char *pretok_known(size_t i, bool *implemented, size_t *rules)
{
	static __thread char buf[64];
	size_t d;

	for (d = 0; d < sizeof(defs) / sizeof(defs[0]); d++) {
		const char *p = defs[d].names;

		while (*p) {
			size_t l = strcspn(p, " ");

			if (!i--) {
				snprintf(buf, sizeof(buf), "%.*s", (int)l, p);
				*implemented = !defs[d].missing;
				*rules = d;
				return buf;
			}
			p += l;
			p += *p == ' ';
		}
	}
	return NULL;
}

int pretok_new(const char *name, size_t len, struct pretok **out,
	       struct edgeq_error *err)
{
	const struct pretok_def *def = NULL;
	struct pretok *p;
	size_t d;
	int ret;

	if (!name) {
		name = "default";
		len = 7;
	}
	for (d = 0; d < sizeof(defs) / sizeof(defs[0]) && !def; d++)
		if (has_name(defs[d].names, name, len))
			def = &defs[d];
	if (!def)
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"tokenizer: tokenizer.ggml.pre '%.*s' is not a pre-tokenizer llama.cpp knows; refusing to guess its split rules",
			(int)(len > 64 ? 64 : len), name);
	if (def->missing)
		return edgeq_error_set(
			err, EOPNOTSUPP,
			"tokenizer: tokenizer.ggml.pre '%.*s' (%s) is not supported",
			(int)len, name, def->missing);
	p = calloc(1, sizeof(*p));
	if (!p)
		return edgeq_error_set(err, ENOMEM, "tokenizer: out of memory");
	p->def = def;
	snprintf(p->name, sizeof(p->name), "%.*s", (int)len, name);
	for (; p->n_steps < 8 && def->steps[p->n_steps]; p->n_steps++) {
		const char *s = def->steps[p->n_steps];

		p->step[p->n_steps] = s;
		if (s[0] == '@')
			continue;
		ret = re_compile(s, &p->prog[p->n_steps], err);
		if (ret) {
			pretok_free(p);
			return ret;
		}
	}
	*out = p;
	return 0;
}

void pretok_free(struct pretok *p)
{
	unsigned int i;

	if (!p)
		return;
	for (i = 0; i < p->n_steps; i++)
		re_free(p->prog[i]);
	free(p);
}

const char *pretok_step(const struct pretok *p, unsigned int i)
{
	return i < p->n_steps ? p->step[i] : NULL;
}

unsigned int pretok_flags(const struct pretok *p)
{
	return p->def->flags;
}

const char *pretok_name(const struct pretok *p)
{
	return p->name;
}

struct pieces {
	struct pretok_piece *v;
	size_t n, cap;
};

static int push(struct pieces *o, size_t start, size_t len)
{
	if (!len)
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct pretok_piece *nv = realloc(o->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		o->v = nv;
		o->cap = cap;
	}
	o->v[o->n].start = start;
	o->v[o->n].len = len;
	o->n++;
	return 0;
}

/* The text one step sees: a piece, with nothing before or after it. */
struct piece_view {
	const uint32_t *cps;
	const uint8_t *fl;
	size_t ini, end;
};

static uint32_t cp_at(const struct piece_view *w, size_t i)
{
	return i >= w->ini && i < w->end ? w->cps[i] : UINT32_MAX;
}

static uint8_t fl_at(const struct piece_view *w, size_t i)
{
	return i >= w->ini && i < w->end ? w->fl[i] : 0;
}

static bool is_lnw(uint8_t f)
{
	return f & (UCD_L | UCD_N | UCD_WS);
}

/* 's 't 're 've 'm 'll 'd at @i: its length, or 0. */
static size_t contraction(const struct piece_view *w, size_t i, bool icase)
{
	uint32_t a, b;

	if (cp_at(w, i) != '\'' || i + 1 >= w->end)
		return 0;
	a = cp_at(w, i + 1);
	if (icase)
		a = ucd_tolower(a);
	if (a == 's' || a == 't' || a == 'm' || a == 'd')
		return 2;
	if (i + 2 >= w->end)
		return 0;
	b = cp_at(w, i + 2);
	if (icase)
		b = ucd_tolower(b);
	if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
	    (a == 'l' && b == 'l'))
		return 3;
	return 0;
}

/*
 * Whitespace at @i: \s*[\r\n]+ (when @nl), \s+(?!\S), \s+. Returns the
 * length, 0 when @i is no whitespace.
 */
static size_t spaces(const struct piece_view *w, size_t i, bool nl)
{
	size_t k = 0, last_nl = 0;

	while (fl_at(w, i + k) & UCD_WS) {
		uint32_t c = cp_at(w, i + k);

		if (c == '\r' || c == '\n')
			last_nl = i + k + 1;
		k++;
	}
	if (nl && last_nl)
		return last_nl - i;
	if (k > 1 && i + k < w->end)
		return k - 1;
	return k;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t word_gpt2(const struct piece_view *w, size_t i)
{
	uint32_t c = cp_at(w, i);
	uint8_t f = c == ' ' ? fl_at(w, i + 1) : fl_at(w, i);
	size_t j = i + (c == ' '), k;

	k = contraction(w, i, false);
	if (k)
		return k;
	if (f & UCD_L) {
		while (fl_at(w, j) & UCD_L)
			j++;
		return j - i;
	}
	if (f & UCD_N) {
		while (fl_at(w, j) & UCD_N)
			j++;
		return j - i;
	}
	if (!is_lnw(f) && f) {
		while (!is_lnw(fl_at(w, j)) && fl_at(w, j))
			j++;
		return j - i;
	}
	k = spaces(w, i, false);
	return k ? k : 1;
}

/*
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
static size_t word_llama3(const struct piece_view *w, size_t i)
{
	uint32_t c = cp_at(w, i);
	uint8_t f = fl_at(w, i), f2;
	size_t j, k;

	k = contraction(w, i, true);
	if (k)
		return k;
	if (c != '\r' && c != '\n' && !(f & UCD_N) &&
	    ((f & UCD_L) || (fl_at(w, i + 1) & UCD_L))) {
		for (j = i + 1; fl_at(w, j) & UCD_L; j++)
			;
		return j - i;
	}
	if (f & UCD_N) {
		for (j = i; j - i < 3 && (fl_at(w, j) & UCD_N); j++)
			;
		return j - i;
	}
	f2 = c == ' ' ? fl_at(w, i + 1) : f;
	if (!is_lnw(f2) && f) {
		j = i + (c == ' ');
		while (!is_lnw(fl_at(w, j)) && fl_at(w, j))
			j++;
		while (cp_at(w, j) == '\r' || cp_at(w, j) == '\n')
			j++;
		return j - i;
	}
	k = spaces(w, i, true);
	return k ? k : 1;
}

static int split_custom(const char *step, const struct piece_view *w,
			struct pieces *o)
{
	size_t i, l;
	int ret;

	for (i = w->ini; i < w->end; i += l) {
		l = !strcmp(step, STEP_GPT2) ? word_gpt2(w, i) :
					       word_llama3(w, i);
		if ((ret = push(o, i, l)))
			return ret;
	}
	return 0;
}

/*
 * (?=(\d{3})+(?!\d)) matches, empty, where a run of ASCII digits has a
 * multiple of three left: each such place but the piece's start splits.
 */
static int split_digits3(const struct piece_view *w, struct pieces *o)
{
	size_t i = w->ini, last = w->ini, a, b, p;
	int ret;

	while (i < w->end) {
		if (w->cps[i] < '0' || w->cps[i] > '9') {
			i++;
			continue;
		}
		for (a = i, b = i;
		     b < w->end && w->cps[b] >= '0' && w->cps[b] <= '9'; b++)
			;
		for (p = a + (b - a) % 3; p + 3 <= b; p += 3) {
			if (p == w->ini || p == last)
				continue;
			if ((ret = push(o, last, p - last)))
				return ret;
			last = p;
		}
		i = b;
	}
	return push(o, last, w->end - last);
}

static int split_regex(const struct re_prog *prog, struct re_vm *vm,
		       const uint32_t *keys, const struct piece_view *w,
		       struct pieces *o)
{
	size_t pos = w->ini, ms, me;
	int ret;

	while (pos < w->end &&
	       re_search(prog, vm, keys, pos, w->end, &ms, &me)) {
		if ((ret = push(o, pos, ms - pos)) ||
		    (ret = push(o, ms, me - ms)))
			return ret;
		pos = me;
	}
	return push(o, pos, w->end - pos);
}

int pretok_split(const struct pretok *p, const uint32_t *cps, const uint8_t *fl,
		 size_t n, struct pretok_piece **out, size_t *n_out)
{
	struct pieces cur = { 0 }, next = { 0 }, t;
	uint32_t *keys = NULL;
	struct re_vm *vm = NULL;
	unsigned int s;
	size_t i;
	int ret;

	if ((ret = push(&cur, 0, n)))
		goto out;
	for (s = 0; s < p->n_steps; s++) {
		if (p->prog[s]) {
			if (!keys &&
			    !(keys = malloc((n + 1) * sizeof(*keys)))) {
				ret = -ENOMEM;
				goto out;
			}
			re_keys(p->prog[s], cps, fl, n, keys);
			if ((ret = re_vm_new(p->prog[s], &vm)))
				goto out;
		}
		next.n = 0;
		for (i = 0; i < cur.n; i++) {
			struct piece_view w = { cps, fl, cur.v[i].start,
						cur.v[i].start + cur.v[i].len };

			if (p->prog[s])
				ret = split_regex(p->prog[s], vm, keys, &w,
						  &next);
			else if (!strcmp(p->step[s], STEP_DIGITS3))
				ret = split_digits3(&w, &next);
			else
				ret = split_custom(p->step[s], &w, &next);
			if (ret)
				goto out;
		}
		re_vm_free(vm);
		vm = NULL;
		t = cur, cur = next, next = t;
	}
	*out = cur.v;
	*n_out = cur.n;
	cur.v = NULL;
out:
	re_vm_free(vm);
	free(keys);
	free(cur.v);
	free(next.v);
	return ret;
}
