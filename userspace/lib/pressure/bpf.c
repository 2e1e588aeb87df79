// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The BPF side of the pressure monitor: open -> set tunables and autoload
 * (probing kernel BTF for each tracepoint) -> load -> attach what exists ->
 * poll the ring buffer -> destroy. Map state is read through mmap (array
 * maps and .bss), so publishing after an event costs no syscalls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifdef EDGEQ_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/pressure.h"
#include "bpf/pressure.skel.h"
#include "edgeq_config.h"

#if EDGEQ_HAVE_LIBBPF_OPTS
#define PM_BPF_OPTS LIBBPF_OPTS
#else
/* libbpf < 0.6 (Ubuntu 22.04 has 0.5): the macro's older name, kept since */
#define PM_BPF_OPTS DECLARE_LIBBPF_OPTS
#endif

/*
 * 0 when a pointer libbpf returned is usable, else -errno. Before 1.0 (and
 * without the 0.6 strict mode) libbpf returns errors encoded in the pointer
 * (ERR_PTR) rather than NULL; libbpf_get_error() decodes both conventions.
 */
static int lb_err(const void *ptr)
{
	long e;

	if (!ptr)
		return errno ? -errno : -ENOMEM;
	e = libbpf_get_error(ptr);
	return e ? (int)(e < 0 ? e : -e) : 0;
}

static struct btf *load_vmlinux_btf(void)
{
#if EDGEQ_HAVE_BTF_LOAD_VMLINUX
	return btf__load_vmlinux_btf();
#else
	/* libbpf < 0.5: the kernel's BTF is a raw BTF file */
	return btf__parse_raw("/sys/kernel/btf/vmlinux");
#endif
}

enum prog_kind { P_BTF, P_MODULE, P_TEST };

static const struct prog_desc {
	const char *name;
	const char *category, *event;
	enum prog_kind kind;
} prog_descs[] = {
	{ "on_thermal_temperature", "thermal", "thermal_temperature", P_BTF },
	{ "on_thermal_zone_trip", "thermal", "thermal_zone_trip", P_BTF },
	{ "on_cdev_update", "thermal", "cdev_update", P_BTF },
	{ "on_cpu_frequency", "power", "cpu_frequency", P_BTF },
	{ "on_thermal_pressure_update", "thermal_pressure",
	  "thermal_pressure_update", P_BTF },
	{ "on_hw_pressure_update", "hw_pressure", "hw_pressure_update", P_BTF },
	{ "on_devfreq_frequency", "devfreq", "devfreq_frequency", P_BTF },
	{ "on_direct_reclaim_begin", "vmscan", "mm_vmscan_direct_reclaim_begin",
	  P_BTF },
	{ "on_direct_reclaim_end", "vmscan", "mm_vmscan_direct_reclaim_end",
	  P_BTF },
	{ "on_memcg_reclaim_begin", "vmscan", "mm_vmscan_memcg_reclaim_begin",
	  P_BTF },
	{ "on_memcg_reclaim_end", "vmscan", "mm_vmscan_memcg_reclaim_end",
	  P_BTF },
	{ "on_vmscan_throttled", "vmscan", "mm_vmscan_throttled", P_BTF },
	{ "on_wakeup_kswapd", "vmscan", "mm_vmscan_wakeup_kswapd", P_BTF },
	{ "on_mark_victim", "oom", "mark_victim", P_BTF },
	{ "on_edgeq_submit", "edgeq", "edgeq_submit", P_MODULE },
	{ "on_edgeq_complete", "edgeq", "edgeq_complete", P_MODULE },
	{ "on_edgeq_throttle", "edgeq", "edgeq_throttle", P_MODULE },
	{ "on_edgeq_agent_attach", "edgeq", "edgeq_agent_attach", P_MODULE },
	{ "on_edgeq_agent_detach", "edgeq", "edgeq_agent_detach", P_MODULE },
	{ "on_edgeq_agent_timeout", "edgeq", "edgeq_agent_timeout", P_MODULE },
	{ "test_thermal_temperature", NULL, NULL, P_TEST },
	{ "test_thermal_zone_trip", NULL, NULL, P_TEST },
	{ "test_cdev_update", NULL, NULL, P_TEST },
	{ "test_thermal_pressure", NULL, NULL, P_TEST },
};
#define N_PROGS (sizeof(prog_descs) / sizeof(prog_descs[0]))

