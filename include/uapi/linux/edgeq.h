/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * edgeq: accelerator work queues brokered by the kernel, executed by a
 * userspace agent (Documentation/userspace-api/edgeq.rst).
 *
 * /dev/edgeq-control     creates and destroys queues (CAP_SYS_ADMIN)
 * /dev/edgeq/<name>      one queue: clients write struct edgeq_op_desc and read
 *                        struct edgeq_completion; the agent (one at a time,
 *                        after EDGEQ_IOC_AGENT_ATTACH) reads struct
 *                        edgeq_agent_op and writes struct edgeq_agent_done.
 *
 * Tensors live in memfds (shmem, F_SEAL_SHRINK set) that a client registers
 * with EDGEQ_IOC_TENSOR_REGISTER; descriptors name them by handle, offset and
 * length. The agent gets its own fd for a handle with EDGEQ_IOC_AGENT_TENSOR_FD
 * and maps it. The kernel checks bounds but never touches tensor data.
 *
 * Every struct here has a fixed size checked by static asserts; reserved
 * fields must be zero; ioctl numbers are never reused.
 */
#ifndef _UAPI_LINUX_EDGEQ_H
#define _UAPI_LINUX_EDGEQ_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Version of the protocol described here; GET_FEATURES reports it. */
#define EDGEQ_API_VERSION 1

#define EDGEQ_NAME_MAX 16   /* queue name, NUL included: [a-z0-9_-], 1..15 */
#define EDGEQ_MAX_DIMS 4    /* shape[] entries */
#define EDGEQ_MAX_TENSORS 4 /* tensors[] entries of one op */
#define EDGEQ_MAX_QUEUES 32
#define EDGEQ_MAX_TENSOR_LEN (1ULL << 40) /* bound on offset + length */

/* Feature bits reported by EDGEQ_IOC_GET_FEATURES. */
#define EDGEQ_F_WRITE_SUBMIT (1ULL << 0) /* write() of struct edgeq_op_desc */
#define EDGEQ_F_IOCTL_SUBMIT (1ULL << 1) /* EDGEQ_IOC_SUBMIT batches */
#define EDGEQ_F_POLL (1ULL << 2)	 /* poll/epoll/io_uring POLL_ADD */
#define EDGEQ_F_PRIORITY (1ULL << 3)	 /* strict priorities, RR per level */
#define EDGEQ_F_FDINFO (1ULL << 4)	 /* drm-engine-<queue> in fdinfo */
#define EDGEQ_F_COOLING (1ULL << 5)	 /* thermal cooling device per queue */
#define EDGEQ_F_SIM_SENSOR (1ULL << 6)	 /* simulated thermal zone (param) */
#define EDGEQ_F_REQUEUE (1ULL << 7)	 /* policy "requeue" on agent loss */
#define EDGEQ_F_TIMEOUT (1ULL << 8)	 /* ops fail with -ETIMEDOUT */
/* Destroy wakes every reader and poller: -ENODEV, EPOLLERR | EPOLLHUP. */
#define EDGEQ_F_DESTROY_WAKE (1ULL << 9)
/* Tensor lengths are checked against shape and dtype at submit. */
#define EDGEQ_F_SHAPE_CHECK (1ULL << 10)
/* Per-user bounds (EDQUOT) and EDGEQ_PRIO_HIGH needs CAP_SYS_NICE. */
#define EDGEQ_F_USER_LIMITS (1ULL << 11)
/* AGENT_TENSOR_FD only for handles of ops the agent holds in flight. */
#define EDGEQ_F_AGENT_FD_SCOPED (1ULL << 12)
/*
 * EDGEQ_OP_STORE exists, and ATTENTION takes its score scale in param[0]
 * (whole decoder layers as one chain: the KV write is an op).
 */
#define EDGEQ_F_OP_STORE (1ULL << 13)
/* EDGEQ_OP_ROPE_FREQ exists: RoPE with the model's own frequencies. */
#define EDGEQ_F_OP_ROPE_FREQ (1ULL << 14)
/*
 * RMSNORM takes a second dim, rows of one weight (per-head q/k norms, a
 * prompt's tokens in one op).
 */
#define EDGEQ_F_NORM_ROWS (1ULL << 15)
/* EDGEQ_OP_GELU_MUL exists: the GELU feed-forward's gate (Gemma). */
#define EDGEQ_F_OP_GELU_MUL (1ULL << 16)
/* STORE takes a Q8_0 destination (a Q8_0 KV cache's rows). */
#define EDGEQ_F_STORE_Q8_0 (1ULL << 17)
/*
 * ROPE_FREQ, ATTENTION and ADD take a prompt's tokens in one op (a third
 * ROPE_FREQ dim; ATTENTION's causal queries in param[1]; ADD's rows of a
 * with b added to each).
 */
