// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-placement: what placement costs and how fast it reacts.
 *
 *  1. planner cost per call (1B-shape chain, 2 to 4 devices), and the cost
 *     of a token boundary with and without a state change;
 *  2. the fallback tax of the chosen plan against naive op-by-op fallback;
 *  3. reaction time: from a cooling-state change to the end of the first
 *     token computed under the new placement. The change is a real BPF
 *     event (the pressure monitor's cdev_update program run with
 *     BPF_PROG_TEST_RUN, through its ring buffer) polled on the engine's
 *     io_uring at token boundaries; without BPF an eventfd stands in for
 *     the ring buffer. Tokens are simulated: each op of the plan spins for
 *     its predicted time, scaled so that a step takes --token-us.
 *
 *  4. with --model FILE: the same reaction with the real decoder generating
 *     from FILE (1 thread, npu0 as the in-process backend), the state set
 *     from another thread as the monitor does.
 *
 *   bench-placement [--token-us N] [--events N] [--no-bpf] [--model FILE]
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <liburing.h>

#include <edgeq/engine.h>
#include <edgeq/placement.h>
#include <edgeq/pressure.h>

#include "bpf/pressure.h"

#define BENCH_CDEV_ID 31 /* the cooling device standing for edgeq-npu0 */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	i = (size_t)ceil(p * (double)n) - 1;
	return v[i >= n ? n - 1 : i];
}

static struct edgeq_device_profile profs[16];
static int n_profs;

static const struct edgeq_device_profile *prof(const char *name)
{
	const struct edgeq_device_profile *p;

	p = edgeq_devprof_find(profs, (size_t)n_profs, name);
	if (!p) {
		fprintf(stderr, "bench-placement: no profile %s\n", name);
		exit(1);
	}
	return p;
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
	s->kvtype = 1;
	s->n_kv = 512;
}

/* ---- 1. planner cost ---- */
static void bench_planner(void)
{
	static const char *const extra[] = { "npu", "gpu", "dla" };
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	enum { N = 5000 };
	static uint64_t t[N];

	shape_1b(&s, 8); /* q8_0: every accelerator can take the matmuls */
	edgeq_op_chain_llama(&s, &c);
	printf("planner cost (1B shape, %zu ops, DP over op x device):\n", c.n);
	for (int nd = 1; nd <= 3; nd++) {
		struct edgeq_placement p;
		struct edgeq_devices d;

		edgeq_devices_init(&d, prof("cpu"));
		for (int k = 0; k < nd; k++) {
			char name[16];

			snprintf(name, sizeof(name), "%s0", extra[k]);
			edgeq_devices_add(&d, name, prof(extra[k]));
		}
		edgeq_placement_alloc(&p, c.n);
		for (int i = 0; i < N; i++) {
			uint64_t t0 = edgeq_now_ns();

			edgeq_placement_optimal(&d, &c, NULL, &p);
			t[i] = edgeq_now_ns() - t0;
		}
		printf("  %d devices: median %6.2f us  p99 %6.2f us per call\n",
		       nd + 1, pct(t, N, 0.5) / 1e3, pct(t, N, 0.99) / 1e3);
		edgeq_placement_free(&p);
	}
	{
		struct edgeq_devices d;
		struct edgeq_placer *pl;
		struct edgeq_device_state st;

		edgeq_devices_init(&d, prof("cpu"));
		edgeq_devices_add(&d, "npu0", prof("npu"));
		edgeq_placer_new(&d, &c, NULL, &pl);
		for (int i = 0; i < N; i++) {
			uint64_t t0 = edgeq_now_ns();

			edgeq_placer_boundary(pl);
			t[i] = edgeq_now_ns() - t0;
		}
		printf("  token boundary, nothing changed: median %.0f ns  "
		       "p99 %.0f ns\n",
		       (double)pct(t, N, 0.5), (double)pct(t, N, 0.99));
		edgeq_device_state_init(&st);
		st.cooling_max = 4;
		for (int i = 0; i < N; i++) {
			uint64_t t0;

			st.cooling_state = (uint32_t)(i % 2) * 3;
			edgeq_placer_set_state(pl, 1, &st);
			t0 = edgeq_now_ns();
			edgeq_placer_boundary(pl);
			t[i] = edgeq_now_ns() - t0;
		}
		printf("  token boundary, cooling changed (re-plan): median "
		       "%.2f us  p99 %.2f us\n\n",
		       pct(t, N, 0.5) / 1e3, pct(t, N, 0.99) / 1e3);
		edgeq_placer_free(pl);
	}
	edgeq_op_chain_free(&c);
}