struct pm_bpf {
	struct pressure_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[N_PROGS];
	struct edgeq_pm_zone *zones; /* mmapped array maps */
	struct edgeq_pm_cdev *cdevs;
	struct edgeq_pm_cpu *cpus;
	struct edgeq_pm_queue *queues;
	size_t zones_len, cdevs_len, cpus_len, queues_len;
	struct edgeq_pm_zone_cfg cfg[EDGEQ_PM_MAX_ZONES]; /* last written */
	uint32_t cpu_max[EDGEQ_PM_MAX_CPUS];
};

/* The library never prints: keep libbpf's last complaint for the reason. */
static char libbpf_last[200];

static int quiet_print(enum libbpf_print_level level, const char *fmt,
		       va_list ap)
{
	if (level != LIBBPF_DEBUG) {
		vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
		libbpf_last[strcspn(libbpf_last, "\n")] = '\0';
	}
	return 0;
}

/* Does the kernel's BTF know tracepoint @event? With @first_ptr, also say
 * whether its first argument is a pointer (mark_victim changed in 6.x). */
static bool btf_has_tp(const struct btf *btf, const char *event,
		       bool *first_ptr)
{
	const struct btf_type *t;
	const struct btf_param *par;
	char name[96];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", event);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return false;
	if (!first_ptr)
		return true;
	t = btf__type_by_id(btf, id);
	t = t ? btf__type_by_id(btf, t->type) : NULL; /* pointer */
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) :
				 NULL; /* proto */
	if (t && btf_is_func_proto(t) && btf_vlen(t) >= 2) {
		par = btf_params(t);
		t = btf__type_by_id(btf, par[1].type);
		while (t && (btf_is_mod(t) || btf_is_typedef(t)))
			t = btf__type_by_id(btf, t->type);
		*first_ptr = t && btf_is_ptr(t);
	}
	return true;
}

static bool module_tp_exists(const char *event)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[200];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events", roots[i]);
		if (access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "%s/events/edgeq/%s", roots[i],
			 event);
		return !access(path, F_OK);
	}
	/* tracefs not mounted: the module being loaded is the best hint */
	return !access("/sys/module/edgeq", F_OK);
}

static void *map_mmap(struct bpf_map *m, size_t *len)
{
	size_t sz = (size_t)((bpf_map__value_size(m) + 7) & ~7u) *
		    bpf_map__max_entries(m);
	long pg = sysconf(_SC_PAGESIZE);
	void *a;

	sz = (sz + (size_t)pg - 1) & ~((size_t)pg - 1);
	a = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m),
		 0);
	if (a == MAP_FAILED)
		return NULL;
	*len = sz;
	return a;
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct edgeq_pm_event *e = data;
	struct edgeq_pressure_event ev;

	if (size < sizeof(*e))
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = e->ts_ns;
	ev.kind = e->kind;
	ev.id = e->id;
	ev.value = e->value;
	ev.prev = e->prev;
	ev.aux = e->aux;
	ev.level = e->level;
	ev.flags = e->flags;
	memcpy(ev.name, e->name, sizeof(ev.name) - 1);
	pm_deliver(ctx, &ev);
	return 0;
}

static void record(struct edgeq_pressure *p, const struct prog_desc *d,
		   bool attached, int err)
{
	struct edgeq_pressure_probe *pr;

	if (p->n_probes >= EDGEQ_PRESSURE_MAX_PROBES)
		return;
	pr = &p->probes[p->n_probes++];
	snprintf(pr->prog, sizeof(pr->prog), "%s", d->name);
	snprintf(pr->tracepoint, sizeof(pr->tracepoint), "%s:%s", d->category,
		 d->event);
	pr->attached = attached;
	pr->err = err;
}

