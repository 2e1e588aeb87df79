/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside include/edgeq/backend.h: the table a backend fills in.
 */
#ifndef EDGEQ_GPU_BACKEND_INT_H
#define EDGEQ_GPU_BACKEND_INT_H

#include <edgeq/backend.h>

struct edgeq_backend_ops {
	const char *name;
	int (*list)(struct edgeq_backend_device *d, size_t max);
	/* @index into list(); the backend's private state in *@priv */
	int (*open)(int index, void **priv);
	void (*close)(void *priv);
	void (*info)(void *priv, struct edgeq_backend_info *info);
	bool (*supports)(void *priv, const struct edgeq_op_desc *op);
	/* ops already checked for arity and supports(); as edgeq_backend_run */
	int (*run)(void *priv, const struct edgeq_op_desc *ops,
		   const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		   int *status, unsigned int n);
	void (*forget)(void *priv, uint64_t id);
	uint64_t (*release)(void *priv, uint64_t bytes);
};

#ifdef EDGEQ_HAVE_VULKAN
extern const struct edgeq_backend_ops edgeq_backend_vulkan;
#endif
#ifdef EDGEQ_HAVE_CUDA
extern const struct edgeq_backend_ops edgeq_backend_cuda;
#endif

#endif /* EDGEQ_GPU_BACKEND_INT_H */