/* ---- 2. fallback tax ---- */
static void bench_tax(void)
{
	static const struct {
		const char *dev;
		uint32_t wtype;
	} cases[] = { { "npu", 2 }, { "dla", 8 }, { "gpu", 2 }, { "dgpu", 2 } };
	struct edgeq_place_shape s;

	printf("fallback tax, 1B shape at context 512 (cost model, built-in "
	       "profiles):\n");
	printf("  %-10s %-5s %10s %7s %5s   %10s %7s %5s   %10s\n", "devices",
	       "wtype", "chosen", "tax", "segs", "naive", "tax", "segs",
	       "all-cpu");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct edgeq_placement o, n, cpu;
		struct edgeq_devices d;
		struct edgeq_op_chain c;
		char name[24];

		shape_1b(&s, cases[i].wtype);
		edgeq_op_chain_llama(&s, &c);
		edgeq_devices_init(&d, prof("cpu"));
		snprintf(name, sizeof(name), "%s0", cases[i].dev);
		edgeq_devices_add(&d, name, prof(cases[i].dev));
		edgeq_placement_alloc(&o, c.n);
		edgeq_placement_alloc(&n, c.n);
		edgeq_placement_alloc(&cpu, c.n);
		edgeq_placement_optimal(&d, &c, NULL, &o);
		edgeq_placement_naive(&d, &c, NULL, &n);
		edgeq_placement_cpu(&d, &c, NULL, &cpu);
		snprintf(name, sizeof(name), "cpu+%s0", cases[i].dev);
		printf("  %-10s %-5s %7.2f ms %6.1f%% %5u   %7.2f ms %6.1f%% "
		       "%5u   %7.2f ms\n",
		       name, edgeq_dtype_name(cases[i].wtype), o.step_ns / 1e6,
		       100 * edgeq_placement_fallback_tax(&o), o.n_segments,
		       n.step_ns / 1e6, 100 * edgeq_placement_fallback_tax(&n),
		       n.n_segments, cpu.step_ns / 1e6);
		edgeq_placement_free(&o);
		edgeq_placement_free(&n);
		edgeq_placement_free(&cpu);
		edgeq_op_chain_free(&c);
	}
	putchar('\n');
}

/* ---- 3. reaction ---- */
struct reaction {
	struct edgeq_pressure *pm; /* NULL: eventfd stands in */
	int efd;
	struct edgeq_placer *pl;
	double scale;		      /* spin ns per predicted ns */
	atomic_uint_fast64_t t_event; /* when the last change was made */
	atomic_int want;	      /* the cooling state just set */
	atomic_bool stop;
	uint32_t n_events;
};

static void on_event(void *ctx, const struct edgeq_pressure_event *ev)
{
	struct reaction *r = ctx;
	struct edgeq_device_state st;

	if (ev->kind != EDGEQ_PM_EV_CDEV || ev->id != BENCH_CDEV_ID)
		return;
	edgeq_device_state_init(&st);
	st.cooling_state = (uint32_t)ev->value;
	st.cooling_max = (uint32_t)ev->aux;
	edgeq_placer_set_state(r->pl, 1, &st);
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = edgeq_now_ns() + ns;

	while (edgeq_now_ns() < end)
		;
}

/* The thermal side: change the cooling state at random moments. */
static void *heater(void *arg)
{
	struct reaction *r = arg;
	unsigned seed = 7;

	for (uint32_t i = 0; i < r->n_events; i++) {
		int s = i % 2 ? 0 : 3;

		usleep(2000 + (unsigned)(rand_r(&seed) % 3000));
		atomic_store(&r->want, s);
		atomic_store(&r->t_event, edgeq_now_ns());
		if (r->pm) {
			uint64_t args[4] = { BENCH_CDEV_ID, (uint64_t)s, 4, 0 };

			edgeq_pressure_test_run(r->pm, "cdev_update", args, 4);
		} else {
			uint64_t one = 1;

			if (write(r->efd, &one, sizeof(one)) < 0)
				break;
		}
		/* wait until the engine has reacted (a second at most) */
		for (int w = 0; w < 5000 && atomic_load(&r->t_event) &&
				!atomic_load(&r->stop);
		     w++)
			usleep(200);
		atomic_store(&r->t_event, 0);
	}
	atomic_store(&r->stop, true);
	return NULL;
}