int pm_bpf_open(struct edgeq_pressure *p, char *why, size_t len)
{
	bool victim_task = true, present[N_PROGS] = { 0 };
	struct pm_bpf *b;
	struct btf *btf;
	unsigned int i;
	int ret;

	libbpf_set_print(quiet_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(why, len, "no kernel BTF (/sys/kernel/btf/vmlinux)");
		return -ENOENT;
	}
	btf = load_vmlinux_btf();
	ret = lb_err(btf);
	if (ret) {
		snprintf(why, len, "kernel BTF unreadable: %s", strerror(-ret));
		return ret;
	}
	for (i = 0; i < N_PROGS; i++) {
		const struct prog_desc *d = &prog_descs[i];

		if (d->kind == P_BTF)
			present[i] =
				btf_has_tp(btf, d->event,
					   !strcmp(d->event, "mark_victim") ?
						   &victim_task :
						   NULL);
		else if (d->kind == P_MODULE)
			present[i] = module_tp_exists(d->event);
		else
			present[i] = true;
	}
	btf__free(btf);

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->skel = pressure_bpf__open();
	if (!b->skel) {
		ret = -errno;
		snprintf(why, len, "bpf open: %s", strerror(-ret));
		free(b);
		return ret;
	}
	b->skel->rodata->own_cgid = p->own_cgid;
	b->skel->rodata->temp_warn_mc = p->o.temp_warn_mc;
	b->skel->rodata->temp_crit_mc = p->o.temp_crit_mc;
	b->skel->rodata->temp_hyst_mc = p->o.temp_hyst_mc;
	b->skel->rodata->freq_warn_pct = p->o.freq_warn_pct;
	b->skel->rodata->stall_warn_ns = p->o.stall_warn_ns;
	b->skel->rodata->rl_burst = p->o.rate_burst;
	b->skel->rodata->rl_window_ns =
		p->o.rate_window_ns ? p->o.rate_window_ns : 1000000000ull;
	b->skel->rodata->victim_arg_is_task = victim_task;
	for (i = 0; i < N_PROGS; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(
			b->skel->obj, prog_descs[i].name);

		if (prog)
			bpf_program__set_autoload(prog, present[i]);
	}
	libbpf_last[0] = '\0';
	ret = pressure_bpf__load(b->skel);
	if (ret) {
		snprintf(why, len, "bpf load: %s%s%s%s", strerror(-ret),
			 ret == -EPERM ? " (needs CAP_BPF and CAP_PERFMON)" :
					 "",
			 libbpf_last[0] ? "; " : "", libbpf_last);
		pressure_bpf__destroy(b->skel);
		free(b);
		return ret;
	}
	p->n_probes = 0;
	for (i = 0; i < N_PROGS; i++) {
		const struct prog_desc *d = &prog_descs[i];
		struct bpf_program *prog;

		if (d->kind == P_TEST)
			continue;
		if (!present[i]) {
			record(p, d, false, -ENOENT);
			continue;
		}
		prog = bpf_object__find_program_by_name(b->skel->obj, d->name);
		b->links[i] = prog ? bpf_program__attach(prog) : NULL;
		ret = prog ? lb_err(b->links[i]) : -ENOENT;
		if (ret) {
			record(p, d, false, ret);
			b->links[i] = NULL;
			continue;
		}
		record(p, d, true, 0);
	}
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_event, p,
				 NULL);
	if (lb_err(b->rb))
		b->rb = NULL;
	b->zones = map_mmap(b->skel->maps.zones, &b->zones_len);
	b->cdevs = map_mmap(b->skel->maps.cdevs, &b->cdevs_len);
	b->cpus = map_mmap(b->skel->maps.cpus, &b->cpus_len);
	b->queues = map_mmap(b->skel->maps.queues, &b->queues_len);
	p->bpf = b;
	if (!b->rb || !b->zones || !b->cdevs || !b->cpus || !b->queues ||
	    !b->skel->bss) {
		ret = -errno ? -errno : -ENOMEM;
		snprintf(why, len, "bpf ring buffer or map mmap: %s",
			 strerror(-ret));
		pm_bpf_close(p);
		return ret;
	}
	return 0;
}

void pm_bpf_close(struct edgeq_pressure *p)
{
	struct pm_bpf *b = p->bpf;
	unsigned int i;

	if (!b)
		return;
	ring_buffer__free(b->rb);
	for (i = 0; i < N_PROGS; i++)
		bpf_link__destroy(b->links[i]);
	if (b->zones)
		munmap(b->zones, b->zones_len);
	if (b->cdevs)
		munmap(b->cdevs, b->cdevs_len);
	if (b->cpus)
		munmap(b->cpus, b->cpus_len);
	if (b->queues)
		munmap(b->queues, b->queues_len);
	pressure_bpf__destroy(b->skel);
	free(b);
	p->bpf = NULL;
}

int pm_bpf_ringbuf_fd(struct edgeq_pressure *p)
{
	return bpf_map__fd(p->bpf->skel->maps.events);
}