#define EDGEQ_F_TOKENS (1ULL << 18)
#define EDGEQ_F_ALL                                                      \
	(EDGEQ_F_WRITE_SUBMIT | EDGEQ_F_IOCTL_SUBMIT | EDGEQ_F_POLL |    \
	 EDGEQ_F_PRIORITY | EDGEQ_F_FDINFO | EDGEQ_F_COOLING |           \
	 EDGEQ_F_SIM_SENSOR | EDGEQ_F_REQUEUE | EDGEQ_F_TIMEOUT |        \
	 EDGEQ_F_DESTROY_WAKE | EDGEQ_F_SHAPE_CHECK | EDGEQ_F_USER_LIMITS | \
	 EDGEQ_F_AGENT_FD_SCOPED | EDGEQ_F_OP_STORE | EDGEQ_F_OP_ROPE_FREQ | \
	 EDGEQ_F_NORM_ROWS | EDGEQ_F_OP_GELU_MUL | EDGEQ_F_STORE_Q8_0 |   \
	 EDGEQ_F_TOKENS)

/*
 * Op codes. Tensor roles and shape per op (all activations F32, row-major):
 *  MATVEC    t0 weight [rows][cols] of @dtype, t1 x [cols], t2 y [rows];
 *            shape {rows, cols}
 *  MATMUL    t0 weight [rows][cols] of @dtype, t1 X [n][cols], t2 Y [n][rows];
 *            shape {rows, cols, n}
 *  RMSNORM   t0 x [rows][n], t1 weight [n], t2 y [rows][n]; shape {n} or
 *            {n, rows} (EDGEQ_F_NORM_ROWS), each row normalized on its own
 *            with the one weight; param[0] = eps as float bits
 *  ROPE      t0 x [heads][head_dim] in place; shape {heads, head_dim};
 *            param[0] = position; param[1] bits 0..31 = theta base as
 *            float bits (0: 10000), bits 32..63 = rotated dims per head
 *            (0: head_dim); NEOX-style halves with EDGEQ_OPF_ROPE_NEOX
 *  SOFTMAX   t0 x [rows][n] in place; shape {n, rows}
 *  ATTENTION t0 q [heads][head_dim] F32, t1 K and t2 V
 *            [n_pos][kv_heads][head_dim] of @dtype (F32, F16 or Q8_0),
 *            t3 out [heads][head_dim] F32; shape {heads, kv_heads,
 *            head_dim, n_pos}; param[0] = score scale as float bits
 *            (0: 1/sqrt(head_dim); EDGEQ_F_OP_STORE); with EDGEQ_F_TOKENS
 *            param[1] bits 0..31 = n_tok (0 or 1: one query), bits 32..63
 *            = window (0: none): q and out [n_tok][heads][head_dim], query
 *            t attends causally to rows [max(0, e - window), e), e = n_pos
 *            - n_tok + t + 1 (n_tok <= n_pos)
 *  SILU_MUL  t0 gate [n], t1 up [n], t2 out [n]: out = silu(gate) * up;
 *            shape {n}
 *  ADD       t0 a [n], t1 b [n], t2 out [n]; shape {n}; with
 *            EDGEQ_F_TOKENS also {n, rows}: a and out [rows][n], b [n]
 *            added to every row (a bias over a prompt's tokens)
 *  GELU_MUL  as SILU_MUL with out = gelu(gate) * up, GELU's tanh form as
 *            x / (1 + exp(-2 u)), u = 0.7978845608 (x + 0.044715 x^3)
 *            (EDGEQ_F_OP_GELU_MUL)
 *  STORE     t0 x [n] F32, t1 y [n] of @dtype (F32; F16, rounded to
 *            nearest even; Q8_0, n whole blocks, quantized as the CPU's
 *            activations with EDGEQ_F_STORE_Q8_0): y = x, a K or V row into
 *            a cache; shape {n} (EDGEQ_F_OP_STORE)
 *  ROPE_FREQ t0 x [heads][head_dim] in place, t1 frequencies [rot / 2] F32
 *            (the model's, scaling and per-dimension divisors applied);
 *            shape {heads, head_dim}; param[0] bits 0..31 = position as
 *            float bits (already scaled), param[1] bits 0..31 = the cos and
 *            sin factor as float bits (0: 1), bits 32..63 = rotated dims
 *            (0: head_dim); angle i = position * t1[i]; EDGEQ_OPF_ROPE_NEOX
 *            as ROPE (EDGEQ_F_OP_ROPE_FREQ); with EDGEQ_F_TOKENS shape
 *            {heads, head_dim, n_tok}, t0 [n_tok][heads][head_dim],
 *            param[0] bits 0..31 = the first token's position p0 as an
 *            integer, bits 32..63 = the position scale as float bits (0: 1):
 *            token t's position is (float)(p0 + t) * scale, rounded to float
 *  NOP       no tensors; completes at once (latency probes, tests)
 */
