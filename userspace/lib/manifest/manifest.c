// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Manifests: create from a model and this system, sign with Ed25519, verify
 * against the trusted key and the running system, naming every difference.
 */
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <uapi/linux/edgeq.h>
#include <sodium.h>

#include <edgeq/gguf.h>
#include <edgeq/manifest.h>

#include "manifest/manifest_int.h"

#define KEY_HEX_MAX 256

int edgeq_read_text(const char *path, char **out, size_t *len,
		    struct edgeq_error *err)
{
	struct stat sb;
	size_t done = 0;
	char *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > (64 << 20)) {
		close(fd);
		return edgeq_error_set(
			err, EFBIG, "%s: not a regular file of at most 64 MiB",
			path);
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf) {
		close(fd);
		return edgeq_error_set(err, ENOMEM, "%s: out of memory", path);
	}
	while (done < (size_t)sb.st_size &&
	       (n = read(fd, buf + done, (size_t)sb.st_size - done)) > 0)
		done += (size_t)n;
	close(fd);
	buf[done] = '\0';
	*out = buf;
	if (len)
		*len = done;
	return 0;
}

int manifest_sha256_file(const char *path, char hex[65],
			 struct edgeq_error *err)
{
	crypto_hash_sha256_state st;
	unsigned char md[32];
	const size_t chunk = 1 << 20;
	unsigned char *buf;
	ssize_t n;
	int fd;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	buf = malloc(chunk);
	if (!buf) {
		close(fd);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, chunk)) > 0)
		crypto_hash_sha256_update(&st, buf, (unsigned long long)n);
	free(buf);
	close(fd);
	if (n < 0)
		return edgeq_error_set(err, errno, "%s: read: %s", path,
				       strerror(errno));
	crypto_hash_sha256_final(&st, md);
	sodium_bin2hex(hex, 65, md, 32);
	return 0;
}

/* ---- keys ---- */

static int write_key(const char *path, const unsigned char *key, size_t len,
		     mode_t mode, struct edgeq_error *err)
{
	char hex[KEY_HEX_MAX];
	int fd;

	sodium_bin2hex(hex, sizeof(hex), key, len);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	if (fchmod(fd, mode) < 0 || dprintf(fd, "%s\n", hex) < 0 ||
	    fsync(fd) < 0) {
		int e = errno;

		close(fd);
		unlink(path);
		return edgeq_error_set(err, e, "%s: %s", path, strerror(e));
	}
	close(fd);
	sodium_memzero(hex, sizeof(hex));
	return 0;
}

int edgeq_key_generate(const char *secret_path, const char *public_path,
		       struct edgeq_error *err)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	int ret;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	crypto_sign_keypair(pk, sk);
	ret = write_key(secret_path, sk, sizeof(sk), 0600, err);
	sodium_memzero(sk, sizeof(sk));
	if (ret)
		return ret;
	ret = write_key(public_path, pk, sizeof(pk), 0644, err);
	if (ret)
		unlink(secret_path);
	return ret;
}

static int read_key(const char *path, unsigned char *key, size_t len,
		    bool secret, struct edgeq_error *err)
{
	char hex[KEY_HEX_MAX] = { 0 };
	struct stat sb;
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return edgeq_error_set(err, errno, "key file %s: %s", path,
				       strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return edgeq_error_set(err, EINVAL,
				       "key file %s: not a regular file", path);
	}
	if (secret && (sb.st_mode & 077)) {
		close(fd);
		return edgeq_error_set(
			err, EPERM,
			"secret key %s has mode %04o: readable or writable by group or others; run 'chmod 600 %s'",
			path, (unsigned int)(sb.st_mode & 07777), path);
	}
	if (!secret && (sb.st_mode & 022)) {
		close(fd);
		return edgeq_error_set(
			err, EPERM,
			"public key %s has mode %04o: writable by group or others; run 'chmod 644 %s'",
			path, (unsigned int)(sb.st_mode & 07777), path);
	}
	n = read(fd, hex, sizeof(hex) - 1);
	close(fd);
	if (n < 0)
		return edgeq_error_set(err, errno, "key file %s: %s", path,
				       strerror(errno));
	if (sodium_hex2bin(key, len, hex, (size_t)n, " \n", &got, NULL) ||
	    got != len) {
		sodium_memzero(hex, sizeof(hex));
		return edgeq_error_set(
			err, EINVAL,
			"key file %s: expected %zu hex-encoded bytes (an edgeq %s key)",
			path, len, secret ? "secret" : "public");
	}
	sodium_memzero(hex, sizeof(hex));
	return 0;
}