int pm_bpf_consume(struct edgeq_pressure *p)
{
	int n = ring_buffer__consume(p->bpf->rb);

	return n < 0 ? n : 0;
}

void pm_bpf_configure(struct edgeq_pressure *p,
		      const struct edgeq_pressure_state *st)
{
	struct pm_bpf *b = p->bpf;
	uint32_t i;
	int k;

	for (i = 0; i < st->n_zones; i++) {
		struct edgeq_pm_zone_cfg c = { .hyst_mc = p->o.temp_hyst_mc };
		uint32_t id = (uint32_t)st->zones[i].id;

		if (id >= EDGEQ_PM_MAX_ZONES)
			continue;
		pm_zone_limits(p, &p->zsys[i], &c.warn_mc, &c.crit_mc);
		if (!memcmp(&c, &b->cfg[id], sizeof(c)))
			continue;
		if (!bpf_map_update_elem(bpf_map__fd(b->skel->maps.zone_cfg),
					 &id, &c, BPF_ANY))
			b->cfg[id] = c;
	}
	for (k = 0; k < p->n_cpus && k < EDGEQ_PM_MAX_CPUS; k++) {
		uint32_t key = (uint32_t)k, v = p->cpu_max_khz[k];

		if (v == b->cpu_max[k])
			continue;
		if (!bpf_map_update_elem(bpf_map__fd(b->skel->maps.cpu_max),
					 &key, &v, BPF_ANY))
			b->cpu_max[k] = v;
	}
}

static void copy_stall(struct edgeq_pressure_stall *d,
		       const struct edgeq_pm_stall *s)
{
	d->count = s->count;
	d->total_ns = s->total_ns;
	d->max_ns = s->max_ns;
}

void pm_bpf_overlay(struct edgeq_pressure *p, struct edgeq_pressure_state *st)
{
	const struct edgeq_pm_stats *s = &p->bpf->skel->bss->stats;
	struct pm_bpf *b = p->bpf;
	struct edgeq_pm_devfreq_key key, next;
	struct edgeq_pm_devfreq df;
	uint64_t cur = 0, max = 0;
	int fd, i, k;
	uint32_t j;

	for (i = 0; i < EDGEQ_PM_MAX_ZONES; i++) {
		const struct edgeq_pm_zone *z = &b->zones[i];
		struct edgeq_pressure_zone *o = NULL;

		if (!z->updated_ns)
			continue;
		for (j = 0; j < st->n_zones; j++)
			if (st->zones[j].id == i)
				o = &st->zones[j];
		if (!o) {
			if (st->n_zones >= EDGEQ_PRESSURE_MAX_ZONES)
				continue;
			j = st->n_zones++;
			o = &st->zones[j];
			memset(o, 0, sizeof(*o));
			memset(&p->zsys[j], 0, sizeof(p->zsys[j]));
			o->id = i;
			snprintf(o->type, sizeof(o->type), "%.*s",
				 EDGEQ_PM_NAME_LEN,
				 z->type[0] ? z->type : "unknown");
		}
		o->temp_mc = z->temp_mc;
		o->trend_mcps = z->trend_mcps;
		o->level = z->level;
		o->trips = z->trips;
		p->zsys[o - st->zones].from_bpf = true;
	}
	for (i = 0; i < EDGEQ_PM_MAX_CDEVS; i++) {
		const struct edgeq_pm_cdev *c = &b->cdevs[i];
		struct edgeq_pressure_cdev *o = NULL;

		if (!c->updated_ns)
			continue;
		for (j = 0; j < st->n_cdevs; j++)
			if (st->cdevs[j].id == i)
				o = &st->cdevs[j];
		if (!o) {
			if (st->n_cdevs >= EDGEQ_PRESSURE_MAX_CDEVS)
				continue;
			o = &st->cdevs[st->n_cdevs++];
			memset(o, 0, sizeof(*o));
			o->id = i;
			snprintf(o->type, sizeof(o->type), "%.*s",
				 EDGEQ_PM_NAME_LEN,
				 c->type[0] ? c->type : "unknown");
		}
		o->cur_state = c->state;
		if (c->max_state)
			o->max_state = c->max_state;
	}
	for (k = 0; k < p->n_cpus && k < EDGEQ_PM_MAX_CPUS; k++) {
		cur += b->cpus[k].updated_ns ? b->cpus[k].khz :
					       p->cpu_cur_khz[k];
		max += p->cpu_max_khz[k];
		p->cpu_pressure[k] = b->cpus[k].pressure;
	}
	for (j = 0; j < st->n_freqs && max; j++)
		if (!strcmp(st->freqs[j].name, "cpu"))
			st->freqs[j].cur = cur;

	fd = bpf_map__fd(b->skel->maps.devfreqs);
	for (i = 0; !bpf_map_get_next_key(fd, i ? &key : NULL, &next); i++) {
		struct edgeq_pressure_freq *o = NULL;

		key = next;
		if (bpf_map_lookup_elem(fd, &key, &df))
			continue;
		for (j = 0; j < st->n_freqs; j++)
			if (!strncmp(st->freqs[j].name, key.name,
				     EDGEQ_PM_NAME_LEN))
				o = &st->freqs[j];
		if (!o) {
			if (st->n_freqs >= EDGEQ_PRESSURE_MAX_FREQS)
				continue;
			o = &st->freqs[st->n_freqs++];
			memset(o, 0, sizeof(*o));
			snprintf(o->name, sizeof(o->name), "%.*s",
				 EDGEQ_PM_NAME_LEN, key.name);
		}
		o->cur = df.hz;
	}

	st->n_queues = 0;
	for (i = 0; i < EDGEQ_PM_MAX_QUEUES &&
		    st->n_queues < EDGEQ_PRESSURE_MAX_DEVICES;
	     i++) {
		const struct edgeq_pm_queue *q = &b->queues[i];
		struct edgeq_pressure_queue *o;

		if (!q->updated_ns)
			continue;
		o = &st->queues[st->n_queues++];
		o->id = (uint32_t)i;
		o->state = q->state;
		o->max_inflight = q->max_inflight;
		o->agent = q->agent;
		o->submits = q->submits;
		o->completes = q->completes;
		o->throttles = q->throttles;
		o->timeouts = q->timeouts;
	}

	copy_stall(&st->mem.direct, &s->stall[EDGEQ_PM_STALL_DIRECT]);
	copy_stall(&st->mem.memcg, &s->stall[EDGEQ_PM_STALL_MEMCG]);
	copy_stall(&st->mem.own, &s->stall[EDGEQ_PM_STALL_OWN]);
	st->mem.throttled = s->throttled;
	st->mem.kswapd_wakeups = s->kswapd_wakeups;
	st->mem.oom_victims = s->oom_victims;
	st->events = s->events;
	st->dropped = s->dropped_rate + s->dropped_full;
}

