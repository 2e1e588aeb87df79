// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Vulkan backend: devices, memory and submission
 * (Documentation/gpu-agent.rst). The ops themselves are recorded by
 * vk_ops.c with the compute shaders of userspace/lib/gpu/shaders/, compiled
 * to SPIR-V by glslc at build time and embedded here.
 *
 * Memory. A tensor is a range of a caller's mapping (a client's sealed
 * memfd, mapped by the agent). Where the device has
 * VK_EXT_external_memory_host, the whole mapping is imported as device
 * memory once per mapping id and every op reads and writes it in place:
 * zero-copy, which on unified memory (Jetson, lavapipe) is the point.
 * Otherwise, or when EDGEQ_VK_IMPORT=0, each mapping gets a host-visible
 * device buffer of its size: inputs are copied in before the chain runs,
 * outputs copied back after it, and weights (read-only roles) only once
 * per mapping id. Those copies are "device bytes" and are released, least
 * recently used first, by edgeq_backend_release().
 *
 * Submission. A chain of ops is one command buffer: a descriptor set per
 * op, a barrier between dependent dispatches, one fence wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/vulkan/vk.h"

#include "gpu/shaders.h" /* generated: spv_<name>[] */

struct spv {
	const uint32_t *code;
	size_t size;
};

/*
 * Every pipeline and, where the shader uses float64 (exact division, fma
 * and RMSNORM sums: the CPU's rounding), its float-only twin.
 */
static const struct {
	struct spv spv, f32;
	bool per_element; /* float64 in the inner loop: costly on GPUs */
} shaders[VK_PIPE_COUNT] = {
#define S(n)                             \
	{                                \
		spv_##n, sizeof(spv_##n) \
	}
#define SPV(p, n) [p] = { S(n), S(n##_f32), false }
#define SPV_EL(p, n) [p] = { S(n), S(n##_f32), true }
#define SPV1(p, n) [p] = { S(n), { NULL, 0 }, false }
	SPV(VK_PIPE_Q8_0, q8_0),
	SPV(VK_PIPE_Q8_K, q8_k),
	SPV_EL(VK_PIPE_MV_F32, mv_f32),
	SPV_EL(VK_PIPE_MV_F16, mv_f16),
	SPV(VK_PIPE_MV_Q8_0, mv_q8_0),
	SPV(VK_PIPE_MV_Q4_0, mv_q4_0),
	SPV(VK_PIPE_MV_Q4_K, mv_q4_k),
	SPV(VK_PIPE_MV_Q6_K, mv_q6_k),
	SPV(VK_PIPE_RMSNORM, rmsnorm),
	SPV1(VK_PIPE_ROPE, rope),
	SPV(VK_PIPE_SOFTMAX, softmax),
	SPV1(VK_PIPE_ADD, add),
	SPV(VK_PIPE_SILU_MUL, silu_mul),
	SPV_EL(VK_PIPE_ATTN_F32, attn_f32),
	SPV_EL(VK_PIPE_ATTN_F16, attn_f16),
	SPV_EL(VK_PIPE_ATTN_Q8_0, attn_q8_0),
	SPV(VK_PIPE_STORE, store),
	SPV(VK_PIPE_GELU_MUL, gelu_mul),
	SPV_EL(VK_PIPE_MM_F32, mm_f32),
	SPV_EL(VK_PIPE_MM_F16, mm_f16),
	SPV(VK_PIPE_MM_Q8_0, mm_q8_0),
	SPV(VK_PIPE_MM_Q4_0, mm_q4_0),
	SPV(VK_PIPE_MM_Q4_K, mm_q4_k),
	SPV(VK_PIPE_MM_Q6_K, mm_q6_k),
#undef SPV1
#undef SPV_EL
#undef SPV
#undef S
};

VkPipeline vk_pipeline(const struct vk_ctx *v, int p)
{
	if (v->pipe_f32[p] &&
	    (!v->float64 || (shaders[p].per_element && !v->exact)))
		return v->pipe_f32[p];
	return v->pipe[p];
}

