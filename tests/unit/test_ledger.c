// SPDX-License-Identifier: GPL-2.0-or-later
/* The ledgers' formulas, checked against the worked examples of the design
 * notes (Documentation/ledgers.rst). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/ledger.h>

#define assert_near(a, b, tol) \
	assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static void test_decode_bound_q4(void **state)
{
	/* 68 GB/s x 0.85 / 5.18 GB = 11.15 tok/s */
	double t = edgeq_ledger_decode_bound(68e9, 0.85, 5.18e9);

	assert_near(edgeq_ledger_trunc2(t), 11.15, 1e-9);
}

static void test_decode_bound_fp16(void **state)
{
	/* over 16 GB of FP16 weights: 3.61 tok/s, a 3.09x ratio */
	double q4 = edgeq_ledger_decode_bound(68e9, 0.85, 5.18e9);
	double f16 = edgeq_ledger_decode_bound(68e9, 0.85, 16e9);

	assert_near(edgeq_ledger_trunc2(f16), 3.61, 1e-9);
	assert_near(round(q4 / f16 * 100) / 100, 3.09, 1e-9);
}

static void test_weight_bytes_7b(void **state)
{
	/* 7 B parameters at 4 bits: 3.5 GB, 3.26 GiB */
	uint64_t b = edgeq_ledger_weight_bytes(7000000000ull, 4);

	assert_int_equal(b, 3500000000ull);
	assert_near(round((double)b / (1 << 30) * 100) / 100, 3.26, 1e-9);
}

static void test_kv_bytes(void **state)
{
	/* 1 x 4096 x 32 x 2 x 8 x 128 x 2 bytes = 512 MiB */
	assert_int_equal(edgeq_ledger_kv_bytes(1, 4096, 32, 8, 128, 2),
			 512ull << 20);
	assert_int_equal(edgeq_ledger_kv_bytes(2, 4096, 32, 8, 128, 2),
			 1024ull << 20);
}

static void test_speculative(void **state)
{
	/* acceptance 0.75, draft 4, cost 0.15 -> 1.91x, 11.15 -> 21.26 tok/s */
	struct edgeq_spec s;

	edgeq_ledger_speculative(0.75, 4, 0.15, &s);
	assert_near(s.expected_tokens, 3.05078125, 1e-9);
	assert_near(s.cost, 1.6, 1e-12);
	assert_near(round(s.speedup * 100) / 100, 1.91, 1e-9);
	assert_near(edgeq_ledger_trunc2(11.15 * s.speedup), 21.26, 1e-9);
	/* edges: nothing accepted gives 1 token at the draft's extra cost;
	 * everything accepted gives k + 1 */
	edgeq_ledger_speculative(0, 4, 0.15, &s);
	assert_near(s.expected_tokens, 1, 1e-12);
	assert_true(s.speedup < 1);
	edgeq_ledger_speculative(1, 4, 0, &s);
	assert_near(s.speedup, 5, 1e-12);
	/* from a run's counters: 10 verify passes of 4 drafts, 36 accepted,
	 * 2 of the passes rejecting one: a = 36 / 38, k = 4 (not the drafts
	 * over accepted plus rejecting, ~1.05); none of them: 0 and 0 */
	{
		double a, k;
		struct edgeq_spec m;

		edgeq_ledger_speculative_measured(40, 36, 2, 10, 0.15, &a, &k,
						  &m);
		assert_near(a, 36.0 / 38, 1e-12);
		assert_near(k, 4, 1e-12);
		edgeq_ledger_speculative(36.0 / 38, 4, 0.15, &s);
		assert_near(m.speedup, s.speedup, 1e-12);
		edgeq_ledger_speculative_measured(0, 0, 0, 0, 0.15, &a, &k, &m);
		assert_near(a, 0, 0);
		assert_near(k, 0, 0);
	}
}

static void test_load(void **state)
{
	/* the design notes' scenario: 5.18 GB at 68 GB/s, 4 KiB pages:
	 * preload 0.076 s, on-demand 7.986 s, window 32 0.323 s, 30 % 0.097 s */
	struct edgeq_load l;

	edgeq_ledger_load(5.18e9, 68e9, 6.2545e-6, 4096, 32, 0.3, &l);
	assert_near(l.preload_s, 0.076, 0.0005);
	assert_near(l.on_demand_s, 7.986, 0.0005);
	assert_near(l.prefetch_s, 0.323, 0.0005);
	assert_near(l.partial_s, 0.097, 0.0005);
	assert_int_equal(l.pages, 1264649);
}

