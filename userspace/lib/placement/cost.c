// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The cost model and the planner.
 *
 *   op time      = (max(flops / compute, bytes / bandwidth) + op_us)
 *                  x calibration ratio, at the device's capacity
 *   segment      = a run of consecutive ops on one device; costs launch_us
 *   boundary     = data handed between devices: sync_us of both sides, plus
 *                  a copy where a side does not share host memory
 *   step time    = sum of op times + launches + boundaries; the step starts
 *                  and ends on the host (token in, logits out)
 *
 * The planner is a shortest path over (op, device): O(ops x devices^2), a
 * few microseconds for a 1B model, so it can run at every token boundary.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/placement.h>

#define HOST 0

double edgeq_op_time_ns(const struct edgeq_devices *d, int dev,
			const struct edgeq_op *op,
			const struct edgeq_calib *cal)
{
	const struct edgeq_device *dv = &d->dev[dev];
	double cap, compute, memory, t;

	if (!edgeq_devprof_supports(&dv->prof, op->kind, op->dtype) ||
	    (op->also & ~dv->prof.ops_mask))
		return INFINITY;
	cap = edgeq_device_capacity(&dv->state);
	if (cap <= 0)
		return INFINITY;
	/* 1e9 flop/s is one flop per ns; 1e9 B/s one byte per ns */
	compute = op->flops / (dv->prof.gflops * cap);
	memory = op->bytes / (dv->prof.mem_gbs * cap);
	t = (compute > memory ? compute : memory) + dv->prof.op_us * 1e3;
	if (cal && dev < EDGEQ_MAX_DEVICES && op->base < EDGEQ_MAX_BASE_OPS)
		t *= cal->ratio[dev][op->base];
	return t;
}

double edgeq_transfer_ns(const struct edgeq_devices *d, int from, int to,
			 double bytes)
{
	const struct edgeq_device_profile *a, *b;
	double t;

	if (from == to)
		return 0;
	a = &d->dev[from].prof;
	b = &d->dev[to].prof;
	t = (a->sync_us + b->sync_us) * 1e3;
	if (a->copy_gbs > 0)
		t += bytes / a->copy_gbs;
	if (b->copy_gbs > 0)
		t += bytes / b->copy_gbs;
	return t;
}

static double launch_ns(const struct edgeq_devices *d, int dev)
{
	return d->dev[dev].prof.launch_us * 1e3;
}

int edgeq_placement_alloc(struct edgeq_placement *p, size_t n_ops)
{
	memset(p, 0, sizeof(*p));
	p->dev = calloc(n_ops ? n_ops : 1, 1);
	if (!p->dev)
		return -ENOMEM;
	p->n_ops = n_ops;
	return 0;
}

void edgeq_placement_free(struct edgeq_placement *p)
{
	if (!p)
		return;
	free(p->dev);
	p->dev = NULL;
	p->n_ops = 0;
}

int edgeq_placement_copy(struct edgeq_placement *dst,
			 const struct edgeq_placement *src)
{
	uint8_t *keep = dst->dev;

	if (dst->n_ops != src->n_ops)
		return -EINVAL;
	*dst = *src;
	dst->dev = keep;
	memcpy(dst->dev, src->dev, src->n_ops);
	return 0;
}

double edgeq_placement_fallback_tax(const struct edgeq_placement *p)
{
	if (!(p->step_ns > 0) || !isfinite(p->step_ns))
		return 0;
	return p->transfer_ns / p->step_ns;
}

/* Cost p->dev (already filled) and set the breakdown. */
static int evaluate(const struct edgeq_devices *d,
		    const struct edgeq_op_chain *c,
		    const struct edgeq_calib *cal, struct edgeq_placement *p)
{
	double prev_bytes = c->in_bytes;
	int prev = HOST, ret = 0;

	p->op_ns = p->transfer_ns = 0;
	memset(p->dev_ns, 0, sizeof(p->dev_ns));
	p->n_segments = p->n_boundaries = 0;
	for (size_t i = 0; i < c->n; i++) {
		int dv = p->dev[i];
		double t;

		if ((size_t)dv >= d->n)
			return -EINVAL;
		t = edgeq_op_time_ns(d, dv, &c->ops[i], cal);
		if (!isfinite(t))
			ret = -EINVAL;
		if (dv != prev) {
			p->transfer_ns +=
				edgeq_transfer_ns(d, prev, dv, prev_bytes);
			p->n_boundaries++;
		}
		if (i == 0 || dv != prev) {
			p->dev_ns[dv] += launch_ns(d, dv);
			p->n_segments++;
		}
		p->dev_ns[dv] += t;
		prev = dv;
		prev_bytes = c->ops[i].out_bytes;
	}
	if (prev != HOST) {
		p->transfer_ns += edgeq_transfer_ns(d, prev, HOST, prev_bytes);
		p->n_boundaries++;
	}
	for (size_t k = 0; k < d->n; k++)
		p->op_ns += p->dev_ns[k];
	p->step_ns = p->op_ns + p->transfer_ns;
	if (ret)
		p->step_ns = INFINITY;
	return ret;
}