int vk_errno(VkResult r)
{
	switch (r) {
	case VK_SUCCESS:
		return 0;
	case VK_ERROR_OUT_OF_HOST_MEMORY:
	case VK_ERROR_OUT_OF_DEVICE_MEMORY:
	case VK_ERROR_TOO_MANY_OBJECTS:
		return -ENOMEM;
	case VK_ERROR_DEVICE_LOST:
		return -EIO;
	case VK_TIMEOUT:
		return -ETIMEDOUT;
	case VK_ERROR_INITIALIZATION_FAILED:
	case VK_ERROR_INCOMPATIBLE_DRIVER:
		return -ENODEV;
	case VK_ERROR_EXTENSION_NOT_PRESENT:
	case VK_ERROR_FEATURE_NOT_PRESENT:
	case VK_ERROR_INVALID_EXTERNAL_HANDLE:
		return -ENOTSUP;
	default:
		return -EIO;
	}
}

static int instance_new(VkInstance *out)
{
	const VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "edgeq",
		.apiVersion = VK_API_VERSION_1_2,
	};
	const VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};

	return vk_errno(vkCreateInstance(&ci, NULL, out));
}

static bool has_ext(VkPhysicalDevice pd, const char *name)
{
	VkExtensionProperties *e;
	uint32_t n = 0;
	bool found = false;

	if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) || !n)
		return false;
	e = calloc(n, sizeof(*e));
	if (!e)
		return false;
	if (!vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e))
		for (uint32_t i = 0; i < n; i++)
			if (!strcmp(e[i].extensionName, name))
				found = true;
	free(e);
	return found;
}

/* A queue family with compute, or -1. */
static int compute_family(VkPhysicalDevice pd)
{
	VkQueueFamilyProperties q[16];
	uint32_t n = 16;

	vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
	for (uint32_t i = 0; i < n; i++)
		if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			return (int)i;
	return -1;
}

static const char *type_name(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return "integrated";
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return "discrete";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return "virtual";
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return "cpu";
	default:
		return "other";
	}
}

