// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The Vulkan backend's ops: each edgeq op checked against its tensors'
 * lengths (as kq/exec.c does for the CPU), planned (pipeline, workgroups,
 * push constants, scratch), then a chain of them recorded into one command
 * buffer with a barrier after every dispatch, submitted and waited for.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <edgeq/kq.h>

#include "gpu/vulkan/vk.h"
#include "kernels/kernels.h"

/* a chain that takes longer is counted slow (EDGEQ_VK_TIMEOUT_MS) */
#define VK_WAIT_NS 60000000000ULL
#define MAX_HEAD_DIM 512u /* shaders/attn.glsl MAXQB */
#define MAX_GROUPS 65535u
#define MV_TOKENS 8u /* shaders/mm_*.comp TT */
_Static_assert(VK_PIPE_MM_Q6_K - VK_PIPE_MM_F32 ==
			       VK_PIPE_MV_Q6_K - VK_PIPE_MV_F32 &&
		       VK_PIPE_MM_Q6_K - VK_PIPE_MM_F32 == 5 &&
		       VK_PIPE_MV_Q6_K - VK_PIPE_MV_F32 == 5,
	       "a MATMUL pipe is its MATVEC's at a fixed offset");

/* Tensors an op writes, and those that are read-only model weights. */
static const uint8_t out_mask[EDGEQ_OP_COUNT] = {
	[EDGEQ_OP_MATVEC] = 1u << 2,   [EDGEQ_OP_MATMUL] = 1u << 2,
	[EDGEQ_OP_RMSNORM] = 1u << 2,  [EDGEQ_OP_ROPE] = 1u << 0,
	[EDGEQ_OP_SOFTMAX] = 1u << 0,  [EDGEQ_OP_ATTENTION] = 1u << 3,
	[EDGEQ_OP_SILU_MUL] = 1u << 2, [EDGEQ_OP_ADD] = 1u << 2,
	[EDGEQ_OP_STORE] = 1u << 1,    [EDGEQ_OP_ROPE_FREQ] = 1u << 0,
	[EDGEQ_OP_GELU_MUL] = 1u << 2,
};
static const uint8_t in_mask[EDGEQ_OP_COUNT] = {
	[EDGEQ_OP_MATVEC] = 3u,	  [EDGEQ_OP_MATMUL] = 3u,
	[EDGEQ_OP_RMSNORM] = 3u,  [EDGEQ_OP_ROPE] = 1u,
	[EDGEQ_OP_SOFTMAX] = 1u,  [EDGEQ_OP_ATTENTION] = 7u,
	[EDGEQ_OP_SILU_MUL] = 3u, [EDGEQ_OP_ADD] = 3u,
	[EDGEQ_OP_STORE] = 1u,	  [EDGEQ_OP_ROPE_FREQ] = 3u,
	[EDGEQ_OP_GELU_MUL] = 3u,
};
static const uint8_t weight_mask[EDGEQ_OP_COUNT] = {
	[EDGEQ_OP_MATVEC] = 1u,
	[EDGEQ_OP_MATMUL] = 1u,
	[EDGEQ_OP_RMSNORM] = 1u << 1,
	[EDGEQ_OP_ROPE_FREQ] = 1u << 1,
};

/* One op, ready to record. */
struct op_plan {
	int pre;   /* quantizing pass before the main one, or -1 */
	int qpass; /* the pass of the activations it reads (pre, or the
		    * previous op's when it shares them), or -1 */
	int pipe;
	uint32_t pre_groups;
	uint32_t groups[3];
	struct vk_push pre_pc, pc;
	uint64_t scratch_words;
	struct vk_buf *buf[EDGEQ_MAX_TENSORS];
	VkDescriptorBufferInfo bi[VK_NBIND];
};

