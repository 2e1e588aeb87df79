// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the privacy router's decision (edgeq_router_decide). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <edgeq/router.h>

static const struct edgeq_router_config both = { true, true };
static const struct edgeq_router_config none = { false, false };

/* A box doing 20 tok/s peak, one slot, idle. */
static struct edgeq_router_capacity idle_box(void)
{
	struct edgeq_router_capacity c = { 0 };

	c.peak_tok_s = 20;
	c.throttle = 1;
	c.slots = 1;
	c.queue_max = 4;
	return c;
}

static struct edgeq_route_decision
decide(const struct edgeq_router_config *cfg,
       const struct edgeq_router_capacity *cap,
       const struct edgeq_route_request *req)
{
	struct edgeq_route_decision d;

	assert_int_equal(edgeq_router_decide(cfg, cap, req, &d), 0);
	return d;
}

/* Confidential is local (or rejected) in every scenario we can build. */
static void test_confidential_never_leaves(void **state)
{
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;
	struct edgeq_router_capacity c;
	double slo[] = { 0, 1, 1000 };
	int down, over, s, failed;

	r.privacy = EDGEQ_PRIVACY_CONFIDENTIAL;
	r.max_tokens = 100000;
	for (down = 0; down < 2; down++)
		for (over = 0; over < 2; over++)
			for (s = 0; s < 3; s++)
				for (failed = 0; failed < 8; failed++) {
					c = idle_box();
					c.local_down = down;
					if (over) {
						c.running = 1;
						c.waiting = 4;
					}
					c.throttle = 0.01;
					r.slo_tok_s = slo[s];
					r.deadline_s = slo[s];
					r.failed = (uint32_t)failed;
					d = decide(&both, &c, &r);
					assert_true(
						d.route == EDGEQ_ROUTE_LOCAL ||
						d.route == EDGEQ_ROUTE_REJECT);
					assert_int_equal(
						d.allowed,
						1u << EDGEQ_ROUTE_LOCAL);
				}
	c = idle_box();
	c.local_down = true;
	r.failed = 0;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_REJECT);
	assert_int_equal(d.reason, EDGEQ_REASON_REJECT_DOWN);
}

/* Public leaves only when the throttled (sustained) speed misses the SLO. */
static void test_public_sustained_not_peak(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;

	r.privacy = EDGEQ_PRIVACY_PUBLIC;
	r.max_tokens = 64;
	r.slo_tok_s = 15;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_SLO_MET);
	/* peak 20 would meet 15 tok/s, but throttled to half it cannot */
	c.throttle = 0.5;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_PUBLIC);
	assert_int_equal(d.reason, EDGEQ_REASON_SLO_UNMET);
	assert_true(d.sustained_tok_s > 9.99 && d.sustained_tok_s < 10.01);
	assert_false(d.slo_feasible);
	/* no SLO: local, whatever the throttle */
	r.slo_tok_s = 0;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_NO_SLO);
	/* a deadline: 64 tokens at 10 tok/s is 6.4 s */
	r.deadline_s = 5;
	assert_int_equal(decide(&both, &c, &r).route, EDGEQ_ROUTE_PUBLIC);
	r.deadline_s = 7;
	assert_int_equal(decide(&both, &c, &r).route, EDGEQ_ROUTE_LOCAL);
}

static void test_internal_goes_private(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;

	r.privacy = EDGEQ_PRIVACY_INTERNAL;
	r.max_tokens = 64;
	r.slo_tok_s = 100;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_PRIVATE);
	assert_int_equal(d.allowed, (1u << EDGEQ_ROUTE_LOCAL) |
					    (1u << EDGEQ_ROUTE_PRIVATE));
	/* never public */
	d = decide(&(struct edgeq_router_config){ false, true }, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_SLO_UNMET_NO_PEER);
	/* private failed: local, and the reason says so */
	r.failed = 1u << EDGEQ_ROUTE_PRIVATE;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_FALLBACK);
}

static void test_public_prefers_public_then_private(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };

	r.privacy = EDGEQ_PRIVACY_PUBLIC;
	r.max_tokens = 64;
	r.slo_tok_s = 100;
	r.failed = 1u << EDGEQ_ROUTE_PUBLIC;
	assert_int_equal(decide(&both, &c, &r).route, EDGEQ_ROUTE_PRIVATE);
	r.failed |= 1u << EDGEQ_ROUTE_PRIVATE;
	assert_int_equal(decide(&both, &c, &r).reason, EDGEQ_REASON_FALLBACK);
}