static int arm(struct reaction *r, struct io_uring *ring)
{
	struct io_uring_sqe *sqe;

	if (r->pm)
		return edgeq_pressure_poll_add(r->pm, ring, 1) ?:
			       io_uring_submit(ring) < 0;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, r->efd, POLLIN);
	io_uring_sqe_set_data(sqe, (void *)1);
	return io_uring_submit(ring) < 0;
}

/* The engine's loop: token boundaries with what arrived on the ring. */
static void run(struct reaction *r, struct io_uring *ring, bool idle,
		uint64_t *decide, uint64_t *react, size_t *n, uint64_t *tokens)
{
	while (!atomic_load(&r->stop)) {
		const struct edgeq_placement *p;
		struct io_uring_cqe *cqe;
		uint64_t t_ev, t_dec = 0;
		int got;

		if (idle) {
			struct __kernel_timespec ts = { .tv_nsec = 10000000 };

			got = !io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		} else {
			got = !io_uring_peek_cqe(ring, &cqe);
		}
		if (got) {
			io_uring_cqe_seen(ring, cqe);
			if (r->pm) {
				edgeq_pressure_consume(r->pm);
			} else {
				struct edgeq_device_state st;
				uint64_t v;

				if (read(r->efd, &v, sizeof(v)) < 0)
					v = 0;
				edgeq_device_state_init(&st);
				st.cooling_max = 4;
				st.cooling_state =
					(uint32_t)atomic_load(&r->want);
				edgeq_placer_set_state(r->pl, 1, &st);
			}
			arm(r, ring);
		}
		/* token boundary: re-plan with what arrived */
		t_ev = atomic_load(&r->t_event);
		if (edgeq_placer_boundary(r->pl) != EDGEQ_REPLAN_NONE && t_ev)
			t_dec = edgeq_now_ns();
		if (!idle) {
			/* the token, under the plan in force */
			p = edgeq_placer_plan(r->pl);
			spin_ns((uint64_t)(p->step_ns * r->scale));
			(*tokens)++;
		}
		if (t_dec) {
			uint64_t now = edgeq_now_ns();

			if (*n < r->n_events) {
				decide[*n] = t_dec - t_ev;
				react[(*n)++] = now - t_ev;
			}
			atomic_store(&r->t_event, 0);
		}
	}
}

