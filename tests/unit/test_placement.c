// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Placement: profiles, capacity, cost model, the planner against brute
 * force, fusion of fallback segments, hysteresis, agent loss, calibration.
 */
#include <errno.h>
#include <math.h>
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

#include <edgeq/placement.h>
#include <edgeq/ledger.h>
#include <edgeq/pressure.h>

#include "placement/blocks.h"

static struct edgeq_device_profile profs[16];
static int n_profs;

static const struct edgeq_device_profile *prof(const char *name)
{
	const struct edgeq_device_profile *p;

	if (!n_profs)
		n_profs = edgeq_devprofs_load(NULL, profs, 16, NULL);
	p = edgeq_devprof_find(profs, (size_t)n_profs, name);
	assert_non_null(p);
	return p;
}

/* cpu + npu0 with the built-in profiles */
static void cpu_npu(struct edgeq_devices *d)
{
	edgeq_devices_init(d, prof("cpu"));
	assert_int_equal(edgeq_devices_add(d, "npu0", prof("npu")), 1);
}

static void shape_1b(struct edgeq_place_shape *s, uint32_t wtype)
{
	memset(s, 0, sizeof(*s));
	s->n_layer = 16;
	s->n_embd = 2048;
	s->n_ff = 8192;
	s->n_head = 32;
	s->n_head_kv = 8;
	s->head_dim = 64;
	s->n_vocab = 32000;
	s->wtype = s->otype = s->etype = wtype;
	s->kvtype = 1; /* f16 */
	s->n_kv = 256;
}

static const char *top(void)
{
	const char *t = getenv("EDGEQ_TOP");

	return t ? t : ".";
}

static void test_profiles_builtin(void **state)
{
	const struct edgeq_device_profile *npu = prof("npu"),
					  *cpu = prof("cpu");

	assert_true(n_profs >= 4);
	assert_true(edgeq_devprof_supports(npu, EDGEQ_OPK_MATMUL, 2));
	assert_true(edgeq_devprof_supports(npu, EDGEQ_OPK_MATMUL, 8));
	assert_false(edgeq_devprof_supports(npu, EDGEQ_OPK_MATMUL, 12));
	assert_false(edgeq_devprof_supports(npu, EDGEQ_OPK_RMSNORM, 0));
	assert_false(edgeq_devprof_supports(npu, EDGEQ_OPK_ROPE, 0));
	assert_false(edgeq_devprof_supports(npu, EDGEQ_OPK_SOFTMAX, 0));
	for (int k = 0; k < EDGEQ_OPK_COUNT; k++)
		assert_true(edgeq_devprof_supports(cpu, k, 14));
	assert_int_equal(edgeq_op_kind_parse("softmax"), EDGEQ_OPK_SOFTMAX);
	assert_int_equal(edgeq_dtype_parse("q4_k"), 12);
	assert_string_equal(edgeq_dtype_name(14), "q6_k");
	assert_int_equal(edgeq_dtype_parse("q9_9"), -EINVAL);
}

