// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Execution: the forward pass runs each op on its placed device.
 *
 * Attached to a ctx, the executor sees every forward pass through the
 * decoder's hooks. A decode step (one token) is a token boundary: pending
 * pressure events are consumed, the placer re-plans (with hysteresis), and
 * the plan in force decides, for each matrix op, whether the CPU path runs
 * it or a device backend does (an edgeq queue through kq, or the in-process
 * emulation). A backend that fails (agent gone: -ENODEV) marks its device
 * lost; the op runs on the CPU at once and so does the rest of the step, so
 * the caller never sees the error. Backends run the same kernels as the CPU
 * path, so the tokens do not depend on the placement.
 *
 * What runs elsewhere: where the backend runs chains and the plan puts a
 * whole decoder block on a device, the block as device ops (blocks.c), for
 * decode steps (with the output head) and prompt batches of up to
 * PREFILL_NB tokens alike; otherwise the matrix products of decode steps,
 * and the rest on the CPU thread pool (the device set handed to the placer
 * is restricted to what the backend executes, so the plan is what runs).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <edgeq/placement.h>
#include <edgeq/pressure.h>

#include "kernels/kernels.h"
#include "model/model.h"
#include "placement/blocks.h"

enum { OP_QKV, OP_OUT, OP_GATE_UP, OP_DOWN, OP_N };

static const char *const op_names[OP_N] = { "attn_qkv", "attn_out",
					    "ffn_gate_up", "ffn_down" };

struct edgeq_place_exec {
	struct edgeq_ctx *c;
	struct edgeq_model *m;
	struct edgeq_placer *pl;
	struct edgeq_place_backend be;
	struct edgeq_ctx_hooks hooks;
	struct edgeq_pressure *pm; /* optional */
	char *sysfs_dir;
	/* a state handed over by edgeq_place_pressure(), not yet applied */
	pthread_mutex_t push_lock;
	struct edgeq_pressure_state *pushed;
	_Atomic bool push_new;
	int (*op_index)[OP_N]; /* per layer: chain index of each matrix op */
	int out_index;	       /* the output matrix */
	uint64_t *acc_ns;      /* per op: device time in this step */
	int8_t *acc_dev;       /* the device it ran on, -1 none */
	bool decoding;	       /* the current pass is one token */
	int pass_nb;	       /* its tokens */
	uint64_t cpu_t0;       /* start of the matrix op the CPU is running */
	/* whole blocks as device chains (backend chain(), blocks.c) */
	bool blocks_ok;
	int (*layer_ops)[2]; /* per layer: its first and last op of the plan */
	int out_norm_index;  /* the output norm's op */
	float *head_logits;  /* [n_vocab] the head a chain ran, */
	bool head_ready;     /* for this step */
	struct place_blocks blk;
	uint64_t kv_id;
	uint64_t conf_bound; /* the configured copy bound (placer dev_bytes) */
	struct edgeq_place_stats st;
};

int edgeq_place_model_shape(const struct edgeq_model *m,
			    struct edgeq_place_shape *s)
{
	const struct edgeq_hparams *hp = &m->hp;

	if (!m->layers || !hp->n_layer || !m->output)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->n_layer = hp->n_layer;
	s->n_embd = hp->n_embd;
	s->n_ff = hp->n_ff;
	s->n_head = hp->n_head;
	s->n_head_kv = hp->n_head_kv;
	s->head_dim = hp->head_dim;
	s->n_vocab = hp->n_vocab;
	s->wtype = m->layers[0].wq->type;
	s->otype = m->output->type;
	s->etype = m->tok_embd->type;
	s->kvtype = EDGEQ_TYPE_F16;
	s->n_kv = 256;
	return 0;
}