static void describe(VkPhysicalDevice pd, struct edgeq_backend_device *d)
{
	VkPhysicalDeviceProperties p;
	VkPhysicalDeviceMemoryProperties mp;

	vkGetPhysicalDeviceProperties(pd, &p);
	vkGetPhysicalDeviceMemoryProperties(pd, &mp);
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", p.deviceName);
	snprintf(d->type, sizeof(d->type), "%s", type_name(p.deviceType));
	d->api_version = p.apiVersion;
	for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
		if ((mp.memoryHeaps[i].flags &
		     VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
		    mp.memoryHeaps[i].size > d->heap_bytes)
			d->heap_bytes = mp.memoryHeaps[i].size;
	d->host_import =
		has_ext(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
	d->usable = p.apiVersion >= VK_API_VERSION_1_2 &&
		    compute_family(pd) >= 0;
}

/* The physical devices of @inst: up to @max at @pd, returns the count. */
static int physical(VkInstance inst, VkPhysicalDevice *pd, uint32_t max)
{
	uint32_t n = max;
	VkResult r = vkEnumeratePhysicalDevices(inst, &n, pd);

	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return vk_errno(r);
	return (int)n;
}

#define VK_MAX_DEV 16

static int vk_list(struct edgeq_backend_device *d, size_t max)
{
	VkPhysicalDevice pd[VK_MAX_DEV];
	VkInstance inst;
	int n, ret = instance_new(&inst);

	if (ret)
		return ret;
	n = physical(inst, pd, VK_MAX_DEV);
	for (int i = 0; i < n && (size_t)i < max; i++)
		describe(pd[i], &d[i]);
	vkDestroyInstance(inst, NULL);
	if (n == 0)
		return -ENODEV;
	return n;
}

int vk_find_memtype(struct vk_ctx *v, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < v->memprops.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (v->memprops.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

/* Host-visible, coherent memory, device-local when there is such. */
static int host_memtype(struct vk_ctx *v, uint32_t bits)
{
	const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	int t = vk_find_memtype(v, bits,
				hv | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);

	return t >= 0 ? t : vk_find_memtype(v, bits, hv);
}

static int buffer_new(struct vk_ctx *v, uint64_t size, bool external,
		      VkBuffer *buf, VkMemoryRequirements *req)
{
	const VkExternalMemoryBufferCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes =
			VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
	};
	const VkBufferCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = external ? &ext : NULL,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	int ret = vk_errno(vkCreateBuffer(v->dev, &ci, NULL, buf));

	if (!ret)
		vkGetBufferMemoryRequirements(v->dev, *buf, req);
	return ret;
}

void vk_buf_destroy(struct vk_ctx *v, struct vk_buf *b)
{
	if (b->host && !b->imported)
		vkUnmapMemory(v->dev, b->mem);
	if (b->buf)
		vkDestroyBuffer(v->dev, b->buf, NULL);
	if (b->mem)
		vkFreeMemory(v->dev, b->mem, NULL);
	if (!b->imported)
		v->device_bytes -= b->len;
	memset(b, 0, sizeof(*b));
}

/* Import [base, base + len) of host memory; -ENOTSUP when it cannot be. */
static int buf_import(struct vk_ctx *v, void *base, uint64_t len,
		      struct vk_buf *b)
{
	VkMemoryHostPointerPropertiesEXT hp = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT,
	};
	uint64_t a = v->import_align ? v->import_align : 1;
	uint64_t size = (len + a - 1) / a * a;
	VkImportMemoryHostPointerInfoEXT imp = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
		.handleType =
			VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
		.pHostPointer = base,
	};
	VkMemoryAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &imp,
		.allocationSize = size,
	};
	VkMemoryRequirements req;
	int ret, t;

	/* the mapping is page-rounded: importing past len stays inside it */
	if (!v->import || (uintptr_t)base % a || a > (uint64_t)getpagesize())
		return -ENOTSUP;
	if (v->get_host_ptr_props(v->dev, imp.handleType, base, &hp))
		return -ENOTSUP;
	ret = buffer_new(v, size, true, &b->buf, &req);
	if (ret)
		return ret;
	t = host_memtype(v, hp.memoryTypeBits & req.memoryTypeBits);
	if (t < 0) {
		vkDestroyBuffer(v->dev, b->buf, NULL);
		b->buf = VK_NULL_HANDLE;
		return -ENOTSUP;
	}
	ai.memoryTypeIndex = (uint32_t)t;
	ret = vk_errno(vkAllocateMemory(v->dev, &ai, NULL, &b->mem));
	if (!ret)
		ret = vk_errno(vkBindBufferMemory(v->dev, b->buf, b->mem, 0));
	if (ret) {
		vkDestroyBuffer(v->dev, b->buf, NULL);
		if (b->mem)
			vkFreeMemory(v->dev, b->mem, NULL);
		b->buf = VK_NULL_HANDLE;
		b->mem = VK_NULL_HANDLE;
		return -ENOTSUP;
	}
	b->host = base;
	b->imported = true;
	b->len = len;
	return 0;
}

/* A host-visible device buffer of @len bytes, mapped at b->host. */
int vk_buf_alloc(struct vk_ctx *v, uint64_t len, struct vk_buf *b)
{
	VkMemoryRequirements req;
	VkMemoryAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
	};
	int ret, t;

	ret = buffer_new(v, len, false, &b->buf, &req);
	if (ret)
		return ret;
	t = host_memtype(v, req.memoryTypeBits);
	ai.allocationSize = req.size;
	ai.memoryTypeIndex = (uint32_t)t;
	ret = t < 0 ? -ENOMEM :
		      vk_errno(vkAllocateMemory(v->dev, &ai, NULL, &b->mem));
	if (!ret)
		ret = vk_errno(vkBindBufferMemory(v->dev, b->buf, b->mem, 0));
	if (!ret)
		ret = vk_errno(
			vkMapMemory(v->dev, b->mem, 0, len, 0, &b->host));
	b->len = len;
	v->device_bytes += len;
	if (ret)
		vk_buf_destroy(v, b);
	return ret;
}