static float bits_to_float(uint64_t v)
{
	uint32_t u = (uint32_t)v;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* a * b * c elements of @esize bytes fit in @len. */
static bool fits(uint64_t len, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t esize)
{
	uint64_t n;

	if (__builtin_mul_overflow(a, b, &n) ||
	    __builtin_mul_overflow(n, c, &n) ||
	    __builtin_mul_overflow(n, esize, &n))
		return false;
	return n <= len;
}

static uint32_t div_up(uint64_t a, uint32_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

static int mv_pipe(uint32_t dtype)
{
	switch (dtype) {
	case EDGEQ_DTYPE_F32:
		return VK_PIPE_MV_F32;
	case EDGEQ_DTYPE_F16:
		return VK_PIPE_MV_F16;
	case EDGEQ_DTYPE_Q8_0:
		return VK_PIPE_MV_Q8_0;
	case EDGEQ_DTYPE_Q4_0:
		return VK_PIPE_MV_Q4_0;
	case EDGEQ_DTYPE_Q4_K:
		return VK_PIPE_MV_Q4_K;
	case EDGEQ_DTYPE_Q6_K:
		return VK_PIPE_MV_Q6_K;
	}
	return -1;
}

static int attn_pipe(uint32_t dtype)
{
	switch (dtype) {
	case EDGEQ_DTYPE_F32:
		return VK_PIPE_ATTN_F32;
	case EDGEQ_DTYPE_F16:
		return VK_PIPE_ATTN_F16;
	case EDGEQ_DTYPE_Q8_0:
		return VK_PIPE_ATTN_Q8_0;
	}
	return -1;
}

bool vk_supports(void *priv, const struct edgeq_op_desc *op)
{
	switch (op->opcode) {
	case EDGEQ_OP_MATVEC:
	case EDGEQ_OP_MATMUL:
		return mv_pipe(op->dtype) >= 0;
	case EDGEQ_OP_ATTENTION:
		return attn_pipe(op->dtype) >= 0;
	case EDGEQ_OP_STORE:
		return op->dtype == EDGEQ_DTYPE_F32 ||
		       op->dtype == EDGEQ_DTYPE_F16 ||
		       op->dtype == EDGEQ_DTYPE_Q8_0;
	default:
		return op->opcode < EDGEQ_OP_COUNT;
	}
}

static int plan_matmul(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t rows = op->shape[0], cols = op->shape[1];
	uint64_t nb = op->opcode == EDGEQ_OP_MATMUL ? op->shape[2] : 1, wgs;
	size_t wrow = edgeq_row_size(op->dtype, (int64_t)cols);
	bool k_quant = op->dtype == EDGEQ_DTYPE_Q4_K ||
		       op->dtype == EDGEQ_DTYPE_Q6_K;
	bool quant = k_quant || op->dtype == EDGEQ_DTYPE_Q8_0 ||
		     op->dtype == EDGEQ_DTYPE_Q4_0;
	uint32_t tile;

	p->pipe = mv_pipe(op->dtype);
	if (p->pipe < 0)
		return -EOPNOTSUPP;
	tile = nb > 1 ? MV_TOKENS : 1;
	if (tile > 1) /* the same rows and order, weights read once a tile */
		p->pipe += VK_PIPE_MM_F32 - VK_PIPE_MV_F32;
	if (!wrow || rows > (uint64_t)MAX_GROUPS * MAX_GROUPS ||
	    nb > MAX_GROUPS || cols > UINT32_MAX / 4 ||
	    !fits(op->tensors[0].length, rows, wrow, 1, 1) ||
	    !fits(op->tensors[1].length, nb, cols, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, nb, rows, 1, sizeof(float)))
		return -EINVAL;
	p->pc.n[0] = (uint32_t)rows;
	p->pc.n[1] = (uint32_t)cols;
	p->pc.n[2] = (uint32_t)nb;
	/* quantized weights run one row per thread, 32 per workgroup; a
	 * workgroup takes a tile of activation rows (shaders/mv.glsl TT) */
	wgs = quant ? div_up(rows, 32) : rows;
	p->groups[0] = wgs < MAX_GROUPS ? (uint32_t)wgs : MAX_GROUPS;
	p->groups[1] = div_up(wgs, MAX_GROUPS);
	p->groups[2] = div_up(nb, tile);
	if (!quant)
		return 0;
	/* activations quantized into scratch first (shaders/q8_*.comp) */
	p->pre = p->qpass = k_quant ? VK_PIPE_Q8_K : VK_PIPE_Q8_0;
	p->pre_pc.n[0] = (uint32_t)cols;
	p->pre_pc.n[1] = (uint32_t)nb;
	if (k_quant) {
		p->scratch_words = nb * (cols / 256) * 81;
		p->pre_groups = div_up(nb * (cols / 256), 64);
	} else {
		p->scratch_words = nb * (cols / 32) * 9;
		p->pre_groups = div_up(nb * (cols / 32), 64);
	}
	return 0;
}

static int plan_rope(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t heads = op->shape[0], hd = op->shape[1];
	uint64_t n_rot = op->param[1] >> 32, n_tok = edgeq_op_rope_tokens(op);

	if (!n_rot)
		n_rot = hd;
	if (n_rot % 2 || n_rot > hd || hd > UINT32_MAX || n_tok > MAX_GROUPS ||
	    !fits(op->tensors[0].length, n_tok, heads, hd, sizeof(float)) ||
	    heads * n_rot / 2 * n_tok > (uint64_t)MAX_GROUPS * 64)
		return -EINVAL;
	if (op->opcode == EDGEQ_OP_ROPE_FREQ &&
	    !fits(op->tensors[1].length, n_rot / 2, 1, 1, sizeof(float)))
		return -EINVAL;
	p->pipe = VK_PIPE_ROPE;
	p->pc.n[0] = (uint32_t)heads;
	p->pc.n[1] = (uint32_t)hd;
	p->pc.p[0] = (uint32_t)n_rot;
	p->pc.n[2] = (uint32_t)n_tok;
	p->pc.p[1] = !!(op->flags & EDGEQ_OPF_ROPE_NEOX);
	p->scratch_words = n_tok * n_rot;
	p->groups[0] = div_up(n_tok * heads * n_rot / 2, 64);
	return 0;
}

static int plan_attention(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t heads = op->shape[0], kvh = op->shape[1], hd = op->shape[2];
	uint64_t npos = op->shape[3], n_tok = op->param[1] & 0xffffffffu;
	size_t hrow;
	float scale;

	p->pipe = attn_pipe(op->dtype);
	if (p->pipe < 0)
		return -EOPNOTSUPP;
	if (op->dtype == EDGEQ_DTYPE_Q8_0)
		hrow = edgeq_row_size(EDGEQ_TYPE_Q8_0, (int64_t)hd);
	else
		hrow = hd * (op->dtype == EDGEQ_DTYPE_F16 ? 2 : 4);
	if (!n_tok)
		n_tok = 1;
	if (!hrow || heads % kvh || hd > MAX_HEAD_DIM || heads > MAX_GROUPS ||
	    npos > UINT32_MAX / 4 || n_tok > npos || n_tok > MAX_GROUPS ||
	    !fits(op->tensors[0].length, n_tok, heads, hd, 4) ||
	    !fits(op->tensors[1].length, npos, kvh, hrow, 1) ||
	    !fits(op->tensors[2].length, npos, kvh, hrow, 1) ||
	    !fits(op->tensors[3].length, n_tok, heads, hd, 4) ||
	    n_tok * heads * npos > UINT32_MAX)
		return -EINVAL;
	scale = op->param[0] ? bits_to_float(op->param[0]) :
			       1.0f / sqrtf((float)hd);
	for (int i = 0; i < 4; i++)
		p->pc.n[i] = (uint32_t)op->shape[i];
	memcpy(&p->pc.p[0], &scale, sizeof(scale));
	/* a prompt's queries: one workgroup per (head, token) */
	p->pc.p[1] = (uint32_t)n_tok;
	p->pc.p[2] = (uint32_t)(op->param[1] >> 32);
	p->scratch_words = n_tok * heads * npos;
	p->groups[0] = (uint32_t)heads;
	p->groups[1] = (uint32_t)n_tok;
	return 0;
}

/* STORE into an F16 row two halves a word: n even; into a Q8_0 row two
 * blocks (17 words) an invocation: n a multiple of 64; the row
 * word-aligned (bind_tensor() checks the offset). */
static int plan_store(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t n = op->shape[0];
	bool f16 = op->dtype == EDGEQ_DTYPE_F16;
	bool q8 = op->dtype == EDGEQ_DTYPE_Q8_0;
	size_t row = edgeq_row_size(op->dtype, (int64_t)n);

	if (!f16 && !q8 && op->dtype != EDGEQ_DTYPE_F32)
		return -EOPNOTSUPP;
	if ((f16 && n % 2) || (q8 && n % 64) || !row ||
	    n > (uint64_t)MAX_GROUPS * 64 ||
	    !fits(op->tensors[0].length, n, 1, 1, 4) ||
	    !fits(op->tensors[1].length, row, 1, 1, 1))
		return -EINVAL;
	p->pipe = VK_PIPE_STORE;
	p->pc.n[0] = (uint32_t)n;
	p->pc.p[0] = q8 ? 2 : f16;
	p->groups[0] = div_up(q8 ? n / 64 : f16 ? n / 2 : n, 64);
	return 0;
}

/* RMSNORM: one workgroup per row (shape {n} or {n, rows}). */
static int plan_rmsnorm(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t n = op->shape[0], rows = op->ndims == 2 ? op->shape[1] : 1;

	if (!fits(op->tensors[0].length, rows, n, 1, sizeof(float)) ||
	    !fits(op->tensors[1].length, n, 1, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, rows, n, 1, sizeof(float)) ||
	    rows * n > UINT32_MAX || rows > (uint64_t)MAX_GROUPS * MAX_GROUPS)
		return -EINVAL;
	p->pipe = VK_PIPE_RMSNORM;
	p->pc.n[0] = (uint32_t)n;
	p->pc.n[1] = (uint32_t)rows;
	p->pc.p[0] = (uint32_t)op->param[0];
	/* the shader's row is y * x_groups + x; past n1 a group returns */
	p->groups[0] = rows <= MAX_GROUPS ? (uint32_t)rows : MAX_GROUPS;
	p->groups[1] = div_up(rows, p->groups[0]);
	return 0;
}

static int plan_simple(const struct edgeq_op_desc *op, struct op_plan *p)
{
	uint64_t n = op->shape[0], rows;

	if (op->opcode == EDGEQ_OP_SOFTMAX) {
		if (!fits(op->tensors[0].length, op->shape[1], n, 1, 4) ||
		    op->shape[1] > (uint64_t)MAX_GROUPS * 64 || n > UINT32_MAX)
			return -EINVAL;
		p->pipe = VK_PIPE_SOFTMAX;
		p->pc.n[0] = (uint32_t)n;
		p->pc.n[1] = (uint32_t)op->shape[1];
		p->groups[0] = div_up(op->shape[1], 64);
		return 0;
	}
	if (op->opcode == EDGEQ_OP_RMSNORM)
		return plan_rmsnorm(op, p);
	/* ADD {n, rows}: b's one row added to each of a's (EDGEQ_F_TOKENS) */
	rows = op->ndims == 2 ? op->shape[1] : 1;
	if (!fits(op->tensors[0].length, rows, n, 1, sizeof(float)) ||
	    !fits(op->tensors[1].length, n, 1, 1, sizeof(float)) ||
	    !fits(op->tensors[2].length, rows, n, 1, sizeof(float)) ||
	    rows * n > (uint64_t)MAX_GROUPS * 64)
		return -EINVAL;
	p->pc.n[0] = (uint32_t)(rows * n);
	p->pc.n[1] = (uint32_t)n;
	switch (op->opcode) {
	case EDGEQ_OP_ADD:
		p->pipe = VK_PIPE_ADD;
		break;
	case EDGEQ_OP_GELU_MUL:
		p->pipe = VK_PIPE_GELU_MUL;
		break;
	default:
		p->pipe = VK_PIPE_SILU_MUL;
		break;
	}
	p->groups[0] = div_up(rows * n, 64);
	return 0;
}

static int plan_op(const struct edgeq_op_desc *op, struct op_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->pre = p->qpass = -1;
	p->pipe = -1;
	p->groups[0] = p->groups[1] = p->groups[2] = 1;
	for (unsigned int i = 0; i < op->ntensors; i++)
		if (op->tensors[i].length % 4 &&
		    !(weight_mask[op->opcode] & (1u << i)) &&
		    op->opcode != EDGEQ_OP_ATTENTION &&
		    op->opcode != EDGEQ_OP_STORE)
			return -EINVAL; /* f32 tensors are whole floats */
	switch (op->opcode) {
	case EDGEQ_OP_NOP:
		return 0;
	case EDGEQ_OP_MATVEC:
	case EDGEQ_OP_MATMUL:
		return plan_matmul(op, p);
	case EDGEQ_OP_ROPE:
	case EDGEQ_OP_ROPE_FREQ:
		return plan_rope(op, p);
	case EDGEQ_OP_ATTENTION:
		return plan_attention(op, p);
	case EDGEQ_OP_STORE:
		return plan_store(op, p);
	default:
		return plan_simple(op, p);
	}
}

/* Binding @i of @p: tensor @t in buffer @b (word-aligned offsets only). */
static int bind_tensor(struct vk_ctx *v, struct op_plan *p, int i,
		       struct vk_buf *b, const struct edgeq_backend_tensor *t)
{
	uint64_t align = v->props.limits.minStorageBufferOffsetAlignment;
	uint64_t off = t->offset / align * align, end;

	if ((t->offset - off) % 4)
		return -EINVAL;
	end = (t->offset + t->length + 3) & ~3ULL;
	if (end > b->len)
		end = b->len;
	if (end - off > v->props.limits.maxStorageBufferRange)
		return -E2BIG;
	p->bi[i] = (VkDescriptorBufferInfo){ b->buf, off,
					     end > off ? end - off : 4 };
	p->pc.o[i] = p->pre_pc.o[i] = (uint32_t)((t->offset - off) / 4);
	p->buf[i] = b;
	return 0;
}

static bool range_valid(const struct vk_buf *b, uint64_t off, uint64_t len)
{
	for (unsigned int i = 0; i < b->nvalid; i++)
		if (b->valid_off[i] == off && b->valid_len[i] == len)
			return true;
	return false;
}

/* Staging: inputs into the device buffers before the chain runs. */
static void copy_in(const struct edgeq_op_desc *op, struct op_plan *p,
		    const struct edgeq_backend_tensor *t)
{
	for (unsigned int i = 0; i < op->ntensors; i++) {
		struct vk_buf *b = p->buf[i];
		bool weight = weight_mask[op->opcode] & (1u << i);

		if (b->imported || !(in_mask[op->opcode] & (1u << i)))
			continue;
		if (weight && b->id && range_valid(b, t[i].offset, t[i].length))
			continue;
		memcpy((char *)b->host + t[i].offset,
		       (char *)t[i].base + t[i].offset, t[i].length);
		if (weight && b->id && b->nvalid < 8) {
			b->valid_off[b->nvalid] = t[i].offset;
			b->valid_len[b->nvalid++] = t[i].length;
		}
	}
}

static void copy_out(const struct edgeq_op_desc *op, struct op_plan *p,
		     const struct edgeq_backend_tensor *t)
{
	for (unsigned int i = 0; i < op->ntensors; i++)
		if (!p->buf[i]->imported && (out_mask[op->opcode] & (1u << i)))
			memcpy((char *)t[i].base + t[i].offset,
			       (char *)p->buf[i]->host + t[i].offset,
			       t[i].length);
}

static int scratch_ensure(struct vk_ctx *v, uint64_t words)
{
	uint64_t bytes = words * 4 < 65536 ? 65536 : words * 4;

	if (v->scratch.buf && v->scratch.len >= bytes)
		return 0;
	if (bytes > v->props.limits.maxStorageBufferRange)
		return -E2BIG;
	if (v->scratch.buf)
		vk_buf_destroy(v, &v->scratch);
	return vk_buf_alloc(v, bytes, &v->scratch);
}

static void barrier(struct vk_ctx *v, VkPipelineStageFlags dst,
		    VkAccessFlags dst_access)
{
	const VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = dst_access,
	};

	vkCmdPipelineBarrier(v->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst,
			     0, 1, &mb, 0, NULL, 0, NULL);
}

static void dispatch(struct vk_ctx *v, int pipe, const struct vk_push *pc,
		     const uint32_t g[3])
{
	vkCmdBindPipeline(v->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
			  vk_pipeline(v, pipe));
	vkCmdPushConstants(v->cmd, v->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
			   sizeof(*pc), pc);
	vkCmdDispatch(v->cmd, g[0], g[1], g[2]);
	v->dispatches++;
	barrier(v, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

static int record_op(struct vk_ctx *v, struct op_plan *p)
{
	VkDescriptorSetAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = v->dpool,
		.descriptorSetCount = 1,
		.pSetLayouts = &v->dsl,
	};
	VkWriteDescriptorSet w[VK_NBIND];
	VkDescriptorSet set;
	const uint32_t one[3] = { 1, 1, 1 };
	int ret, pipe = p->pipe;

	if (pipe < 0)
		return 0; /* NOP */
	ret = vk_errno(vkAllocateDescriptorSets(v->dev, &ai, &set));
	if (ret)
		return ret;
	for (int i = 0; i < VK_NBIND; i++) {
		if (!p->bi[i].buffer) /* unused bindings: the scratch */
			p->bi[i] = (VkDescriptorBufferInfo){ v->scratch.buf, 0,
							     VK_WHOLE_SIZE };
		w[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = set,
			.dstBinding = (uint32_t)i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &p->bi[i],
		};
	}
	vkUpdateDescriptorSets(v->dev, VK_NBIND, w, 0, NULL);
	vkCmdBindDescriptorSets(v->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				v->layout, 0, 1, &set, 0, NULL);
	if (p->pre >= 0) {
		const uint32_t g[3] = { p->pre_groups, 1, 1 };

		dispatch(v, p->pre, &p->pre_pc, g);
	}
	dispatch(v, pipe, &p->pc, p->groups[0] ? p->groups : one);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int submit_wait(struct vk_ctx *v)
{
	const VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &v->cmd,
	};
	int ret;

	const char *env = getenv("EDGEQ_VK_TIMEOUT_MS");
	uint64_t wait = env ? strtoull(env, NULL, 10) * 1000000ULL : VK_WAIT_NS;
	uint64_t t0 = now_ns();

	ret = vk_errno(vkResetFences(v->dev, 1, &v->fence));
	if (!ret)
		ret = vk_errno(vkQueueSubmit(v->queue, 1, &si, v->fence));
	if (!ret)
		ret = vk_errno(
			vkWaitForFences(v->dev, 1, &v->fence, VK_TRUE, wait));
	/*
	 * Still running. Vulkan cannot take work back and it uses the
	 * caller's memory (imported), so it is waited for: a hung device ends
	 * in VK_ERROR_DEVICE_LOST from the driver's own watchdog. Counted,
	 * and so is a chain that outlasted the wait but was done by the time
	 * the fence was first looked at (a driver may run it inside
	 * vkQueueSubmit: lavapipe finished 80 small ops before a 0 ns wait
	 * about one time in ten, which test_slow_chain caught).
	 */
	if (ret == -ETIMEDOUT) {
		v->slow_chains++;
		ret = vk_errno(vkWaitForFences(v->dev, 1, &v->fence, VK_TRUE,
					       UINT64_MAX));
	} else if (!ret && now_ns() - t0 > wait) {
		v->slow_chains++;
	}
	return ret;
}

/* Whether a byte range [o, o + l) of mapping @b overlaps @x's. */
static bool overlaps(const struct edgeq_backend_tensor *x, const void *b,
		     uint64_t o, uint64_t l)
{
	return x->base == b && x->offset < o + l && o < x->offset + x->length;
}

/*
 * Whether op @i quantizes the same activations as op i - 1 did (q, k and
 * v of one input; gate and up): the same pass over the same input range,
 * which op i - 1 did not write. Op i then reads i - 1's scratch.
 */
static bool
shares_act(const struct edgeq_op_desc *ops,
	   const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
	   const struct op_plan *plan, unsigned int i)
{
	const struct edgeq_backend_tensor *a = &t[i][1], *b = &t[i - 1][1];

	if (plan[i].qpass < 0 || plan[i - 1].qpass != plan[i].qpass ||
	    plan[i].pre_pc.n[0] != plan[i - 1].pre_pc.n[0] ||
	    plan[i].pre_pc.n[1] != plan[i - 1].pre_pc.n[1])
		return false;
	if (a->base != b->base || a->offset != b->offset ||
	    a->length != b->length)
		return false;
	for (unsigned int k = 0; k < ops[i - 1].ntensors; k++)
		if ((out_mask[ops[i - 1].opcode] & (1u << k)) &&
		    overlaps(&t[i - 1][k], a->base, a->offset, a->length))
			return false;
	return true;
}

static bool same_range(const struct edgeq_backend_tensor *a,
		       const struct edgeq_backend_tensor *b)
{
	return a->base == b->base && a->offset == b->offset &&
	       a->length == b->length;
}

static bool disjoint(const struct edgeq_backend_tensor *a,
		     const struct edgeq_backend_tensor *b)
{
	return !overlaps(a, b->base, b->offset, b->length);
}

/*
 * Fewer dispatches for the same work (a dispatch and its barrier cost
 * ~0.2 ms on lavapipe, a few us and a pipeline drain on a GPU): op i + 1
 * goes into op i's dispatch where the two are independent and a shader
 * takes both. An RMSNORM whose output the next product quantizes writes
 * the quantized rows too (rmsnorm.glsl p1), RoPE of q then k with the same
 * table rotates both (rope.comp n3), a K row's STORE then its V row's
 * stores both (store.glsl); each shader computes every value as the
 * separate ones do, so the bits are the same. EDGEQ_VK_FUSE=0 turns it off.
 */
static void fuse(const struct vk_ctx *v, const struct edgeq_op_desc *ops,
		 const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
		 struct op_plan *plan, unsigned int n)
{
	const char *env = getenv("EDGEQ_VK_FUSE");

	if (env && !strcmp(env, "0"))
		return;
	for (unsigned int i = 0; i + 1 < n; i++) {
		struct op_plan *p = &plan[i], *q = &plan[i + 1];
		const struct edgeq_backend_tensor *a = t[i], *b = t[i + 1];

		if (p->pipe < 0 || q->pipe < 0)
			continue;
		if (p->pipe == VK_PIPE_RMSNORM &&
		    (q->pre == VK_PIPE_Q8_0 || q->pre == VK_PIPE_Q8_K) &&
		    same_range(&b[1], &a[2]) && q->pre_pc.n[0] == p->pc.n[0] &&
		    q->pre_pc.n[1] == p->pc.n[1] && disjoint(&a[0], &a[2]) &&
		    disjoint(&a[1], &a[2])) {
			p->pc.p[1] = q->pre == VK_PIPE_Q8_0 ? 1 : 2;
			p->pc.os = q->pre_pc.os;
			q->pre = -1;
		} else if (p->pipe == VK_PIPE_ROPE && q->pipe == VK_PIPE_ROPE &&
			   ops[i].opcode == ops[i + 1].opcode && !p->pc.n[3] &&
			   p->pc.n[1] == q->pc.n[1] &&
			   p->pc.n[2] == q->pc.n[2] &&
			   p->pc.p[0] == q->pc.p[0] &&
			   p->pc.p[1] == q->pc.p[1] && disjoint(&a[0], &b[0]) &&
			   !memcmp((uint32_t *)v->scratch.host + p->pc.os,
				   (uint32_t *)v->scratch.host + q->pc.os,
				   p->scratch_words * 4)) {
			p->pc.n[3] = q->pc.n[0];
			p->bi[2] = q->bi[0];
			p->pc.o[2] = q->pc.o[0];
			if (q->groups[0] > p->groups[0])
				p->groups[0] = q->groups[0];
			p->groups[1] = 2;
			q->pipe = -1;
		} else if (p->pipe == VK_PIPE_STORE &&
			   q->pipe == VK_PIPE_STORE && p->groups[1] == 1 &&
			   p->pc.n[0] == q->pc.n[0] &&
			   p->pc.p[0] == q->pc.p[0] && disjoint(&a[1], &b[0]) &&
			   disjoint(&a[1], &b[1]) && disjoint(&b[1], &a[0])) {
			p->bi[2] = q->bi[0];
			p->bi[3] = q->bi[1];
			p->pc.o[2] = q->pc.o[0];
			p->pc.o[3] = q->pc.o[1];
			p->groups[1] = 2;
			q->pipe = -1;
		}
	}
}

/* Record and run @n (<= VK_CHAIN_MAX) planned ops. */
static int
run_planned(struct vk_ctx *v, const struct edgeq_op_desc *ops,
	    const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
	    struct op_plan *plan, unsigned int n)
{
	const VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	uint64_t words = 0, scores = 0;
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		if (i && shares_act(ops, t, plan, i)) {
			/* the previous op's quantized activations */
			plan[i].pc.os = plan[i - 1].pc.os;
			plan[i].pre = -1;
			continue;
		}
		if (ops[i].opcode == EDGEQ_OP_ATTENTION) {
			/* scores live within the dispatch: one region for
			 * every attention of the chain (after the rest) */
			if (plan[i].scratch_words > scores)
				scores = plan[i].scratch_words;
			continue;
		}
		plan[i].pc.os = plan[i].pre_pc.os = (uint32_t)words;
		words += (plan[i].scratch_words + 15) & ~15ULL;
	}
	for (i = 0; i < n; i++)
		if (ops[i].opcode == EDGEQ_OP_ATTENTION)
			plan[i].pc.os = (uint32_t)words;
	words += scores;
	if (words > UINT32_MAX)
		return -E2BIG;
	ret = scratch_ensure(v, words);
	for (i = 0; i < n && !ret; i++) {
		for (unsigned int k = 0; k < ops[i].ntensors && !ret; k++) {
			struct vk_buf *b;

			ret = vk_buf_get(v, &t[i][k], &b);
			if (!ret)
				ret = bind_tensor(v, &plan[i], (int)k, b,
						  &t[i][k]);
		}
		if (!ret && (ops[i].opcode == EDGEQ_OP_ROPE ||
			     ops[i].opcode == EDGEQ_OP_ROPE_FREQ))
			edgeq_op_rope_table(
				&ops[i],
				ops[i].opcode == EDGEQ_OP_ROPE ?
					NULL :
					(const float *)((const char *)t[i][1]
								.base +
							t[i][1].offset),
				(float *)v->scratch.host + plan[i].pc.os);
	}
	if (ret)
		return ret;
	fuse(v, ops, t, plan, n);
	for (i = 0; i < n; i++)
		copy_in(&ops[i], &plan[i], t[i]);
	vkResetDescriptorPool(v->dev, v->dpool, 0);
	ret = vk_errno(vkBeginCommandBuffer(v->cmd, &bi));
	for (i = 0; i < n && !ret; i++)
		ret = record_op(v, &plan[i]);
	barrier(v, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
	if (!ret)
		ret = vk_errno(vkEndCommandBuffer(v->cmd));
	else
		vkEndCommandBuffer(v->cmd);
	if (!ret)
		ret = submit_wait(v);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		copy_out(&ops[i], &plan[i], t[i]);
	return 0;
}

int vk_run(void *priv, const struct edgeq_op_desc *ops,
	   const struct edgeq_backend_tensor (*t)[EDGEQ_MAX_TENSORS],
	   int *status, unsigned int n)
{
	struct vk_ctx *v = priv;
	struct op_plan *plan;
	unsigned int i, ok = n, done;
	int ret = 0;

	plan = calloc(n ? n : 1, sizeof(*plan));
	if (!plan)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		status[i] = plan_op(&ops[i], &plan[i]);
		if (status[i] && ok == n)
			ok = i;
		if (ok < i)
			status[i] = -ECANCELED;
	}
	for (done = 0; done < ok && !ret; done += VK_CHAIN_MAX) {
		unsigned int m = ok - done < VK_CHAIN_MAX ? ok - done :
							    VK_CHAIN_MAX;

		v->chain++;
		ret = run_planned(v, ops + done, t + done, plan + done, m);
		vk_drop_temporaries(v);
		v->chains++;
		v->ops += m;
	}
	free(plan);
	if (ret)
		for (i = 0; i < n; i++)
			status[i] = ret;
	return ret;
}