static void key_id(const unsigned char *pk, char out[17])
{
	unsigned char md[32];

	crypto_hash_sha256(md, pk, crypto_sign_PUBLICKEYBYTES);
	sodium_bin2hex(out, 17, md, 8);
}

/* ---- this system ---- */

static const char *sysroot_path(char *buf, size_t len, const char *p)
{
	const char *root = getenv("EDGEQ_SYSROOT");

	snprintf(buf, len, "%s%s", root ? root : "", p);
	return buf;
}

static int read_line(const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];
	FILE *f = fopen(sysroot_path(p, sizeof(p), path), "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0'; /* device-tree strings end in NUL */
	return n ? 0 : -ENODATA;
}

static void slugify(const char *in, char *out, size_t len)
{
	size_t j = 0;
	bool dash = false;

	for (; *in && j + 1 < len; in++) {
		if (isalnum((unsigned char)*in)) {
			if (dash && j)
				out[j++] = '-';
			if (j + 1 < len)
				out[j++] = (char)tolower((unsigned char)*in);
			dash = false;
		} else {
			dash = true;
		}
	}
	out[j] = '\0';
}

int edgeq_device_family(char *family, size_t flen, char *model, size_t mlen)
{
	static const struct {
		const char *match, *family;
	} known[] = {
		{ "Orin Nano", "jetson-orin-nano" },
		{ "Orin NX", "jetson-orin-nx" },
		{ "AGX Orin", "jetson-agx-orin" },
		{ "Xavier NX", "jetson-xavier-nx" },
		{ "AGX Xavier", "jetson-agx-xavier" },
		{ "Raspberry Pi 5", "raspberry-pi-5" },
	};
	char raw[256] = "", vendor[128] = "";

	if (read_line("/proc/device-tree/model", raw, sizeof(raw)) &&
	    read_line("/sys/class/dmi/id/product_name", raw, sizeof(raw)) &&
	    read_line("/sys/firmware/devicetree/base/model", raw, sizeof(raw)))
		snprintf(raw, sizeof(raw), "unknown");
	if (model)
		snprintf(model, mlen, "%s", raw);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(raw, known[i].match)) {
			snprintf(family, flen, "%s", known[i].family);
			return 0;
		}
	/* PCs: vendor + product, e.g. "lenovo-21kv" */
	if (!read_line("/sys/class/dmi/id/sys_vendor", vendor,
		       sizeof(vendor)) &&
	    !strstr(raw, vendor) &&
	    strlen(vendor) + strlen(raw) + 2 < sizeof(raw)) {
		char both[400];

		snprintf(both, sizeof(both), "%s %s", vendor, raw);
		slugify(both, family, flen);
	} else {
		slugify(raw, family, flen);
	}
	if (!family[0])
		snprintf(family, flen, "unknown");
	return 0;
}