/* Chain index of the op that @t belongs to, or -1. */
static int op_of(const struct edgeq_place_exec *x, const struct edgeq_tensor *t)
{
	const struct edgeq_layer *L;

	if (t == x->m->output)
		return x->out_index;
	if (t->layer < 0 || (uint32_t)t->layer >= x->m->hp.n_layer)
		return -1;
	L = &x->m->layers[t->layer];
	if (t == L->wq || t == L->wk || t == L->wv)
		return x->op_index[t->layer][OP_QKV];
	if (t == L->wo)
		return x->op_index[t->layer][OP_OUT];
	if (t == L->w_gate || t == L->w_up)
		return x->op_index[t->layer][OP_GATE_UP];
	if (t == L->w_down)
		return x->op_index[t->layer][OP_DOWN];
	return -1;
}

/*
 * The weight-copy bound memory pressure leaves (Documentation/gpu-agent.rst):
 * the configured one (0: none) at no or low pressure; at medium at most a
 * quarter of what is available; at critical none at all (one byte: every
 * copy dropped, the CPU reading the file's pages, which the kernel can
 * reclaim). The placer plans within it, so a bound under one step's
 * weights moves whole blocks back to the CPU rather than re-copying them
 * every step.
 */
static uint64_t mem_bound(uint64_t conf, const struct edgeq_pressure_mem *m)
{
	uint64_t cap;

	switch (m->level) {
	case EDGEQ_MEM_CRITICAL:
		return 1;
	case EDGEQ_MEM_MEDIUM:
		cap = m->available / 4;
		if (cap && (!conf || cap < conf))
			return cap;
		return conf;
	default:
		return conf;
	}
}

static void apply_mem(struct edgeq_place_exec *x,
		      const struct edgeq_pressure_mem *m)
{
	uint64_t b = mem_bound(x->conf_bound, m);

	if (b == x->st.copy_bound)
		return;
	x->st.copy_bound = b;
	x->st.copy_bound_changes++;
	edgeq_placer_set_dev_bytes(x->pl, b);
	if (x->be.set_copy_budget)
		x->be.set_copy_budget(x->be.arg, b);
}

/* A state handed over from another thread, if one came. */
static void take_pushed(struct edgeq_place_exec *x)
{
	struct edgeq_pressure_state *ps;

	if (!atomic_load_explicit(&x->push_new, memory_order_acquire))
		return;
	ps = malloc(sizeof(*ps));
	if (!ps)
		return; /* taken at a later boundary */
	pthread_mutex_lock(&x->push_lock);
	*ps = *x->pushed;
	atomic_store(&x->push_new, false);
	pthread_mutex_unlock(&x->push_lock);
	x->st.pressure_events++;
	edgeq_placer_update_pressure(x->pl, ps, x->sysfs_dir);
	apply_mem(x, &ps->mem);
	free(ps);
}

/* Events from the pressure monitor, if any arrived (no blocking). */
static void watch_pressure(struct edgeq_place_exec *x)
{
	struct edgeq_pressure_state *ps;
	struct pollfd pfd;

	take_pushed(x);
	if (!x->pm)
		return;
	pfd.fd = edgeq_pressure_fd(x->pm);
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 0) <= 0)
		return;
	if (edgeq_pressure_consume(x->pm) <= 0)
		return;
	ps = malloc(sizeof(*ps));
	if (!ps)
		return;
	edgeq_pressure_get(x->pm, ps);
	x->st.pressure_events++;
	edgeq_placer_update_pressure(x->pl, ps, x->sysfs_dir);
	apply_mem(x, &ps->mem);
	free(ps);
}

static void count_on_devices(struct edgeq_place_exec *x)
{
	const struct edgeq_placement *p = edgeq_placer_plan(x->pl);

	x->st.ops_off_cpu = 0;
	for (size_t i = 0; i < p->n_ops; i++)
		x->st.ops_off_cpu += p->dev[i] != 0;
}

static void hook_step_begin(void *arg, int nb)
{
	struct edgeq_place_exec *x = arg;
	enum edgeq_replan_reason r;

	x->decoding = nb == 1;
	x->pass_nb = nb;
	x->head_ready = false;
	if (!x->decoding)
		return;
	watch_pressure(x);
	r = edgeq_placer_boundary(x->pl);
	x->st.tokens++;
	if (r != EDGEQ_REPLAN_NONE) {
		x->st.replans++;
		x->st.last_replan_token = x->st.tokens;
		x->st.last_reason = r;
		count_on_devices(x);
	}
}

