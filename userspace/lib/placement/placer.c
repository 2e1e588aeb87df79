// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The placer: the plan in force during a generation.
 *
 * State updates (from the pressure monitor, any thread) are queued and
 * applied at the next token boundary, where the planner runs again. The
 * plan changes only when the new one is faster by the margin and the old
 * one has been kept min_dwell tokens (hysteresis: a device hovering at a
 * threshold does not flap), except when the plan in force has become
 * infeasible (an agent lost, a queue paused): then it changes at once.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/placement.h>

struct edgeq_placer {
	struct edgeq_devices devs;   /* states as of the last boundary */
	struct edgeq_op_chain chain; /* own copy of the ops */
	struct edgeq_placer_params params;
	struct edgeq_calib cal;
	struct edgeq_placement cur;  /* the plan in force */
	struct edgeq_placement cand; /* scratch: the best plan now */

	pthread_mutex_t lock; /* protects pending[] */
	struct edgeq_device_state pending[EDGEQ_MAX_DEVICES];
	bool pending_set[EDGEQ_MAX_DEVICES];
	atomic_bool has_pending;
	bool dirty; /* calibration changed since the plan */

	uint64_t tokens, switches, last_switch;
};

void edgeq_placer_params_init(struct edgeq_placer_params *p)
{
	p->margin = 0.05;
	p->min_dwell = 1;
	p->alpha = 0.25;
	p->calibrate = true;
}

uint64_t edgeq_placement_dev_bytes(const struct edgeq_op_chain *c,
				   const struct edgeq_placement *pl, int dev)
{
	double b = 0;

	for (size_t i = 0; i < c->n && i < pl->n_ops; i++)
		if (pl->dev[i] == dev)
			b += c->ops[i].weight_bytes;
	return (uint64_t)b;
}

static bool fits(const struct edgeq_placer *p, const struct edgeq_placement *pl)
{
	if (!p->params.dev_bytes)
		return true;
	for (size_t k = 1; k < p->devs.n; k++)
		if (edgeq_placement_dev_bytes(&p->chain, pl, (int)k) >
		    p->params.dev_bytes)
			return false;
	return true;
}

/*
 * A plan over a device's bound gives ops back to the CPU from the end of
 * the chain (the output projection, then the last blocks), a block at a
 * time, so what stays on the device is a run of whole blocks from the
 * first: the fewest boundaries for the bytes that fit, and no block left
 * in part. Re-costed after.
 */
static void fit(struct edgeq_placer *p, struct edgeq_placement *pl)
{
	const struct edgeq_op *ops = p->chain.ops;
	bool moved = false;

	if (!p->params.dev_bytes)
		return;
	for (size_t k = 1; k < p->devs.n; k++) {
		double used = (double)edgeq_placement_dev_bytes(&p->chain, pl,
								(int)k);
		size_t end = p->chain.n;

		while (end > 0 && used > (double)p->params.dev_bytes) {
			size_t i = end - 1, j = i;

			/* the first op of i's block (i alone outside one) */
			while (ops[i].layer >= 0 && j > 0 &&
			       ops[j - 1].layer == ops[i].layer)
				j--;
			for (size_t q = j; q <= i; q++)
				if (pl->dev[q] == k) {
					pl->dev[q] = 0;
					used -= ops[q].weight_bytes;
					moved = true;
				}
			end = j;
		}
	}
	if (moved)
		edgeq_placement_evaluate(&p->devs, &p->chain, &p->cal, pl->dev,
					 pl);
}

void edgeq_placer_set_dev_bytes(struct edgeq_placer *p, uint64_t bytes)
{
	if (p->params.dev_bytes == bytes)
		return;
	p->params.dev_bytes = bytes;
	p->dirty = true;
}

int edgeq_placer_new(const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c,
		     const struct edgeq_placer_params *params,
		     struct edgeq_placer **out)
{
	struct edgeq_placer *p;
	int ret;

	if (!d->n || !c->n)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->devs = *d;
	if (params)
		p->params = *params;
	else
		edgeq_placer_params_init(&p->params);
	edgeq_calib_init(&p->cal);
	pthread_mutex_init(&p->lock, NULL);
	ret = edgeq_op_chain_alloc(&p->chain, c->n);
	if (ret)
		goto err_free;
	memcpy(p->chain.ops, c->ops, c->n * sizeof(*c->ops));
	p->chain.in_bytes = c->in_bytes;
	p->chain.n_base = c->n_base;
	memcpy(p->chain.base, c->base, sizeof(c->base));
	ret = edgeq_placement_alloc(&p->cur, c->n);
	if (ret)
		goto err_chain;
	ret = edgeq_placement_alloc(&p->cand, c->n);
	if (ret)
		goto err_cur;
	ret = edgeq_placement_optimal(&p->devs, &p->chain, &p->cal, &p->cur);
	if (ret)
		goto err_cand;
	fit(p, &p->cur);
	*out = p;
	return 0;

err_cand:
	edgeq_placement_free(&p->cand);
err_cur:
	edgeq_placement_free(&p->cur);
err_chain:
	edgeq_op_chain_free(&p->chain);
err_free:
	pthread_mutex_destroy(&p->lock);
	free(p);
	return ret;
}