static int bench_reaction(uint32_t token_us, uint32_t n_events, bool no_bpf)
{
	static uint64_t react[4096], decide[4096];
	struct edgeq_pressure_opts po;
	struct edgeq_error err = { 0 };
	struct edgeq_place_shape s;
	struct edgeq_op_chain c;
	struct edgeq_devices d;
	struct reaction r;
	struct io_uring ring;
	pthread_t th;
	size_t n = 0;
	uint64_t tokens = 0;
	const char *src;

	memset(&r, 0, sizeof(r));
	r.n_events = n_events > 4096 ? 4096 : n_events;
	r.efd = -1;
	edgeq_pressure_opts_init(&po);
	po.no_bpf = no_bpf;
	po.rate_burst = 1u << 30; /* measuring latency, not the rate limit */
	if (!no_bpf && edgeq_pressure_new(&po, &r.pm, &err) == 0 &&
	    edgeq_pressure_source(r.pm) == EDGEQ_PRESSURE_SRC_BPF) {
		uint64_t args[4] = { BENCH_CDEV_ID, 0, 4, 0 };

		if (edgeq_pressure_test_run(r.pm, "cdev_update", args, 4) < 0) {
			edgeq_pressure_free(r.pm);
			r.pm = NULL;
		}
	} else if (r.pm) {
		edgeq_pressure_free(r.pm);
		r.pm = NULL;
	}
	if (r.pm) {
		edgeq_pressure_consume(r.pm);
		edgeq_pressure_set_event_fn(r.pm, on_event, &r);
		src = "BPF cdev_update -> ring buffer -> io_uring POLL_ADD";
	} else {
		r.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		src = "eventfd -> io_uring POLL_ADD (no BPF here)";
	}
	shape_1b(&s, 2);
	edgeq_op_chain_llama(&s, &c);
	edgeq_devices_init(&d, prof("cpu"));
	edgeq_devices_add(&d, "npu0", prof("npu"));
	d.dev[1].state.cooling_max = 4;
	edgeq_placer_new(&d, &c, NULL, &r.pl);
	r.scale = token_us * 1e3 / edgeq_placer_plan(r.pl)->step_ns;
	if (io_uring_queue_init(8, &ring, 0) || arm(&r, &ring)) {
		fprintf(stderr, "bench-placement: io_uring unavailable\n");
		return 1;
	}
	/* an idle engine blocked on its ring: the delivery path alone */
	pthread_create(&th, NULL, heater, &r);
	run(&r, &ring, true, decide, react, &n, &tokens);
	pthread_join(th, NULL);
	printf("reaction to a cooling-state change (%s):\n", src);
	if (n)
		printf("  idle engine, change -> state in the placer and re-planned: "
		       "median %.1f us  p99 %.1f us (%zu changes)\n",
		       pct(decide, n, 0.5) / 1e3, pct(decide, n, 0.99) / 1e3,
		       n);
	n = 0;
	tokens = 0;
	atomic_store(&r.stop, false);
	/* generating: the change is picked up at the next token boundary */
	pthread_create(&th, NULL, heater, &r);
	run(&r, &ring, false, decide, react, &n, &tokens);
	pthread_join(th, NULL);
	printf("  simulated token %u us under the initial plan, %zu of %u "
	       "changes re-placed, %llu tokens\n",
	       token_us, n, r.n_events, (unsigned long long)tokens);
	if (n) {
		printf("  change -> new plan in force: median %7.1f us  p99 "
		       "%7.1f us\n",
		       pct(decide, n, 0.5) / 1e3, pct(decide, n, 0.99) / 1e3);
		printf("  change -> first token under it done: median %7.1f "
		       "us  p99 %7.1f us\n",
		       pct(react, n, 0.5) / 1e3, pct(react, n, 0.99) / 1e3);
	}
	printf("  polling tegrastats/jtop at 500-1000 ms: median 250-500 ms "
	       "+ a token (half the period on average)\n");
	io_uring_queue_exit(&ring);
	edgeq_placer_free(r.pl);
	edgeq_op_chain_free(&c);
	edgeq_pressure_free(r.pm);
	if (r.efd >= 0)
		close(r.efd);
	return n == r.n_events ? 0 : 1;
}

/* ---- 4. reaction with the real decoder ---- */
struct eng {
	struct edgeq_place_exec *x;
	struct edgeq_placer *pl;
	atomic_uint_fast64_t t_event; /* set_state time, 0 when answered */
	atomic_bool stop;
	uint64_t seen_replans;
	uint64_t react[4096], tok_ns[4096];
	size_t n, n_tok;
	uint64_t last_tok;
	uint32_t n_events;
};

static int eng_token(void *user, int32_t tok, const char *piece, size_t len)
{
	struct eng *e = user;
	struct edgeq_place_stats st;
	uint64_t now = edgeq_now_ns(), t_ev;

	if (e->last_tok && e->n_tok < 4096)
		e->tok_ns[e->n_tok++] = now - e->last_tok;
	e->last_tok = now;
	edgeq_place_stats(e->x, &st);
	t_ev = atomic_load(&e->t_event);
	if (st.replans != e->seen_replans) {
		e->seen_replans = st.replans;
		if (t_ev && e->n < e->n_events)
			e->react[e->n++] = now - t_ev;
		atomic_store(&e->t_event, 0);
	}
	return atomic_load(&e->stop);
}

/* The thermal side: alternate npu0 between cool and cooling state 3/4. */
static void *eng_heater(void *arg)
{
	struct eng *e = arg;
	struct edgeq_device_state st;
	unsigned seed = 11;

	edgeq_device_state_init(&st);
	st.cooling_max = 4;
	for (uint32_t i = 0; i < e->n_events; i++) {
		usleep(1000 + (unsigned)(rand_r(&seed) % 2000));
		st.cooling_state = i % 2 ? 0 : 3;
		atomic_store(&e->t_event, edgeq_now_ns());
		edgeq_placer_set_state(e->pl, 1, &st);
		for (int w = 0; w < 5000 && atomic_load(&e->t_event); w++)
			usleep(100);
		atomic_store(&e->t_event, 0);
	}
	atomic_store(&e->stop, true);
	return NULL;
}

