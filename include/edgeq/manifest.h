/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Manifests and bundles: what was tested, bound into one signed unit that is
 * installed atomically and rolled back as one.
 *
 * A manifest is a JSON object (schema "edgeq-manifest/1", documented in
 * Documentation/manifest.rst and Documentation/manifest.schema.json): hashes
 * of the model file and its tokenizer, architecture, tensor types, context
 * limit, engine version and commit, module ABI and BPF object hashes, device
 * family and profile, thresholds, routing policy and the `edgeq bench`
 * evidence. Its Ed25519 signature covers the canonical form of every other
 * field (sorted keys, compact, ASCII).
 *
 * A store (default /var/lib/edgeq/bundles, $EDGEQ_BUNDLES) holds one directory
 * per bundle (manifest.json + model.gguf) and two symlinks, current and
 * previous, switched by rename(2) with fsync of files and directory, so a
 * power cut leaves the old or the new bundle, never a mix.
 *
 * Errors: -EKEYREJECTED unsigned, tampered or signed by another key;
 * -EPROTO the bundle does not match this system (the message names each
 * difference); -EBADMSG malformed; -EPERM a secret key readable by others.
 */
#ifndef EDGEQ_MANIFEST_H
#define EDGEQ_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDGEQ_MANIFEST_SCHEMA "edgeq-manifest/1"

/* ---- keys: hex text files; the secret one must be mode 0600 or stricter */
int edgeq_key_generate(const char *secret_path, const char *public_path,
		       struct edgeq_error *err);

/* ---- this system */

/* Device family ("jetson-orin-nano", a slug of the DMI product name on PCs)
 * and the raw model string, from /proc/device-tree/model or
 * /sys/class/dmi/id (under $EDGEQ_SYSROOT when set, for tests). */
int edgeq_device_family(char *family, size_t flen, char *model, size_t mlen);
/* The loaded module's ABI (EDGEQ_IOC_GET_FEATURES on /dev/edgeq-control),
 * 0 when no module is loaded. $EDGEQ_MODULE_ABI overrides (tests). */
int edgeq_module_abi_loaded(void);

/* ---- create, sign, verify */

struct edgeq_manifest_params {
	const char *model;	/* GGUF file (required) */
	const char *name;	/* bundle name (default: model file name) */
	const char *profile;	/* device profile name ("local") */
	const char *family;	/* device family; NULL: this machine's */
	const char *evidence;	/* `edgeq bench --json` output file, or NULL */
	const char *bpf_dir;	/* hash every *.bpf.o here; NULL: build/bpf */
	int module_abi;		/* ABI required; -1: what is loaded now */
	uint64_t memory_budget; /* bytes; 0: none */
	double throttle_c;	/* shrink/replace above this (°C) */
	double critical_c;	/* stop generating above this (°C) */
	double slo_ttft_s;	/* time to first token */
	double min_tps;		/* throughput floor for probation; 0: none */
	double probation_s;	/* how long a new bundle is on probation */
	double floor_window_s;	/* under the floor this long: roll back */
	unsigned int max_agent_crashes; /* in the probation period */
	const char *routing; /* routing policy as JSON text; NULL: default */
};

void edgeq_manifest_params_init(struct edgeq_manifest_params *p);
/* Build an unsigned manifest; *out is malloc'd JSON text. */
int edgeq_manifest_create(const struct edgeq_manifest_params *p, char **out,
			  struct edgeq_error *err);
/* Sign (or re-sign) @json with the secret key file; *out is malloc'd. */
int edgeq_manifest_sign(const char *json, const char *secret_key_path,
			char **out, struct edgeq_error *err);

/* What the bundle is checked against; NULL / -1 fields are detected. */
struct edgeq_verify_env {
	const char *model;   /* model file to hash; NULL: skip */
	const char *family;  /* NULL: this machine's */
	int module_abi;	     /* -1: the loaded one */
	const char *bpf_dir; /* NULL: skip the BPF objects */
	bool ignore_system;  /* only the signature (show, install prep) */
};
void edgeq_verify_env_init(struct edgeq_verify_env *e);
/*
 * Verify the signature with the public key file, then the bundle against the
 * system. Every difference is named in @err, "; "-separated.
 */