enum edgeq_opcode {
	EDGEQ_OP_NOP = 0,
	EDGEQ_OP_MATVEC = 1,
	EDGEQ_OP_MATMUL = 2,
	EDGEQ_OP_RMSNORM = 3,
	EDGEQ_OP_ROPE = 4,
	EDGEQ_OP_SOFTMAX = 5,
	EDGEQ_OP_ATTENTION = 6,
	EDGEQ_OP_SILU_MUL = 7,
	EDGEQ_OP_ADD = 8,
	EDGEQ_OP_STORE = 9,
	EDGEQ_OP_ROPE_FREQ = 10,
	EDGEQ_OP_GELU_MUL = 11,
	EDGEQ_OP_COUNT = 12,
};

/* Tensor element types: the GGUF/ggml type ids. */
enum edgeq_dtype {
	EDGEQ_DTYPE_F32 = 0,
	EDGEQ_DTYPE_F16 = 1,
	EDGEQ_DTYPE_Q4_0 = 2,
	EDGEQ_DTYPE_Q8_0 = 8,
	EDGEQ_DTYPE_Q4_K = 12,
	EDGEQ_DTYPE_Q6_K = 14,
	EDGEQ_DTYPE_BF16 = 30,
	EDGEQ_DTYPE_MAX = 39,
};

/* Priorities: strict between levels, round-robin between clients in one. */
#define EDGEQ_PRIO_LOW 0
#define EDGEQ_PRIO_NORMAL 1
#define EDGEQ_PRIO_HIGH 2 /* needs CAP_SYS_NICE (EDGEQ_F_USER_LIMITS) */
#define EDGEQ_PRIO_RT 3	  /* needs CAP_SYS_NICE */
#define EDGEQ_PRIO_COUNT 4

/* struct edgeq_op_desc.flags */
#define EDGEQ_OPF_ROPE_NEOX (1U << 0)
#define EDGEQ_OPF_ALL (EDGEQ_OPF_ROPE_NEOX)

/* A reference to bytes of a registered memfd. */
struct edgeq_tensor_ref {
	__u32 handle;	/* from EDGEQ_IOC_TENSOR_REGISTER */
	__u32 reserved; /* must be zero */
	__u64 offset;	/* bytes from the start of the memfd */
	__u64 length;	/* bytes; offset + length <= memfd size */
};

/* One op, as a client submits it (write() or EDGEQ_IOC_SUBMIT). */
struct edgeq_op_desc {
	__u32 size;    /* sizeof(struct edgeq_op_desc) */
	__u16 opcode;  /* enum edgeq_opcode */
	__u8 priority; /* EDGEQ_PRIO_* */
	__u8 ndims;    /* used entries of shape[], <= EDGEQ_MAX_DIMS */
	__u64 cookie;  /* returned unchanged in the completion */
	__u32 dtype;   /* enum edgeq_dtype of the weight/first tensor */
	__u32 flags;   /* EDGEQ_OPF_* */
	__u64 shape[EDGEQ_MAX_DIMS]; /* per op, see enum edgeq_opcode */
	__u32 ntensors;		     /* used entries of tensors[] */
	__u32 reserved0;	     /* must be zero */
	struct edgeq_tensor_ref tensors[EDGEQ_MAX_TENSORS];
	__u64 param[2];	   /* op parameters, see enum edgeq_opcode */
	__u64 reserved[4]; /* must be zero */
};

/* The result of one op, read() by the client that submitted it. */
struct edgeq_completion {
	__u64 cookie; /* edgeq_op_desc.cookie */
	/* 0 or -errno: -ENODEV agent lost, -ETIMEDOUT, -EINVAL ... */
	__s32 status;
	__u16 opcode;
	__u16 reserved0;
	__u64 busy_ns;	  /* execution time reported by the agent */
	__u64 latency_ns; /* submit to completion, kernel clock */
	__u64 reserved[2];
};