static void test_request_and_sustained(void **state)
{
	struct edgeq_profile p = { .name = "t",
				   .mem_bw = 68e9,
				   .efficiency = 0.85,
				   .ram = 16ull << 30,
				   .reserved = 4ull << 30,
				   .flash_bw = 4e9,
				   .fault_latency = 1e-4,
				   .page_size = 4096,
				   .compute = 3.2e12,
				   .throttle = 0.7 };
	struct edgeq_model_shape s;
	struct edgeq_plan_params pp;
	struct edgeq_plan o;

	assert_near(edgeq_ledger_request_s(100, 50, 100, 10), 6.0, 1e-12);
	assert_true(isinf(edgeq_ledger_request_s(1, 1, 0, 10)));
	edgeq_shape_from_params(&s, 8000000000ull, 5.18);
	edgeq_plan_params_init(&pp);
	pp.ctx = 0; /* weights only, as in the worked example */
	pp.prompt_len = 0;
	pp.gen_len = 100;
	pp.slo_s = 10;
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o, NULL), 0);
	assert_near(edgeq_ledger_trunc2(o.decode_tps), 11.15, 1e-9);
	assert_near(o.sustained_tps, o.decode_tps * 0.7, 1e-9);
	/* 100 tokens: 8.96 s at peak meets 10 s; 12.8 s sustained does not */
	assert_true(o.slo_met_peak);
	assert_false(o.slo_met_sustained);
	assert_near(o.spec_tps, o.decode_tps * o.spec.speedup, 1e-9);
}

static void test_memory_fit(void **state)
{
	struct edgeq_profile p = { .name = "t",
				   .mem_bw = 68e9,
				   .efficiency = 0.85,
				   .ram = 8ull << 30,
				   .reserved = 1ull << 30,
				   .compute = 1e12,
				   .throttle = 1 };
	struct edgeq_model_shape s;
	struct edgeq_plan_params pp;
	struct edgeq_plan o, o2;

	edgeq_shape_from_params(&s, 7000000000ull, 4);
	edgeq_plan_params_init(&pp);
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o, NULL), 0);
	assert_int_equal(o.kv, 512ull << 20);
	assert_int_equal(o.total, o.weights + o.kv + o.workspace + o.runtime);
	assert_true(o.fits);
	/* the longest context fits exactly: one more token does not */
	pp.ctx = (uint32_t)o.max_ctx;
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o2, NULL), 0);
	assert_true(o2.fits);
	pp.ctx = (uint32_t)o.max_ctx + 1;
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o2, NULL), 0);
	assert_false(o2.fits);
	/* FP16 weights of 8 B do not fit in 8 GiB at all */
	edgeq_shape_from_params(&s, 8000000000ull, 16);
	pp.ctx = 4096;
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o, NULL), 0);
	assert_false(o.fits);
	assert_int_equal(o.max_ctx, 0);
}

static void test_plan_rejects(void **state)
{
	struct edgeq_profile p = { .name = "bad",
				   .mem_bw = 0,
				   .efficiency = 0.85 };
	struct edgeq_model_shape s;
	struct edgeq_plan_params pp;
	struct edgeq_plan o;
	struct edgeq_error e;

	edgeq_shape_from_params(&s, 1000, 4);
	edgeq_plan_params_init(&pp);
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "bandwidth"));
	p.mem_bw = 1e9;
	p.efficiency = 1.5;
	assert_int_equal(edgeq_plan_compute(&p, &s, &pp, &o, &e), -EINVAL);
}

static const char *profiles_file(void)
{
	static char path[4096];
	const char *top = getenv("EDGEQ_TOP");

	snprintf(path, sizeof(path), "%s/share/edgeq/profiles.ini",
		 top ? top : ".");
	return path;
}

static void test_profiles(void **state)
{
	struct edgeq_profile p;
	struct edgeq_error e;
	char names[512];

	assert_int_equal(edgeq_profile_load(profiles_file(),
					    "jetson-orin-nano-8gb", &p, &e),
			 0);
	assert_near(p.mem_bw, 68e9, 1);
	assert_string_equal(p.family, "jetson-orin-nano");
	/* the counted CPU stream: Q4_0 first, figures in bytes/s */
	assert_near(p.cpu_ghz, 1.5, 1e-9);
	assert_true(p.n_cpu_stream >= 3);
	assert_string_equal(p.cpu_stream[0].type, "Q4_0");
	assert_true(p.cpu_stream[0].bw > 1e9 && p.cpu_stream[0].bw < 1e12);
	assert_int_equal(edgeq_profile_load(profiles_file(),
					    "jetson-orin-nano-super", &p, &e),
			 0);
	assert_near(p.mem_bw, 102e9, 1);
	assert_int_equal(edgeq_profile_load(profiles_file(), "phone-flagship",
					    &p, &e),
			 0);
	assert_near(p.mem_bw, 68e9, 1);
	assert_int_equal(edgeq_profile_load(profiles_file(), "nope", &p, &e),
			 -ENOENT);
	assert_non_null(strstr(e.msg, "jetson-agx-orin-64gb"));
	assert_int_equal(edgeq_profile_list(profiles_file(), names,
					    sizeof(names), &e),
			 0);
	for (const char *n = "jetson-orin-nx-16gb\0ai-pc\0local\0"; *n;
	     n += strlen(n) + 1)
		assert_non_null(strstr(names, n));
	assert_int_equal(edgeq_profile_load("/nonexistent/p.ini", "ai-pc", &p,
					    &e),
			 -ENOENT);
}

