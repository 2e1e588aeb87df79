// SPDX-License-Identifier: GPL-2.0-or-later
/* Manifests: sign/verify round trip, key permissions, the bundle store and
 * every probation failure rolling back. The tampering and kill -9 matrix is
 * in tests/ledger/t_manifest.sh. */
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

#include <edgeq/manifest.h>

struct fx {
	char dir[64];
	char model[128], sk[128], pk[128];
	char *signed_a, *signed_b; /* two bundles of the same model */
	struct edgeq_store st;
};

/* A minimal GGUF: header, two tokenizer keys, one F32 tensor. */
static void write_model(const char *path, uint32_t tok)
{
	FILE *f = fopen(path, "wb");
	uint32_t u32;
	uint64_t u64;
	float data[8] = { 0 };
	const char *k1 = "general.architecture", *v1 = "llama";
	const char *k2 = "tokenizer.ggml.bos_token_id", *t = "w";
	long pos;

	fwrite("GGUF", 1, 4, f);
	u32 = 3, fwrite(&u32, 4, 1, f);
	u64 = 1, fwrite(&u64, 8, 1, f);
	u64 = 2, fwrite(&u64, 8, 1, f);
	u64 = strlen(k1), fwrite(&u64, 8, 1, f), fwrite(k1, 1, u64, f);
	u32 = 8, fwrite(&u32, 4, 1, f);
	u64 = strlen(v1), fwrite(&u64, 8, 1, f), fwrite(v1, 1, u64, f);
	u64 = strlen(k2), fwrite(&u64, 8, 1, f), fwrite(k2, 1, u64, f);
	u32 = 4, fwrite(&u32, 4, 1, f);
	fwrite(&tok, 4, 1, f);
	u64 = 1, fwrite(&u64, 8, 1, f), fwrite(t, 1, 1, f);
	u32 = 1, fwrite(&u32, 4, 1, f);
	u64 = 8, fwrite(&u64, 8, 1, f);
	u32 = 0, fwrite(&u32, 4, 1, f);
	u64 = 0, fwrite(&u64, 8, 1, f);
	pos = ftell(f);
	for (; pos % 32; pos++)
		fputc(0, f);
	fwrite(data, sizeof(data), 1, f);
	fclose(f);
}

static char *make_signed(struct fx *x, double min_tps, const char *name)
{
	struct edgeq_manifest_params p;
	char *json, *sig;

	edgeq_manifest_params_init(&p);
	p.model = x->model;
	p.name = name;
	p.family = "test-board";
	p.module_abi = 0;
	p.min_tps = min_tps;
	p.probation_s = 100;
	p.floor_window_s = 10;
	p.max_agent_crashes = 3;
	assert_int_equal(edgeq_manifest_create(&p, &json, NULL), 0);
	assert_int_equal(edgeq_manifest_sign(json, x->sk, &sig, NULL), 0);
	free(json);
	return sig;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char store[128];

	strcpy(x->dir, "/tmp/edgeq-man.XXXXXX");
	if (!mkdtemp(x->dir))
		return -1;
	snprintf(x->model, sizeof(x->model), "%s/m.gguf", x->dir);
	snprintf(x->sk, sizeof(x->sk), "%s/k", x->dir);
	snprintf(x->pk, sizeof(x->pk), "%s/k.pub", x->dir);
	snprintf(store, sizeof(store), "%s/store", x->dir);
	write_model(x->model, 1);
	if (edgeq_key_generate(x->sk, x->pk, NULL))
		return -1;
	x->signed_a = make_signed(x, 5, "a");
	x->signed_b = make_signed(x, 5, "b");
	if (edgeq_store_open(&x->st, store, NULL))
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	if (system(cmd))
		return -1;
	free(x->signed_a);
	free(x->signed_b);
	free(x);
	return 0;
}

static void test_round_trip(void **state)
{
	struct fx *x = *state;
	struct edgeq_verify_env env;
	struct edgeq_error e;

	edgeq_verify_env_init(&env);
	env.model = x->model;
	env.family = "test-board";
	env.module_abi = 0;
	assert_int_equal(edgeq_manifest_verify(x->signed_a, x->pk, &env, &e),
			 0);
	env.family = "jetson-orin-nano";
	assert_int_equal(edgeq_manifest_verify(x->signed_a, x->pk, &env, &e),
			 -EPROTO);
	assert_string_equal(e.msg,
			    "made for test-board, running on jetson-orin-nano");
}