/* Device @dev failed an op (ret): lose it now; the CPU runs the op and,
 * by the new plan, the rest of the step. */
static void op_failed(struct edgeq_place_exec *x, int dev, int ret)
{
	x->st.fallbacks++;
	x->st.last_error = ret;
	edgeq_placer_device_lost(x->pl, dev);
	x->st.replans++;
	x->st.last_replan_token = x->st.tokens;
	x->st.last_reason = EDGEQ_REPLAN_LOST;
	count_on_devices(x);
}

static void weight_of(const struct edgeq_place_exec *x,
		      const struct edgeq_tensor *t,
		      struct edgeq_place_weight *w)
{
	w->name = t->name;
	w->layer = t->layer < 0 ? -1 : t->layer;
	w->type = t->type;
	w->data = edgeq_weights_get(x->m->weights, t);
	w->bytes = t->size;
}

static int hook_linear(void *arg, const struct edgeq_tensor *t, const float *in,
		       int nb, int ldx, float *y, int ldy)
{
	struct edgeq_place_exec *x = arg;
	const struct edgeq_placement *p;
	struct edgeq_place_weight w;
	uint64_t t0;
	int i, dev, ret;

	if (!x->decoding || nb != 1)
		return -EAGAIN;
	i = op_of(x, t);
	if (i < 0)
		return -EAGAIN;
	p = edgeq_placer_plan(x->pl);
	dev = p->dev[i];
	t0 = edgeq_now_ns();
	if (dev == 0) {
		x->cpu_t0 = t0; /* timed until linear_done */
		x->st.dev_ops[0]++;
		return -EAGAIN;
	}
	weight_of(x, t, &w);
	ret = x->be.matvec(x->be.arg, dev, &w, t->ne[1], t->ne[0], in, y);
	if (ret) {
		/* no room for its weight: this op on the CPU, the device kept;
		 * else the device failed it: lose it */
		if (ret == -ENOSPC)
			x->st.copy_refused++;
		else
			op_failed(x, dev, ret);
		x->cpu_t0 = edgeq_now_ns();
		x->st.dev_ops[0]++;
		return -EAGAIN;
	}
	x->st.offloaded++;
	if (dev < EDGEQ_MAX_DEVICES)
		x->st.dev_ops[dev]++;
	x->acc_ns[i] += edgeq_now_ns() - t0;
	x->acc_dev[i] = (int8_t)dev;
	return 0;
}

/*
 * The matrices of one placed op that share an input (q, k, v; gate, up),
 * placed on a device: one submission through the backend's matvec_n. On
 * the CPU, or without matvec_n, the decoder runs them one by one
 * (hook_linear); a failed device is lost and the decoder runs them all
 * on the CPU by the new plan.
 */
static int hook_linear_n(void *arg, const struct edgeq_tensor *const *t, int n,
			 const float *in, int nb, int ldx, float *const *y,
			 const int *ldy)
{
	struct edgeq_place_exec *x = arg;
	struct edgeq_place_weight w[4];
	uint64_t rows[4], t0;
	int i, k, dev, ret;

	if (!x->be.matvec_n || !x->decoding || nb != 1 || n < 2 || n > 4)
		return -EAGAIN;
	i = op_of(x, t[0]);
	if (i < 0)
		return -EAGAIN;
	for (k = 1; k < n; k++)
		if (op_of(x, t[k]) != i || t[k]->ne[0] != t[0]->ne[0])
			return -EAGAIN;
	dev = edgeq_placer_plan(x->pl)->dev[i];
	if (dev == 0)
		return -EAGAIN;
	for (k = 0; k < n; k++) {
		weight_of(x, t[k], &w[k]);
		rows[k] = t[k]->ne[1];
	}
	t0 = edgeq_now_ns();
	ret = x->be.matvec_n(x->be.arg, dev, w, rows, (unsigned int)n,
			     t[0]->ne[0], in, y);
	if (ret) {
		/* no room for all of them: each on its own (some may fit) */
		if (ret != -ENOSPC)
			op_failed(x, dev, ret);
		return -EAGAIN;
	}
	x->st.offloaded += (uint64_t)n;
	if (dev < EDGEQ_MAX_DEVICES)
		x->st.dev_ops[dev] += (uint64_t)n;
	x->acc_ns[i] += edgeq_now_ns() - t0;
	x->acc_dev[i] = (int8_t)dev;
	return 0;
}

