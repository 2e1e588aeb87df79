/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * edgeq serve and signed bundles (Documentation/manifest.rst): with
 * EDGEQ_TRUST_KEY set, serve loads only a verified bundle from the store
 * (EDGEQ_BUNDLES, default /var/lib/edgeq/bundles), keeps the previous one,
 * and rolls back by itself when the new one fails its probation.
 */
#ifndef EDGEQ_SERVE_BUNDLE_H
#define EDGEQ_SERVE_BUNDLE_H

#include <edgeq/manifest.h>

/*
 * Before loading: without EDGEQ_TRUST_KEY, does nothing and returns 0. With
 * it, points *@model_path at the verified current bundle's model (rolling
 * back over refused ones), or returns an exit status after printing why.
 */
int serve_bundle_resolve(const char **model_path);
struct srv_config;
/*
 * Apply what the verified bundle signs to the daemon's configuration: its
 * memory budget (the weight budget never above it), thermal throttle and
 * critical temperatures (admission), TTFT SLO (the router) and routing
 * policy (which endpoints each class may use). A value that cannot be
 * applied on this box fails the bundle's probation (rolled back) with the
 * reason; returns an exit status then, 0 otherwise (and without a bundle).
 */
int serve_bundle_apply(struct srv_config *cfg);
/* The model loaded: a bundle on probation starts it (a thread ticks it). */
void serve_bundle_loaded(void);
/* The model did not load: a bundle on probation rolls back. */
void serve_bundle_load_failed(const char *why);
/* Other probation evidence: agent crashes, decode tok/s samples. Returns
 * true when it rolled the bundle back: the daemon should then stop (exit
 * non-zero) so that its restart serves the previous bundle. */
bool serve_bundle_report(enum edgeq_probation_event ev, double value);

#endif
