// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The privacy router's decision: privacy filter, then SLO feasibility at the
 * sustained local speed, then cost. See include/edgeq/router.h.
 */
#include <errno.h>
#include <stddef.h>
#include <strings.h>

#include <edgeq/router.h>

#define ROUTE_BIT(r) (1u << (r))

static const char *const privacy_names[EDGEQ_PRIVACY_COUNT] = {
	[EDGEQ_PRIVACY_CONFIDENTIAL] = "confidential",
	[EDGEQ_PRIVACY_INTERNAL] = "internal",
	[EDGEQ_PRIVACY_PUBLIC] = "public",
};

static const char *const route_names[EDGEQ_ROUTE_COUNT] = {
	[EDGEQ_ROUTE_LOCAL] = "local",
	[EDGEQ_ROUTE_PRIVATE] = "private",
	[EDGEQ_ROUTE_PUBLIC] = "public",
	[EDGEQ_ROUTE_REJECT] = "reject",
};

static const char *const reason_names[EDGEQ_REASON_COUNT] = {
	[EDGEQ_REASON_CONFIDENTIAL] = "confidential",
	[EDGEQ_REASON_NO_SLO] = "no-slo",
	[EDGEQ_REASON_SLO_MET] = "slo-met",
	[EDGEQ_REASON_NO_ESTIMATE] = "no-estimate",
	[EDGEQ_REASON_SLO_UNMET] = "slo-unmet",
	[EDGEQ_REASON_SLO_UNMET_NO_PEER] = "slo-unmet-no-endpoint",
	[EDGEQ_REASON_OVERLOADED] = "overloaded",
	[EDGEQ_REASON_LOCAL_DOWN] = "local-down",
	[EDGEQ_REASON_FALLBACK] = "upstream-failed",
	[EDGEQ_REASON_REJECT_OVERLOAD] = "reject-overloaded",
	[EDGEQ_REASON_REJECT_DOWN] = "reject-local-down",
};

static const char *const reason_texts[EDGEQ_REASON_COUNT] = {
	[EDGEQ_REASON_CONFIDENTIAL] =
		"confidential requests never leave the box",
	[EDGEQ_REASON_NO_SLO] = "no SLO given; local costs nothing to privacy",
	[EDGEQ_REASON_SLO_MET] = "local sustained speed meets the SLO",
	[EDGEQ_REASON_NO_ESTIMATE] = "no local speed measured yet; stays local",
	[EDGEQ_REASON_SLO_UNMET] = "local sustained speed cannot meet the SLO",
	[EDGEQ_REASON_SLO_UNMET_NO_PEER] =
		"SLO unmet locally but no endpoint is allowed; best effort local",
	[EDGEQ_REASON_OVERLOADED] = "local queue is full",
	[EDGEQ_REASON_LOCAL_DOWN] = "local engine is unavailable",
	[EDGEQ_REASON_FALLBACK] = "the chosen endpoint failed; served locally",
	[EDGEQ_REASON_REJECT_OVERLOAD] =
		"local queue is full and no endpoint is allowed (429)",
	[EDGEQ_REASON_REJECT_DOWN] =
		"local engine is unavailable and no endpoint is allowed (503)",
};

const char *edgeq_privacy_name(enum edgeq_privacy p)
{
	return (unsigned)p < EDGEQ_PRIVACY_COUNT ? privacy_names[p] : NULL;
}

const char *edgeq_route_name(enum edgeq_route r)
{
	return (unsigned)r < EDGEQ_ROUTE_COUNT ? route_names[r] : NULL;
}

const char *edgeq_route_reason_name(enum edgeq_route_reason r)
{
	return (unsigned)r < EDGEQ_REASON_COUNT ? reason_names[r] : NULL;
}

const char *edgeq_route_reason_text(enum edgeq_route_reason r)
{
	return (unsigned)r < EDGEQ_REASON_COUNT ? reason_texts[r] : NULL;
}