/* Whether the plan in force puts every op of block @l on @dev. */
static bool block_on(const struct edgeq_place_exec *x,
		     const struct edgeq_placement *p, int l, int dev)
{
	for (int i = x->layer_ops[l][0]; i <= x->layer_ops[l][1]; i++)
		if (p->dev[i] != dev)
			return false;
	return true;
}

/* Prompt batches of up to PREFILL_NB tokens run as blocks too, in chains
 * of at most PREFILL_OPS ops. */
#define PREFILL_NB 64
#define PREFILL_OPS 1000

static void blocks_off(struct edgeq_place_exec *x, const char *why, int ret)
{
	x->blocks_ok = false;
	snprintf(x->st.blocks_off, sizeof(x->st.blocks_off), "%s%s%s", why,
		 ret ? ": " : "", ret ? strerror(-ret) : "");
}

/*
 * Blocks the plan puts whole on one device, from @l on: one chain (all of
 * them where the weights are resident, else this one), the hidden state
 * in and out once. 0 leaves block @l to the CPU op by op (and the linear
 * hooks): another placement, a weight over the copy budget, a device
 * that cannot run an op of it (chains stop), or one that failed (lost).
 */
static int hook_blocks(void *arg, int l, int n_max)
{
	struct edgeq_place_exec *x = arg;
	const struct edgeq_placement *p;
	struct edgeq_place_chain ch;
	struct ctx_block_view v;
	uint64_t t0, dt;
	int dev, n, ret;
	bool head;

	/* a prompt batch goes where the decode plan puts the blocks, in
	 * chains of at most PREFILL_OPS ops (the kq backend splits what the
	 * queue takes per write and per client; this bounds one chain) */
	if (!x->blocks_ok || x->pass_nb < 1 || x->pass_nb > PREFILL_NB)
		return 0;
	p = edgeq_placer_plan(x->pl);
	dev = p->dev[x->layer_ops[l][0]];
	if (dev == 0 || !block_on(x, p, l, dev))
		return 0;
	ctx_block_view(x->c, &v);
	if (!x->decoding) {
		int cap = PREFILL_OPS /
			  (int)place_blocks_ops(
				  x->m, x->be.chain_features, x->pass_nb,
				  place_blocks_rows_packed(x->m, &v));

		if (n_max > cap)
			n_max = cap > 0 ? cap : 1;
	}
	for (n = 1; n < n_max && block_on(x, p, l + n, dev); n++)
		;
	/* the head too when the chain ends with the last block, the plan
	 * puts it on the same device, and its weights are at hand */
	head = x->decoding && l + n == (int)x->m->hp.n_layer &&
	       edgeq_weights_resident(x->m->weights) &&
	       x->out_norm_index >= 0 && x->out_index >= 0 &&
	       p->dev[x->out_norm_index] == dev && p->dev[x->out_index] == dev;
	ret = place_blocks_build(&x->blk, x->m, x->be.chain_features, &v, l, n,
				 head ? x->head_logits : NULL, &ch);
	if (ret) {
		blocks_off(x, "no chain for these blocks", ret);
		return 0;
	}
	ch.kv_id = x->kv_id;
	t0 = edgeq_now_ns();
	ret = x->be.chain(x->be.arg, dev, &ch);
	if (ret == -ENOSPC) {
		x->st.copy_refused++;
		return 0;
	}
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		blocks_off(x, "the device refused a block's op", ret);
		return 0;
	}
	if (ret) {
		op_failed(x, dev, ret);
		return 0;
	}
	dt = edgeq_now_ns() - t0;
	x->st.blocks += (uint64_t)n;
	x->st.block_chains++;
	if (!x->decoding) { /* not a step: not in the step's counts */
		x->st.prefill_blocks += (uint64_t)n;
		return n;
	}
	/* q k v o gate up down, and the output's */
	x->st.offloaded += (uint64_t)n * 7 + head;
	if (dev < EDGEQ_MAX_DEVICES)
		x->st.dev_ops[dev] += (uint64_t)n * 7 + head;
	x->head_ready = head;
	if (head) {
		x->acc_dev[x->out_norm_index] = x->acc_dev[x->out_index] =
			(int8_t)dev;
		x->acc_ns[x->out_norm_index] += dt / 64;
		x->acc_ns[x->out_index] += dt / 8;
	}
	/* the chain's time over its ops, for the calibration */
	for (int k = l; k < l + n; k++) {
		int i0 = x->layer_ops[k][0], i1 = x->layer_ops[k][1];

		for (int i = i0; i <= i1; i++) {
			x->acc_ns[i] += dt / ((uint64_t)n * (i1 - i0 + 1));
			x->acc_dev[i] = (int8_t)dev;
		}
	}
	return n;
}