static void test_tokenizer_differs(void **state)
{
	struct fx *x = *state;
	struct edgeq_verify_env env;
	struct edgeq_error e;
	char other[160];

	snprintf(other, sizeof(other), "%s/other.gguf", x->dir);
	write_model(other, 2); /* only a tokenizer value changes */
	edgeq_verify_env_init(&env);
	env.model = other;
	env.family = "test-board";
	assert_int_equal(edgeq_manifest_verify(x->signed_a, x->pk, &env, &e),
			 -EPROTO);
	assert_non_null(strstr(e.msg, "tokenizer hash differs"));
	assert_non_null(strstr(e.msg, "model file hash differs"));
}

static void test_unsigned_and_wrong_key(void **state)
{
	struct fx *x = *state;
	struct edgeq_manifest_params p;
	struct edgeq_error e;
	char sk2[160], pk2[160], *json;

	edgeq_manifest_params_init(&p);
	p.model = x->model;
	assert_int_equal(edgeq_manifest_create(&p, &json, NULL), 0);
	assert_int_equal(edgeq_manifest_verify(json, x->pk, NULL, &e),
			 -EKEYREJECTED);
	assert_non_null(strstr(e.msg, "unsigned"));
	free(json);
	snprintf(sk2, sizeof(sk2), "%s/k2", x->dir);
	snprintf(pk2, sizeof(pk2), "%s/k2.pub", x->dir);
	assert_int_equal(edgeq_key_generate(sk2, pk2, NULL), 0);
	assert_int_equal(edgeq_manifest_verify(x->signed_a, pk2, NULL, &e),
			 -EKEYREJECTED);
	assert_non_null(strstr(e.msg, "not by the trusted key"));
}