int edgeq_module_abi_loaded(void)
{
	struct edgeq_features f = { .size = sizeof(f) };
	const char *env = getenv("EDGEQ_MODULE_ABI");
	int fd, ret;

	if (env && *env)
		return atoi(env);
	fd = open("/dev/edgeq-control", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ret = ioctl(fd, EDGEQ_IOC_GET_FEATURES, &f);
	close(fd);
	return ret ? 0 : (int)f.version;
}

/* ---- create ---- */

void edgeq_manifest_params_init(struct edgeq_manifest_params *p)
{
	memset(p, 0, sizeof(*p));
	p->profile = "local";
	p->module_abi = -1;
	p->throttle_c = 85;
	p->critical_c = 95;
	p->slo_ttft_s = 2;
	p->probation_s = 600;
	p->floor_window_s = 60;
	p->max_agent_crashes = 3;
}

static json_t *bpf_hashes(const char *dir, struct edgeq_error *err)
{
	json_t *o = json_object();
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return o; /* no BPF objects built: nothing to pin */
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[PATH_MAX], hex[65];

		if (n < 7 || strcmp(de->d_name + n - 6, ".bpf.o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (manifest_sha256_file(path, hex, err) == 0)
			json_object_set_new(o, de->d_name, json_string(hex));
	}
	closedir(d);
	return o;
}

static json_t *default_routing(void)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "confidential", "local",
			 "internal", "local-or-private", "public",
			 "local-or-public", "order",
			 "privacy, then SLO at sustained speed, then cost");
}

static void iso_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *evidence_json(const char *path, struct edgeq_error *err)
{
	json_error_t je;
	json_t *bench, *ev;
	char date[32];
	const char *d;

	bench = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!bench || !json_is_object(bench)) {
		edgeq_error_set(err, EBADMSG,
				"evidence %s: not a JSON object (%s, line %d)",
				path, je.text, je.line);
		json_decref(bench);
		return NULL;
	}
	iso_now(date, sizeof(date));
	d = json_string_value(json_object_get(bench, "date"));
	ev = json_pack("{s:s, s:O?, s:o}", "date", d ? d : date, "device",
		       json_object_get(bench, "device"), "bench", bench);
	return ev;
}

/*
 * sha256 over every tokenizer.* key/value pair, the bytes as they are in the
 * file, in file order: the tokenizer's identity, whatever else changes.
 */
static void tokenizer_sha256(const struct edgeq_gguf *g, char hex[65])
{
	crypto_hash_sha256_state st;
	uint8_t h[32];

	crypto_hash_sha256_init(&st);
	for (uint64_t i = 0; i < g->n_kv; i++) {
		const struct edgeq_gguf_kv *kv = &g->kv[i];

		if (kv->key.len >= 10 && !memcmp(kv->key.ptr, "tokenizer.", 10))
			crypto_hash_sha256_update(&st, g->base + kv->rec_off,
						  kv->rec_len);
	}
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, 65, h, 32);
}

/* What a manifest says about its model, read from the GGUF header. */
struct model_facts {
	char tok[65], arch[32], name[128];
	uint64_t size, n_params;
	uint32_t n_ctx;
	json_t *types; /* type name -> tensor count */
};

static void gguf_copy_str(char *dst, size_t n, const struct edgeq_gguf *g,
			  const char *key)
{
	struct edgeq_gguf_str s;

	dst[0] = '\0';
	if (!edgeq_gguf_get_str(g, key, &s, NULL))
		snprintf(dst, n, "%.*s", (int)(s.len < n ? s.len : n - 1),
			 s.ptr);
}

static int model_facts(const char *path, struct model_facts *f,
		       struct edgeq_error *err)
{
	uint32_t counts[EDGEQ_GGUF_NTYPES] = { 0 };
	struct edgeq_gguf *g;
	int ret;

	memset(f, 0, sizeof(*f));
	ret = edgeq_gguf_open_flags(path, EDGEQ_GGUF_ANY_TYPE, &g, err);
	if (ret)
		return ret;
	tokenizer_sha256(g, f->tok);
	gguf_copy_str(f->arch, sizeof(f->arch), g, "general.architecture");
	gguf_copy_str(f->name, sizeof(f->name), g, "general.name");
	edgeq_gguf_get_arch_u32(g, "context_length", &f->n_ctx, NULL);
	f->size = g->size;
	for (uint64_t i = 0; i < g->n_tensors; i++) {
		const struct edgeq_gguf_tensor *t = &g->tensors[i];

		counts[t->type]++;
		f->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
	}
	edgeq_gguf_close(g);
	f->types = json_object();
	for (uint32_t t = 0; t < EDGEQ_GGUF_NTYPES; t++)
		if (counts[t])
			json_object_set_new(f->types, edgeq_gguf_type_name(t),
					    json_integer(counts[t]));
	return 0;
}

