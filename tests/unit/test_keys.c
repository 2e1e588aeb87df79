// SPDX-License-Identifier: GPL-2.0-or-later
/* API keys: the keys file, token matching, rate limits, caps, reloads. */
#include <errno.h>
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

#include "server/keys.h"

/* sha256("k-chat") and sha256("k-batch") */
static char h_chat[65], h_batch[65];

static int setup(void **state)
{
	srv_key_hash_hex("k-chat", h_chat);
	srv_key_hash_hex("k-batch", h_batch);
	return 0;
}

static struct srv_keys *parse_ok(const char *fmt, ...)
{
	struct edgeq_error e = { 0 };
	struct srv_keys *k = NULL;
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (srv_keys_parse(text, "keys.conf", NULL, &k, &e))
		fail_msg("parse failed: %s", e.msg);
	return k;
}

/* The text must be refused with a message containing @want. */
static void parse_bad(const char *text, const char *want)
{
	struct edgeq_error e = { 0 };
	struct srv_keys *k = NULL;
	int ret = srv_keys_parse(text, "keys.conf", NULL, &k, &e);

	assert_int_equal(ret, -EINVAL);
	assert_null(k);
	if (!strstr(e.msg, want))
		fail_msg("message '%s' lacks '%s'", e.msg, want);
}

static void test_parse(void **state)
{
	struct srv_keys *k = parse_ok(
		"# two apps\n[chat-ui]\nkey_sha256 = %s\nclass = internal\n"
		"routes = local, private\nrate = 120/min\nconcurrency = 2\n\n"
		"[batch]\nkey_sha256 = %s\nendpoints = completions, metrics\n"
		"rate = 5/s\nburst = 1\n",
		h_chat, h_batch);

	assert_int_equal(k->n, 2);
	assert_string_equal(k->keys[0].name, "chat-ui");
	assert_int_equal(k->keys[0].floor, EDGEQ_PRIVACY_INTERNAL);
	assert_int_equal(k->keys[0].routes,
			 (1u << EDGEQ_ROUTE_LOCAL) |
				 (1u << EDGEQ_ROUTE_PRIVATE));
	/* default endpoints: everything but metrics */
	assert_int_equal(k->keys[0].endpoints,
			 (1u << SRV_EP_CHAT) | (1u << SRV_EP_COMPLETIONS) |
				 (1u << SRV_EP_MODELS));
	assert_true(k->keys[0].rate > 1.99 && k->keys[0].rate < 2.01);
	assert_true(k->keys[0].burst == 120);
	assert_int_equal(k->keys[0].concurrency, 2);
	assert_int_equal(k->keys[1].floor, EDGEQ_PRIVACY_PUBLIC);
	assert_int_equal(k->keys[1].endpoints,
			 (1u << SRV_EP_COMPLETIONS) | (1u << SRV_EP_METRICS));
	assert_true(k->keys[1].rate == 5 && k->keys[1].burst == 1);
	assert_int_equal(k->keys[1].concurrency, 0);
	srv_keys_put(k);
}

static void test_parse_errors(void **state)
{
	char t[1024];

	parse_bad("[a]\nclass = public\n", "[a] has no key_sha256");
	snprintf(t, sizeof(t), "[a]\nclass = public\n[b]\nkey_sha256 = %s\n",
		 h_chat);
	parse_bad(t, "[a] has no key_sha256");
	parse_bad("[a]\nkey_sha256 = 1234\n",
		  "keys.conf:2: [a]: key_sha256 wants 64 hex");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nflavour = x\n", h_chat);
	parse_bad(t, "keys.conf:3: [a]: unknown setting 'flavour'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\n[b]\nkey_sha256 = %s\n",
		 h_chat, h_chat);
	parse_bad(t, "[b]: the same key as [a]");
	snprintf(
		t, sizeof(t),
		"[a]\nkey_sha256 = %s\n[b]\nkey_sha256 = %s\n[a]\nclass = public\n",
		h_chat, h_batch);
	parse_bad(t, "[a] appears twice");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nclass = secret\n",
		 h_chat);
	parse_bad(t, "class 'secret'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nroutes = local, moon\n",
		 h_chat);
	parse_bad(t, "route 'moon'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nroutes = reject\n",
		 h_chat);
	parse_bad(t, "route 'reject'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nendpoints = admin\n",
		 h_chat);
	parse_bad(t, "endpoint 'admin'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nrate = 10/week\n",
		 h_chat);
	parse_bad(t, "rate '10/week'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nrate = -1/s\n", h_chat);
	parse_bad(t, "rate '-1/s'");
	snprintf(t, sizeof(t), "[a]\nkey_sha256 = %s\nconcurrency = 0\n",
		 h_chat);
	parse_bad(t, "concurrency '0'");
	snprintf(t, sizeof(t),
		 "[a]\nkey_sha256 = %s\nclass = public\nclass = internal\n",
		 h_chat);
	parse_bad(t, "'class' given twice");
	parse_bad("key_sha256 = 00\n", "outside a [name] section");
	snprintf(t, sizeof(t), "[a b]\nkey_sha256 = %s\n", h_chat);
	parse_bad(t, "a key's name");
	parse_bad("[a]\nthis is not ini\n", "keys.conf:2:");
}

