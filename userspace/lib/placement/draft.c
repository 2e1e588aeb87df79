// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which model of a speculative pair the device queues take. The target
 * verifies a pass of k + 1 tokens in about one decode step's time (the
 * weights are read once), the draft spends k of its own steps; with
 * acceptance a a pass gives (1 - a^(k+1)) / (1 - a) tokens. Each
 * assignment (target on the queues and the draft on the CPU, or the
 * reverse) is priced with the planner's best plan for the model on the
 * queues and its all-CPU plan, and the one with more predicted tokens per
 * second wins, at its best draft length (0: drafting does not pay there).
 * This is the seed's point: speculation spends an accelerator's idle
 * compute to save the bandwidth of target steps, and which side that
 * accelerator should take depends on the two models' sizes and the
 * devices' speeds, not on a rule.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <edgeq/ledger.h>
#include <edgeq/placement.h>

/* Predicted decode step of @s: the best plan on @d's devices, and all CPU. */
static int step_times(const struct edgeq_devices *d,
		      const struct edgeq_place_shape *s, double *dev_ns,
		      double *cpu_ns)
{
	struct edgeq_op_chain c = { 0 };
	struct edgeq_placement p = { 0 };
	struct edgeq_calib cal;
	int ret;

	edgeq_calib_init(&cal);
	ret = edgeq_op_chain_llama(s, &c);
	if (!ret)
		ret = edgeq_placement_alloc(&p, c.n);
	if (!ret)
		ret = edgeq_placement_cpu(d, &c, &cal, &p);
	if (!ret) {
		*cpu_ns = p.step_ns;
		ret = edgeq_placement_optimal(d, &c, &cal, &p);
		/* no feasible plan, or none better: the CPU's */
		*dev_ns = !ret && p.step_ns > 0 && p.step_ns < *cpu_ns ?
				  p.step_ns :
				  *cpu_ns;
		ret = 0;
	}
	edgeq_placement_free(&p);
	edgeq_op_chain_free(&c);
	return ret;
}

/* Tokens per second of target steps @tt and draft steps @td (ns) at the
 * best draft length up to @max_len, that length in *@k. */
static double best_rate(double tt, double td, double a, int max_len, int *k)
{
	struct edgeq_spec sp;
	double best = 1e9 / tt, r;

	*k = 0;
	for (int j = 1; j <= max_len; j++) {
		edgeq_ledger_speculative(a, j, td / tt, &sp);
		r = sp.speedup * 1e9 / tt;
		if (r > best) {
			best = r;
			*k = j;
		}
	}
	return best;
}

int edgeq_place_draft_choice(const struct edgeq_devices *d,
			     const struct edgeq_place_shape *target,
			     const struct edgeq_place_shape *draft,
			     double accept, int max_len,
			     struct edgeq_draft_choice *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	if (!(accept >= 0 && accept <= 1) || max_len < 1)
		return -EINVAL;
	ret = step_times(d, target, &out->target_dev_ns, &out->target_cpu_ns);
	if (!ret)
		ret = step_times(d, draft, &out->draft_dev_ns,
				 &out->draft_cpu_ns);
	if (ret)
		return ret;
	if (!(out->target_cpu_ns > 0) || !(out->draft_cpu_ns > 0) ||
	    !isfinite(out->target_cpu_ns) || !isfinite(out->draft_cpu_ns))
		return -EINVAL;
	out->rate_target_on = best_rate(out->target_dev_ns, out->draft_cpu_ns,
					accept, max_len, &out->k_target_on);
	out->rate_draft_on = best_rate(out->target_cpu_ns, out->draft_dev_ns,
				       accept, max_len, &out->k_draft_on);
	out->draft_on_device = out->rate_draft_on > out->rate_target_on;
	return 0;
}
