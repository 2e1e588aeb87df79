/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Execution backends for edgeq ops: what an agent runs the ops of its queue
 * on (Documentation/gpu-agent.rst). "cpu" is the engine's own kernels
 * (edgeq_kq_exec()); "vulkan" records the ops into Vulkan compute command
 * buffers, one per submitted chain, on any Vulkan 1.2 device.
 *
 * The interface is narrow on purpose, so that another backend (CUDA) fits
 * beside these: list devices, open one, run a chain of dependent ops on
 * tensors the caller has mapped, forget a mapping, release cached device
 * copies under memory pressure, free. Tensors are named by the mapping they
 * live in: memory with the same id is the same memory for as long as the
 * caller keeps it mapped, so a backend may import it once (zero-copy on
 * unified memory) or keep a device copy of a read-only tensor (a weight)
 * under that id. Weights are registered once per identity by their clients
 * (one memfd per model tensor and layer), so a mapping id is a weight
 * identity.
 *
 * Every function returns 0 (or a count) or a negative errno; nothing prints.
 */
#ifndef EDGEQ_BACKEND_H
#define EDGEQ_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct edgeq_backend;

#define EDGEQ_BACKEND_NAME_MAX 256

/* How a backend reaches the caller's tensors. */
enum edgeq_backend_mem {
	EDGEQ_BACKEND_MEM_HOST = 0,    /* runs on the CPU: the mapping itself */
	EDGEQ_BACKEND_MEM_IMPORT = 1,  /* host pointer imported, zero-copy */
	EDGEQ_BACKEND_MEM_STAGING = 2, /* copied into device buffers */
};

/* One device a backend can open. */
struct edgeq_backend_device {
	char name[EDGEQ_BACKEND_NAME_MAX]; /* as the driver calls it */
	char type[16];	      /* "cpu", "integrated", "discrete", "virtual" */
	uint32_t api_version; /* Vulkan: VK_MAKE_API_VERSION; cpu: 0 */
	uint64_t heap_bytes;  /* largest device-local heap */
	bool host_import;     /* VK_EXT_external_memory_host */
	bool usable;	      /* has what the backend needs (compute, 1.2) */
};

/* What an open backend is using. */
struct edgeq_backend_info {
	const char *backend; /* "cpu", "vulkan" */
	char device[EDGEQ_BACKEND_NAME_MAX];
	enum edgeq_backend_mem mem;
	uint64_t op_mask;      /* opcodes it runs (bit n = opcode n) */
	uint64_t device_bytes; /* device copies held (staging path) */
	uint64_t imported;     /* mappings imported (import path) */
	uint64_t chains, ops;  /* chains and ops run */
	uint64_t slow_chains;  /* chains that outlasted the device wait */
	uint64_t dispatches;   /* device dispatches recorded (Vulkan) */
};

/* A tensor of an op: bytes [offset, offset + length) of a mapping. */
struct edgeq_backend_tensor {
	void *base;	  /* start of the mapping, page aligned */
	uint64_t map_len; /* bytes mapped at @base */
	uint64_t offset;  /* where the tensor starts, from @base */
	uint64_t length;  /* its bytes (op->tensors[i].length) */
	uint64_t id;	  /* the mapping's identity; 0: do not cache */
};

/*
 * The devices of backend @kind ("cpu", "vulkan"): fills up to @max entries
 * of @d and returns how many there are. -EPROTONOSUPPORT: this build has no
 * such backend (built without libvulkan/glslc); -ENODEV: no driver or no
 * device; -EINVAL: unknown kind.
 */
int edgeq_backend_list(const char *kind, struct edgeq_backend_device *d,
		       size_t max);
/* Whether this build has backend @kind. */
bool edgeq_backend_built(const char *kind);

/*
 * Open backend @kind on @device: NULL or "" for the first usable one, a
 * decimal index into edgeq_backend_list(), or a case-insensitive substring
 * of a device name. Errors as edgeq_backend_list(), plus -ENOENT (no such
 * device) and -ENOTSUP (the device lacks what the backend needs).
 */
int edgeq_backend_open(const char *kind, const char *device,
		       struct edgeq_backend **out);
void edgeq_backend_free(struct edgeq_backend *b);
void edgeq_backend_get_info(const struct edgeq_backend *b,
			    struct edgeq_backend_info *info);
/* Whether @b runs @op (opcode and dtype). */
bool edgeq_backend_supports(const struct edgeq_backend *b,
			    const struct edgeq_op_desc *op);

/*
 * Run @n ops in order as one chain: op i may read what op i-1 wrote. @t[i]
 * are the tensors of op i (op->ntensors of them). @status[i] gets 0 or the
 * op's -errno (-EINVAL shape/length mismatch, -EOPNOTSUPP); an op whose
 * status is not 0 is not run and neither are the ones after it (status
 * -ECANCELED). Returns 0, or -errno when the device itself failed (then
 * every status is that error). It returns only once the device is done
 * with the tensors: a chain that outlasts the backend's wait is counted in
 * slow_chains and waited for (Vulkan cannot take work back).
 */
int edgeq_backend_run(struct edgeq_backend *b, const struct edgeq_op_desc *ops,
		      const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		      int *status, unsigned int n);
/* Mapping @id is going away: drop whatever the backend holds of it. */
void edgeq_backend_forget(struct edgeq_backend *b, uint64_t id);
/* Drop cached device copies until @bytes are freed (pressure); returns the
 * bytes freed. */
uint64_t edgeq_backend_release(struct edgeq_backend *b, uint64_t bytes);

/* "host", "import" or "staging". */
const char *edgeq_backend_mem_name(enum edgeq_backend_mem m);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_BACKEND_H */