static void test_overload_and_down(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;

	r.privacy = EDGEQ_PRIVACY_PUBLIC;
	r.max_tokens = 16;
	c.running = 1;
	c.waiting = 4;
	d = decide(&both, &c, &r);
	assert_true(d.overloaded);
	assert_int_equal(d.route, EDGEQ_ROUTE_PUBLIC);
	assert_int_equal(d.reason, EDGEQ_REASON_OVERLOADED);
	d = decide(&none, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_REJECT);
	assert_int_equal(d.reason, EDGEQ_REASON_REJECT_OVERLOAD);
	c = idle_box();
	c.local_down = true;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_PUBLIC);
	assert_int_equal(d.reason, EDGEQ_REASON_LOCAL_DOWN);
}

/* Queue and sharing slow the local estimate down. */
static void test_estimate_queue(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;

	r.privacy = EDGEQ_PRIVACY_PUBLIC;
	r.max_tokens = 20;
	c.slots = 2;
	d = decide(&both, &c, &r);
	assert_true(d.local_s > 0.99 && d.local_s < 1.01);
	c.running = 1;
	d = decide(&both, &c, &r);
	assert_true(d.local_tok_s > 9.99 && d.local_tok_s < 10.01);
	c.running = 2;
	c.waiting = 1;
	d = decide(&both, &c, &r);
	assert_true(d.local_s > 2.5);
	/* unknown speed: stays local, says so */
	c = idle_box();
	c.peak_tok_s = 0;
	r.slo_tok_s = 1000;
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_NO_ESTIMATE);
}

/* A TTFT SLO: met by an idle box, missed behind a full house. */
static void test_ttft_slo(void **state)
{
	struct edgeq_router_capacity c = idle_box();
	struct edgeq_route_request r = { 0 };
	struct edgeq_route_decision d;

	c.prompt_tok_s = 100;
	r.privacy = EDGEQ_PRIVACY_PUBLIC;
	r.prompt_tokens = 50; /* 0.5 s of prefill */
	r.max_tokens = 40;    /* 2 s of decode */
	r.ttft_s = 1;
	d = decide(&both, &c, &r);
	assert_true(d.local_ttft_s > 0.49 && d.local_ttft_s < 0.51);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
	assert_int_equal(d.reason, EDGEQ_REASON_SLO_MET);
	c.running = 1; /* behind one running request: 2.5 s more */
	d = decide(&both, &c, &r);
	assert_true(d.local_ttft_s > 2.9);
	assert_int_equal(d.route, EDGEQ_ROUTE_PUBLIC);
	assert_int_equal(d.reason, EDGEQ_REASON_SLO_UNMET);
	r.privacy = EDGEQ_PRIVACY_CONFIDENTIAL; /* the SLO never moves it */
	d = decide(&both, &c, &r);
	assert_int_equal(d.route, EDGEQ_ROUTE_LOCAL);
}

static void test_names(void **state)
{
	enum edgeq_privacy p;
	int i;

	assert_int_equal(edgeq_privacy_parse("Internal", &p), 0);
	assert_int_equal(p, EDGEQ_PRIVACY_INTERNAL);
	assert_int_equal(edgeq_privacy_parse("secret", &p), -EINVAL);
	assert_string_equal(edgeq_route_name(EDGEQ_ROUTE_PRIVATE), "private");
	assert_null(edgeq_route_name(EDGEQ_ROUTE_COUNT));
	for (i = 0; i < EDGEQ_REASON_COUNT; i++) {
		assert_non_null(edgeq_route_reason_name(i));
		assert_non_null(edgeq_route_reason_text(i));
	}
	assert_int_equal(edgeq_router_decide(&both, NULL, NULL, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_confidential_never_leaves),
		cmocka_unit_test(test_public_sustained_not_peak),
		cmocka_unit_test(test_internal_goes_private),
		cmocka_unit_test(test_public_prefers_public_then_private),
		cmocka_unit_test(test_overload_and_down),
		cmocka_unit_test(test_estimate_queue),
		cmocka_unit_test(test_ttft_slo),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