/* The logits of a head that ran with the step's last chain. */
static int hook_head(void *arg, float *logits)
{
	struct edgeq_place_exec *x = arg;

	if (!x->head_ready)
		return -EAGAIN;
	x->head_ready = false;
	memcpy(logits, x->head_logits, x->m->hp.n_vocab * sizeof(float));
	return 0;
}

/* The CPU ran a matrix op: time it for calibration too. */
static void hook_linear_done(void *arg, const struct edgeq_tensor *t, int nb)
{
	struct edgeq_place_exec *x = arg;
	int i;

	if (!x->decoding || nb != 1 || !x->cpu_t0)
		return;
	i = op_of(x, t);
	if (i >= 0) {
		x->acc_ns[i] += edgeq_now_ns() - x->cpu_t0;
		x->acc_dev[i] = 0;
	}
	x->cpu_t0 = 0;
}

static void hook_step_end(void *arg, int nb)
{
	struct edgeq_place_exec *x = arg;
	size_t n = edgeq_placer_chain(x->pl)->n;

	if (!x->decoding)
		return;
	for (size_t i = 0; i < n; i++) {
		if (x->acc_dev[i] < 0)
			continue;
		edgeq_placer_observe(x->pl, i, x->acc_dev[i], x->acc_ns[i]);
		x->acc_ns[i] = 0;
		x->acc_dev[i] = -1;
	}
}

int edgeq_place_attach(struct edgeq_ctx *c, const struct edgeq_devices *d,
		       const struct edgeq_placer_params *pp,
		       const struct edgeq_place_backend *be,
		       struct edgeq_place_exec **out, struct edgeq_error *err)
{
	struct edgeq_model *m = ctx_model(c);
	struct edgeq_devices dd = *d;
	struct edgeq_place_shape s;
	struct edgeq_op_chain chain;
	struct edgeq_place_exec *x;
	const struct edgeq_op_chain *ch;
	int ret;

	const char *why = NULL;
	uint32_t runs = 1u << EDGEQ_OPK_MATMUL;
	struct edgeq_error kv_err = { 0 };

