// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The CUDA backend (include/edgeq/backend.h), for NVIDIA GPUs and Jetson's
 * integrated one: the driver API loaded at run time (libcuda.so.1, dlopen),
 * the kernels (kernels.cu) embedded as a fatbin nvcc built, so the library
 * neither links nor needs the CUDA runtime and a machine without a driver
 * lists no device instead of failing to start. Built only where nvcc is
 * found (WITH_CUDA).
 *
 * Memory: every mapping is host-registered once per id (cuMemHostRegister,
 * mapped into the device's address space): zero-copy on Jetson's unified
 * memory, over PCIe on a discrete GPU. Scratch (activations quantized to
 * Q8_0, RoPE tables) is mapped host memory too.
 *
 * Ops: MATVEC of F32, F16, Q8_0 and Q4_0 weights, RMSNORM (rows too),
 * ROPE, ROPE_FREQ, SILU_MUL, GELU_MUL, ADD, STORE; the rest (attention,
 * softmax, K-quants, batches) is left to the agent's CPU kernels in the
 * same batch (supports()). Not run on hardware yet: no GPU was at hand where it was
 * written (Documentation/gpu-agent.rst says how to check it on a board).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include <edgeq/kq.h>

#include "gpu/backend_int.h"
#include "kernels/kernels.h"

#include "gpu/cuda_fatbin.h" /* generated: edgeq_cuda_fatbin[] */

/* The driver entry points used, by their exported (versioned) names. */
static struct {
	void *lib;
	int err; /* 0 loaded, -errno: why not */
	CUresult (*init)(unsigned int);
	CUresult (*dev_count)(int *);
	CUresult (*dev_get)(CUdevice *, int);
	CUresult (*dev_name)(char *, int, CUdevice);
	CUresult (*dev_attr)(int *, CUdevice_attribute, CUdevice);
	CUresult (*dev_mem)(size_t *, CUdevice);
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_release)(CUdevice);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*ctx_sync)(void);
	CUresult (*mod_load)(CUmodule *, const void *);
	CUresult (*mod_unload)(CUmodule);
	CUresult (*mod_func)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned int, unsigned int, unsigned int,
			   unsigned int, unsigned int, unsigned int,
			   unsigned int, CUstream, void **, void **);
	CUresult (*host_register)(void *, size_t, unsigned int);
	CUresult (*host_unregister)(void *);
	CUresult (*host_devptr)(CUdeviceptr *, void *, unsigned int);
	CUresult (*host_alloc)(void **, size_t, unsigned int);
	CUresult (*host_free)(void *);
} cu;

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NOT_SUPPORTED:
	case CUDA_ERROR_NO_BINARY_FOR_GPU:
	case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
		return -ENOTSUP;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

/* libcuda.so.1 and cuInit(), once: 0 or -ENODEV (no driver). */
static int cu_load(void)
{
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define S(f, n) { n, offsetof(__typeof__(cu), f) }
		S(init, "cuInit"),
		S(dev_count, "cuDeviceGetCount"),
		S(dev_get, "cuDeviceGet"),
		S(dev_name, "cuDeviceGetName"),
		S(dev_attr, "cuDeviceGetAttribute"),
		S(dev_mem, "cuDeviceTotalMem_v2"),
		S(ctx_retain, "cuDevicePrimaryCtxRetain"),
		S(ctx_release, "cuDevicePrimaryCtxRelease_v2"),
		S(ctx_set, "cuCtxSetCurrent"),
		S(ctx_sync, "cuCtxSynchronize"),
		S(mod_load, "cuModuleLoadData"),
		S(mod_unload, "cuModuleUnload"),
		S(mod_func, "cuModuleGetFunction"),
		S(launch, "cuLaunchKernel"),
		S(host_register, "cuMemHostRegister_v2"),
		S(host_unregister, "cuMemHostUnregister"),
		S(host_devptr, "cuMemHostGetDevicePointer_v2"),
		S(host_alloc, "cuMemHostAlloc"),
		S(host_free, "cuMemFreeHost"),
#undef S
	};

	if (cu.lib || cu.err)
		return cu.err;
	cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cu.lib)
		return cu.err = -ENODEV;
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(cu.lib, syms[i].name);

		if (!f)
			return cu.err = -ENODEV; /* a driver too old */
		memcpy((char *)&cu + syms[i].off, &f, sizeof(f));
	}
	return cu.err = cu_errno(cu.init(0));
}