int edgeq_manifest_create(const struct edgeq_manifest_params *p, char **out,
			  struct edgeq_error *err)
{
	char sha[65], family[64], model[256], date[32];
	const char *base;
	json_t *types, *m, *ev = NULL;
	struct model_facts f;
	int ret, abi;

	if (!p->model)
		return edgeq_error_set(err, EINVAL, "a manifest needs a model");
	ret = model_facts(p->model, &f, err);
	if (ret)
		return ret;
	types = f.types;
	ret = manifest_sha256_file(p->model, sha, err);
	if (ret) {
		json_decref(types);
		return ret;
	}
	if (p->evidence) {
		ev = evidence_json(p->evidence, err);
		if (!ev) {
			json_decref(types);
			return -EBADMSG;
		}
	}
	edgeq_device_family(family, sizeof(family), model, sizeof(model));
	if (p->family)
		snprintf(family, sizeof(family), "%s", p->family);
	abi = p->module_abi >= 0 ? p->module_abi : edgeq_module_abi_loaded();
	base = strrchr(p->model, '/') ? strrchr(p->model, '/') + 1 : p->model;
	iso_now(date, sizeof(date));
	m = json_pack("{s:s, s:s, s:s,"
		      " s:{s:s, s:I, s:s, s:s, s:s, s:s, s:o, s:i, s:I},"
		      " s:{s:s, s:s},"
		      " s:{s:i, s:o},"
		      " s:{s:s, s:s, s:s},"
		      " s:{s:I, s:{s:f, s:f}, s:{s:f, s:f}, s:{s:f, s:f, s:i}},"
		      " s:o, s:o}",
		      "schema", EDGEQ_MANIFEST_SCHEMA, "name",
		      p->name ? p->name : base, "created", date, "model",
		      "file", base, "size", (json_int_t)f.size, "sha256", sha,
		      "tokenizer_sha256", f.tok, "arch", f.arch, "name", f.name,
		      "tensor_types", types, "ctx_limit", (int)f.n_ctx,
		      "params", (json_int_t)f.n_params, "engine", "version",
		      edgeq_version(), "commit", edgeq_commit(), "kernel",
		      "module_abi", abi, "bpf_objects",
		      bpf_hashes(p->bpf_dir ? p->bpf_dir : "build/bpf", err),
		      "device", "family", family, "model",
		      p->family ? "" : model, "profile",
		      p->profile ? p->profile : "local", "thresholds",
		      "memory_budget", (json_int_t)p->memory_budget, "thermal",
		      "throttle_c", p->throttle_c, "critical_c", p->critical_c,
		      "slo", "ttft_s", p->slo_ttft_s, "min_tok_s", p->min_tps,
		      "probation", "period_s", p->probation_s, "floor_window_s",
		      p->floor_window_s, "max_agent_crashes",
		      (int)p->max_agent_crashes, "routing",
		      p->routing ? json_loads(p->routing, 0, NULL) :
				   default_routing(),
		      "evidence", ev ? ev : json_null());
	if (!m)
		return edgeq_error_set(
			err, EINVAL,
			"manifest: building the JSON failed (is --routing valid JSON?)");
	*out = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS |
				     JSON_REAL_PRECISION(17));
	json_decref(m);
	return *out ? 0 : edgeq_error_set(err, ENOMEM, "out of memory");
}

/* ---- sign and verify ---- */

/* The bytes the signature covers: every field but "signature", sorted,
 * compact, ASCII. */