int edgeq_pressure_test_run(struct edgeq_pressure *p, const char *name,
			    const uint64_t *args, unsigned int n_args)
{
	PM_BPF_OPTS(bpf_test_run_opts, opts);
	struct bpf_program *prog;
	char pname[64];
	int ret;

	if (!p->bpf)
		return -EOPNOTSUPP;
	snprintf(pname, sizeof(pname), "test_%s", name);
	prog = bpf_object__find_program_by_name(p->bpf->skel->obj, pname);
	if (!prog)
		return -ENOENT;
	opts.ctx_in = args;
	opts.ctx_size_in = n_args * sizeof(uint64_t);
	ret = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	if (ret) /* libbpf < 1.0 returns -1 and sets errno; 1.x both */
		return errno ? -errno : (ret < 0 ? ret : -ret);
	return (int)opts.retval;
}

#else /* !EDGEQ_HAVE_BPF */

int pm_bpf_open(struct edgeq_pressure *p, char *why, size_t len)
{
	snprintf(why, len,
		 "built without BPF (no clang/bpftool at build time)");
	return -EOPNOTSUPP;
}

void pm_bpf_close(struct edgeq_pressure *p)
{
}

int pm_bpf_ringbuf_fd(struct edgeq_pressure *p)
{
	return -EOPNOTSUPP;
}

int pm_bpf_consume(struct edgeq_pressure *p)
{
	return -EOPNOTSUPP;
}

void pm_bpf_overlay(struct edgeq_pressure *p, struct edgeq_pressure_state *st)
{
}

void pm_bpf_configure(struct edgeq_pressure *p,
		      const struct edgeq_pressure_state *st)
{
}

int edgeq_pressure_test_run(struct edgeq_pressure *p, const char *name,
			    const uint64_t *args, unsigned int n_args)
{
	return -EOPNOTSUPP;
}

#endif