/* share/edgeq/devices.ini and the built-in profiles agree. */
static void test_profiles_file_matches_builtin(void **state)
{
	struct edgeq_device_profile f[16];
	char path[512];
	struct edgeq_error err = { 0 };
	int n;

	prof("cpu");
	snprintf(path, sizeof(path), "%s/share/edgeq/devices.ini", top());
	n = edgeq_devprofs_load(path, f, 16, &err);
	assert_int_equal(n, n_profs);
	for (int i = 0; i < n; i++)
		assert_memory_equal(&f[i], &profs[i], sizeof(f[i]));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_profiles_file_errors(void **state)
{
	struct edgeq_device_profile f[16];
	struct edgeq_error err = { 0 };
	char path[] = "/tmp/edgeq-prof-XXXXXX";
	int fd = mkstemp(path), n;

	assert_true(fd >= 0);
	close(fd);
	/* a new profile and an override; other parts' sections are ignored */
	write_file(path, "[jetson-orin-nano]\nmem_bw = 68e9\n"
			 "[device.tpu]\nops = matmul\ndtypes = q8_0\n"
			 "gflops = 5\nmem_gbs = 3\n"
			 "[device.npu]\ngflops = 999\n");
	n = edgeq_devprofs_load(path, f, 16, &err);
	assert_true(n >= 5);
	assert_true(edgeq_devprof_find(f, (size_t)n, "tpu") != NULL);
	assert_true(edgeq_devprof_find(f, (size_t)n, "npu")->gflops == 999);
	assert_null(edgeq_devprof_find(f, (size_t)n, "jetson-orin-nano"));

	write_file(path, "[device.x]\nops = matmul frobnicate\n");
	assert_int_equal(edgeq_devprofs_load(path, f, 16, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "frobnicate"));
	assert_non_null(strstr(err.msg, ":2:"));

	write_file(path, "[device.x]\ngflops = fast\n");
	assert_int_equal(edgeq_devprofs_load(path, f, 16, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad value"));

	write_file(path, "[device.x]\nspeed = 3\n");
	assert_int_equal(edgeq_devprofs_load(path, f, 16, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown key"));

	write_file(path, "[device.x]\nops = all\n");
	assert_int_equal(edgeq_devprofs_load(path, f, 16, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "gflops"));

	unlink(path);
	assert_int_equal(edgeq_devprofs_load(path, f, 16, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
}

static void test_capacity(void **state)
{
	struct edgeq_device_state s;

	edgeq_device_state_init(&s);
	assert_true(edgeq_device_capacity(&s) == 1.0);
	s.cooling_max = 4;
	s.cooling_state = 2;
	assert_true(fabs(edgeq_device_capacity(&s) - 0.5) < 1e-12);
	s.freq_ratio = 0.3;
	assert_true(fabs(edgeq_device_capacity(&s) - 0.3) < 1e-12);
	s.cooling_state = 4; /* the top state pauses the queue */
	assert_true(edgeq_device_capacity(&s) == 0);
	edgeq_device_state_init(&s);
	s.inflight_limit = 0;
	assert_true(edgeq_device_capacity(&s) == 0);
	edgeq_device_state_init(&s);
	s.agent_alive = false;
	assert_true(edgeq_device_capacity(&s) == 0);
}

static void test_cost_model(void **state)
{
	struct edgeq_devices d;
	struct edgeq_op op = { .kind = EDGEQ_OPK_MATMUL, .dtype = 2 };
	double t;

	cpu_npu(&d);
	/* memory bound: 40e6 bytes at 20 GB/s = 2 ms, plus op_us */
	op.bytes = 40e6;
	op.flops = 1e6;
	t = edgeq_op_time_ns(&d, 0, &op, NULL);
	assert_true(fabs(t - (2e6 + 500)) < 1e-6);
	/* compute bound on the cpu: 1e9 flops at 50 GF/s = 20 ms */
	op.flops = 1e9;
	t = edgeq_op_time_ns(&d, 0, &op, NULL);
	assert_true(fabs(t - (20e6 + 500)) < 1e-6);
	/* half capacity doubles the time of the work */
	d.dev[1].state.cooling_max = 2;
	d.dev[1].state.cooling_state = 1;
	t = edgeq_op_time_ns(&d, 1, &op, NULL);
	assert_true(fabs(t - (1e9 / 100 + 2000)) < 1e-6);
	/* an op it cannot run */
	op.kind = EDGEQ_OPK_ROPE;
	assert_true(isinf(edgeq_op_time_ns(&d, 1, &op, NULL)));
	/* shared memory still costs the synchronisation of both sides */
	assert_true(fabs(edgeq_transfer_ns(&d, 0, 1, 1e6) - 8500) < 1e-6);
	assert_true(edgeq_transfer_ns(&d, 1, 1, 1e6) == 0);
	/* a device that copies pays for the bytes too */
	assert_int_equal(edgeq_devices_add(&d, "dgpu0", prof("dgpu")), 2);
	assert_true(fabs(edgeq_transfer_ns(&d, 0, 2, 12e6) - (10500 + 1e6)) <
		    1e-3);
}

/* Random devices and chains; the DP must equal exhaustive search. */
static double rnd(unsigned *seed, double lo, double hi)
{
	return lo + (hi - lo) * (rand_r(seed) / (double)RAND_MAX);
}

static void random_case(unsigned *seed, struct edgeq_devices *d,
			struct edgeq_op_chain *c, size_t n_ops, size_t n_dev)
{
	struct edgeq_device_profile p;

	memset(&p, 0, sizeof(p));
	for (size_t k = 0; k < n_dev; k++) {
		snprintf(p.name, sizeof(p.name), "d%zu", k);
		p.ops_mask = k ? (uint64_t)rand_r(seed) &
					     ((1u << EDGEQ_OPK_COUNT) - 1) :
				 (1u << EDGEQ_OPK_COUNT) - 1;
		p.dtype_mask = ~0ull;
		p.gflops = rnd(seed, 1, 100);
		p.mem_gbs = rnd(seed, 1, 100);
		p.launch_us = rnd(seed, 0, 30);
		p.op_us = rnd(seed, 0, 5);
		p.sync_us = rnd(seed, 0, 20);
		p.copy_gbs = rand_r(seed) % 3 ? 0 : rnd(seed, 1, 20);
		if (!k) {
			edgeq_devices_init(d, &p);
		} else {
			char name[32];

			snprintf(name, sizeof(name), "dev%zu", k);
			assert_int_equal(edgeq_devices_add(d, name, &p),
					 (int)k);
			if (rand_r(seed) % 4 == 0)
				d->dev[k].state.freq_ratio = rnd(seed, 0.1, 1);
		}
	}
	assert_int_equal(edgeq_op_chain_alloc(c, n_ops), 0);
	c->in_bytes = rnd(seed, 0, 1e5);
	for (size_t i = 0; i < n_ops; i++) {
		struct edgeq_op *op = &c->ops[i];

		snprintf(op->name, sizeof(op->name), "op%zu", i % 5);
		op->kind = rand_r(seed) % EDGEQ_OPK_COUNT;
		op->flops = rnd(seed, 0, 1e7);
		op->bytes = rnd(seed, 0, 1e7);
		op->out_bytes = rnd(seed, 0, 1e6);
	}
	edgeq_op_chain_index(c);
}

static void test_optimal_equals_brute_force(void **state)
{
	unsigned seed = 12345;

	for (int trial = 0; trial < 300; trial++) {
		size_t n_ops = 1 + trial % 7, n_dev = 1 + trial % 3;
		struct edgeq_placement opt, x;
		struct edgeq_devices d;
		struct edgeq_op_chain c;
		uint8_t a[8] = { 0 };
		double best = INFINITY;
		size_t total = 1;

		random_case(&seed, &d, &c, n_ops, n_dev);
		assert_int_equal(edgeq_placement_alloc(&opt, n_ops), 0);
		assert_int_equal(edgeq_placement_alloc(&x, n_ops), 0);
		assert_int_equal(edgeq_placement_optimal(&d, &c, NULL, &opt),
				 0);
		for (size_t i = 0; i < n_ops; i++)
			total *= n_dev;
		for (size_t code = 0; code < total; code++) {
			size_t v = code;

			for (size_t i = 0; i < n_ops; i++, v /= n_dev)
				a[i] = (uint8_t)(v % n_dev);
			edgeq_placement_evaluate(&d, &c, NULL, a, &x);
			if (x.step_ns < best)
				best = x.step_ns;
		}
		assert_true(isfinite(best));
		if (fabs(opt.step_ns - best) > 1e-9 * best) {
			print_error("trial %d: dp %.6f brute %.6f\n", trial,
				    opt.step_ns, best);
			fail();
		}
		/* the breakdown adds up */
		assert_true(fabs(opt.op_ns + opt.transfer_ns - opt.step_ns) <
			    1e-6 * opt.step_ns);
		edgeq_placement_free(&opt);
		edgeq_placement_free(&x);
		edgeq_op_chain_free(&c);
	}
}

/*
 * Adjacent ops the npu cannot run fuse into one cpu segment: an add between
 * rope and softmax stays on the cpu rather than bouncing to the npu, and
 * the fallback costs two boundaries, not four.
 */
static void test_fallback_segments_fuse(void **state)
{
	static const struct {
		const char *name;
		enum edgeq_op_kind kind;
		double bytes;
	} spec[] = {
		{ "mm1", EDGEQ_OPK_MATMUL, 40e6 },
		{ "rope", EDGEQ_OPK_ROPE, 8e3 },
		{ "add", EDGEQ_OPK_ADD, 200e3 },
		{ "sm", EDGEQ_OPK_SOFTMAX, 8e3 },
		{ "mm2", EDGEQ_OPK_MATMUL, 40e6 },
	};
	struct edgeq_placement opt, naive;
	struct edgeq_devices d;
	struct edgeq_op_chain c;

	cpu_npu(&d);
	assert_int_equal(edgeq_op_chain_alloc(&c, 5), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(c.ops[i].name, sizeof(c.ops[i].name), "%s",
			 spec[i].name);
		c.ops[i].kind = spec[i].kind;
		c.ops[i].dtype = 2;
		c.ops[i].bytes = spec[i].bytes;
		c.ops[i].flops = spec[i].bytes;
		c.ops[i].out_bytes = 8e3;
	}
	edgeq_op_chain_index(&c);
	assert_int_equal(edgeq_placement_alloc(&opt, 5), 0);
	assert_int_equal(edgeq_placement_alloc(&naive, 5), 0);
	assert_int_equal(edgeq_placement_optimal(&d, &c, NULL, &opt), 0);
	assert_int_equal(edgeq_placement_naive(&d, &c, NULL, &naive), 0);
	/* npu cpu cpu cpu npu: the add joined the fallback segment */
	assert_int_equal(opt.dev[0], 1);
	assert_int_equal(opt.dev[1], 0);
	assert_int_equal(opt.dev[2], 0);
	assert_int_equal(opt.dev[3], 0);
	assert_int_equal(opt.dev[4], 1);
	assert_int_equal(opt.n_segments, 3);
	assert_int_equal(opt.n_boundaries, 4);
	/* op by op, the add bounces to the npu and back */
	assert_int_equal(naive.dev[2], 1);
	assert_int_equal(naive.n_segments, 5);
	assert_true(opt.step_ns < naive.step_ns);
	assert_true(edgeq_placement_fallback_tax(&opt) <
		    edgeq_placement_fallback_tax(&naive));
	edgeq_placement_free(&opt);
	edgeq_placement_free(&naive);
	edgeq_op_chain_free(&c);
}

static void test_llama_chain(void **state)
{
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_placement opt, cpu;
	struct edgeq_devices d;
	double mm = 0;

	shape_1b(&s, 2);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	assert_int_equal(c.n, 3 + 16 * 11);
	assert_int_equal(c.n_base, 14);
	for (size_t i = 0; i < c.n; i++)
		if (c.ops[i].kind == EDGEQ_OPK_MATMUL)
			mm += c.ops[i].bytes;
	/* q4_0 weights: 18 bytes per 32; 16 x (2048 x (2048 + 1024) +
	 * 2048 x 2048 + 3 x 2048 x 8192) + 32000 x 2048 elements */
	assert_true(fabs(mm - 18.0 / 32 *
				      (16.0 * (2048 * 3072 + 2048 * 2048 +
					       3.0 * 2048 * 8192) +
				       32000.0 * 2048)) /
			    mm <
		    0.01);
	cpu_npu(&d);
	assert_int_equal(edgeq_placement_alloc(&opt, c.n), 0);
	assert_int_equal(edgeq_placement_alloc(&cpu, c.n), 0);
	assert_int_equal(edgeq_placement_optimal(&d, &c, NULL, &opt), 0);
	assert_int_equal(edgeq_placement_cpu(&d, &c, NULL, &cpu), 0);
	assert_true(opt.step_ns < cpu.step_ns);
	for (size_t i = 0; i < c.n; i++) {
		if (c.ops[i].kind == EDGEQ_OPK_MATMUL && c.ops[i].layer >= 0)
			assert_int_equal(opt.dev[i], 1); /* big matmuls: npu */
		if (c.ops[i].kind == EDGEQ_OPK_RMSNORM ||
		    c.ops[i].kind == EDGEQ_OPK_ROPE)
			assert_int_equal(opt.dev[i], 0);
	}
	assert_true(edgeq_placement_fallback_tax(&opt) > 0);
	assert_true(edgeq_placement_fallback_tax(&cpu) == 0);
	/* an unsupported weight type keeps everything on the cpu */
	edgeq_op_chain_free(&c);
	shape_1b(&s, 12);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	assert_int_equal(edgeq_placement_optimal(&d, &c, NULL, &opt), 0);
	for (size_t i = 0; i < c.n; i++)
		if (c.ops[i].kind == EDGEQ_OPK_MATMUL)
			assert_int_equal(opt.dev[i], 0);
	edgeq_placement_free(&opt);
	edgeq_placement_free(&cpu);
	edgeq_op_chain_free(&c);
	s.n_layer = 0;
	assert_int_equal(edgeq_op_chain_llama(&s, &c), -EINVAL);
}

static size_t count_on(const struct edgeq_placement *p, int dev)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_ops; i++)
		n += p->dev[i] == dev;
	return n;
}

/* The npu frequency ratio at which the best plan changes. */
static double crossover(struct edgeq_devices *d, struct edgeq_op_chain *c)
{
	struct edgeq_placement hi, x;
	double lo_r = 0.01, hi_r = 1.0;

	assert_int_equal(edgeq_placement_alloc(&hi, c->n), 0);
	assert_int_equal(edgeq_placement_alloc(&x, c->n), 0);
	d->dev[1].state.freq_ratio = 1.0;
	edgeq_placement_optimal(d, c, NULL, &hi);
	for (int it = 0; it < 60; it++) {
		double mid = (lo_r + hi_r) / 2;

		d->dev[1].state.freq_ratio = mid;
		edgeq_placement_optimal(d, c, NULL, &x);
		if (!memcmp(x.dev, hi.dev, c->n))
			hi_r = mid;
		else
			lo_r = mid;
	}
	d->dev[1].state.freq_ratio = 1.0;
	edgeq_placement_free(&hi);
	edgeq_placement_free(&x);
	return hi_r;
}

static void test_hysteresis(void **state)
{
	struct edgeq_placer_params pp;
	struct edgeq_placer *pl;
	struct edgeq_device_state st;
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;
	enum edgeq_replan_reason r;
	double x;

	shape_1b(&s, 2);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	cpu_npu(&d);
	x = crossover(&d, &c);
	assert_true(x > 0.02 && x < 0.99);
	edgeq_placer_params_init(&pp);
	assert_int_equal(edgeq_placer_new(&d, &c, &pp, &pl), 0);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	/* hovering 1% either side of the threshold: no flapping */
	edgeq_device_state_init(&st);
	for (int i = 0; i < 100; i++) {
		st.freq_ratio = x * (i % 2 ? 1.01 : 0.99);
		edgeq_placer_set_state(pl, 1, &st);
		assert_true(edgeq_placer_pending(pl));
		edgeq_placer_boundary(pl);
		assert_false(edgeq_placer_pending(pl));
	}
	assert_true(edgeq_placer_switches(pl) <= 1);
	/* a real throttle moves work off the npu at the next boundary */
	st.freq_ratio = x / 4;
	edgeq_placer_set_state(pl, 1, &st);
	r = edgeq_placer_boundary(pl);
	if (edgeq_placer_switches(pl) == 0 || r != EDGEQ_REPLAN_NONE)
		assert_int_equal(r, EDGEQ_REPLAN_FASTER);
	{
		struct edgeq_placement best;

		assert_int_equal(edgeq_placement_alloc(&best, c.n), 0);
		d.dev[1].state = st;
		edgeq_placement_optimal(&d, &c, NULL, &best);
		assert_memory_equal(best.dev, edgeq_placer_plan(pl)->dev, c.n);
		edgeq_placement_free(&best);
	}
	/* and back when it cools down */
	st.freq_ratio = 1.0;
	edgeq_placer_set_state(pl, 1, &st);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_FASTER);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	/* min_dwell: a switch right after a switch waits */
	st.freq_ratio = x / 4;
	edgeq_placer_set_state(pl, 1, &st);
	edgeq_placer_free(pl);

	pp.min_dwell = 5;
	edgeq_device_state_init(&d.dev[1].state);
	assert_int_equal(edgeq_placer_new(&d, &c, &pp, &pl), 0);
	edgeq_placer_set_state(pl, 1, &st);
	/* held until 5 tokens after the start, then taken unasked */
	for (int i = 0; i < 4; i++)
		assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_NONE);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_FASTER);
	edgeq_placer_free(pl);

	/* the same hovering without hysteresis flaps at every token */
	pp.min_dwell = 0;
	pp.margin = 0;
	assert_int_equal(edgeq_placer_new(&d, &c, &pp, &pl), 0);
	for (int i = 0; i < 100; i++) {
		st.freq_ratio = x * (i % 2 ? 1.01 : 0.99);
		edgeq_placer_set_state(pl, 1, &st);
		edgeq_placer_boundary(pl);
	}
	assert_true(edgeq_placer_switches(pl) >= 99);
	edgeq_placer_free(pl);
	edgeq_op_chain_free(&c);
}

static void test_agent_loss(void **state)
{
	struct edgeq_placer *pl;
	struct edgeq_device_state st;
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;

	shape_1b(&s, 2);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	cpu_npu(&d);
	assert_int_equal(edgeq_placer_new(&d, &c, NULL, &pl), 0);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	/* mid-step: at once, no boundary needed */
	edgeq_placer_device_lost(pl, 1);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	assert_int_equal(edgeq_placer_switches(pl), 1);
	assert_true(isfinite(edgeq_placer_plan(pl)->step_ns));
	/* a new agent attaches: the npu comes back at a boundary */
	edgeq_device_state_init(&st);
	edgeq_placer_set_state(pl, 1, &st);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_FASTER);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	/* reported by the monitor: the plan changes at the boundary even
	 * inside the dwell time, and the reason says it was lost */
	st.agent_alive = false;
	edgeq_placer_set_state(pl, 1, &st);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_LOST);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	/* a paused queue (top cooling state) is as good as lost */
	edgeq_device_state_init(&st);
	edgeq_placer_set_state(pl, 1, &st);
	edgeq_placer_boundary(pl);
	edgeq_placer_boundary(pl);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	st.cooling_max = 3;
	st.cooling_state = 3;
	edgeq_placer_set_state(pl, 1, &st);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_LOST);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	/* the cpu cannot be lost; bad indexes are refused */
	edgeq_placer_device_lost(pl, 0);
	assert_int_equal(edgeq_placer_set_state(pl, 7, &st), -ENOENT);
	edgeq_placer_free(pl);
	edgeq_op_chain_free(&c);
}