int edgeq_placement_evaluate(const struct edgeq_devices *d,
			     const struct edgeq_op_chain *c,
			     const struct edgeq_calib *cal,
			     const uint8_t *assign, struct edgeq_placement *p)
{
	if (p->n_ops != c->n)
		return -EINVAL;
	if (assign != p->dev)
		memcpy(p->dev, assign, c->n);
	return evaluate(d, c, cal, p);
}

int edgeq_placement_optimal(const struct edgeq_devices *d,
			    const struct edgeq_op_chain *c,
			    const struct edgeq_calib *cal,
			    struct edgeq_placement *p)
{
	double cost[EDGEQ_MAX_DEVICES], next[EDGEQ_MAX_DEVICES];
	double t[EDGEQ_MAX_DEVICES], launch[EDGEQ_MAX_DEVICES];
	uint8_t stack_bp[2048], *bp = stack_bp;
	size_t D = d->n, i;
	double best;
	int bd, ret;

	if (p->n_ops != c->n || !c->n || !D || D > EDGEQ_MAX_DEVICES)
		return -EINVAL;
	if (c->n * D > sizeof(stack_bp)) {
		bp = malloc(c->n * D);
		if (!bp)
			return -ENOMEM;
	}
	for (size_t k = 0; k < D; k++)
		launch[k] = launch_ns(d, (int)k);
	for (size_t k = 0; k < D; k++)
		cost[k] = edgeq_transfer_ns(d, HOST, (int)k, c->in_bytes) +
			  launch[k] +
			  edgeq_op_time_ns(d, (int)k, &c->ops[0], cal);
	for (i = 1; i < c->n; i++) {
		double out = c->ops[i - 1].out_bytes;

		for (size_t k = 0; k < D; k++)
			t[k] = edgeq_op_time_ns(d, (int)k, &c->ops[i], cal);
		for (size_t k = 0; k < D; k++) {
			double b = cost[k];
			size_t from = k;

			if (!isfinite(t[k])) {
				next[k] = INFINITY;
				bp[i * D + k] = (uint8_t)k;
				continue;
			}
			/* staying on k wins ties: fewer boundaries */
			for (size_t j = 0; j < D; j++) {
				double x;

				if (j == k || !isfinite(cost[j]))
					continue;
				x = cost[j] +
				    edgeq_transfer_ns(d, (int)j, (int)k, out) +
				    launch[k];
				if (x < b) {
					b = x;
					from = j;
				}
			}
			next[k] = b + t[k];
			bp[i * D + k] = (uint8_t)from;
		}
		memcpy(cost, next, D * sizeof(cost[0]));
	}
	best = INFINITY;
	bd = -1;
	for (size_t k = 0; k < D; k++) {
		double x =
			cost[k] + edgeq_transfer_ns(d, (int)k, HOST,
						    c->ops[c->n - 1].out_bytes);
		if (x < best) {
			best = x;
			bd = (int)k;
		}
	}
	if (bd < 0) {
		if (bp != stack_bp)
			free(bp);
		return -ENODEV;
	}
	for (i = c->n; i-- > 0;) {
		p->dev[i] = (uint8_t)bd;
		if (i)
			bd = bp[i * D + (size_t)bd];
	}
	if (bp != stack_bp)
		free(bp);
	ret = evaluate(d, c, cal, p);
	return ret;
}

int edgeq_placement_naive(const struct edgeq_devices *d,
			  const struct edgeq_op_chain *c,
			  const struct edgeq_calib *cal,
			  struct edgeq_placement *p)
{
	if (p->n_ops != c->n)
		return -EINVAL;
	for (size_t i = 0; i < c->n; i++) {
		double best = INFINITY;
		int bd = HOST;

		for (size_t k = 0; k < d->n; k++) {
			double t = edgeq_op_time_ns(d, (int)k, &c->ops[i], cal);

			if (t < best) {
				best = t;
				bd = (int)k;
			}
		}
		p->dev[i] = (uint8_t)bd;
	}
	return evaluate(d, c, cal, p);
}

int edgeq_placement_cpu(const struct edgeq_devices *d,
			const struct edgeq_op_chain *c,
			const struct edgeq_calib *cal,
			struct edgeq_placement *p)
{
	if (p->n_ops != c->n)
		return -EINVAL;
	memset(p->dev, HOST, c->n);
	return evaluate(d, c, cal, p);
}