static void test_key_permissions(void **state)
{
	struct fx *x = *state;
	struct edgeq_error e;
	struct stat sb;
	char *out;

	assert_int_equal(stat(x->sk, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	chmod(x->sk, 0640);
	assert_int_equal(edgeq_manifest_sign(x->signed_a, x->sk, &out, &e),
			 -EPERM);
	assert_non_null(strstr(e.msg, "mode 0640"));
	chmod(x->sk, 0604);
	assert_int_equal(edgeq_manifest_sign(x->signed_a, x->sk, &out, &e),
			 -EPERM);
	chmod(x->sk, 0600);
	assert_int_equal(edgeq_manifest_sign(x->signed_a, x->sk, &out, &e), 0);
	free(out);
	/* an existing key is never overwritten */
	assert_int_equal(edgeq_key_generate(x->sk, x->pk, &e), -EEXIST);
}

static void install_both(struct fx *x)
{
	char id[64];

	assert_int_equal(edgeq_store_install(&x->st, x->signed_a, x->model, id,
					     sizeof(id), NULL),
			 0);
	assert_int_equal(edgeq_store_install(&x->st, x->signed_b, x->model, id,
					     sizeof(id), NULL),
			 0);
}

static void test_store_and_rollback(void **state)
{
	struct fx *x = *state;
	char cur[64], prev[64], after[64], man[512], log[512];
	struct edgeq_error e;
	struct stat sb;

	install_both(x);
	assert_int_equal(
		edgeq_store_get(&x->st, "current", cur, sizeof(cur), &e), 0);
	assert_int_equal(
		edgeq_store_get(&x->st, "previous", prev, sizeof(prev), &e), 0);
	assert_string_not_equal(cur, prev);
	edgeq_store_paths(&x->st, cur, man, NULL, sizeof(man));
	assert_int_equal(stat(man, &sb), 0);
	assert_int_equal(edgeq_store_rollback(&x->st, "test", &e), 0);
	assert_int_equal(edgeq_store_get(&x->st, "current", after,
					 sizeof(after), &e),
			 0);
	assert_string_equal(after, prev);
	/* previous is used up: a second rollback has nowhere to go */
	assert_int_equal(edgeq_store_rollback(&x->st, "again", &e), -ENOENT);
	snprintf(log, sizeof(log), "%s/rollback.log", x->st.dir);
	assert_int_equal(stat(log, &sb), 0);
}

static void expect_rollback(struct fx *x, enum edgeq_probation_event ev,
			    double value, int times, const char *why)
{
	struct edgeq_probation p;
	char prev[64], cur[64];
	uint64_t t = 1000000000ull;
	int st = 0;

	install_both(x);
	assert_int_equal(edgeq_store_get(&x->st, "previous", prev, sizeof(prev),
					 NULL),
			 0);
	assert_int_equal(edgeq_probation_start(&p, &x->st, t, NULL), 0);
	for (int i = 0; i < times; i++) {
		t += 2000000000ull; /* 2 s apart */
		st = edgeq_probation_report(&p, ev, value, t, NULL);
		if (i < times - 1)
			assert_int_equal(st, EDGEQ_PROBATION_RUNNING);
	}
	assert_int_equal(st, EDGEQ_PROBATION_ROLLED_BACK);
	assert_non_null(strstr(p.reason, why));
	assert_int_equal(
		edgeq_store_get(&x->st, "current", cur, sizeof(cur), NULL), 0);
	assert_string_equal(cur, prev);
}

static void test_probation_load_failure(void **state)
{
	expect_rollback(*state, EDGEQ_PROBATION_LOAD_FAILED, 0, 1,
			"load failure");
}

static void test_probation_oom(void **state)
{
	expect_rollback(*state, EDGEQ_PROBATION_OOM_KILL, 0, 1, "OOM");
}

static void test_probation_crashes(void **state)
{
	expect_rollback(*state, EDGEQ_PROBATION_AGENT_CRASH, 0, 3,
			"crashed 3 times");
}

static void test_probation_floor(void **state)
{
	/* 4 tok/s under a floor of 5: the first sample starts the window,
	 * the sixth (10 s later) fails it */
	expect_rollback(*state, EDGEQ_PROBATION_THROUGHPUT, 4, 6,
			"under the floor of 5.00");
}

static void test_probation_passes(void **state)
{
	struct fx *x = *state;
	struct edgeq_probation p;
	uint64_t t = 0;
	char good[512], cur[64];

	install_both(x);
	assert_int_equal(edgeq_probation_start(&p, &x->st, t, NULL), 0);
	/* dips under the floor shorter than the window do not fail it */
	for (int i = 0; i < 40; i++) {
		t += 3000000000ull;
		assert_true(
			edgeq_probation_report(&p, EDGEQ_PROBATION_THROUGHPUT,
					       i % 3 ? 6 : 4, t, NULL) >= 0);
	}
	assert_int_equal(edgeq_probation_report(&p, EDGEQ_PROBATION_AGENT_CRASH,
						0, t, NULL),
			 EDGEQ_PROBATION_PASSED);
	assert_int_equal(
		edgeq_store_get(&x->st, "current", cur, sizeof(cur), NULL), 0);
	assert_string_equal(cur, p.bundle);
	snprintf(good, sizeof(good), "%s/%s/good", x->st.dir, cur);
	assert_int_equal(access(good, F_OK), 0);
}

static void test_bundle_select(void **state)
{
	struct fx *x = *state;
	struct edgeq_verify_env env;
	struct edgeq_error e;
	char model[1024], a[64], b[64], path[1024];
	bool prob = false;
	FILE *f;

	edgeq_verify_env_init(&env);
	env.family = "test-board";
	env.module_abi = 0;
	install_both(x);
	assert_int_equal(
		edgeq_store_get(&x->st, "previous", a, sizeof(a), NULL), 0);
	assert_int_equal(edgeq_store_get(&x->st, "current", b, sizeof(b), NULL),
			 0);
	assert_int_equal(edgeq_bundle_select(&x->st, x->pk, &env, model,
					     sizeof(model), &prob, &e),
			 0);
	assert_true(prob);
	assert_non_null(strstr(model, b));
	/* the current bundle's model is damaged on disk: refused, rolled back */
	edgeq_store_paths(&x->st, b, NULL, path, sizeof(path));
	f = fopen(path, "r+b");
	fseek(f, -1, SEEK_END);
	fputc('X', f);
	fclose(f);
	assert_int_equal(edgeq_bundle_select(&x->st, x->pk, &env, model,
					     sizeof(model), &prob, &e),
			 0);
	assert_non_null(strstr(model, a));
	/* the refused one is recorded */
	snprintf(path, sizeof(path), "%s/%s/rejected", x->st.dir, b);
	assert_int_equal(access(path, F_OK), 0);
	/* another device family: nothing verifies, nothing to fall back to */
	env.family = "elsewhere";
	assert_int_equal(edgeq_bundle_select(&x->st, x->pk, &env, model,
					     sizeof(model), &prob, &e),
			 -EPROTO);
	assert_non_null(strstr(e.msg, "made for test-board"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tokenizer_differs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unsigned_and_wrong_key,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_permissions, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_and_rollback, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_probation_load_failure,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_probation_oom, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_probation_crashes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_probation_floor, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_probation_passes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bundle_select, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