int edgeq_manifest_verify(const char *json, const char *public_key_path,
			  const struct edgeq_verify_env *env,
			  struct edgeq_error *err);

/* Read a whole (small) file, NUL-terminated, at most 64 MiB. */
int edgeq_read_text(const char *path, char **out, size_t *len,
		    struct edgeq_error *err);

/* ---- the bundle store */

struct edgeq_store {
	char dir[4000];
};

/* Open (create) the store: @dir, else $EDGEQ_BUNDLES, else
 * /var/lib/edgeq/bundles. */
int edgeq_store_open(struct edgeq_store *s, const char *dir,
		     struct edgeq_error *err);
/*
 * Install a signed manifest and its model as a new bundle and make it
 * current (the old current becomes previous). Atomic at every step; a bundle
 * left half-written by a crash is removed by the next install.
 * $EDGEQ_TEST_KILL_AT=N kills the process at step N (tests; steps in
 * Documentation/manifest.rst). @id receives the bundle id.
 */
int edgeq_store_install(struct edgeq_store *s, const char *signed_json,
			const char *model_path, char *id, size_t idlen,
			struct edgeq_error *err);
/* The id current (or previous) points at; -ENOENT when none. */
int edgeq_store_get(struct edgeq_store *s, const char *which, char *id,
		    size_t idlen, struct edgeq_error *err);
/* Paths of a bundle's manifest and model. */
void edgeq_store_paths(const struct edgeq_store *s, const char *id,
		       char *manifest, char *model, size_t len);
/*
 * Make previous current again and record why (the bundle's directory gets a
 * "rejected" file; <store>/rollback.log a line). -ENOENT without previous.
 */
int edgeq_store_rollback(struct edgeq_store *s, const char *reason,
			 struct edgeq_error *err);

/*
 * What `edgeq serve` loads when a trust key is configured: the store's
 * current bundle if it verifies (signature, model and tokenizer hashes,
 * engine, module ABI, device family; @env's model is ignored), else the
 * previous one after rolling back with the refusal as the reason. @model
 * receives the bundle's model path; *@probation is true when the bundle has
 * not yet passed its probation. -ENOENT when the store has no bundle,
 * otherwise the last refusal.
 */
int edgeq_bundle_select(struct edgeq_store *s, const char *trust_key,
			const struct edgeq_verify_env *env, char *model,
			size_t len, bool *probation, struct edgeq_error *err);

/* ---- probation: the daemon reports, the library decides */

enum edgeq_probation_event {
	EDGEQ_PROBATION_LOAD_FAILED = 0, /* the bundle did not load */
	EDGEQ_PROBATION_OOM_KILL,	 /* the engine was OOM-killed */
	EDGEQ_PROBATION_AGENT_CRASH,	 /* a device agent died */
	EDGEQ_PROBATION_THROUGHPUT,	 /* a decode tok/s sample (value) */
	EDGEQ_PROBATION_TICK,		 /* time passes (ends probation) */
};

enum edgeq_probation_state {
	EDGEQ_PROBATION_RUNNING = 0,
	EDGEQ_PROBATION_PASSED,
	EDGEQ_PROBATION_ROLLED_BACK,
};

struct edgeq_probation {
	struct edgeq_store *store;
	char bundle[80]; /* id on probation */
	double min_tps, window_s, period_s;
	unsigned int max_crashes, crashes;
	uint64_t start_ns, below_since_ns;
	bool below;
	enum edgeq_probation_state state;
	char reason[256]; /* why it rolled back */
};

/* Put the store's current bundle on probation, with its manifest's
 * thresholds; @now_ns from edgeq_now_ns() (or a test clock). */
int edgeq_probation_start(struct edgeq_probation *p, struct edgeq_store *s,
			  uint64_t now_ns, struct edgeq_error *err);
/*
 * Report an event. Returns the state: RUNNING, PASSED (the period ended
 * without failure; the bundle is marked good), or ROLLED_BACK (previous is
 * current again and p->reason says why); or -errno.
 */
int edgeq_probation_report(struct edgeq_probation *p,
			   enum edgeq_probation_event ev, double value,
			   uint64_t now_ns, struct edgeq_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_MANIFEST_H */
