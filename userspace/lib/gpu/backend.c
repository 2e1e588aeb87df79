// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backend registry and the CPU backend (include/edgeq/backend.h).
 *
 * The CPU backend runs each op of a chain with edgeq_kq_exec(), the engine's
 * kernels, on the mapping itself: what the CPU agent always did.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <edgeq/backend.h>
#include <edgeq/kq.h>

#include "gpu/backend_int.h"

struct edgeq_backend {
	const struct edgeq_backend_ops *ops;
	void *priv;
};

/* ---- the CPU backend */

struct cpu_backend {
	uint64_t chains, ops;
};

static int cpu_list(struct edgeq_backend_device *d, size_t max)
{
	if (max) {
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "edgeq CPU kernels");
		snprintf(d->type, sizeof(d->type), "cpu");
		d->usable = true;
	}
	return 1;
}

static int cpu_open(int index, void **priv)
{
	if (index != 0)
		return -ENOENT;
	*priv = calloc(1, sizeof(struct cpu_backend));
	return *priv ? 0 : -ENOMEM;
}

static void cpu_close(void *priv)
{
	free(priv);
}

static void cpu_info(void *priv, struct edgeq_backend_info *info)
{
	struct cpu_backend *c = priv;

	snprintf(info->device, sizeof(info->device), "edgeq CPU kernels");
	info->mem = EDGEQ_BACKEND_MEM_HOST;
	info->op_mask = (1ULL << EDGEQ_OP_COUNT) - 1;
	info->chains = c->chains;
	info->ops = c->ops;
}

static bool cpu_supports(void *priv, const struct edgeq_op_desc *op)
{
	return op->opcode < EDGEQ_OP_COUNT;
}

static int cpu_run(void *priv, const struct edgeq_op_desc *ops,
		   const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		   int *status, unsigned int n)
{
	struct cpu_backend *c = priv;

	for (unsigned int i = 0; i < n; i++) {
		void *p[EDGEQ_MAX_TENSORS] = { 0 };

		for (unsigned int k = 0; k < ops[i].ntensors; k++)
			p[k] = (char *)t[i][k].base + t[i][k].offset;
		status[i] = edgeq_kq_exec(&ops[i], p);
		c->ops++;
		if (status[i]) {
			while (++i < n)
				status[i] = -ECANCELED;
			break;
		}
	}
	c->chains++;
	return 0;
}

static void cpu_forget(void *priv, uint64_t id)
{
}

static uint64_t cpu_release(void *priv, uint64_t bytes)
{
	return 0;
}

static const struct edgeq_backend_ops edgeq_backend_cpu = {
	.name = "cpu",
	.list = cpu_list,
	.open = cpu_open,
	.close = cpu_close,
	.info = cpu_info,
	.supports = cpu_supports,
	.run = cpu_run,
	.forget = cpu_forget,
	.release = cpu_release,
};

/* ---- the registry */

static const struct edgeq_backend_ops *const backends[] = {
	&edgeq_backend_cpu,
#ifdef EDGEQ_HAVE_VULKAN
	&edgeq_backend_vulkan,
#endif
#ifdef EDGEQ_HAVE_CUDA
	&edgeq_backend_cuda,
#endif
};

/* Backends edgeq knows of, built here or not. */
static const char *const known[] = { "cpu", "vulkan", "cuda" };

static int find(const char *kind, const struct edgeq_backend_ops **out)
{
	size_t i;

	if (!kind)
		return -EINVAL;
	for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i]->name, kind)) {
			*out = backends[i];
			return 0;
		}
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i], kind))
			return -EPROTONOSUPPORT;
	return -EINVAL;
}

bool edgeq_backend_built(const char *kind)
{
	const struct edgeq_backend_ops *o;

	return !find(kind, &o);
}

