/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Inside the Vulkan backend: the context vk.c opens and vk_ops.c records
 * ops against.
 */
#ifndef EDGEQ_GPU_VK_H
#define EDGEQ_GPU_VK_H

#include <vulkan/vulkan.h>

#include "gpu/backend_int.h"

enum vk_pipe {
	VK_PIPE_Q8_0,
	VK_PIPE_Q8_K,
	VK_PIPE_MV_F32,
	VK_PIPE_MV_F16,
	VK_PIPE_MV_Q8_0,
	VK_PIPE_MV_Q4_0,
	VK_PIPE_MV_Q4_K,
	VK_PIPE_MV_Q6_K,
	VK_PIPE_RMSNORM,
	VK_PIPE_ROPE,
	VK_PIPE_SOFTMAX,
	VK_PIPE_ADD,
	VK_PIPE_SILU_MUL,
	VK_PIPE_ATTN_F32,
	VK_PIPE_ATTN_F16,
	VK_PIPE_ATTN_Q8_0,
	VK_PIPE_STORE,
	VK_PIPE_GELU_MUL,
	VK_PIPE_MM_F32, /* MATMUL, 8 activation rows a workgroup; in the
			 * MV_* order */
	VK_PIPE_MM_F16,
	VK_PIPE_MM_Q8_0,
	VK_PIPE_MM_Q4_0,
	VK_PIPE_MM_Q4_K,
	VK_PIPE_MM_Q6_K,
	VK_PIPE_COUNT,
};

#define VK_NBIND 5	  /* t0..t3 and the scratch (shaders/common.glsl) */
#define VK_CHAIN_MAX 1024 /* ops per command buffer: a prefill chain (1000) */
#define VK_OP_MASK ((1ULL << EDGEQ_OP_COUNT) - 1)

/* As the push constants of shaders/common.glsl. */
struct vk_push {
	uint32_t o[4], os;
	uint32_t n[4];
	uint32_t p[3];
};

/* A device buffer mirroring one caller mapping (or the scratch). */
struct vk_buf {
	uint64_t id;	  /* the mapping's id; 0: a temporary of one chain */
	void *base;	  /* the mapping it mirrors */
	uint64_t src_len; /* its length */
	uint64_t len;	  /* bytes of the buffer */
	VkBuffer buf;
	VkDeviceMemory mem;
	void *host;	/* the buffer's bytes as the host sees them */
	bool imported;	/* host memory imported: host == base */
	uint64_t chain; /* last chain that used it (LRU) */
	/* staging: weight ranges already copied (read-only roles) */
	uint64_t valid_off[8], valid_len[8];
	unsigned int nvalid;
};

struct vk_ctx {
	VkInstance inst;
	VkDevice dev;
	VkQueue queue;
	uint32_t family;
	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceMemoryProperties memprops;
	bool float64; /* shaderFloat64: RMSNORM sums in double */
	bool import;  /* VK_EXT_external_memory_host in use */
	uint64_t import_align;
	PFN_vkGetMemoryHostPointerPropertiesEXT get_host_ptr_props;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	VkPipeline pipe[VK_PIPE_COUNT];	    /* float64 where a shader has it */
	VkPipeline pipe_f32[VK_PIPE_COUNT]; /* float-only twins, or NULL */
	bool exact; /* float64 exact fma in per-element loops too */
	VkDescriptorPool dpool;
	VkCommandPool cpool;
	VkCommandBuffer cmd;
	VkFence fence;
	uint64_t slow_chains; /* took longer than the wait (then waited for) */
	uint64_t dispatches;  /* vkCmdDispatch calls recorded */
	struct vk_buf scratch;
	struct vk_buf **bufs; /* each allocated alone: pointers stay valid */
	size_t nbufs, capbufs;
	uint64_t chain; /* chains started, the current one's number */
	uint64_t device_bytes, imported, staged, chains, ops;
};

int vk_errno(VkResult r);
/* The pipeline to bind for @p: its float-only twin where the device lacks
 * float64, or where exact fma per element is not worth it (vk.c). */
VkPipeline vk_pipeline(const struct vk_ctx *v, int p);
int vk_find_memtype(struct vk_ctx *v, uint32_t bits,
		    VkMemoryPropertyFlags want);
int vk_buf_alloc(struct vk_ctx *v, uint64_t len, struct vk_buf *b);
void vk_buf_destroy(struct vk_ctx *v, struct vk_buf *b);
int vk_buf_get(struct vk_ctx *v, const struct edgeq_backend_tensor *t,
	       struct vk_buf **out);
void vk_drop_temporaries(struct vk_ctx *v);

/* vk_ops.c */
bool vk_supports(void *priv, const struct edgeq_op_desc *op);
int vk_run(void *priv, const struct edgeq_op_desc *ops,
	   const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
	   int *status, unsigned int n);

#endif /* EDGEQ_GPU_VK_H */