/*
 * The device buffer mirroring @t's mapping: imported or staged, cached by
 * mapping id (id 0: a temporary, freed after the chain).
 */
int vk_buf_get(struct vk_ctx *v, const struct edgeq_backend_tensor *t,
	       struct vk_buf **out)
{
	struct vk_buf *b = NULL;
	size_t i;
	int ret;

	for (i = 0; i < v->nbufs; i++) {
		struct vk_buf *c = v->bufs[i];

		if (c->base == t->base && c->src_len == t->map_len &&
		    c->id == t->id && (t->id || c->chain == v->chain)) {
			c->chain = v->chain;
			*out = c;
			return 0;
		}
	}
	/* an array of pointers: what callers hold stays put when it grows */
	if (v->nbufs == v->capbufs) {
		size_t cap = v->capbufs ? v->capbufs * 2 : 32;
		struct vk_buf **nb = realloc(v->bufs, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		v->bufs = nb;
		v->capbufs = cap;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = buf_import(v, t->base, t->map_len, b);
	if (ret == -ENOTSUP) /* whole words: shaders read past a tail */
		ret = vk_buf_alloc(v, (t->map_len + 15) & ~15ULL, b);
	if (ret) {
		free(b);
		return ret;
	}
	if (b->imported)
		v->imported++;
	else
		v->staged++;
	b->id = t->id;
	b->base = t->base;
	b->src_len = t->map_len;
	b->chain = v->chain;
	v->bufs[v->nbufs++] = b;
	*out = b;
	return 0;
}

static void buf_drop(struct vk_ctx *v, size_t i)
{
	vk_buf_destroy(v, v->bufs[i]);
	free(v->bufs[i]);
	v->bufs[i] = v->bufs[--v->nbufs];
}

/* Temporaries of the chain just run. */
void vk_drop_temporaries(struct vk_ctx *v)
{
	for (size_t i = v->nbufs; i-- > 0;)
		if (!v->bufs[i]->id)
			buf_drop(v, i);
}

static void vk_forget(void *priv, uint64_t id)
{
	struct vk_ctx *v = priv;

	for (size_t i = v->nbufs; i-- > 0;)
		if (v->bufs[i]->id == id)
			buf_drop(v, i);
}

static uint64_t vk_release(void *priv, uint64_t bytes)
{
	struct vk_ctx *v = priv;
	uint64_t freed = 0;

	while (freed < bytes) {
		size_t lru = v->nbufs;

		for (size_t i = 0; i < v->nbufs; i++)
			if (!v->bufs[i]->imported &&
			    (lru == v->nbufs ||
			     v->bufs[i]->chain < v->bufs[lru]->chain))
				lru = i;
		if (lru == v->nbufs)
			break;
		freed += v->bufs[lru]->len;
		buf_drop(v, lru);
	}
	return freed;
}

static int pipeline_new(struct vk_ctx *v, const struct spv *spv,
			VkPipeline *out)
{
	const VkShaderModuleCreateInfo sm = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = spv->size,
		.pCode = spv->code,
	};
	VkComputePipelineCreateInfo cp = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.pName = "main",
		},
		.layout = v->layout,
	};
	VkShaderModule mod;
	int ret = vk_errno(vkCreateShaderModule(v->dev, &sm, NULL, &mod));

	if (ret)
		return ret;
	cp.stage.module = mod;
	ret = vk_errno(vkCreateComputePipelines(v->dev, VK_NULL_HANDLE, 1, &cp,
						NULL, out));
	vkDestroyShaderModule(v->dev, mod, NULL);
	return ret;
}