	if (!be || !be->matvec)
		return edgeq_error_set(err, EINVAL, "placement: no backend");
	ret = edgeq_place_model_shape(m, &s);
	if (ret)
		return edgeq_error_set(err, EINVAL,
				       "placement: model shape unusable");
	/* whole blocks where the backend chains and the ops express them,
	 * over a KV cache the device shares */
	if (!be->chain)
		why = "the backend runs matrix ops only";
	if (!why)
		why = place_blocks_unsupported(m, be->chain_features);
	if (!why) {
		struct ctx_block_view v;

		ctx_block_view(c, &v);
		if (v.kv_type == EDGEQ_KV_Q8_0 &&
		    !(be->chain_features & EDGEQ_F_STORE_Q8_0))
			why = "a Q8_0 KV cache (the queues take no STORE into "
			      "Q8_0)";
	}
	if (!why && ctx_kv_share(c, &kv_err))
		why = "no shared KV cache";
	if (!why)
		runs |= 1u << EDGEQ_OPK_RMSNORM | 1u << EDGEQ_OPK_ROPE |
			1u << EDGEQ_OPK_ATTN | 1u << EDGEQ_OPK_SOFTMAX |
			1u << EDGEQ_OPK_SWIGLU | 1u << EDGEQ_OPK_ADD;
	/* devices other than the CPU run what the backend executes */
	for (size_t k = 1; k < dd.n; k++)
		dd.dev[k].prof.ops_mask &= runs;
	ret = edgeq_op_chain_llama(&s, &chain);
	if (ret)
		return edgeq_error_set(err, -ret, "placement: op chain: %s",
				       strerror(-ret));
	x = calloc(1, sizeof(*x));
	if (!x) {
		edgeq_op_chain_free(&chain);
		return edgeq_error_set(err, ENOMEM, "out of memory");
	}
	x->c = c;
	x->m = m;
	x->be = *be;
	x->blocks_ok = !why;
	x->conf_bound = x->st.copy_bound = pp ? pp->dev_bytes : 0;
	if (why)
		snprintf(x->st.blocks_off, sizeof(x->st.blocks_off), "%s", why);
	{
		static _Atomic uint64_t kv_ids;

		x->kv_id = ++kv_ids;
	}
	pthread_mutex_init(&x->push_lock, NULL);
	ret = edgeq_placer_new(&dd, &chain, pp, &x->pl);
	edgeq_op_chain_free(&chain);
	if (ret)
		goto err_free;
	ch = edgeq_placer_chain(x->pl);
	x->op_index = calloc(s.n_layer, sizeof(*x->op_index));
	x->layer_ops = calloc(s.n_layer, sizeof(*x->layer_ops));
	x->acc_ns = calloc(ch->n, sizeof(*x->acc_ns));
	x->acc_dev = malloc(ch->n);
	ret = -ENOMEM;
	if (!x->op_index || !x->layer_ops || !x->acc_ns || !x->acc_dev)
		goto err_free;
	for (uint32_t l = 0; l < s.n_layer; l++)
		x->layer_ops[l][0] = -1;
	memset(x->acc_dev, -1, ch->n);
	x->out_index = x->out_norm_index = -1;
	if (x->blocks_ok) {
		x->head_logits = malloc(m->hp.n_vocab * sizeof(float));
		if (!x->head_logits)
			goto err_free;
	}
	for (size_t i = 0; i < ch->n; i++) {
		const struct edgeq_op *op = &ch->ops[i];

		if (op->layer < 0) {
			if (!strcmp(op->name, "output"))
				x->out_index = (int)i;
			if (!strcmp(op->name, "output_norm"))
				x->out_norm_index = (int)i;
			continue;
		}
		if (x->layer_ops[op->layer][0] < 0)
			x->layer_ops[op->layer][0] = (int)i;
		x->layer_ops[op->layer][1] = (int)i;
		for (int k = 0; k < OP_N; k++)
			if (!strcmp(op->name, op_names[k]))
				x->op_index[op->layer][k] = (int)i;
	}
	x->hooks.step_begin = hook_step_begin;
	x->hooks.linear = hook_linear;
	x->hooks.linear_done = hook_linear_done;
	x->hooks.linear_n = hook_linear_n;
	if (x->blocks_ok) {
		x->hooks.blocks = hook_blocks;
		x->hooks.head = hook_head;
	}
	x->hooks.step_end = hook_step_end;
	count_on_devices(x);
	ctx_set_hooks(c, &x->hooks, x);
	*out = x;
	return 0;

err_free:
	edgeq_placer_free(x->pl);
	pthread_mutex_destroy(&x->push_lock);
	free(x->op_index);
	free(x->layer_ops);
	free(x->head_logits);
	free(x->acc_ns);
	free(x->acc_dev);
	free(x);
	return edgeq_error_set(err, -ret, "placement: %s", strerror(-ret));
}