static void test_bad_profile_value(void **state)
{
	char path[] = "/tmp/edgeq-prof.XXXXXX";
	struct edgeq_profile p;
	struct edgeq_error e;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fputs("[x]\nmem_bw_gbps = fast\n", f);
	fclose(f);
	assert_int_equal(edgeq_profile_load(path, "x", &p, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "mem_bw_gbps"));
	assert_non_null(strstr(e.msg, "line 2"));
	unlink(path);
}

static void test_bad_cpu_stream(void **state)
{
	static const char *const bad[] = {
		"Q4_0",	    /* no figure */
		"Q4_0:",    /* empty figure */
		":12",	    /* no type */
		"Q9_9:12",  /* unknown type */
		"Q4_0:0",   /* not positive */
		"Q4_0:-3",  /* negative */
		"Q4_0:12x", /* trailing junk */
		"Q4_0:12,", /* empty entry */
		"Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1,Q4_0:1",
		"", /* nothing */
	};
	char path[] = "/tmp/edgeq-prof.XXXXXX";
	struct edgeq_profile p;
	struct edgeq_error e;
	int fd = mkstemp(path);

	close(fd);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");

		fprintf(f, "[x]\nmem_bw_gbps = 10\ncpu_stream_gbps = %s\n",
			bad[i]);
		fclose(f);
		assert_int_equal(edgeq_profile_load(path, "x", &p, &e),
				 -EINVAL);
		assert_non_null(strstr(e.msg, "cpu_stream_gbps"));
	}
	{
		FILE *f = fopen(path, "w");

		fputs("[x]\nmem_bw_gbps = 10\ncpu_ghz = 2\n"
		      "cpu_stream_gbps = q8_0:7.5,Q4_K:3\n",
		      f);
		fclose(f);
	}
	assert_int_equal(edgeq_profile_load(path, "x", &p, &e), 0);
	assert_int_equal(p.n_cpu_stream, 2);
	assert_near(p.cpu_stream[0].bw, 7.5e9, 1);
	assert_string_equal(p.cpu_stream[1].type, "Q4_K");
	assert_near(p.cpu_stream[1].bw, 3e9, 1);
	assert_near(p.cpu_ghz, 2, 1e-9);
	unlink(path);
}

static void test_stats(void **state)
{
	double v[] = { 5, 1, 4, 2, 3 }, one[] = { 7 };
	double t[] = { 10, 20, 30, 40 }, tok[] = { 100, 100, 70, 70 };
	struct edgeq_soak_split sp;

	assert_near(edgeq_stats_percentile(v, 5, 50), 3, 1e-12);
	assert_near(edgeq_stats_percentile(v, 5, 95), 4.8, 1e-12);
	assert_near(edgeq_stats_percentile(v, 5, 100), 5, 1e-12);
	assert_near(edgeq_stats_percentile(one, 1, 99), 7, 1e-12);
	assert_near(edgeq_stats_percentile(v, 0, 50), 0, 1e-12);
	assert_near(edgeq_stats_mean(v, 5), 3, 1e-12);
	assert_near(edgeq_stats_stddev(v, 5), sqrt(2.5), 1e-12);
	assert_near(edgeq_stats_stddev(one, 1), 0, 1e-12);
	/* 10 tok/s for the first 20 s, then 7: steady is 70 % of burst */
	edgeq_soak_split(t, tok, 4, 20, &sp);
	assert_near(sp.burst_tps, 10, 1e-12);
	assert_near(sp.steady_tps, 7, 1e-12);
	assert_near(sp.ratio, 0.7, 1e-12);
	/* all within the burst window: steady = burst */
	edgeq_soak_split(t, tok, 2, 30, &sp);
	assert_near(sp.ratio, 1, 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_bound_q4),
		cmocka_unit_test(test_decode_bound_fp16),
		cmocka_unit_test(test_weight_bytes_7b),
		cmocka_unit_test(test_kv_bytes),
		cmocka_unit_test(test_speculative),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_request_and_sustained),
		cmocka_unit_test(test_memory_fit),
		cmocka_unit_test(test_plan_rejects),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_bad_profile_value),
		cmocka_unit_test(test_bad_cpu_stream),
		cmocka_unit_test(test_stats),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