void edgeq_placer_free(struct edgeq_placer *p)
{
	if (!p)
		return;
	edgeq_placement_free(&p->cand);
	edgeq_placement_free(&p->cur);
	edgeq_op_chain_free(&p->chain);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int edgeq_placer_set_state(struct edgeq_placer *p, int dev,
			   const struct edgeq_device_state *s)
{
	if (dev < 0 || (size_t)dev >= p->devs.n)
		return -ENOENT;
	pthread_mutex_lock(&p->lock);
	p->pending[dev] = *s;
	p->pending_set[dev] = true;
	atomic_store_explicit(&p->has_pending, true, memory_order_release);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

bool edgeq_placer_pending(const struct edgeq_placer *p)
{
	return atomic_load_explicit(&p->has_pending, memory_order_acquire);
}

static bool apply_pending(struct edgeq_placer *p)
{
	bool any = false;

	if (!edgeq_placer_pending(p))
		return false;
	pthread_mutex_lock(&p->lock);
	for (size_t k = 0; k < p->devs.n; k++) {
		if (!p->pending_set[k])
			continue;
		p->devs.dev[k].state = p->pending[k];
		p->pending_set[k] = false;
		any = true;
	}
	atomic_store_explicit(&p->has_pending, false, memory_order_relaxed);
	pthread_mutex_unlock(&p->lock);
	return any;
}

/* Re-cost the plan in force, find the best one now, and decide. */
static enum edgeq_replan_reason replan(struct edgeq_placer *p, bool force)
{
	bool feasible, better, over;
	int ret;

	edgeq_placement_evaluate(&p->devs, &p->chain, &p->cal, p->cur.dev,
				 &p->cur);
	over = !fits(p, &p->cur);
	feasible = isfinite(p->cur.step_ns) && !over;
	ret = edgeq_placement_optimal(&p->devs, &p->chain, &p->cal, &p->cand);
	if (ret)
		return EDGEQ_REPLAN_NONE; /* cannot happen with a CPU */
	fit(p, &p->cand);
	if (!memcmp(p->cand.dev, p->cur.dev, p->chain.n))
		return EDGEQ_REPLAN_NONE;
	better = p->cand.step_ns < p->cur.step_ns * (1.0 - p->params.margin);
	if (better && p->tokens - p->last_switch < p->params.min_dwell) {
		better = false;
		p->dirty = true; /* held back by the dwell time: ask again */
	}
	if (feasible && !better && !force)
		return EDGEQ_REPLAN_NONE;
	edgeq_placement_copy(&p->cur, &p->cand);
	p->switches++;
	p->last_switch = p->tokens;
	return feasible ? EDGEQ_REPLAN_FASTER :
	       over	? EDGEQ_REPLAN_MEMORY :
			  EDGEQ_REPLAN_LOST;
}

enum edgeq_replan_reason edgeq_placer_boundary(struct edgeq_placer *p)
{
	bool changed = apply_pending(p);

	p->tokens++;
	if (!changed && !p->dirty)
		return EDGEQ_REPLAN_NONE;
	p->dirty = false;
	return replan(p, false);
}

void edgeq_placer_device_lost(struct edgeq_placer *p, int dev)
{
	if (dev <= 0 || (size_t)dev >= p->devs.n)
		return; /* the host CPU is never lost */
	apply_pending(p);
	p->devs.dev[dev].state.agent_alive = false;
	replan(p, false);
}

void edgeq_placer_observe(struct edgeq_placer *p, size_t i, int dev,
			  uint64_t ns)
{
	const struct edgeq_op *op;
	double model;

	if (!p->params.calibrate || i >= p->chain.n || dev < 0 ||
	    (size_t)dev >= p->devs.n)
		return;
	op = &p->chain.ops[i];
	model = edgeq_op_time_ns(&p->devs, dev, op, NULL);
	edgeq_calib_observe(&p->cal, op, dev, model, (double)ns,
			    p->params.alpha);
	p->dirty = true;
}

const struct edgeq_placement *edgeq_placer_plan(const struct edgeq_placer *p)
{
	return &p->cur;
}

const struct edgeq_devices *edgeq_placer_devices(const struct edgeq_placer *p)
{
	return &p->devs;
}

const struct edgeq_op_chain *edgeq_placer_chain(const struct edgeq_placer *p)
{
	return &p->chain;
}

struct edgeq_calib *edgeq_placer_calib(struct edgeq_placer *p)
{
	p->dirty = true; /* the caller may change it */
	return &p->cal;
}

uint64_t edgeq_placer_switches(const struct edgeq_placer *p)
{
	return p->switches;
}

uint64_t edgeq_placer_tokens(const struct edgeq_placer *p)
{
	return p->tokens;
}