/* What the agent read()s: one dispatched op. */
struct edgeq_agent_op {
	__u64 tag;	  /* echo in edgeq_agent_done.tag */
	__u32 client_pid; /* tgid of the submitter (in the agent's pidns) */
	__u32 client_id;  /* per-queue id of the submitting file */
	__u64 reserved[2];
	/* as submitted; its handles are valid for EDGEQ_IOC_AGENT_TENSOR_FD */
	struct edgeq_op_desc op;
};

/* What the agent write()s when an op is done. */
struct edgeq_agent_done {
	__u64 tag;    /* from edgeq_agent_op.tag */
	__s32 status; /* 0 or -errno (-4095..0) */
	__u32 flags;  /* must be zero */
	/* device time spent on it; clamped to the time since dispatch */
	__u64 busy_ns;
	__u64 reserved[2];
};

/* EDGEQ_IOC_GET_FEATURES (control device and queue devices). */
struct edgeq_features {
	__u32 size;	       /* in: sizeof(struct edgeq_features) */
	__u32 version;	       /* out: EDGEQ_API_VERSION */
	__u64 features;	       /* out: EDGEQ_F_* */
	__u32 op_size;	       /* out: sizeof(struct edgeq_op_desc) */
	__u32 completion_size; /* out: sizeof(struct edgeq_completion) */
	__u32 agent_op_size;   /* out: sizeof(struct edgeq_agent_op) */
	__u32 agent_done_size; /* out: sizeof(struct edgeq_agent_done) */
	__u32 max_tensors;     /* out: EDGEQ_MAX_TENSORS */
	__u32 max_dims;	       /* out: EDGEQ_MAX_DIMS */
	__u32 max_batch;       /* out: ops per write()/SUBMIT */
	__u32 max_outstanding; /* out: ops a client may have unreaped */
	/* out, with EDGEQ_F_USER_LIMITS (else 0): per-user bounds */
	__u32 max_user_ops;	/* ops one user may have unreaped */
	__u32 max_user_tensors; /* memfds one user may have registered */
	__u64 reserved[3];
};

/* EDGEQ_IOC_QUEUE_CREATE / EDGEQ_IOC_QUEUE_DESTROY (control device). */
struct edgeq_queue_ctl {
	__u32 size;		   /* sizeof(struct edgeq_queue_ctl) */
	__u32 flags;		   /* must be zero */
	char name[EDGEQ_NAME_MAX]; /* NUL-terminated queue name */
	__u32 max_inflight;	   /* create: 0 = default; destroy: zero */
	__u32 timeout_ms;	   /* create: 0 = default; destroy: zero */
	__u32 id; /* out (create): queue id, as in tracepoints */
	__u32 reserved0;
	__u64 reserved[2];
};

/* EDGEQ_IOC_TENSOR_REGISTER (queue device, client). */
struct edgeq_tensor_reg {
	__u32 size;   /* sizeof(struct edgeq_tensor_reg) */
	__s32 fd;     /* a memfd with F_SEAL_SHRINK */
	__u32 flags;  /* must be zero */
	__u32 handle; /* out: handle for edgeq_tensor_ref */
	__u64 length; /* out: size of the memfd at registration */
	__u64 reserved[2];
};

/* EDGEQ_IOC_TENSOR_UNREGISTER (queue device, client). */
struct edgeq_tensor_unreg {
	__u32 size;   /* sizeof(struct edgeq_tensor_unreg) */
	__u32 handle; /* -EBUSY while an op of the client uses it */
	__u64 reserved[1];
};

/* EDGEQ_IOC_SUBMIT (queue device, client): a batch of ops. */
struct edgeq_submit {
	__u32 size;	 /* sizeof(struct edgeq_submit) */
	__u32 count;	 /* ops at @ops, 1..max_batch */
	__u64 ops;	 /* user pointer to struct edgeq_op_desc[count] */
	__u32 submitted; /* out: ops accepted (all of them on success) */
	__u32 reserved0;
	__u64 reserved[2];
};

/* EDGEQ_IOC_AGENT_ATTACH (queue device; CAP_SYS_ADMIN). */
struct edgeq_agent_attach {
	__u32 size;  /* sizeof(struct edgeq_agent_attach) */
	__u32 flags; /* must be zero */
	/* bit n: accepts opcode n; others fail at submit: -EOPNOTSUPP */
	__u64 op_mask;
	__u64 reserved[2];
};