/*
 * A weight bound on the gpu: the plan keeps whole blocks from the first
 * within it (the output and the last blocks back on the cpu), never a
 * block in part; a bound lowered later (memory pressure) re-places at the
 * next boundary with reason MEMORY even inside the dwell time; one under
 * any block leaves every op on the cpu; lifting it brings them back.
 */
static void test_dev_bytes(void **state)
{
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;
	struct edgeq_placer_params pp;
	struct edgeq_placer *pl;
	const struct edgeq_placement *p;
	double block = 0;
	uint64_t bound;
	size_t unbounded;

	shape_1b(&s, 2); /* Q4_0 */
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	for (size_t i = 0; i < c.n; i++)
		if (c.ops[i].layer == 0)
			block += c.ops[i].weight_bytes;
	assert_true(block > 0);
	edgeq_devices_init(&d, prof("cpu"));
	assert_int_equal(edgeq_devices_add(&d, "gpu0", prof("gpu")), 1);
	edgeq_placer_params_init(&pp);
	pp.min_dwell = 100;
	/* unbounded: every block's products on the gpu (block 0's norm may
	 * stay with the embedding: the same boundaries) */
	assert_int_equal(edgeq_placer_new(&d, &c, &pp, &pl), 0);
	p = edgeq_placer_plan(pl);
	for (size_t i = 0; i < c.n; i++)
		if (c.ops[i].layer >= 0 && c.ops[i].kind == EDGEQ_OPK_MATMUL &&
		    p->dev[i] != 1)
			fail_msg("unbounded: op %zu (%s) on %d", i,
				 c.ops[i].name, p->dev[i]);
	unbounded = count_on(p, 1);
	edgeq_placer_free(pl);
	/* 5.5 blocks' worth: blocks 0..4 whole, the rest on the cpu */
	pp.dev_bytes = bound = (uint64_t)(block * 5.5);
	assert_int_equal(edgeq_placer_new(&d, &c, &pp, &pl), 0);
	p = edgeq_placer_plan(pl);
	assert_true(edgeq_placement_dev_bytes(&c, p, 1) <= bound);
	for (size_t i = 0; i < c.n; i++) {
		int want = c.ops[i].layer >= 0 && c.ops[i].layer < 5;

		if (i == 1 && !want) /* block 0's norm: either */
			continue;
		if (p->dev[i] != want && !(i == 1 && p->dev[i] == 0))
			fail_msg("op %zu (%s, block %d) on %d", i,
				 c.ops[i].name, c.ops[i].layer, p->dev[i]);
	}
	assert_true(isfinite(p->step_ns));
	/* pressure lowers it: re-placed at once, reason memory */
	edgeq_placer_set_dev_bytes(pl, (uint64_t)(block * 2.2));
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_MEMORY);
	p = edgeq_placer_plan(pl);
	for (size_t i = 0; i < c.n; i++)
		if (c.ops[i].kind == EDGEQ_OPK_MATMUL &&
		    p->dev[i] != (c.ops[i].layer >= 0 && c.ops[i].layer < 2))
			fail_msg("2.2 blocks: op %zu (%s, block %d) on %d", i,
				 c.ops[i].name, c.ops[i].layer, p->dev[i]);
	/* under one block: all on the cpu */
	edgeq_placer_set_dev_bytes(pl, (uint64_t)(block / 2));
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_MEMORY);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	/* the same bound again: nothing to do */
	edgeq_placer_set_dev_bytes(pl, (uint64_t)(block / 2));
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_NONE);
	/* lifted: back on the gpu once the dwell time allows */
	edgeq_placer_set_dev_bytes(pl, 0);
	for (int k = 0; k < 101; k++)
		edgeq_placer_boundary(pl);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), unbounded);
	edgeq_placer_free(pl);
	edgeq_op_chain_free(&c);
}