static int pipelines_new(struct vk_ctx *v)
{
	VkDescriptorSetLayoutBinding bind[VK_NBIND];
	const VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = sizeof(struct vk_push),
	};
	VkDescriptorSetLayoutCreateInfo dl = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = VK_NBIND,
		.pBindings = bind,
	};
	VkPipelineLayoutCreateInfo pl = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &v->dsl,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	int ret;

	for (int i = 0; i < VK_NBIND; i++)
		bind[i] = (VkDescriptorSetLayoutBinding){
			.binding = (uint32_t)i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	ret = vk_errno(vkCreateDescriptorSetLayout(v->dev, &dl, NULL, &v->dsl));
	if (!ret)
		ret = vk_errno(
			vkCreatePipelineLayout(v->dev, &pl, NULL, &v->layout));
	for (int p = 0; p < VK_PIPE_COUNT && !ret; p++) {
		if (v->float64 || !shaders[p].f32.code)
			ret = pipeline_new(v, &shaders[p].spv, &v->pipe[p]);
		if (!ret && shaders[p].f32.code)
			ret = pipeline_new(v, &shaders[p].f32, &v->pipe_f32[p]);
	}
	return ret;
}

static int submit_objects_new(struct vk_ctx *v)
{
	const VkDescriptorPoolSize ps = {
		.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.descriptorCount = VK_CHAIN_MAX * VK_NBIND,
	};
	const VkDescriptorPoolCreateInfo dp = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = VK_CHAIN_MAX,
		.poolSizeCount = 1,
		.pPoolSizes = &ps,
	};
	const VkCommandPoolCreateInfo cp = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = v->family,
	};
	VkCommandBufferAllocateInfo ca = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	const VkFenceCreateInfo fc = {
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
	};
	int ret;

	ret = vk_errno(vkCreateDescriptorPool(v->dev, &dp, NULL, &v->dpool));
	if (!ret)
		ret = vk_errno(
			vkCreateCommandPool(v->dev, &cp, NULL, &v->cpool));
	ca.commandPool = v->cpool;
	if (!ret)
		ret = vk_errno(vkAllocateCommandBuffers(v->dev, &ca, &v->cmd));
	if (!ret)
		ret = vk_errno(vkCreateFence(v->dev, &fc, NULL, &v->fence));
	return ret;
}

static void vk_close(void *priv)
{
	struct vk_ctx *v = priv;

	if (!v)
		return;
	if (v->dev) {
		vkDeviceWaitIdle(v->dev);
		while (v->nbufs)
			buf_drop(v, v->nbufs - 1);
		if (v->scratch.buf)
			vk_buf_destroy(v, &v->scratch);
		for (int p = 0; p < VK_PIPE_COUNT; p++) {
			if (v->pipe[p])
				vkDestroyPipeline(v->dev, v->pipe[p], NULL);
			if (v->pipe_f32[p])
				vkDestroyPipeline(v->dev, v->pipe_f32[p], NULL);
		}
		if (v->layout)
			vkDestroyPipelineLayout(v->dev, v->layout, NULL);
		if (v->dsl)
			vkDestroyDescriptorSetLayout(v->dev, v->dsl, NULL);
		if (v->dpool)
			vkDestroyDescriptorPool(v->dev, v->dpool, NULL);
		if (v->fence)
			vkDestroyFence(v->dev, v->fence, NULL);
		if (v->cpool)
			vkDestroyCommandPool(v->dev, v->cpool, NULL);
		vkDestroyDevice(v->dev, NULL);
	}
	if (v->inst)
		vkDestroyInstance(v->inst, NULL);
	free(v->bufs);
	free(v);
}