static int bench_engine(const char *model, uint32_t n_events)
{
	static struct eng e;
	struct edgeq_device_profile npu;
	struct edgeq_model_params mp;
	struct edgeq_ctx_params cp;
	struct edgeq_gen_params gp;
	struct edgeq_error err = { 0 };
	struct edgeq_place_backend be;
	struct edgeq_place_inline inl;
	struct edgeq_placer_params pp;
	struct edgeq_devices d;
	struct edgeq_model *m;
	struct edgeq_ctx *c;
	pthread_t th;
	int ret;

	edgeq_model_params_init(&mp);
	mp.path = model;
	mp.n_threads = 1;
	if (edgeq_model_load(&mp, &m, &err)) {
		fprintf(stderr, "bench-placement: %s\n", err.msg);
		return 1;
	}
	edgeq_ctx_params_init(&cp);
	cp.n_ctx = 512;
	if (edgeq_ctx_new(m, &cp, &c, &err)) {
		fprintf(stderr, "bench-placement: %s\n", err.msg);
		edgeq_model_free(m);
		return 1;
	}
	/* an npu0 twice the cpu's bandwidth, free to call: matmuls go there
	 * until its cooling state says otherwise */
	npu = *prof("npu");
	npu.mem_gbs = 2 * prof("cpu")->mem_gbs;
	npu.launch_us = npu.op_us = npu.sync_us = 0;
	edgeq_devices_init(&d, prof("cpu"));
	edgeq_devices_add(&d, "npu0", &npu);
	edgeq_place_backend_inline(&be, &inl);
	edgeq_placer_params_init(&pp);
	pp.calibrate = false;
	ret = edgeq_place_attach(c, &d, &pp, &be, &e.x, &err);
	if (ret) {
		fprintf(stderr, "bench-placement: %s\n", err.msg);
		return 1;
	}
	e.pl = edgeq_place_placer(e.x);
	e.n_events = n_events > 4096 ? 4096 : n_events;
	edgeq_gen_params_init(&gp);
	gp.sampling.temp = 0;
	gp.prompt = "a";
	gp.add_bos = true;
	gp.n_predict = 400;
	pthread_create(&th, NULL, eng_heater, &e);
	while (!atomic_load(&e.stop)) {
		edgeq_ctx_truncate(c, 0);
		e.last_tok = 0;
		if (edgeq_generate(c, &gp, eng_token, &e, NULL, &err))
			break;
	}
	atomic_store(&e.stop, true);
	pthread_join(th, NULL);
	printf("\nreaction with the real decoder (%s, 1 thread, inline npu0; "
	       "state set as the monitor would):\n",
	       model);
	printf("  token time: median %.1f us  p99 %.1f us (%zu tokens)\n",
	       pct(e.tok_ns, e.n_tok, 0.5) / 1e3,
	       pct(e.tok_ns, e.n_tok, 0.99) / 1e3, e.n_tok);
	printf("  change -> first token under the new placement: median %.1f "
	       "us  p99 %.1f us (%zu of %u changes)\n",
	       pct(e.react, e.n, 0.5) / 1e3, pct(e.react, e.n, 0.99) / 1e3, e.n,
	       e.n_events);
	edgeq_place_detach(e.x);
	edgeq_ctx_free(c);
	edgeq_model_free(m);
	return e.n ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint32_t token_us = 1000, events = 200;
	const char *model = NULL;
	bool no_bpf = false;
	int ret;
	struct edgeq_error err = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--token-us") && i + 1 < argc)
			token_us = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-bpf"))
			no_bpf = true;
		else if (!strcmp(argv[i], "--model") && i + 1 < argc)
			model = argv[++i];
		else {
			fprintf(stderr,
				"usage: bench-placement [--token-us N] "
				"[--events N] [--no-bpf] [--model FILE]\n");
			return 2;
		}
	}
	n_profs = edgeq_devprofs_load(NULL, profs, 16, &err);
	if (n_profs < 0) {
		fprintf(stderr, "bench-placement: %s\n", err.msg);
		return 1;
	}
	bench_planner();
	bench_tax();
	ret = bench_reaction(token_us ? token_us : 1, events, no_bpf);
	if (model && bench_engine(model, events))
		ret = 1;
	return ret;
}