/* Measured times 3x the model on the npu: the ratio converges, predicted
 * meets measured, and the plan follows when the npu is no longer worth it. */
static void test_calibration(void **state)
{
	struct edgeq_placer *pl;
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;
	const struct edgeq_placement *plan;
	struct edgeq_calib *cal, loaded;
	struct edgeq_error err;
	char path[] = "/tmp/edgeq-calib-XXXXXX";
	int b = -1, fd;

	shape_1b(&s, 2);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	cpu_npu(&d);
	assert_int_equal(edgeq_placer_new(&d, &c, NULL, &pl), 0);
	for (size_t i = 0; i < c.n_base; i++)
		if (!strcmp(c.base[i], "ffn_down"))
			b = (int)i;
	assert_true(b >= 0);
	for (int tok = 0; tok < 30; tok++) {
		plan = edgeq_placer_plan(pl);
		for (size_t i = 0; i < c.n; i++) {
			int dv = plan->dev[i];
			double t = edgeq_op_time_ns(&d, dv, &c.ops[i], NULL);

			edgeq_placer_observe(pl, i, dv,
					     (uint64_t)(t * (dv ? 3.0 : 1.0)));
		}
		edgeq_placer_boundary(pl);
	}
	cal = edgeq_placer_calib(pl);
	/* the npu ran ffn_down at the start, then lost it to the cpu */
	assert_true(fabs(cal->ratio[1][b] - 3.0) < 0.01);
	assert_true(fabs(cal->ratio[0][b] - 1.0) < 0.01);
	/* at 3x the npu (40 GB/s -> 13) is slower than the cpu (20) */
	plan = edgeq_placer_plan(pl);
	assert_int_equal(count_on(plan, 1), 0);
	{
		const struct edgeq_op *op = &c.ops[0];
		double pred, meas;

		for (size_t i = 0; i < c.n; i++)
			if (c.ops[i].base == b)
				op = &c.ops[i];
		pred = edgeq_op_time_ns(&d, 1, op, cal);
		meas = cal->meas_ns[1][b];
		assert_true(fabs(pred - meas) / meas < 0.01);
	}
	/* converges from any start: EWMA with alpha 0.25, 1% in 20 steps */
	{
		struct edgeq_calib k;

		edgeq_calib_init(&k);
		edgeq_calib_observe(&k, &c.ops[5], 1, 100, 1000, 0.25);
		for (int i = 0; i < 20; i++)
			edgeq_calib_observe(&k, &c.ops[5], 1, 100, 200, 0.25);
		assert_true(fabs(k.ratio[1][c.ops[5].base] - 2.0) < 0.03);
	}
	/* save and load by names */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(edgeq_calib_save(cal, &d, &c, path), 0);
	edgeq_calib_init(&loaded);
	assert_int_equal(edgeq_calib_load(&loaded, &d, &c, path, &err), 0);
	assert_true(fabs(loaded.ratio[1][b] - cal->ratio[1][b]) < 1e-4);
	assert_int_equal(loaded.count[1][b], cal->count[1][b]);
	write_file(path, "npu0 ffn_down banana 1 1\n");
	assert_int_equal(edgeq_calib_load(&loaded, &d, &c, path, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, ":1:"));
	unlink(path);
	assert_true(edgeq_calib_load(&loaded, &d, &c, path, &err) == -ENOENT);
	edgeq_placer_free(pl);
	edgeq_op_chain_free(&c);
}

