/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pulling a model into the model store: a GGUF file fetched over HTTP(S) by
 * URL or as hf:OWNER/REPO/FILE from a Hugging Face-style hub.
 *
 * A pull resumes where an earlier one stopped (HTTP Range, guarded by
 * If-Range with the server's validator so a file changed on the server is
 * fetched again from the start), retries a dropped connection, verifies the
 * SHA-256 against what the caller or the server states (--sha256, the hub's
 * X-Linked-Etag, or an ETag that is a SHA-256), checks that a .gguf is a
 * well-formed GGUF file, then renames it into the store and writes an
 * unsigned manifest beside it. Nothing half-downloaded is ever visible under
 * the final name.
 *
 * Store layout (default /var/lib/edgeq/models, $EDGEQ_MODELS_DIR):
 *   NAME.gguf                 the model
 *   NAME.gguf.manifest.json   an unsigned edgeq-manifest/1 for it
 *   .partial/NAME.gguf.part   an interrupted download (and .part.json: its
 *                             URL and the server's validator)
 *
 * Errors: -EINVAL bad source or name; -ENOENT not on the server (404);
 * -EACCES the server wants a token (401/403); -EPROTO the server broke the
 * protocol (bad Content-Range, redirect to a refused scheme, http for a
 * remote host); -EBADMSG checksum mismatch or not a GGUF file; -ENOSPC the
 * store's file system is full (the partial file is kept to resume);
 * -EEXIST already in the store; -EIO the transfer failed after every retry.
 */
#ifndef EDGEQ_PULL_H
#define EDGEQ_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDGEQ_PULL_DEFAULT_ENDPOINT "https://huggingface.co"
#define EDGEQ_PULL_DEFAULT_STORE "/var/lib/edgeq/models"

struct edgeq_pull_params {
	const char *source;   /* URL (http/https) or hf:OWNER/REPO/FILE */
	const char *endpoint; /* hub for hf: (NULL: $EDGEQ_HF_ENDPOINT,
			       * $HF_ENDPOINT, else the default above) */
	const char *revision; /* hub revision for hf: (NULL: "main") */
	const char *store;    /* NULL: $EDGEQ_MODELS_DIR, else the default */
	const char *name;     /* file name in the store (NULL: the URL's) */
	const char *sha256;   /* expected digest, 64 hex (NULL: the server's) */
	const char *token;    /* bearer token (NULL: $HF_TOKEN for hf:) */
	const char *ca_file;  /* CA bundle for https (NULL: the system's) */
	unsigned int retries; /* resumes after a failed transfer */
	unsigned int retry_delay_ms; /* first back-off; doubles, max 30 s */
	unsigned int stall_s;	     /* abort a transfer idle this long (30) */
	bool require_sha256;	     /* refuse when no digest is known */
	bool force;		     /* replace a file already in the store */
	bool insecure_http;	     /* allow http:// for non-loopback hosts */
	/* Called at most ~10 times a second while bytes arrive. @total is 0
	 * when the size is not known yet. */
	void (*progress)(void *arg, uint64_t done, uint64_t total,
			 double bytes_per_s);
	void *progress_arg;
};

struct edgeq_pull_result {
	char url[2048];		 /* what was fetched (after hf: expansion) */
	char path[4096];	 /* the model in the store */
	char manifest[4096];	 /* its unsigned manifest */
	char sha256[65];	 /* of the file */
	const char *digest_from; /* "--sha256", "X-Linked-Etag", "ETag" or
				  * NULL: not verified (none stated) */
	uint64_t size;
	uint64_t resumed_from; /* bytes already there at the start */
	unsigned int attempts; /* transfers made (1 without a retry) */
};

/* Defaults: 5 retries from 1 s, 30 s stall limit. */
void edgeq_pull_params_init(struct edgeq_pull_params *p);

/*
 * Resolve @source into the URL to fetch and the default file name, without
 * touching the network. @url and @name may be NULL.
 */
int edgeq_pull_resolve(const struct edgeq_pull_params *p, char *url,
		       size_t url_len, char *name, size_t name_len,
		       struct edgeq_error *err);

/* Fetch, verify and install; @r is filled on success. */
int edgeq_pull(const struct edgeq_pull_params *p, struct edgeq_pull_result *r,
	       struct edgeq_error *err);

#ifdef __cplusplus
}
#endif

#endif /* EDGEQ_PULL_H */
