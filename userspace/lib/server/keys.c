// SPDX-License-Identifier: LGPL-2.1-or-later
/* API keys: parse the keys file, match bearer tokens, rate and cap them. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>
#include <sodium.h>

#include "server/keys.h"

#define KEYS_MAX 1024
#define KEYS_FILE_MAX (1u << 20)

struct srv_key_state {
	atomic_int refs;
	pthread_mutex_t lock;
	double tokens;
	uint64_t last_ns;
	unsigned int inflight;
};

static const char *const ep_names[SRV_EP_COUNT] = { "chat", "completions",
						    "models", "metrics" };

const char *srv_endpoint_name(enum srv_endpoint e)
{
	return e < SRV_EP_COUNT ? ep_names[e] : NULL;
}

enum edgeq_privacy srv_privacy_stricter(enum edgeq_privacy a,
					enum edgeq_privacy b)
{
	return a < b ? a : b;
}

/* ---- state shared across reloads ---- */

static struct srv_key_state *state_new(void)
{
	struct srv_key_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	atomic_init(&st->refs, 1);
	pthread_mutex_init(&st->lock, NULL);
	st->tokens = -1; /* full on first use */
	return st;
}

static void state_put(struct srv_key_state *st)
{
	if (st && atomic_fetch_sub(&st->refs, 1) == 1) {
		pthread_mutex_destroy(&st->lock);
		free(st);
	}
}

/* ---- parsing ---- */

enum key_field {
	F_HASH = 1u << 0,
	F_CLASS = 1u << 1,
	F_ROUTES = 1u << 2,
	F_ENDPOINTS = 1u << 3,
	F_RATE = 1u << 4,
	F_BURST = 1u << 5,
	F_CONC = 1u << 6,
};

struct parse_ctx {
	struct srv_keys *set;
	size_t cap;
	char section[64];
	unsigned int seen; /* enum key_field of the current section */
	const char *file;
	struct edgeq_error *err;
	char msg[400];
};

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* Comma-separated names -> mask; -EINVAL names the first bad one. */
static int parse_list(const char *v, const char *(*name)(int), int count,
		      uint32_t *mask, char *bad, size_t blen)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", v);
	*mask = 0;
	for (tok = strtok_r(buf, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save)) {
		int i;

		for (i = 0; i < count; i++)
			if (name(i) && !strcasecmp(tok, name(i)))
				break;
		if (i == count) {
			snprintf(bad, blen, "%s", tok);
			return -EINVAL;
		}
		*mask |= 1u << i;
	}
	if (!*mask) {
		snprintf(bad, blen, "(empty)");
		return -EINVAL;
	}
	return 0;
}

static const char *route_name_i(int i)
{
	return i == EDGEQ_ROUTE_REJECT ? NULL :
					 edgeq_route_name((enum edgeq_route)i);
}

static const char *ep_name_i(int i)
{
	return srv_endpoint_name((enum srv_endpoint)i);
}

/* "120/min", "2/s", "3600/h", "5" (per second) -> tokens per second. */
static int parse_rate(const char *v, double *rate, double *n)
{
	char *end;
	double x = strtod(v, &end), per = 1;

	if (end == v || !isfinite(x) || x <= 0 || x > 1e6)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (*end == '/') {
		end++;
		while (*end == ' ')
			end++;
		if (!strcmp(end, "s") || !strcmp(end, "sec"))
			per = 1;
		else if (!strcmp(end, "min") || !strcmp(end, "m"))
			per = 60;
		else if (!strcmp(end, "h") || !strcmp(end, "hour"))
			per = 3600;
		else
			return -EINVAL;
	} else if (*end) {
		return -EINVAL;
	}
	*rate = x / per;
	*n = x;
	return 0;
}

static int fail(struct parse_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(struct parse_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return 0; /* inih: stop, and report this line */
}

static struct srv_key *begin_key(struct parse_ctx *c, const char *section)
{
	struct srv_keys *set = c->set;
	struct srv_key *k;

	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->keys[i].name, section))
			return NULL; /* a second [section] of that name */
	if (set->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct srv_key *nk;

		if (cap > KEYS_MAX)
			return NULL;
		nk = realloc(set->keys, cap * sizeof(*nk));
		if (!nk)
			return NULL;
		set->keys = nk;
		c->cap = cap;
	}
	k = &set->keys[set->n++];
	memset(k, 0, sizeof(*k));
	snprintf(k->name, sizeof(k->name), "%s", section);
	k->floor = EDGEQ_PRIVACY_PUBLIC;
	k->routes = (1u << EDGEQ_ROUTE_LOCAL) | (1u << EDGEQ_ROUTE_PRIVATE) |
		    (1u << EDGEQ_ROUTE_PUBLIC);
	k->endpoints = (1u << SRV_EP_CHAT) | (1u << SRV_EP_COMPLETIONS) |
		       (1u << SRV_EP_MODELS);
	snprintf(c->section, sizeof(c->section), "%s", section);
	c->seen = 0;
	return k;
}

