/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The privacy router: where may a request run? One pure function,
 * edgeq_router_decide(), applies the privacy ledger in a fixed order:
 *
 *   1. hard privacy filter: confidential -> local only; internal -> local or
 *      the private endpoint; public -> local, the public endpoint, or the
 *      private one;
 *   2. SLO feasibility at the SUSTAINED local speed (peak x throttle factor,
 *      shared among the running generations, behind the queue);
 *   3. cost: local (nothing leaves the box) first, then private, then public.
 *
 * The daemon (edgeq serve), `edgeq route --explain` and `edgeq plan` call the
 * same function, so the table they print is the decision the daemon makes.
 * Nothing here prints, allocates or reads clocks: every input is a field.
 */
#ifndef EDGEQ_ROUTER_H
#define EDGEQ_ROUTER_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum edgeq_privacy {
	EDGEQ_PRIVACY_CONFIDENTIAL = 0, /* never leaves the box */
	EDGEQ_PRIVACY_INTERNAL,		/* may go to the private endpoint */
	EDGEQ_PRIVACY_PUBLIC,		/* may go to any endpoint */
	EDGEQ_PRIVACY_COUNT,
};

enum edgeq_route {
	EDGEQ_ROUTE_LOCAL = 0, /* this box's engine */
	EDGEQ_ROUTE_PRIVATE,   /* the configured private (internal) endpoint */
	EDGEQ_ROUTE_PUBLIC,    /* the configured public endpoint */
	EDGEQ_ROUTE_REJECT,    /* nowhere allowed can take it (429/503) */
	EDGEQ_ROUTE_COUNT,
};

/* Why a decision was made; stable names for logs and metrics labels. */
enum edgeq_route_reason {
	EDGEQ_REASON_CONFIDENTIAL = 0, /* confidential: local only */
	EDGEQ_REASON_NO_SLO,	       /* no SLO given: local */
	EDGEQ_REASON_SLO_MET,	       /* local sustained speed meets the SLO */
	EDGEQ_REASON_NO_ESTIMATE,      /* no local speed known yet: local */
	EDGEQ_REASON_SLO_UNMET, /* offloaded: local cannot meet the SLO */
	EDGEQ_REASON_SLO_UNMET_NO_PEER, /* local anyway: no allowed endpoint */
	EDGEQ_REASON_OVERLOADED,	/* offloaded: local queue is full */
	EDGEQ_REASON_LOCAL_DOWN,      /* offloaded: local engine unavailable */
	EDGEQ_REASON_FALLBACK,	      /* local: the chosen endpoint failed */
	EDGEQ_REASON_REJECT_OVERLOAD, /* rejected: queue full, nowhere else */
	EDGEQ_REASON_REJECT_DOWN,     /* rejected: local down, nowhere else */
	EDGEQ_REASON_COUNT,
};

/* Static facts about where requests can go. */
struct edgeq_router_config {
	bool have_private; /* a private endpoint is configured */
	bool have_public;  /* a public endpoint is configured */
};

/*
 * The local box as the router sees it now. Filled by the daemon from its own
 * measurements and the pressure monitor; `edgeq plan`/`route` fill it from
 * the model ledger or from flags.
 */
struct edgeq_router_capacity {
	double peak_tok_s; /* decode tok/s of one sequence, unthrottled; 0: unknown */
	double throttle;     /* 0..1, share of peak available now (1: none) */
	double prompt_tok_s; /* prefill tok/s; 0: unknown (prefill not counted) */
	double mem_pressure; /* 0..1, share of time stalled on memory (PSI) */
	uint32_t slots;	     /* generations that run at once (>= 1) */
	uint32_t running;    /* generations running now */
	uint32_t waiting;    /* requests waiting for a slot */
	uint32_t queue_max;  /* waiting requests allowed before 429 */
	bool local_down;     /* engine not loaded, or its device failed */
};

/* What the router needs to know about one request (no prompt text). */
struct edgeq_route_request {
	enum edgeq_privacy privacy;
	uint32_t prompt_tokens;
	uint32_t max_tokens;
	double slo_tok_s;  /* decode speed the client needs; 0: none */
	double deadline_s; /* whole answer within this many seconds; 0: none */
	uint32_t failed;   /* routes that already failed: 1u << EDGEQ_ROUTE_* */
	double ttft_s;	   /* first token within this many seconds; 0: none */
};

struct edgeq_route_decision {
	enum edgeq_route route;
	enum edgeq_route_reason reason;
	double sustained_tok_s; /* peak x throttle */
	double local_tok_s;	/* what this request would get locally */
	double local_s;	     /* estimated local time incl. queue; 0: unknown */
	double local_ttft_s; /* estimated local time to the first token */
	bool slo_feasible;   /* the SLO holds locally (true when no SLO) */
	bool overloaded;     /* a local request would find the queue full */
	uint32_t allowed;    /* 1u << route for every route privacy allows */
};

/*
 * Decide where @req runs. Pure and total: every input gives a decision.
 * Returns 0, or -EINVAL for an out-of-range class or NULL pointers.
 */
int edgeq_router_decide(const struct edgeq_router_config *cfg,
			const struct edgeq_router_capacity *cap,
			const struct edgeq_route_request *req,
			struct edgeq_route_decision *out);

/* Names: "confidential", "internal", "public"; "local", "private", "public",
 * "reject"; reason names such as "slo-unmet". NULL for out-of-range values. */
const char *edgeq_privacy_name(enum edgeq_privacy p);
const char *edgeq_route_name(enum edgeq_route r);
const char *edgeq_route_reason_name(enum edgeq_route_reason r);
/* A sentence for --explain tables. */
const char *edgeq_route_reason_text(enum edgeq_route_reason r);

/* Parse a class name (case-insensitive). Returns 0 or -EINVAL. */
int edgeq_privacy_parse(const char *s, enum edgeq_privacy *out);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_ROUTER_H */