int edgeq_privacy_parse(const char *s, enum edgeq_privacy *out)
{
	int i;

	if (!s || !out)
		return -EINVAL;
	for (i = 0; i < EDGEQ_PRIVACY_COUNT; i++) {
		if (!strcasecmp(s, privacy_names[i])) {
			*out = (enum edgeq_privacy)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Routes the class may use, cheapest first is decided by pick_peer(). */
static uint32_t allowed_routes(const struct edgeq_router_config *cfg,
			       enum edgeq_privacy p)
{
	uint32_t m = ROUTE_BIT(EDGEQ_ROUTE_LOCAL);

	if (p >= EDGEQ_PRIVACY_INTERNAL && cfg->have_private)
		m |= ROUTE_BIT(EDGEQ_ROUTE_PRIVATE);
	if (p == EDGEQ_PRIVACY_PUBLIC && cfg->have_public)
		m |= ROUTE_BIT(EDGEQ_ROUTE_PUBLIC);
	return m;
}

/*
 * The endpoint to offload to, or REJECT when none is usable. Public requests
 * go to the public endpoint first: the private one's capacity is what
 * internal requests depend on.
 */
static enum edgeq_route pick_peer(enum edgeq_privacy p, uint32_t usable)
{
	if (p == EDGEQ_PRIVACY_PUBLIC &&
	    (usable & ROUTE_BIT(EDGEQ_ROUTE_PUBLIC)))
		return EDGEQ_ROUTE_PUBLIC;
	if (usable & ROUTE_BIT(EDGEQ_ROUTE_PRIVATE))
		return EDGEQ_ROUTE_PRIVATE;
	return EDGEQ_ROUTE_REJECT;
}

static void estimate_local(const struct edgeq_router_capacity *cap,
			   const struct edgeq_route_request *req,
			   struct edgeq_route_decision *d)
{
	double throttle = cap->throttle, per_req_s, prefill_s = 0;
	uint32_t slots = cap->slots ? cap->slots : 1, active, rounds;

	if (!(throttle > 0 && throttle <= 1))
		throttle = 1; /* unknown: no throttling reported */
	d->sustained_tok_s = cap->peak_tok_s > 0 ? cap->peak_tok_s * throttle :
						   0;
	d->overloaded = cap->running >= slots && cap->waiting >= cap->queue_max;
	if (d->sustained_tok_s <= 0)
		return;

	/* Generations share the box: this one gets 1/active of its speed. */
	active = cap->running + 1 < slots ? cap->running + 1 : slots;
	d->local_tok_s = d->sustained_tok_s / active;
	if (cap->prompt_tok_s > 0)
		prefill_s = req->prompt_tokens / (cap->prompt_tok_s * throttle);

	/*
	 * Behind a full house, wait for whole rounds of requests the size of
	 * this one, each running at 1/slots of the sustained speed.
	 */
	d->local_s = prefill_s + req->max_tokens / d->local_tok_s;
	d->local_ttft_s = prefill_s;
	if (cap->running >= slots) {
		per_req_s = prefill_s +
			    req->max_tokens * slots / d->sustained_tok_s;
		rounds = (cap->waiting + slots) / slots;
		d->local_s += rounds * per_req_s;
		d->local_ttft_s += rounds * per_req_s;
	}
}

int edgeq_router_decide(const struct edgeq_router_config *cfg,
			const struct edgeq_router_capacity *cap,
			const struct edgeq_route_request *req,
			struct edgeq_route_decision *out)
{
	struct edgeq_route_decision d = { 0 };
	bool has_slo, known;
	enum edgeq_route peer;
	uint32_t usable;

	if (!cfg || !cap || !req || !out ||
	    (unsigned)req->privacy >= EDGEQ_PRIVACY_COUNT)
		return -EINVAL;

	d.allowed = allowed_routes(cfg, req->privacy);
	estimate_local(cap, req, &d);
	has_slo = req->slo_tok_s > 0 || req->deadline_s > 0 || req->ttft_s > 0;
	known = d.sustained_tok_s > 0;
	d.slo_feasible = true;
	if (has_slo && known) {
		if (req->slo_tok_s > 0 && d.local_tok_s < req->slo_tok_s)
			d.slo_feasible = false;
		if (req->deadline_s > 0 && d.local_s > req->deadline_s)
			d.slo_feasible = false;
		if (req->ttft_s > 0 && d.local_ttft_s > req->ttft_s)
			d.slo_feasible = false;
	}

	/* 1. privacy: confidential stays here, whatever the load. */
	if (req->privacy == EDGEQ_PRIVACY_CONFIDENTIAL) {
		if (cap->local_down) {
			d.route = EDGEQ_ROUTE_REJECT;
			d.reason = EDGEQ_REASON_REJECT_DOWN;
		} else if (d.overloaded) {
			d.route = EDGEQ_ROUTE_REJECT;
			d.reason = EDGEQ_REASON_REJECT_OVERLOAD;
		} else {
			d.route = EDGEQ_ROUTE_LOCAL;
			d.reason = EDGEQ_REASON_CONFIDENTIAL;
		}
		*out = d;
		return 0;
	}

	usable = d.allowed & ~req->failed & ~ROUTE_BIT(EDGEQ_ROUTE_LOCAL);
	peer = pick_peer(req->privacy, usable);

	/* 2. can the box take it at all? */
	if (cap->local_down) {
		d.route = peer;
		d.reason = peer == EDGEQ_ROUTE_REJECT ?
				   EDGEQ_REASON_REJECT_DOWN :
				   EDGEQ_REASON_LOCAL_DOWN;
	} else if (d.overloaded) {
		d.route = peer;
		d.reason = peer == EDGEQ_ROUTE_REJECT ?
				   EDGEQ_REASON_REJECT_OVERLOAD :
				   EDGEQ_REASON_OVERLOADED;
	} else if (!has_slo) {
		/* 3. cost: local first. */
		d.route = EDGEQ_ROUTE_LOCAL;
		d.reason = EDGEQ_REASON_NO_SLO;
	} else if (!known) {
		d.route = EDGEQ_ROUTE_LOCAL;
		d.reason = EDGEQ_REASON_NO_ESTIMATE;
	} else if (d.slo_feasible) {
		d.route = EDGEQ_ROUTE_LOCAL;
		d.reason = EDGEQ_REASON_SLO_MET;
	} else if (peer != EDGEQ_ROUTE_REJECT) {
		d.route = peer;
		d.reason = EDGEQ_REASON_SLO_UNMET;
	} else {
		d.route = EDGEQ_ROUTE_LOCAL;
		d.reason = EDGEQ_REASON_SLO_UNMET_NO_PEER;
	}
	/* An endpoint failed and the box serves it instead: say so. */
	if (req->failed && d.route == EDGEQ_ROUTE_LOCAL)
		d.reason = EDGEQ_REASON_FALLBACK;
	*out = d;
	return 0;
}