static int on_ini(void *user, const char *section, const char *name,
		  const char *value)
{
	struct parse_ctx *c = user;
	struct srv_key *k;
	char bad[64];
	unsigned int f;

	if (!section || !*section)
		return fail(c, "'%s' outside a [name] section", name);
	if (strcmp(section, c->section)) {
		if (!name_ok(section))
			return fail(
				c,
				"[%s]: a key's name is 1-63 of A-Z a-z 0-9 - _ .",
				section);
		if (c->set->n && !(c->seen & F_HASH))
			return fail(c, "[%s] has no key_sha256",
				    c->set->keys[c->set->n - 1].name);
		if (!begin_key(c, section))
			return fail(
				c,
				c->set->n >= KEYS_MAX ?
					"more than 1024 keys" :
					"[%s] appears twice (or out of memory)",
				section);
	}
	k = &c->set->keys[c->set->n - 1];
	if (!strcmp(name, "key_sha256"))
		f = F_HASH;
	else if (!strcmp(name, "class"))
		f = F_CLASS;
	else if (!strcmp(name, "routes"))
		f = F_ROUTES;
	else if (!strcmp(name, "endpoints"))
		f = F_ENDPOINTS;
	else if (!strcmp(name, "rate"))
		f = F_RATE;
	else if (!strcmp(name, "burst"))
		f = F_BURST;
	else if (!strcmp(name, "concurrency"))
		f = F_CONC;
	else
		return fail(
			c,
			"[%s]: unknown setting '%s' (key_sha256, class, routes, endpoints, rate, burst, concurrency)",
			section, name);
	if (c->seen & f)
		return fail(c, "[%s]: '%s' given twice", section, name);
	c->seen |= f;
	switch (f) {
	case F_HASH: {
		size_t bl;

		if (strlen(value) != 64 ||
		    sodium_hex2bin(k->hash, sizeof(k->hash), value, 64, NULL,
				   &bl, NULL) ||
		    bl != 32)
			return fail(
				c,
				"[%s]: key_sha256 wants 64 hex digits (edgeq keys new prints one)",
				section);
		for (size_t i = 0; i + 1 < c->set->n; i++)
			if (!sodium_memcmp(c->set->keys[i].hash, k->hash, 32))
				return fail(c, "[%s]: the same key as [%s]",
					    section, c->set->keys[i].name);
		break;
	}
	case F_CLASS:
		if (edgeq_privacy_parse(value, &k->floor))
			return fail(
				c,
				"[%s]: class '%s': confidential, internal or public",
				section, value);
		break;
	case F_ROUTES:
		if (parse_list(value, route_name_i, EDGEQ_ROUTE_REJECT,
			       &k->routes, bad, sizeof(bad)))
			return fail(
				c, "[%s]: route '%s': local, private or public",
				section, bad);
		break;
	case F_ENDPOINTS:
		if (parse_list(value, ep_name_i, SRV_EP_COUNT, &k->endpoints,
			       bad, sizeof(bad)))
			return fail(
				c,
				"[%s]: endpoint '%s': chat, completions, models or metrics",
				section, bad);
		break;
	case F_RATE: {
		double n;

		if (parse_rate(value, &k->rate, &n))
			return fail(
				c,
				"[%s]: rate '%s': N/s, N/min or N/h with 0 < N <= 1000000",
				section, value);
		if (!(c->seen & F_BURST))
			k->burst = n;
		break;
	}
	case F_BURST: {
		char *end;
		long b = strtol(value, &end, 10);

		if (end == value || *end || b < 1 || b > 1000000)
			return fail(c, "[%s]: burst '%s': 1 to 1000000",
				    section, value);
		k->burst = (double)b;
		break;
	}
	case F_CONC: {
		char *end;
		long n = strtol(value, &end, 10);

		if (end == value || *end || n < 1 || n > 100000)
			return fail(c, "[%s]: concurrency '%s': 1 to 100000",
				    section, value);
		k->concurrency = (unsigned int)n;
		break;
	}
	}
	return 1;
}

static void keys_free(struct srv_keys *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		state_put(k->keys[i].st);
	free(k->keys);
	free(k);
}

int srv_keys_parse(const char *text, const char *file, struct srv_keys *prev,
		   struct srv_keys **out, struct edgeq_error *err)
{
	struct parse_ctx c = { 0 };
	int line;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	c.set = calloc(1, sizeof(*c.set));
	if (!c.set)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	c.file = file;
	line = ini_parse_string(text, on_ini, &c);
	if (line) {
		keys_free(c.set);
		if (line < 0)
			return edgeq_error_set(err, ENOMEM, "%s: out of memory",
					       file);
		return edgeq_error_set(
			err, EINVAL, "%s:%d: %s", file, line,
			c.msg[0] ? c.msg :
				   "not an INI line ([name] or key = value)");
	}
	if (c.set->n && !(c.seen & F_HASH)) {
		int ret = edgeq_error_set(err, EINVAL,
					  "%s: [%s] has no key_sha256", file,
					  c.set->keys[c.set->n - 1].name);

		keys_free(c.set);
		return ret;
	}
	for (size_t i = 0; i < c.set->n; i++) {
		struct srv_key *k = &c.set->keys[i];

		for (size_t j = 0; prev && j < prev->n; j++)
			if (!strcmp(prev->keys[j].name, k->name)) {
				k->st = prev->keys[j].st;
				atomic_fetch_add(&k->st->refs, 1);
				break;
			}
		if (!k->st)
			k->st = state_new();
		if (!k->st) {
			keys_free(c.set);
			return edgeq_error_set(err, ENOMEM, "out of memory");
		}
	}
	atomic_init(&c.set->refs, 1);
	*out = c.set;
	return 0;
}