void edgeq_place_detach(struct edgeq_place_exec *x)
{
	if (!x)
		return;
	ctx_set_hooks(x->c, NULL, NULL);
	if (x->be.forget_kv)
		x->be.forget_kv(x->be.arg, x->kv_id);
	edgeq_placer_free(x->pl);
	pthread_mutex_destroy(&x->push_lock);
	free(x->pushed);
	free(x->sysfs_dir);
	free(x->op_index);
	free(x->layer_ops);
	free(x->head_logits);
	place_blocks_free(&x->blk);
	free(x->acc_ns);
	free(x->acc_dev);
	free(x);
}

struct edgeq_placer *edgeq_place_placer(struct edgeq_place_exec *x)
{
	return x->pl;
}

void edgeq_place_stats(const struct edgeq_place_exec *x,
		       struct edgeq_place_stats *st)
{
	*st = x->st;
}

int edgeq_place_pressure(struct edgeq_place_exec *x,
			 const struct edgeq_pressure_state *ps)
{
	int ret = 0;

	pthread_mutex_lock(&x->push_lock);
	if (!x->pushed)
		x->pushed = malloc(sizeof(*x->pushed));
	if (x->pushed) {
		*x->pushed = *ps;
		atomic_store_explicit(&x->push_new, true, memory_order_release);
	} else {
		ret = -ENOMEM;
	}
	pthread_mutex_unlock(&x->push_lock);
	return ret;
}

int edgeq_place_watch(struct edgeq_place_exec *x, struct edgeq_pressure *pm,
		      const char *sysfs_dir)
{
	free(x->sysfs_dir);
	x->sysfs_dir = NULL;
	if (sysfs_dir) {
		x->sysfs_dir = strdup(sysfs_dir);
		if (!x->sysfs_dir)
			return -ENOMEM;
	}
	x->pm = pm;
	if (pm) { /* the memory level now, not only its changes */
		struct edgeq_pressure_state *ps = malloc(sizeof(*ps));

		if (!ps)
			return -ENOMEM;
		edgeq_pressure_get(pm, ps);
		apply_mem(x, &ps->mem);
		free(ps);
	}
	return 0;
}

/* ---- the in-process backend: the same kernels, as a CPU agent runs them */

static int inline_matvec(void *arg, int dev,
			 const struct edgeq_place_weight *wt, uint64_t rows,
			 uint64_t cols, const float *xin, float *y)
{
	struct edgeq_place_inline *st = arg;
	uint32_t type = wt->type;
	const void *w = wt->data;
	uint64_t w_bytes = wt->bytes;
	const struct edgeq_kernel_ops *k = edgeq_kernels_select();
	const struct edgeq_type_traits *tr = edgeq_type_traits(type);
	size_t arow;
	void *act;

	if (st->fail_after && st->ops >= st->fail_after)
		return -ENODEV; /* the agent is gone */
	if (!tr || !tr->weight)
		return -EOPNOTSUPP;
	arow = edgeq_row_size(tr->vec_dot_type, (int64_t)cols);
	if (!arow || edgeq_row_size(type, (int64_t)cols) * rows > w_bytes)
		return -EINVAL;
	act = malloc(arow);
	if (!act)
		return -ENOMEM;
	/* as the decoder's linear(): whatever quantize_act says of NaN/Inf */
	(void)k->quantize_act(tr->vec_dot_type, xin, act, (int64_t)cols);
	k->matvec((enum edgeq_type)type, w, (int64_t)cols, 0, (int64_t)rows,
		  act, y);
	free(act);
	if (st->delay_ns) {
		uint64_t end = edgeq_now_ns() + st->delay_ns;

		while (edgeq_now_ns() < end)
			;
	}
	st->ops++;
	return 0;
}

void edgeq_place_backend_inline(struct edgeq_place_backend *be,
				struct edgeq_place_inline *st)
{
	memset(st, 0, sizeof(*st));
	memset(be, 0, sizeof(*be));
	be->name = "inline";
	be->matvec = inline_matvec;
	be->arg = st;
}