static char *canonical(json_t *m)
{
	json_t *c = json_deep_copy(m);
	char *s;

	json_object_del(c, "signature");
	s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII |
				  JSON_REAL_PRECISION(17));
	json_decref(c);
	return s;
}

static json_t *parse(const char *json, struct edgeq_error *err)
{
	json_error_t je;
	json_t *m = json_loads(json, JSON_REJECT_DUPLICATES, &je);

	if (!m || !json_is_object(m)) {
		edgeq_error_set(err, EBADMSG,
				"manifest is not a JSON object: %s (line %d)",
				je.text, je.line);
		json_decref(m);
		return NULL;
	}
	if (strcmp(json_string_value(json_object_get(m, "schema")) ?: "",
		   EDGEQ_MANIFEST_SCHEMA)) {
		edgeq_error_set(err, EBADMSG, "manifest schema is not \"%s\"",
				EDGEQ_MANIFEST_SCHEMA);
		json_decref(m);
		return NULL;
	}
	return m;
}

int edgeq_manifest_sign(const char *json, const char *secret_key_path,
			char **out, struct edgeq_error *err)
{
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	unsigned char sig[crypto_sign_BYTES];
	char sighex[2 * crypto_sign_BYTES + 1], kid[17];
	json_t *m;
	char *c;
	int ret;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	m = parse(json, err);
	if (!m)
		return -EBADMSG;
	ret = read_key(secret_key_path, sk, sizeof(sk), true, err);
	if (ret) {
		json_decref(m);
		return ret;
	}
	c = canonical(m);
	crypto_sign_detached(sig, NULL, (const unsigned char *)c, strlen(c),
			     sk);
	/* the public key is the secret key's second half */
	key_id(sk + 32, kid);
	sodium_memzero(sk, sizeof(sk));
	free(c);
	sodium_bin2hex(sighex, sizeof(sighex), sig, sizeof(sig));
	json_object_set_new(m, "signature",
			    json_pack("{s:s, s:s, s:s}", "alg", "ed25519",
				      "key_id", kid, "value", sighex));
	*out = json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS |
				     JSON_REAL_PRECISION(17));
	json_decref(m);
	return *out ? 0 : edgeq_error_set(err, ENOMEM, "out of memory");
}

void edgeq_verify_env_init(struct edgeq_verify_env *e)
{
	memset(e, 0, sizeof(*e));
	e->module_abi = -1;
}

static const char *jstr(json_t *m, const char *a, const char *b)
{
	json_t *o = json_object_get(m, a);

	return json_string_value(b ? json_object_get(o, b) : o) ?: "";
}