static int cu_list(struct edgeq_backend_device *d, size_t max)
{
	int n, ret = cu_load();

	if (ret)
		return ret;
	ret = cu_errno(cu.dev_count(&n));
	if (ret)
		return ret;
	if (!n)
		return -ENODEV;
	for (int i = 0; i < n && (size_t)i < max; i++) {
		CUdevice dev;
		int integ = 0, map = 0, uva = 0, major = 0, minor = 0;
		size_t mem = 0;

		memset(&d[i], 0, sizeof(d[i]));
		if (cu.dev_get(&dev, i))
			continue;
		cu.dev_name(d[i].name, sizeof(d[i].name), dev);
		cu.dev_attr(&integ, CU_DEVICE_ATTRIBUTE_INTEGRATED, dev);
		cu.dev_attr(&map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev);
		cu.dev_attr(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev);
		cu.dev_attr(&major,
			    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
		cu.dev_attr(&minor,
			    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
		cu.dev_mem(&mem, dev);
		snprintf(d[i].type, sizeof(d[i].type), "%s",
			 integ ? "integrated" : "discrete");
		d[i].api_version = (uint32_t)(major * 10 + minor);
		d[i].heap_bytes = mem;
		d[i].host_import = map && uva;
		/* the fatbin carries sm_87 code and compute_75 PTX */
		d[i].usable = map && uva && major * 10 + minor >= 75;
	}
	return n;
}

enum { K_QUANT, K_MVQ, K_MVF, K_NORM, K_EW, K_STORE, K_ROPE, K_N };
static const char *const kname[K_N] = { "eq_quant_q8_0", "eq_mv_q", "eq_mv_f",
					"eq_rmsnorm",	 "eq_ew",   "eq_store",
					"eq_rope" };

struct reg {
	uint64_t id;
	void *base;
	uint64_t len;
	CUdeviceptr dptr;
};

struct cuda_backend {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn[K_N];
	char name[EDGEQ_BACKEND_NAME_MAX];
	struct reg *regs;
	size_t n_regs, cap_regs;
	void *scratch;
	CUdeviceptr scratch_d;
	size_t scratch_len;
	uint64_t chains, ops, dispatches, imported;
};

static int cu_open(int index, void **priv)
{
	struct cuda_backend *c;
	int ret;

	ret = cu_load();
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	ret = cu_errno(cu.dev_get(&c->dev, index));
	if (!ret)
		ret = cu_errno(cu.ctx_retain(&c->ctx, c->dev));
	if (ret) {
		free(c);
		return ret;
	}
	cu.dev_name(c->name, sizeof(c->name), c->dev);
	ret = cu_errno(cu.ctx_set(c->ctx));
	if (!ret)
		ret = cu_errno(cu.mod_load(&c->mod, edgeq_cuda_fatbin));
	for (int k = 0; k < K_N && !ret; k++)
		ret = cu_errno(cu.mod_func(&c->fn[k], c->mod, kname[k]));
	if (ret) {
		if (c->mod)
			cu.mod_unload(c->mod);
		cu.ctx_release(c->dev);
		free(c);
		return ret;
	}
	*priv = c;
	return 0;
}

static void cu_forget(void *priv, uint64_t id)
{
	struct cuda_backend *c = priv;

	for (size_t i = 0; i < c->n_regs; i++)
		if (c->regs[i].id == id) {
			cu.ctx_set(c->ctx);
			cu.host_unregister(c->regs[i].base);
			c->regs[i] = c->regs[--c->n_regs];
			return;
		}
}

static void cu_close(void *priv)
{
	struct cuda_backend *c = priv;

	cu.ctx_set(c->ctx);
	while (c->n_regs)
		cu_forget(c, c->regs[0].id);
	free(c->regs);
	if (c->scratch)
		cu.host_free(c->scratch);
	cu.mod_unload(c->mod);
	cu.ctx_release(c->dev);
	free(c);
}

static void cu_info(void *priv, struct edgeq_backend_info *info)
{
	struct cuda_backend *c = priv;

	snprintf(info->device, sizeof(info->device), "%s", c->name);
	info->mem = EDGEQ_BACKEND_MEM_IMPORT;
	info->op_mask = 1ULL << EDGEQ_OP_NOP | 1ULL << EDGEQ_OP_MATVEC |
			1ULL << EDGEQ_OP_RMSNORM | 1ULL << EDGEQ_OP_ROPE |
			1ULL << EDGEQ_OP_ROPE_FREQ | 1ULL << EDGEQ_OP_SILU_MUL |
			1ULL << EDGEQ_OP_ADD | 1ULL << EDGEQ_OP_STORE |
			1ULL << EDGEQ_OP_GELU_MUL;
	info->imported = c->n_regs;
	info->chains = c->chains;
	info->ops = c->ops;
	info->dispatches = c->dispatches;
}

static bool cu_supports(void *priv, const struct edgeq_op_desc *op)
{
	switch (op->opcode) {
	case EDGEQ_OP_MATVEC:
		/* Q8_0/Q4_0 rows of whole blocks: the quantized activations */
		if (op->dtype == EDGEQ_DTYPE_Q8_0 ||
		    op->dtype == EDGEQ_DTYPE_Q4_0)
			return op->shape[1] % 32 == 0;
		return op->dtype == EDGEQ_DTYPE_F32 ||
		       op->dtype == EDGEQ_DTYPE_F16;
	case EDGEQ_OP_STORE:
		return op->dtype == EDGEQ_DTYPE_F32 ||
		       op->dtype == EDGEQ_DTYPE_F16 ||
		       (op->dtype == EDGEQ_DTYPE_Q8_0 &&
			op->shape[0] % 32 == 0);
	case EDGEQ_OP_NOP:
	case EDGEQ_OP_RMSNORM:
	case EDGEQ_OP_ROPE:
	case EDGEQ_OP_ROPE_FREQ:
	case EDGEQ_OP_SILU_MUL:
	case EDGEQ_OP_GELU_MUL:
	case EDGEQ_OP_ADD:
		return true;
	default:
		return false;
	}
}

/* The device address of tensor @t: its mapping registered once per id
 * (read-only mappings, the weights, as such). */
static int devptr(struct cuda_backend *c, const struct edgeq_backend_tensor *t,
		  CUdeviceptr *out)
{
	struct reg *r = NULL;
	int ret;

	for (size_t i = 0; i < c->n_regs; i++)
		if (c->regs[i].id == t->id && c->regs[i].base == t->base) {
			r = &c->regs[i];
			break;
		}
	if (!r) {
		if (c->n_regs == c->cap_regs) {
			size_t cap = c->cap_regs ? 2 * c->cap_regs : 16;
			struct reg *n = realloc(c->regs, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			c->regs = n;
			c->cap_regs = cap;
		}
		r = &c->regs[c->n_regs];
		*r = (struct reg){ t->id, t->base, t->map_len, 0 };
		ret = cu_errno(cu.host_register(t->base, t->map_len,
						CU_MEMHOSTREGISTER_DEVICEMAP));
		if (ret)
			ret = cu_errno(cu.host_register(
				t->base, t->map_len,
				CU_MEMHOSTREGISTER_DEVICEMAP |
					CU_MEMHOSTREGISTER_READ_ONLY));
		if (!ret)
			ret = cu_errno(cu.host_devptr(&r->dptr, t->base, 0));
		if (ret)
			return ret;
		c->n_regs++;
		c->imported++;
	}
	*out = r->dptr + t->offset;
	return 0;
}

static int scratch_ensure(struct cuda_backend *c, size_t bytes)
{
	int ret;

	if (c->scratch_len >= bytes)
		return 0;
	if (c->scratch)
		cu.host_free(c->scratch);
	c->scratch = NULL;
	c->scratch_len = 0;
	bytes = (bytes + 65535) & ~(size_t)65535;
	ret = cu_errno(
		cu.host_alloc(&c->scratch, bytes, CU_MEMHOSTALLOC_DEVICEMAP));
	if (!ret)
		ret = cu_errno(cu.host_devptr(&c->scratch_d, c->scratch, 0));
	if (ret)
		return ret;
	c->scratch_len = bytes;
	return 0;
}

static float fbits(uint64_t v)
{
	uint32_t u = (uint32_t)v;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static unsigned int blocks_of(uint64_t n, unsigned int per)
{
	return (unsigned int)((n + per - 1) / per);
}

static int launch(struct cuda_backend *c, int k, unsigned int grid,
		  unsigned int block, void **args)
{
	c->dispatches++;
	return cu_errno(cu.launch(c->fn[k], grid ? grid : 1, 1, 1, block, 1, 1,
				  0, NULL, args, NULL));
}

/* Scratch bytes op @op needs (quantized activations, a RoPE table). */
static size_t op_scratch(const struct edgeq_op_desc *op)
{
	if (op->opcode == EDGEQ_OP_MATVEC &&
	    (op->dtype == EDGEQ_DTYPE_Q8_0 || op->dtype == EDGEQ_DTYPE_Q4_0))
		return (op->shape[1] / 32 * 34 + 255) & ~255ULL;
	if (op->opcode == EDGEQ_OP_ROPE || op->opcode == EDGEQ_OP_ROPE_FREQ)
		return (op->shape[1] * 4 * edgeq_op_rope_tokens(op) + 255) &
		       ~255ULL;
	return 0;
}

/* One op's launches (its tensors' lengths checked against the shape). */
static int run_op(struct cuda_backend *c, const struct edgeq_op_desc *op,
		  const struct edgeq_backend_tensor *t, size_t soff)
{
	CUdeviceptr p[EDGEQ_MAX_TENSORS] = { 0 }, sd = c->scratch_d + soff;
	uint64_t n = op->shape[0];
	int ret = 0, i_n = (int)n, kind;

	for (unsigned int k = 0; k < op->ntensors && !ret; k++)
		ret = devptr(c, &t[k], &p[k]);
	if (ret)
		return ret;
	switch (op->opcode) {
	case EDGEQ_OP_NOP:
		return 0;
	case EDGEQ_OP_MATVEC: {
		uint64_t rows = n, cols = op->shape[1];
		int r = (int)rows, cl = (int)cols, nb = (int)(cols / 32);
		size_t wrow = edgeq_row_size(op->dtype, (int64_t)cols);

		if (!wrow || rows > INT32_MAX || cols > INT32_MAX ||
		    t[0].length < rows * wrow || t[1].length < cols * 4 ||
		    t[2].length < rows * 4)
			return -EINVAL;
		if (op->dtype == EDGEQ_DTYPE_F32 ||
		    op->dtype == EDGEQ_DTYPE_F16) {
			void *a[] = { &p[0], &p[1], &p[2], &r, &cl, &kind };

			kind = op->dtype == EDGEQ_DTYPE_F16;
			return launch(c, K_MVF, (unsigned int)rows, 32, a);
		} else {
			void *qa[] = { &p[1], &sd, &nb };
			void *a[] = { &p[0], &sd, &p[2], &r, &nb, &kind };

			kind = op->dtype == EDGEQ_DTYPE_Q8_0 ? 8 : 2;
			ret = launch(c, K_QUANT, blocks_of(nb, 64), 64, qa);
			return ret ? ret :
				     launch(c, K_MVQ, blocks_of(rows, 64), 64,
					    a);
		}
	}
	case EDGEQ_OP_RMSNORM: {
		float eps = fbits(op->param[0]);
		uint64_t rows = op->ndims == 2 ? op->shape[1] : 1;
		void *a[] = { &p[0], &p[1], &p[2], &i_n, &eps };

		if (n > INT32_MAX || rows > INT32_MAX ||
		    t[0].length / 4 / n < rows || t[1].length < n * 4 ||
		    t[2].length / 4 / n < rows)
			return -EINVAL;
		return launch(c, K_NORM, (unsigned int)rows, 256, a);
	}
	case EDGEQ_OP_ADD:
	case EDGEQ_OP_GELU_MUL:
	case EDGEQ_OP_SILU_MUL: {
		/* ADD {n, rows} (EDGEQ_F_TOKENS): a launch a row, b the same */
		uint64_t rows = op->ndims == 2 ? op->shape[1] : 1;
		CUdeviceptr x = p[0], y = p[2];
		void *a[] = { &x, &p[1], &y, &i_n, &kind };

		if (t[1].length < n * 4 || n > INT32_MAX ||
		    t[0].length / (n * 4) < rows ||
		    t[2].length / (n * 4) < rows)
			return -EINVAL;
		kind = op->opcode == EDGEQ_OP_SILU_MUL ? 1 :
		       op->opcode == EDGEQ_OP_GELU_MUL ? 2 :
							 0;
		for (uint64_t r = 0; r < rows && !ret; r++) {
			x = p[0] + r * n * 4;
			y = p[2] + r * n * 4;
			ret = launch(c, K_EW, blocks_of(n, 256), 256, a);
		}
		return ret;
	}
	case EDGEQ_OP_STORE: {
		void *a[] = { &p[0], &p[1], &i_n, &kind };

		if (op->dtype == EDGEQ_DTYPE_Q8_0) { /* as the activations */
			int nb = i_n / 32;
			void *qa[] = { &p[0], &p[1], &nb };

			if (n % 32 || n > INT32_MAX || t[0].length < n * 4 ||
			    t[1].length < n / 32 * 34)
				return -EINVAL;
			return launch(c, K_QUANT, blocks_of(nb, 64), 64, qa);
		}

		kind = op->dtype == EDGEQ_DTYPE_F16;
		if (t[0].length < n * 4 || t[1].length < n * (kind ? 2 : 4) ||
		    n > INT32_MAX)
			return -EINVAL;
		return launch(c, K_STORE, blocks_of(n, 256), 256, a);
	}
	case EDGEQ_OP_ROPE:
	case EDGEQ_OP_ROPE_FREQ: {
		uint64_t hd = op->shape[1], n_tok = edgeq_op_rope_tokens(op);
		uint32_t n_rot;
		int h = i_n, d = (int)hd, nr, neox;
		CUdeviceptr x = p[0], cs = sd;
		void *a[] = { &x, &cs, &h, &d, &nr, &neox };
		const float *freq = NULL;

		if (op->opcode == EDGEQ_OP_ROPE_FREQ)
			freq = (const float *)((const char *)t[1].base +
					       t[1].offset);
		n_rot = edgeq_op_rope_dims(op);
		if (!n_rot || n * hd > INT32_MAX || n_tok > INT32_MAX ||
		    t[0].length / (n * hd * 4) < n_tok ||
		    (freq && t[1].length < n_rot / 2 * 4))
			return -EINVAL;
		edgeq_op_rope_table(op, freq,
				    (float *)((char *)c->scratch + soff));
		nr = (int)n_rot;
		neox = !!(op->flags & EDGEQ_OPF_ROPE_NEOX);
		/* a prompt's tokens (EDGEQ_F_TOKENS): a launch each, with
		 * its own table */
		for (uint64_t k = 0; k < n_tok && !ret; k++) {
			x = p[0] + k * n * hd * 4;
			cs = sd + k * n_rot * 4;
			ret = launch(c, K_ROPE, blocks_of(n * n_rot / 2, 64),
				     64, a);
		}
		return ret;
	}
	}
	return -EOPNOTSUPP;
}

/*
 * The chain in order on the default stream (launches on one stream run in
 * order: each op sees what the one before wrote), then one wait. An op
 * refused before launch fails the rest; a device error fails them all.
 */
static int cu_run(void *priv, const struct edgeq_op_desc *ops,
		  const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		  int *status, unsigned int n)
{
	struct cuda_backend *c = priv;
	size_t need = 0, off = 0;
	unsigned int i, ran = n;
	int ret;

	for (i = 0; i < n; i++)
		need += op_scratch(&ops[i]);
	ret = cu_errno(cu.ctx_set(c->ctx));
	if (!ret)
		ret = scratch_ensure(c, need ? need : 256);
	for (i = 0; i < n && !ret; i++) {
		status[i] = run_op(c, &ops[i], t[i], off);
		off += op_scratch(&ops[i]);
		/* refused (its shape): the ones before it still run */
		if (status[i] == -EINVAL || status[i] == -EOPNOTSUPP) {
			ran = i;
			break;
		}
		ret = status[i]; /* a device error */
	}
	if (!ret)
		ret = cu_errno(cu.ctx_sync());
	c->chains++;
	if (ret) {
		for (i = 0; i < n; i++)
			status[i] = ret;
		return ret;
	}
	for (i = 0; i < n; i++)
		status[i] = i < ran ? 0 : i == ran ? status[i] : -ECANCELED;
	c->ops += ran;
	return 0;
}

/* Nothing is kept on the device but the registrations (no copies). */
static uint64_t cu_release(void *priv, uint64_t bytes)
{
	return 0;
}

const struct edgeq_backend_ops edgeq_backend_cuda = {
	.name = "cuda",
	.list = cu_list,
	.open = cu_open,
	.close = cu_close,
	.info = cu_info,
	.supports = cu_supports,
	.run = cu_run,
	.forget = cu_forget,
	.release = cu_release,
};