static void test_match(void **state)
{
	struct srv_keys *k =
		parse_ok("[chat]\nkey_sha256 = %s\n[batch]\nkey_sha256 = %s\n",
			 h_chat, h_batch);

	assert_ptr_equal(srv_keys_match(k, "k-chat"), &k->keys[0]);
	assert_ptr_equal(srv_keys_match(k, "k-batch"), &k->keys[1]);
	assert_null(srv_keys_match(k, "k-chat "));
	assert_null(srv_keys_match(k, ""));
	assert_null(srv_keys_match(k, NULL));
	srv_keys_put(k);
}

static void test_concurrency(void **state)
{
	struct srv_keys *k =
		parse_ok("[a]\nkey_sha256 = %s\nconcurrency = 2\n", h_chat);
	struct srv_key *a = &k->keys[0];

	assert_int_equal(srv_key_admit(a, 0, NULL), 0);
	assert_int_equal(srv_key_admit(a, 0, NULL), 0);
	assert_int_equal(srv_key_admit(a, 0, NULL), -EBUSY);
	assert_int_equal(srv_key_inflight(a), 2);
	srv_key_release(a);
	assert_int_equal(srv_key_admit(a, 0, NULL), 0);
	srv_key_release(a);
	srv_key_release(a);
	assert_int_equal(srv_key_inflight(a), 0);
	srv_keys_put(k);
}

static void test_rate(void **state)
{
	struct srv_keys *k = parse_ok(
		"[a]\nkey_sha256 = %s\nrate = 1/s\nburst = 2\n", h_chat);
	struct srv_key *a = &k->keys[0];
	const uint64_t s = 1000000000ull, t0 = 5 * s;
	double retry = 0;

	assert_int_equal(srv_key_admit(a, t0, &retry), 0);
	assert_int_equal(srv_key_admit(a, t0, &retry), 0);
	assert_int_equal(srv_key_admit(a, t0 + s / 10, &retry), -EAGAIN);
	assert_true(retry > 0.85 && retry < 0.95);
	/* a refill of one token a second */
	assert_int_equal(srv_key_admit(a, t0 + s + s / 10, &retry), 0);
	assert_int_equal(srv_key_admit(a, t0 + s + s / 5, &retry), -EAGAIN);
	/* the bucket holds at most the burst */
	assert_int_equal(srv_key_admit(a, t0 + 100 * s, &retry), 0);
	assert_int_equal(srv_key_admit(a, t0 + 100 * s, &retry), 0);
	assert_int_equal(srv_key_admit(a, t0 + 100 * s, &retry), -EAGAIN);
	srv_keys_put(k);
}

static void test_reload_keeps_state(void **state)
{
	struct srv_keys *old =
		parse_ok("[a]\nkey_sha256 = %s\nconcurrency = 1\n", h_chat);
	struct srv_keys *neu = NULL;
	struct edgeq_error e = { 0 };
	char text[512];

	assert_int_equal(srv_key_admit(&old->keys[0], 0, NULL), 0);
	snprintf(
		text, sizeof(text),
		"[a]\nkey_sha256 = %s\nconcurrency = 1\n[b]\nkey_sha256 = %s\n",
		h_chat, h_batch);
	assert_int_equal(srv_keys_parse(text, "keys.conf", old, &neu, &e), 0);
	/* the request admitted under the old set still counts */
	assert_int_equal(srv_key_admit(&neu->keys[0], 0, NULL), -EBUSY);
	assert_int_equal(srv_key_admit(&neu->keys[1], 0, NULL), 0);
	srv_keys_put(old); /* the set goes, the state stays with the new one */
	srv_key_release(&neu->keys[0]);
	assert_int_equal(srv_key_admit(&neu->keys[0], 0, NULL), 0);
	srv_keys_put(neu);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/edgeq-keys-XXXXXX";
	struct edgeq_error e = { 0 };
	struct srv_keys *k = NULL;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fprintf(f, "[a]\nkey_sha256 = %s\n", h_chat);
	fclose(f);
	chmod(path, 0600);
	assert_int_equal(srv_keys_load(path, NULL, &k, &e), 0);
	assert_int_equal(k->n, 1);
	srv_keys_put(k);
	chmod(path, 0666);
	k = NULL;
	assert_int_equal(srv_keys_load(path, NULL, &k, &e), -EPERM);
	assert_null(k);
	assert_non_null(strstr(e.msg, "writable by others"));
	unlink(path);
	assert_int_equal(srv_keys_load(path, NULL, &k, &e), -ENOENT);
	assert_non_null(strstr(e.msg, path));
}

static void test_generate(void **state)
{
	char key[80], hex[65], again[65];

	assert_int_equal(srv_key_generate(key, sizeof(key), hex), 0);
	assert_memory_equal(key, "eqk-", 4);
	assert_int_equal(strlen(key), 4 + 43);
	srv_key_hash_hex(key, again);
	assert_string_equal(hex, again);
	assert_int_equal(srv_key_generate(key, 20, hex), -ENOSPC);
}

static void test_stricter(void **state)
{
	assert_int_equal(srv_privacy_stricter(EDGEQ_PRIVACY_PUBLIC,
					      EDGEQ_PRIVACY_CONFIDENTIAL),
			 EDGEQ_PRIVACY_CONFIDENTIAL);
	assert_int_equal(srv_privacy_stricter(EDGEQ_PRIVACY_INTERNAL,
					      EDGEQ_PRIVACY_PUBLIC),
			 EDGEQ_PRIVACY_INTERNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_concurrency),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_reload_keeps_state),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_stricter),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