/* EDGEQ_IOC_AGENT_TENSOR_FD (queue device, attached agent). */
struct edgeq_agent_tensor_fd {
	__u32 size;   /* sizeof(struct edgeq_agent_tensor_fd) */
	__u32 handle; /* a handle from an edgeq_agent_op */
	__u32 flags;  /* must be zero; the fd is O_CLOEXEC */
	__s32 fd;     /* out: a new fd for the memfd */
	__u64 length; /* out: its size at registration */
	__u64 reserved[2];
};

/*
 * Ioctls. Numbers are never reused. Unless said otherwise they return 0 or
 * -1 with errno: EFAULT (unreadable argument), EINVAL (bad size, flags or
 * reserved words), ENODEV (queue destroyed), ENOTTY (unknown command).
 */
#define EDGEQ_IOC_MAGIC 0xEE
/* Any file. In: size. Out: the whole struct edgeq_features. */
#define EDGEQ_IOC_GET_FEATURES \
	_IOWR(EDGEQ_IOC_MAGIC, 0x00, struct edgeq_features)
/* Control file, CAP_SYS_ADMIN. In: name, limits. Out: id. EEXIST, ENOSPC. */
#define EDGEQ_IOC_QUEUE_CREATE \
	_IOWR(EDGEQ_IOC_MAGIC, 0x01, struct edgeq_queue_ctl)
/* Control file, CAP_SYS_ADMIN. In: name. ENOENT. */
#define EDGEQ_IOC_QUEUE_DESTROY \
	_IOW(EDGEQ_IOC_MAGIC, 0x02, struct edgeq_queue_ctl)
/* Client. In: fd. Out: handle, length. EBADF, EINVAL (not a sealed memfd),
 * EMFILE (256 per file), EBUSY (the agent's file).
 */
#define EDGEQ_IOC_TENSOR_REGISTER \
	_IOWR(EDGEQ_IOC_MAGIC, 0x10, struct edgeq_tensor_reg)
/* Client. In: handle. ENOENT, EBUSY (an op uses it). */
#define EDGEQ_IOC_TENSOR_UNREGISTER \
	_IOW(EDGEQ_IOC_MAGIC, 0x11, struct edgeq_tensor_unreg)
/* Client. In: count, ops. Out: submitted. Errors as write(). */
#define EDGEQ_IOC_SUBMIT _IOWR(EDGEQ_IOC_MAGIC, 0x12, struct edgeq_submit)
/* Any file without tensors or ops, CAP_SYS_ADMIN. In: op_mask. EBUSY. */
#define EDGEQ_IOC_AGENT_ATTACH \
	_IOW(EDGEQ_IOC_MAGIC, 0x20, struct edgeq_agent_attach)
/* The agent; argument 0. As closing: in-flight ops fail or are requeued. */
#define EDGEQ_IOC_AGENT_DETACH _IO(EDGEQ_IOC_MAGIC, 0x21)
/* The agent. In: handle. Out: fd (O_CLOEXEC), length. ENOENT, EPERM. */
#define EDGEQ_IOC_AGENT_TENSOR_FD \
	_IOWR(EDGEQ_IOC_MAGIC, 0x22, struct edgeq_agent_tensor_fd)

#define EDGEQ_UAPI_ASSERT(t, n) _Static_assert(sizeof(t) == (n), #t " ABI size")
#ifndef __cplusplus
EDGEQ_UAPI_ASSERT(struct edgeq_tensor_ref, 24);
EDGEQ_UAPI_ASSERT(struct edgeq_op_desc, 208);
EDGEQ_UAPI_ASSERT(struct edgeq_completion, 48);
EDGEQ_UAPI_ASSERT(struct edgeq_agent_op, 240);
EDGEQ_UAPI_ASSERT(struct edgeq_agent_done, 40);
EDGEQ_UAPI_ASSERT(struct edgeq_features, 80);
EDGEQ_UAPI_ASSERT(struct edgeq_queue_ctl, 56);
EDGEQ_UAPI_ASSERT(struct edgeq_tensor_reg, 40);
EDGEQ_UAPI_ASSERT(struct edgeq_tensor_unreg, 16);
EDGEQ_UAPI_ASSERT(struct edgeq_submit, 40);
EDGEQ_UAPI_ASSERT(struct edgeq_agent_attach, 32);
EDGEQ_UAPI_ASSERT(struct edgeq_agent_tensor_fd, 40);
#endif

#endif /* _UAPI_LINUX_EDGEQ_H */