static void mkattr(const char *dir, const char *q, const char *attr,
		   const char *val)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, q);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/%s", dir, q, attr);
	write_file(p, val);
}

static void test_discover(void **state)
{
	char dir[] = "/tmp/edgeq-sysfs-XXXXXX";
	struct edgeq_device_profile *pr;
	struct edgeq_devices d;
	struct edgeq_error err = { 0 };
	char cmd[600];
	int n, k;

	prof("cpu");
	pr = profs;
	assert_non_null(mkdtemp(dir));
	edgeq_devices_init(&d, prof("cpu"));
	/* no module: no queues, no error */
	assert_int_equal(edgeq_devices_discover(&d, "/nonexistent/edgeq", pr,
						(size_t)n_profs, NULL, &err),
			 0);
	mkattr(dir, "npu0", "agent_pid", "123\n");
	mkattr(dir, "npu0", "max_inflight", "8\n");
	mkattr(dir, "npu0", "cooling_state", "1\n");
	mkattr(dir, "npu0", "cooling_max_state", "4\n");
	mkattr(dir, "npu0", "timeout_ms", "60000\n");
	mkattr(dir, "gpu1", "agent_pid", "0\n");
	mkattr(dir, "gpu1", "timeout_ms", "soon\n");
	n = edgeq_devices_discover(&d, dir, pr, (size_t)n_profs, NULL, &err);
	assert_int_equal(n, 2);
	k = edgeq_devices_find(&d, "npu0");
	assert_true(k > 0);
	assert_string_equal(d.dev[k].prof.name, "npu");
	assert_true(d.dev[k].state.agent_alive);
	assert_int_equal(d.dev[k].state.inflight_limit, 8);
	assert_true(fabs(edgeq_device_capacity(&d.dev[k].state) - 0.75) < 1e-9);
	/* the op timeout the kq backend waits past; 0 where unreadable */
	assert_int_equal(d.dev[k].state.timeout_ms, 60000);
	k = edgeq_devices_find(&d, "gpu1");
	assert_false(d.dev[k].state.agent_alive);
	assert_int_equal(d.dev[k].state.timeout_ms, 0);
	/* a queue whose profile is unknown is named, with what to do */
	mkattr(dir, "tpu0", "agent_pid", "1\n");
	edgeq_devices_init(&d, prof("cpu"));
	n = edgeq_devices_discover(&d, dir, pr, (size_t)n_profs, NULL, &err);
	assert_int_equal(n, -ENOENT);
	assert_non_null(strstr(err.msg, "tpu0"));
	/* ... unless mapped */
	edgeq_devices_init(&d, prof("cpu"));
	n = edgeq_devices_discover(&d, dir, pr, (size_t)n_profs,
				   "tpu0=dla,npu0=gpu", &err);
	assert_int_equal(n, 3);
	assert_string_equal(d.dev[edgeq_devices_find(&d, "tpu0")].prof.name,
			    "dla");
	assert_string_equal(d.dev[edgeq_devices_find(&d, "npu0")].prof.name,
			    "gpu");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* The pressure monitor's cooling state and throttle reach the placer. */
static void test_pressure_states(void **state)
{
	static struct edgeq_pressure_state ps;
	struct edgeq_device_state st[EDGEQ_MAX_DEVICES];
	struct edgeq_placer *pl;
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;
	char dir[] = "/tmp/edgeq-sysfs-XXXXXX", cmd[600];

	shape_1b(&s, 2);
	assert_int_equal(edgeq_op_chain_llama(&s, &c), 0);
	cpu_npu(&d);
	memset(&ps, 0, sizeof(ps));
	ps.n_cdevs = 2;
	snprintf(ps.cdevs[0].type, sizeof(ps.cdevs[0].type), "Processor");
	snprintf(ps.cdevs[1].type, sizeof(ps.cdevs[1].type), "edgeq-npu0");
	ps.cdevs[1].cur_state = 3;
	ps.cdevs[1].max_state = 4;
	ps.n_devices = 1;
	snprintf(ps.devices[0].name, sizeof(ps.devices[0].name), "cpu");
	ps.devices[0].throttle = 0.8;
	ps.devices[0].temp_mc = 71000;
	edgeq_placement_states(&d, &ps, NULL, st);
	assert_true(fabs(edgeq_device_capacity(&st[0]) - 0.8) < 1e-9);
	assert_true(fabs(st[0].temp_c - 71) < 1e-9);
	assert_true(fabs(edgeq_device_capacity(&st[1]) - 0.25) < 1e-9);

	assert_int_equal(edgeq_placer_new(&d, &c, NULL, &pl), 0);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	assert_int_equal(edgeq_placer_update_pressure(pl, &ps, NULL), 2);
	edgeq_placer_boundary(pl);
	/* npu0 at a quarter (10 GB/s) is slower than the cpu at 0.8
	 * (16 GB/s, 40 GF/s: q4_0 matvecs turn compute-bound at 0.088 ns
	 * per byte against the npu's 0.1): all on the cpu */
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	/* the same state again changes nothing */
	assert_int_equal(edgeq_placer_update_pressure(pl, &ps, NULL), 0);
	/* the agent detaches: read from the module's sysfs */
	assert_non_null(mkdtemp(dir));
	mkattr(dir, "npu0", "agent_pid", "0\n");
	ps.cdevs[1].cur_state = 0;
	ps.devices[0].throttle = 1;
	assert_int_equal(edgeq_placer_update_pressure(pl, &ps, dir), 2);
	edgeq_placer_boundary(pl);
	assert_int_equal(count_on(edgeq_placer_plan(pl), 1), 0);
	mkattr(dir, "npu0", "agent_pid", "77\n");
	assert_int_equal(edgeq_placer_update_pressure(pl, &ps, dir), 1);
	edgeq_placer_boundary(pl);
	assert_true(count_on(edgeq_placer_plan(pl), 1) > 0);
	/* the queue is destroyed */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(edgeq_placer_update_pressure(pl, &ps, dir), 1);
	assert_int_equal(edgeq_placer_boundary(pl), EDGEQ_REPLAN_LOST);
	edgeq_placer_free(pl);
	edgeq_op_chain_free(&c);
}

/*
 * Which models' blocks chain on which queues: a module without
 * EDGEQ_F_NORM_ROWS or EDGEQ_F_OP_GELU_MUL (older edgeq.ko) refuses qwen3
 * and gemma3 with the reason, and without STORE/ROPE_FREQ every model;
 * the op count of a block follows what the queues take.
 */
static void test_blocks_features(void **state)
{
	static const struct edgeq_tensor f32 = { .type = EDGEQ_TYPE_F32 },
					 q8 = { .type = EDGEQ_TYPE_Q8_0 };
	const uint64_t all = EDGEQ_F_ALL,
		       base = EDGEQ_F_OP_STORE | EDGEQ_F_OP_ROPE_FREQ;
	struct edgeq_layer L = { .attn_norm = &f32,
				 .wq = &q8,
				 .wk = &q8,
				 .wv = &q8,
				 .wo = &q8,
				 .ffn_norm = &f32,
				 .w_gate = &q8,
				 .w_up = &q8,
				 .w_down = &q8 };
	struct edgeq_model m = { 0 };
	const char *why;

	(void)state;
	m.layers = &L;
	m.hp.n_layer = 1;
	m.hp.n_head = 4;
	m.hp.n_head_kv = 2;
	assert_null(place_blocks_unsupported(&m, base));
	why = place_blocks_unsupported(&m, EDGEQ_F_OP_STORE);
	assert_non_null(why);
	assert_non_null(strstr(why, "ROPE_FREQ"));
	/* llama: 2 norms, 7 products, 2 adds, a gate; per token RoPE q and
	 * k (one op for one token), STORE k and v, attention; norms per
	 * token without rows; RoPE and attention one op for the batch with
	 * EDGEQ_F_TOKENS */
	assert_int_equal(place_blocks_ops(&m, all, 1, true), 16);
	assert_int_equal(place_blocks_ops(&m, all, 64, false), 15 + 64 * 2);
	assert_int_equal(place_blocks_ops(&m, all & ~EDGEQ_F_TOKENS, 64, false),
			 12 + 64 * 5);
	assert_int_equal(place_blocks_ops(&m, base, 64, false), 10 + 64 * 7);
	/* a prompt's K and V rows packed: one STORE each for the batch */
	assert_int_equal(place_blocks_ops(&m, all & ~EDGEQ_F_TOKENS, 64, true),
			 14 + 64 * 3);
	assert_int_equal(place_blocks_ops(&m, all, 64, true), 17);
	assert_int_equal(place_blocks_ops(&m, all, 1, false), 16);
	/* qwen2's biases: an ADD a token, or one of the batch's rows */
	L.bq = L.bk = L.bv = &f32;
	assert_int_equal(place_blocks_ops(&m, all, 64, true), 17 + 3);
	assert_int_equal(place_blocks_ops(&m, all & ~EDGEQ_F_TOKENS, 64, true),
			 14 + 64 * 3 + 64 * 3);
	L.bq = L.bk = L.bv = NULL;
	/* qwen3: head norms need rows */
	L.q_norm = L.k_norm = &f32;
	assert_null(place_blocks_unsupported(&m, all));
	why = place_blocks_unsupported(&m, base);
	assert_non_null(why);
	assert_non_null(strstr(why, "per-head norms"));
	assert_int_equal(place_blocks_ops(&m, all, 8, false), 15 + 2 + 8 * 2);
	assert_int_equal(place_blocks_ops(&m, base, 2, false),
			 10 + 2 * (7 + 6));
	L.k_norm = NULL;
	assert_non_null(place_blocks_unsupported(&m, all));
	L.k_norm = &q8;
	assert_non_null(strstr(place_blocks_unsupported(&m, all), "F32"));
	L.k_norm = &f32;
	/* gemma3: GELU needs GELU_MUL; post norms an op each */
	m.hp.gelu = true;
	L.post_attn_norm = L.post_ffn_norm = &f32;
	assert_null(place_blocks_unsupported(&m, all));
	why = place_blocks_unsupported(&m, all & ~EDGEQ_F_OP_GELU_MUL);
	assert_non_null(why);
	assert_non_null(strstr(why, "GELU"));
	assert_int_equal(place_blocks_ops(&m, all, 1, true), 16 + 2 + 2);
	/* gemma2's caps and phi3's fused matrices: never */
	m.hp.attn_softcap = 50.0f;
	assert_non_null(strstr(place_blocks_unsupported(&m, all), "cap"));
	m.hp.attn_softcap = 0;
	L.wk = NULL;
	assert_non_null(strstr(place_blocks_unsupported(&m, all), "fused"));
}

/*
 * Which model of a speculative pair the queues take: the one whose
 * assignment the planner predicts more tokens/s for. A Q4_0 1B target
 * with a 2-layer Q4_0 draft: the npu takes the target (the big model's
 * steps are what speculation pays for); a Q4_K target the npu cannot run
 * with a Q8_0 draft it can: the npu takes the draft. Each rate is the
 * ledger's speedup at its length over the target's step; bad arguments
 * are refused.
 */
static void test_draft_choice(void **state)
{
	struct edgeq_place_shape t, dr;
	struct edgeq_draft_choice ch;
	struct edgeq_devices d;
	struct edgeq_spec sp;
	double best;

	cpu_npu(&d);
	shape_1b(&t, 2);
	shape_1b(&dr, 2);
	dr.n_layer = 2;
	assert_int_equal(edgeq_place_draft_choice(&d, &t, &dr, 0.75, 4, &ch),
			 0);
	assert_true(ch.target_dev_ns < ch.target_cpu_ns);
	assert_true(ch.draft_dev_ns < ch.draft_cpu_ns);
	assert_true(ch.draft_cpu_ns < ch.target_cpu_ns);
	assert_false(ch.draft_on_device);
	assert_true(ch.rate_target_on > ch.rate_draft_on);
	assert_in_range(ch.k_target_on, 0, 4);
	/* the rate is the best length's, by the ledger */
	best = 1e9 / ch.target_dev_ns;
	for (int k = 1; k <= 4; k++) {
		edgeq_ledger_speculative(
			0.75, k, ch.draft_cpu_ns / ch.target_dev_ns, &sp);
		if (sp.speedup * 1e9 / ch.target_dev_ns > best)
			best = sp.speedup * 1e9 / ch.target_dev_ns;
	}
	assert_true(fabs(ch.rate_target_on - best) <= 1e-9 * best);
	edgeq_ledger_speculative(0.75, ch.k_draft_on,
				 ch.draft_dev_ns / ch.target_cpu_ns, &sp);
	assert_true(
		fabs(ch.rate_draft_on - sp.speedup * 1e9 / ch.target_cpu_ns) <=
		1e-9 * ch.rate_draft_on);

	/* Q4_K target (not on the npu), Q8_0 draft (on it) */
	shape_1b(&t, 12);
	shape_1b(&dr, 8);
	dr.n_layer = 2;
	assert_int_equal(edgeq_place_draft_choice(&d, &t, &dr, 0.75, 4, &ch),
			 0);
	assert_true(ch.target_dev_ns == ch.target_cpu_ns);
	assert_true(ch.draft_dev_ns < ch.draft_cpu_ns);
	assert_true(ch.draft_on_device);
	assert_true(ch.rate_draft_on > ch.rate_target_on);
	assert_true(ch.k_draft_on >= 1);

	assert_int_equal(edgeq_place_draft_choice(&d, &t, &dr, 1.5, 4, &ch),
			 -EINVAL);
	assert_int_equal(edgeq_place_draft_choice(&d, &t, &dr, 0.75, 0, &ch),
			 -EINVAL);
	dr.n_layer = 0;
	assert_int_equal(edgeq_place_draft_choice(&d, &t, &dr, 0.75, 4, &ch),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profiles_builtin),
		cmocka_unit_test(test_profiles_file_matches_builtin),
		cmocka_unit_test(test_profiles_file_errors),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_cost_model),
		cmocka_unit_test(test_optimal_equals_brute_force),
		cmocka_unit_test(test_fallback_segments_fuse),
		cmocka_unit_test(test_llama_chain),
		cmocka_unit_test(test_hysteresis),
		cmocka_unit_test(test_agent_loss),
		cmocka_unit_test(test_dev_bytes),
		cmocka_unit_test(test_calibration),
		cmocka_unit_test(test_discover),
		cmocka_unit_test(test_pressure_states),
		cmocka_unit_test(test_blocks_features),
		cmocka_unit_test(test_draft_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
