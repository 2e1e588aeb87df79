/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * API keys for edgeq serve: one key per client application, each with a
 * name, the lowest privacy class its requests may carry (its floor), the
 * routes and endpoints it may use, a token-bucket rate limit and a cap on
 * requests in flight. Only a SHA-256 of each key is stored.
 *
 * The keys file is INI, one section per application:
 *
 *   [chat-ui]
 *   key_sha256 = <64 hex: sha256 of the bearer token>
 *   class = internal              ; floor: confidential, internal, public
 *   routes = local, private       ; where its requests may run (all)
 *   endpoints = chat, completions, models   ; (all but metrics)
 *   rate = 120/min                ; refill, N/s, N/min or N/h (unlimited)
 *   burst = 20                    ; bucket size (the rate's N)
 *   concurrency = 2               ; requests in flight (unlimited)
 *
 * A set is loaded whole or not at all (every error names its line); it is
 * reference-counted so that a reload (SIGHUP) swaps in a new set while
 * requests admitted under the old one finish and release into it. Each
 * key's bucket and in-flight count live in a state shared by name between
 * the old and the new set, so a reload neither refills buckets nor lets a
 * capped application exceed its cap.
 */
#ifndef EDGEQ_SERVER_KEYS_H
#define EDGEQ_SERVER_KEYS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>
#include <edgeq/router.h>

/* Endpoints a key may be allowed. */
enum srv_endpoint {
	SRV_EP_CHAT = 0,
	SRV_EP_COMPLETIONS,
	SRV_EP_MODELS,
	SRV_EP_METRICS,
	SRV_EP_COUNT,
};

struct srv_key_state; /* bucket and in-flight count, shared by name */

struct srv_key {
	char name[64];
	unsigned char hash[32]; /* SHA-256 of the bearer token */
	enum edgeq_privacy floor;
	uint32_t routes;	  /* 1u << enum edgeq_route */
	uint32_t endpoints;	  /* 1u << enum srv_endpoint */
	double rate;		  /* tokens per second; 0: unlimited */
	double burst;		  /* bucket size */
	unsigned int concurrency; /* 0: unlimited */
	struct srv_key_state *st;
};

struct srv_keys {
	atomic_int refs;
	size_t n;
	struct srv_key *keys;
};

/*
 * Load @path. @prev (may be NULL) is the set being replaced: keys of the
 * same name take over its bucket and in-flight state. Refuses a file that
 * others may write. 0 or -errno with a message naming file and line.
 */
int srv_keys_load(const char *path, struct srv_keys *prev,
		  struct srv_keys **out, struct edgeq_error *err);
/* The same from text (tests). */
int srv_keys_parse(const char *text, const char *name, struct srv_keys *prev,
		   struct srv_keys **out, struct edgeq_error *err);
struct srv_keys *srv_keys_get(struct srv_keys *k);
void srv_keys_put(struct srv_keys *k);

/* The key whose hash matches @token (constant time over all keys), or
 * NULL. */
struct srv_key *srv_keys_match(struct srv_keys *k, const char *token);

/* Admission of one request by @key at @now_ns: 0, -EAGAIN over the rate
 * (*retry_s: seconds until a token is there), -EBUSY at the concurrency
 * cap. On 0 the caller owes srv_key_release(). */
int srv_key_admit(struct srv_key *key, uint64_t now_ns, double *retry_s);
void srv_key_release(struct srv_key *key);
unsigned int srv_key_inflight(const struct srv_key *key);

/* The stricter of two classes (confidential is the strictest). */
enum edgeq_privacy srv_privacy_stricter(enum edgeq_privacy a,
					enum edgeq_privacy b);

/* "chat", "completions", "models", "metrics". */
const char *srv_endpoint_name(enum srv_endpoint e);

/* A new random key ("eqk-" + 43 base64url characters) and its hash hex. */
int srv_key_generate(char *key, size_t klen, char hash_hex[65]);
/* The hash line's value for an existing token. */
void srv_key_hash_hex(const char *token, char hash_hex[65]);

#endif /* EDGEQ_SERVER_KEYS_H */
