// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `edgeq run --queue npu0`: the decode steps run on the CPU and the given
 * edgeq queues as placement decides (Documentation/placement.rst), re-placed
 * at token boundaries as the queues throttle or lose their agent.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/placement.h>
#include <edgeq/pressure.h>

#include "cli.h"
#include "plan_placement.h"
#include "run_placement.h"

struct run_placement {
	struct edgeq_devices d;
	struct edgeq_place_inline inl;
	struct edgeq_place_exec *x;
	struct edgeq_place_kq *kq;
	struct edgeq_pressure *pm;
};

/* The CPU and the queues of @queues with their profiles (and, with
 * @sysfs, their state); 0 or an exit status, the problem printed. */
static int load_devices(const char *queues, const char *who, const char *opt,
			const char *sysfs, struct edgeq_devices *d)
{
	struct edgeq_device_profile profs[EDGEQ_MAX_DEVICES * 2];
	struct edgeq_error err = { 0 };
	const struct edgeq_device_profile *cpu;
	int n;

	n = edgeq_devprofs_load_all(edgeq_devprofs_default_path(), profs,
				    sizeof(profs) / sizeof(profs[0]), NULL,
				    &err);
	if (n < 0)
		return cli_error(cli_exit_for(n), who, "%s", err.msg);
	cpu = edgeq_devprof_find(profs, (size_t)n, "cpu");
	if (!cpu)
		return cli_error(EXIT_BADINPUT, who,
				 "device profiles: no [device.cpu]");
	edgeq_devices_init(d, cpu);
	return plan_placement_add_queues(d, queues ? queues : "", profs,
					 (size_t)n, who, opt, sysfs);
}

int run_placement_draft_choice(const char *queues,
			       const struct edgeq_model *target,
			       const struct edgeq_model *draft, double accept,
			       int max_len, const char *who, const char *opt,
			       struct edgeq_draft_choice *out)
{
	struct edgeq_place_shape ts, ds;
	struct edgeq_devices d;
	int ret;

	ret = load_devices(queues, who, opt, EDGEQ_SYSFS_CLASS, &d);
	if (ret)
		return ret;
	if (edgeq_place_model_shape(target, &ts) ||
	    edgeq_place_model_shape(draft, &ds) ||
	    edgeq_place_draft_choice(&d, &ts, &ds, accept, max_len, out))
		return cli_error(
			EXIT_BADINPUT, who,
			"%s: the models cannot be priced for placement", opt);
	return 0;
}

int run_placement_start_opts(struct edgeq_ctx *c, const char *queues,
			     const struct run_placement_opts *o,
			     struct run_placement **out)
{
	const char *who = o->who;
	struct edgeq_error err = { 0 };
	struct edgeq_place_backend be;
	struct edgeq_devices d;
	struct run_placement *rp;
	int ret;

	ret = load_devices(queues, who, o->opt,
			   o->inline_be ? NULL : EDGEQ_SYSFS_CLASS, &d);
	if (ret)
		return ret;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return cli_error(EXIT_NORES, who, "out of memory");
	rp->d = d;
	if (o->inline_be || d.n == 1) {
		/* in-process queues (test hook), or the CPU alone */
		edgeq_place_backend_inline(&be, &rp->inl);
		rp->inl.fail_after = o->fail_after;
		ret = 0;
	} else {
		ret = edgeq_place_kq_new(&d, &rp->kq, &be, &err);
		if (!ret)
			edgeq_place_kq_set_copy_budget(rp->kq, o->copy_budget);
	}
	if (ret) {
		free(rp);
		return cli_error(cli_exit_for(ret) == EXIT_FAIL ?
					 EXIT_UNAVAIL :
					 cli_exit_for(ret),
				 who, "%s", err.msg);
	}
	{
		struct edgeq_placer_params pp;

		/* the plan within the copy bound, which pressure lowers */
		edgeq_placer_params_init(&pp);
		pp.dev_bytes = o->copy_budget;
		ret = edgeq_place_attach(c, &d, &pp, &be, &rp->x, &err);
	}
	if (ret) {
		if (rp->kq)
			edgeq_place_kq_free(rp->kq);
		free(rp);
		return cli_error(cli_exit_for(ret), who, "%s", err.msg);
	}
	/* throttling and agent loss reach the placer through the monitor;
	 * without it the plan still survives a lost agent (op errors) */
	if (d.n == 1)
		;		 /* nothing to re-place on */
	else if (o->no_pressure) /* states come from run_placement_pressure */
		edgeq_place_watch(rp->x, NULL,
				  o->inline_be ? NULL : EDGEQ_SYSFS_CLASS);
	else if (!edgeq_pressure_new(NULL, &rp->pm, &err))
		edgeq_place_watch(rp->x, rp->pm, EDGEQ_SYSFS_CLASS);
	else
		fprintf(stderr,
			"edgeq %s: no pressure monitor (%s); "
			"throttling is not followed\n",
			who, err.msg);
	*out = rp;
	return 0;
}

void run_placement_stop(struct run_placement *rp, bool quiet)
{
	struct edgeq_place_stats st;

	if (!rp)
		return;
	edgeq_place_stats(rp->x, &st);
	if (!quiet)
		fprintf(stderr,
			"placement: %llu decode steps, %llu matrix ops on "
			"queues, %llu re-placements, %llu ops fallen back to "
			"the cpu%s, %llu over the --device-copies bound\n",
			(unsigned long long)st.tokens,
			(unsigned long long)st.offloaded,
			(unsigned long long)st.replans,
			(unsigned long long)st.fallbacks,
			st.fallbacks ? " (a queue lost its agent)" : "",
			(unsigned long long)st.copy_refused);
	edgeq_place_detach(rp->x);
	if (rp->kq)
		edgeq_place_kq_free(rp->kq);
	edgeq_pressure_free(rp->pm);
	free(rp);
}

void run_placement_pressure(struct run_placement *rp,
			    const struct edgeq_pressure_state *st)
{
	if (rp && rp->d.n > 1)
		edgeq_place_pressure(rp->x, st);
}

size_t run_placement_ops(struct run_placement *rp, const char **names,
			 uint64_t *ops, size_t max, uint64_t *lost)
{
	struct edgeq_place_stats st;
	size_t k, n;

	edgeq_place_stats(rp->x, &st);
	n = rp->d.n < max ? rp->d.n : max;
	for (k = 0; k < n; k++) {
		names[k] = k ? rp->d.dev[k].name : "cpu";
		ops[k] = st.dev_ops[k];
	}
	*lost = st.fallbacks;
	return n;
}