static int device_new(struct vk_ctx *v, VkPhysicalDevice pd)
{
	const char *ext[] = { VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME };
	const float prio = 1.0f;
	VkPhysicalDeviceFeatures have, want = { 0 };
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
		.pEnabledFeatures = &want,
	};
	const char *env, *exact;
	int fam = compute_family(pd), ret;

	if (fam < 0)
		return -ENOTSUP;
	v->family = (uint32_t)fam;
	q.queueFamilyIndex = v->family;
	vkGetPhysicalDeviceFeatures(pd, &have);
	/* EDGEQ_VK_FLOAT64=0: the float-only shaders, as on Mali or V3D */
	env = getenv("EDGEQ_VK_FLOAT64");
	want.shaderFloat64 = have.shaderFloat64 && !(env && !strcmp(env, "0"));
	v->float64 = want.shaderFloat64;
	/*
	 * Per-element float64 (exact fma in the F32/F16 and attention loops)
	 * where it is cheap: a CPU device (lavapipe, whose fma() may round
	 * twice); GPUs fuse fma() in hardware and run float64 slowly.
	 * EDGEQ_VK_EXACT=1/0 overrides.
	 */
	exact = getenv("EDGEQ_VK_EXACT");
	v->exact = v->float64 &&
		   (exact ? strcmp(exact, "0") != 0 :
			    v->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU);
	env = getenv("EDGEQ_VK_IMPORT");
	v->import = has_ext(pd, ext[0]) && !(env && !strcmp(env, "0"));
	if (v->import) {
		ci.enabledExtensionCount = 1;
		ci.ppEnabledExtensionNames = ext;
	}
	ret = vk_errno(vkCreateDevice(pd, &ci, NULL, &v->dev));
	if (ret)
		return ret;
	vkGetDeviceQueue(v->dev, v->family, 0, &v->queue);
	if (v->import) {
		VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
			.sType =
				VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT,
		};
		VkPhysicalDeviceProperties2 p2 = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
			.pNext = &hp,
		};

		vkGetPhysicalDeviceProperties2(pd, &p2);
		v->import_align = hp.minImportedHostPointerAlignment;
		v->get_host_ptr_props =
			(PFN_vkGetMemoryHostPointerPropertiesEXT)
				vkGetDeviceProcAddr(
					v->dev,
					"vkGetMemoryHostPointerPropertiesEXT");
		if (!v->get_host_ptr_props || !v->import_align)
			v->import = false;
	}
	return 0;
}

static int vk_open(int index, void **priv)
{
	VkPhysicalDevice pd[VK_MAX_DEV];
	struct vk_ctx *v = calloc(1, sizeof(*v));
	int n, ret;

	if (!v)
		return -ENOMEM;
	ret = instance_new(&v->inst);
	if (ret)
		goto fail;
	n = physical(v->inst, pd, VK_MAX_DEV);
	ret = n < 0 ? n : index >= n ? -ENOENT : 0;
	if (ret)
		goto fail;
	vkGetPhysicalDeviceProperties(pd[index], &v->props);
	vkGetPhysicalDeviceMemoryProperties(pd[index], &v->memprops);
	ret = device_new(v, pd[index]);
	if (!ret)
		ret = pipelines_new(v);
	if (!ret)
		ret = submit_objects_new(v);
	if (ret)
		goto fail;
	*priv = v;
	return 0;
fail:
	vk_close(v);
	return ret;
}

static void vk_info(void *priv, struct edgeq_backend_info *info)
{
	struct vk_ctx *v = priv;

	snprintf(info->device, sizeof(info->device), "%s", v->props.deviceName);
	info->mem = v->import ? EDGEQ_BACKEND_MEM_IMPORT :
				EDGEQ_BACKEND_MEM_STAGING;
	info->op_mask = VK_OP_MASK;
	info->device_bytes = v->device_bytes;
	info->imported = v->imported;
	info->chains = v->chains;
	info->ops = v->ops;
	info->slow_chains = v->slow_chains;
	info->dispatches = v->dispatches;
}

const struct edgeq_backend_ops edgeq_backend_vulkan = {
	.name = "vulkan",
	.list = vk_list,
	.open = vk_open,
	.close = vk_close,
	.info = vk_info,
	.supports = vk_supports,
	.run = vk_run,
	.forget = vk_forget,
	.release = vk_release,
};