int srv_keys_load(const char *path, struct srv_keys *prev,
		  struct srv_keys **out, struct edgeq_error *err)
{
	struct stat st;
	char *text;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return edgeq_error_set(err, errno, "keys file %s: %s", path,
				       strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return edgeq_error_set(
			err, EINVAL, "keys file %s: not a regular file", path);
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return edgeq_error_set(
			err, EPERM,
			"keys file %s is writable by others (mode %03o): anyone could add a key; chmod go-w it",
			path, (unsigned int)(st.st_mode & 0777));
	}
	if ((uint64_t)st.st_size > KEYS_FILE_MAX) {
		close(fd);
		return edgeq_error_set(err, EFBIG,
				       "keys file %s: larger than 1 MiB", path);
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	n = read(fd, text, (size_t)st.st_size);
	close(fd);
	if (n < 0) {
		ret = edgeq_error_set(err, errno, "keys file %s: %s", path,
				      strerror(errno));
		free(text);
		return ret;
	}
	text[n] = '\0';
	ret = srv_keys_parse(text, path, prev, out, err);
	sodium_memzero(text, (size_t)n);
	free(text);
	return ret;
}

struct srv_keys *srv_keys_get(struct srv_keys *k)
{
	if (k)
		atomic_fetch_add(&k->refs, 1);
	return k;
}

void srv_keys_put(struct srv_keys *k)
{
	if (k && atomic_fetch_sub(&k->refs, 1) == 1)
		keys_free(k);
}

struct srv_key *srv_keys_match(struct srv_keys *k, const char *token)
{
	unsigned char h[32];
	struct srv_key *hit = NULL;

	if (!k || !token)
		return NULL;
	crypto_hash_sha256(h, (const unsigned char *)token, strlen(token));
	/* every key is compared, so timing does not tell which one matched */
	for (size_t i = 0; i < k->n; i++)
		if (!sodium_memcmp(k->keys[i].hash, h, sizeof(h)))
			hit = &k->keys[i];
	return hit;
}

int srv_key_admit(struct srv_key *key, uint64_t now_ns, double *retry_s)
{
	struct srv_key_state *st = key->st;
	int ret = 0;

	pthread_mutex_lock(&st->lock);
	if (key->concurrency && st->inflight >= key->concurrency) {
		ret = -EBUSY;
		goto out;
	}
	if (key->rate > 0) {
		if (st->tokens < 0) {
			st->tokens = key->burst;
		} else {
			double dt = (double)(now_ns - st->last_ns) / 1e9;

			st->tokens += dt * key->rate;
			if (st->tokens > key->burst)
				st->tokens = key->burst;
		}
		st->last_ns = now_ns;
		if (st->tokens < 1) {
			if (retry_s)
				*retry_s = (1 - st->tokens) / key->rate;
			ret = -EAGAIN;
			goto out;
		}
		st->tokens -= 1;
	}
	st->inflight++;
out:
	pthread_mutex_unlock(&st->lock);
	return ret;
}

void srv_key_release(struct srv_key *key)
{
	pthread_mutex_lock(&key->st->lock);
	if (key->st->inflight)
		key->st->inflight--;
	pthread_mutex_unlock(&key->st->lock);
}

unsigned int srv_key_inflight(const struct srv_key *key)
{
	unsigned int n;

	pthread_mutex_lock(&key->st->lock);
	n = key->st->inflight;
	pthread_mutex_unlock(&key->st->lock);
	return n;
}

void srv_key_hash_hex(const char *token, char hash_hex[65])
{
	unsigned char h[32];

	crypto_hash_sha256(h, (const unsigned char *)token, strlen(token));
	sodium_bin2hex(hash_hex, 65, h, sizeof(h));
}

int srv_key_generate(char *key, size_t klen, char hash_hex[65])
{
	unsigned char raw[32];

	if (sodium_init() < 0)
		return -EIO;
	if (klen < 4 + sodium_base64_ENCODED_LEN(
			       32, sodium_base64_VARIANT_URLSAFE_NO_PADDING))
		return -ENOSPC;
	randombytes_buf(raw, sizeof(raw));
	memcpy(key, "eqk-", 4);
	sodium_bin2base64(key + 4, klen - 4, raw, sizeof(raw),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(raw, sizeof(raw));
	srv_key_hash_hex(key, hash_hex);
	return 0;
}