static void add_diff(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_diff(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n && n + 2 < len) {
		strcpy(buf + n, "; ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

static void check_system(json_t *m, const struct edgeq_verify_env *env, char *d,
			 size_t dlen)
{
	char family[64], model[256], hex[65];
	struct edgeq_error e2;
	json_t *bpf, *v;
	const char *name;
	int need, have;

	if (env->model) {
		struct edgeq_gguf *g;

		if (edgeq_gguf_open_flags(env->model, EDGEQ_GGUF_ANY_TYPE, &g,
					  &e2)) {
			add_diff(d, dlen, "model %s unreadable: %s", env->model,
				 e2.msg);
		} else {
			tokenizer_sha256(g, hex);
			edgeq_gguf_close(g);
			if (strcmp(hex, jstr(m, "model", "tokenizer_sha256")))
				add_diff(d, dlen, "tokenizer hash differs");
			if (manifest_sha256_file(env->model, hex, &e2))
				add_diff(d, dlen, "model unreadable: %s",
					 e2.msg);
			else if (strcmp(hex, jstr(m, "model", "sha256")))
				add_diff(
					d, dlen,
					"model file hash differs (%.12s..., manifest %.12s...)",
					hex, jstr(m, "model", "sha256"));
		}
	}
	if (strcmp(jstr(m, "engine", "version"), edgeq_version()))
		add_diff(d, dlen, "engine %s required, %s running",
			 jstr(m, "engine", "version"), edgeq_version());
	need = (int)json_integer_value(
		json_object_get(json_object_get(m, "kernel"), "module_abi"));
	have = env->module_abi >= 0 ? env->module_abi :
				      edgeq_module_abi_loaded();
	if (need > 0 && have != need) {
		if (have)
			add_diff(d, dlen, "module ABI %d required, %d loaded",
				 need, have);
		else
			add_diff(
				d, dlen,
				"module ABI %d required, no edgeq module loaded",
				need);
	}
	bpf = json_object_get(json_object_get(m, "kernel"), "bpf_objects");
	if (env->bpf_dir)
		json_object_foreach(bpf, name, v)
		{
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%s", env->bpf_dir,
				 name);
			if (manifest_sha256_file(path, hex, &e2))
				add_diff(d, dlen, "BPF object %s missing",
					 name);
			else if (strcmp(hex, json_string_value(v) ?: ""))
				add_diff(d, dlen, "BPF object %s hash differs",
					 name);
		}
	edgeq_device_family(family, sizeof(family), model, sizeof(model));
	if (env->family) {
		snprintf(family, sizeof(family), "%s", env->family);
		snprintf(model, sizeof(model), "%s", env->family);
	}
	if (strcmp(family, jstr(m, "device", "family")))
		add_diff(d, dlen, "made for %s, running on %s%s%s%s",
			 jstr(m, "device", "family"), family,
			 strcmp(model, family) ? " (" : "",
			 strcmp(model, family) ? model : "",
			 strcmp(model, family) ? ")" : "");
}

int edgeq_manifest_verify(const char *json, const char *public_key_path,
			  const struct edgeq_verify_env *env,
			  struct edgeq_error *err)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char sig[crypto_sign_BYTES];
	char kid[17], diffs[sizeof(err->msg)] = "";
	struct edgeq_verify_env def;
	json_t *m, *s;
	size_t got = 0;
	const char *hex;
	char *c;
	int ret;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	if (!env) {
		edgeq_verify_env_init(&def);
		env = &def;
	}
	m = parse(json, err);
	if (!m)
		return -EBADMSG;
	s = json_object_get(m, "signature");
	if (!s) {
		json_decref(m);
		return edgeq_error_set(
			err, EKEYREJECTED,
			"unsigned bundle: the manifest has no signature");
	}
	ret = read_key(public_key_path, pk, sizeof(pk), false, err);
	if (ret) {
		json_decref(m);
		return ret;
	}
	key_id(pk, kid);
	hex = json_string_value(json_object_get(s, "value"));
	if (strcmp(json_string_value(json_object_get(s, "alg")) ?: "",
		   "ed25519") ||
	    !hex ||
	    sodium_hex2bin(sig, sizeof(sig), hex, strlen(hex), NULL, &got,
			   NULL) ||
	    got != sizeof(sig)) {
		json_decref(m);
		return edgeq_error_set(
			err, EKEYREJECTED,
			"signature is not an ed25519 signature in hex");
	}
	if (strcmp(json_string_value(json_object_get(s, "key_id")) ?: "",
		   kid)) {
		ret = edgeq_error_set(
			err, EKEYREJECTED,
			"signed by key %s, not by the trusted key %s",
			json_string_value(json_object_get(s, "key_id")) ?: "?",
			kid);
		json_decref(m);
		return ret;
	}
	c = canonical(m);
	ret = crypto_sign_verify_detached(sig, (const unsigned char *)c,
					  strlen(c), pk);
	free(c);
	if (ret) {
		json_decref(m);
		return edgeq_error_set(
			err, EKEYREJECTED,
			"signature does not match: the manifest was changed after signing (tampered)");
	}
	if (!env->ignore_system)
		check_system(m, env, diffs, sizeof(diffs));
	json_decref(m);
	if (diffs[0])
		return edgeq_error_set(err, EPROTO, "%s", diffs);
	return 0;
}