int edgeq_backend_list(const char *kind, struct edgeq_backend_device *d,
		       size_t max)
{
	const struct edgeq_backend_ops *o;
	int ret = find(kind, &o);

	return ret ? ret : o->list(d, max);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The index @device names among the @n devices at @d, or -errno. */
static int pick(const struct edgeq_backend_device *d, int n, const char *device)
{
	int i;

	if (!device || !*device) {
		for (i = 0; i < n; i++)
			if (d[i].usable)
				return i;
		return n ? -ENOTSUP : -ENODEV;
	}
	if (all_digits(device)) {
		i = atoi(device);
		if (i >= n)
			return -ENOENT;
		return d[i].usable ? i : -ENOTSUP;
	}
	for (i = 0; i < n; i++)
		if (strcasestr(d[i].name, device))
			return d[i].usable ? i : -ENOTSUP;
	return -ENOENT;
}

#define MAX_DEVICES 16

int edgeq_backend_open(const char *kind, const char *device,
		       struct edgeq_backend **out)
{
	struct edgeq_backend_device d[MAX_DEVICES];
	const struct edgeq_backend_ops *o;
	struct edgeq_backend *b;
	int ret, n, idx;

	ret = find(kind, &o);
	if (ret)
		return ret;
	n = o->list(d, MAX_DEVICES);
	if (n < 0)
		return n;
	if (n > MAX_DEVICES)
		n = MAX_DEVICES;
	idx = pick(d, n, device);
	if (idx < 0)
		return idx;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = o->open(idx, &b->priv);
	if (ret) {
		free(b);
		return ret;
	}
	b->ops = o;
	*out = b;
	return 0;
}

void edgeq_backend_free(struct edgeq_backend *b)
{
	if (!b)
		return;
	b->ops->close(b->priv);
	free(b);
}

void edgeq_backend_get_info(const struct edgeq_backend *b,
			    struct edgeq_backend_info *info)
{
	memset(info, 0, sizeof(*info));
	info->backend = b->ops->name;
	b->ops->info(b->priv, info);
}

bool edgeq_backend_supports(const struct edgeq_backend *b,
			    const struct edgeq_op_desc *op)
{
	return b->ops->supports(b->priv, op);
}

/* The op's tensors lie inside their mappings and match its arity. */
static int check_op(const struct edgeq_op_desc *op,
		    const struct edgeq_backend_tensor *t)
{
	unsigned int nt, nd, i;

	if (edgeq_op_arity(op->opcode, &nt, &nd) || op->ntensors != nt ||
	    !edgeq_op_ndims_valid(op->opcode, op->ndims))
		return -EINVAL;
	for (i = 0; i < op->ndims; i++)
		if (!op->shape[i])
			return -EINVAL;
	for (i = 0; i < nt; i++)
		if (!t[i].base || t[i].offset > t[i].map_len ||
		    t[i].length > t[i].map_len - t[i].offset)
			return -EINVAL;
	return 0;
}

int edgeq_backend_run(struct edgeq_backend *b, const struct edgeq_op_desc *ops,
		      const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		      int *status, unsigned int n)
{
	unsigned int i, ok = n;

	for (i = 0; i < n && ok == n; i++) {
		status[i] = check_op(&ops[i], t[i]);
		if (!status[i] && !b->ops->supports(b->priv, &ops[i]))
			status[i] = -EOPNOTSUPP;
		if (status[i])
			ok = i;
	}
	for (i = ok + 1; i < n; i++)
		status[i] = -ECANCELED;
	if (!ok)
		return 0;
	return b->ops->run(b->priv, ops, t, status, ok);
}

void edgeq_backend_forget(struct edgeq_backend *b, uint64_t id)
{
	b->ops->forget(b->priv, id);
}

uint64_t edgeq_backend_release(struct edgeq_backend *b, uint64_t bytes)
{
	return b->ops->release(b->priv, bytes);
}

const char *edgeq_backend_mem_name(enum edgeq_backend_mem m)
{
	switch (m) {
	case EDGEQ_BACKEND_MEM_HOST:
		return "host";
	case EDGEQ_BACKEND_MEM_IMPORT:
		return "import";
	case EDGEQ_BACKEND_MEM_STAGING:
		return "staging";
	}
	return "unknown";
}
