/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kq: the userspace side of edgeq.ko's device queues
 * (Documentation/userspace-api/edgeq.rst, include/uapi/linux/edgeq.h).
 *
 * A client opens a queue, registers memfds holding its tensors, submits
 * struct edgeq_op_desc and reads struct edgeq_completion. An agent opens the
 * same queue, attaches, reads struct edgeq_agent_op, maps the tensors they
 * name and writes struct edgeq_agent_done.
 *
 * io_uring: the queue fd (edgeq_kq_fd()) takes IORING_OP_WRITE of an array
 * of struct edgeq_op_desc (at most max_batch), IORING_OP_READ into an array
 * of struct edgeq_completion, and IORING_OP_POLL_ADD for POLLIN (a
 * completion is ready) or POLLOUT (an op may be submitted). Open with
 * O_NONBLOCK when a READ must not park an io-wq worker.
 *
 * Every function returns 0 (or a count) or a negative errno; nothing prints.
 */
#ifndef EDGEQ_KQ_H
#define EDGEQ_KQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

struct edgeq_kq;

#define EDGEQ_KQ_CONTROL "/dev/edgeq-control"
#define EDGEQ_KQ_DEVDIR "/dev/edgeq"

/*
 * Open queue @name ("npu0", or a path starting with '/'). @flags: 0 or
 * O_NONBLOCK (then completion reads return -EAGAIN when none is ready).
 * -ENOENT when the queue does not exist (module not loaded, no such queue).
 */
int edgeq_kq_open(const char *name, int flags, struct edgeq_kq **out);
/* Close; unregisters everything and drops agent mappings. NULL is fine. */
void edgeq_kq_close(struct edgeq_kq *kq);
/* The queue's fd (for poll, epoll and io_uring). */
int edgeq_kq_fd(const struct edgeq_kq *kq);
/* The module's features and limits (EDGEQ_IOC_GET_FEATURES). */
int edgeq_kq_features(struct edgeq_kq *kq, struct edgeq_features *f);

/* Create/destroy a queue through /dev/edgeq-control (CAP_SYS_ADMIN). */
int edgeq_kq_queue_create(const char *name, uint32_t max_inflight,
			  uint32_t timeout_ms, uint32_t *id);
int edgeq_kq_queue_destroy(const char *name);

/* ---- tensors */

/*
 * A memfd of @size bytes sealed against shrinking and growing, mapped
 * read-write at *@map. The caller closes the fd and munmaps.
 */
int edgeq_kq_memfd(const char *name, size_t size, int *fd, void **map);
/* Register @memfd with the queue; *@handle names it in tensor refs. */
int edgeq_kq_tensor_register(struct edgeq_kq *kq, int memfd, uint32_t *handle);
/* -EBUSY while an op of this client still uses it. */
int edgeq_kq_tensor_unregister(struct edgeq_kq *kq, uint32_t handle);

/* ---- ops */

/* Zero @op and set size, opcode, cookie, priority NORMAL and ndims and
 * ntensors as @opcode takes them. */
void edgeq_op_desc_init(struct edgeq_op_desc *op, uint16_t opcode,
			uint64_t cookie);
/* Set tensor @i of @op. */
void edgeq_op_desc_tensor(struct edgeq_op_desc *op, unsigned int i,
			  uint32_t handle, uint64_t offset, uint64_t length);
/* Tensors and dims @opcode takes; -EINVAL for an unknown opcode. */
int edgeq_op_arity(uint16_t opcode, unsigned int *ntensors,
		   unsigned int *ndims);
/* @ndims is one @opcode takes: its arity's, or RMSNORM's rows (2). */
bool edgeq_op_ndims_valid(uint16_t opcode, unsigned int ndims);

/* ---- client */

/*
 * Submit @n ops by write(). Returns how many were accepted (all, or the ones
 * before the first refused), or the error of the first when none was.
 */
int edgeq_kq_submit(struct edgeq_kq *kq, const struct edgeq_op_desc *ops,
		    unsigned int n);
/* The same through EDGEQ_IOC_SUBMIT. */
int edgeq_kq_submit_ioctl(struct edgeq_kq *kq, const struct edgeq_op_desc *ops,
			  unsigned int n);
/*
 * Read up to @max completions. Blocks for at least one unless the queue
 * was opened O_NONBLOCK (then -EAGAIN). Returns the count.
 */
int edgeq_kq_complete(struct edgeq_kq *kq, struct edgeq_completion *c,
		      unsigned int max);
/* Wait up to @timeout_ms (-1: forever) for @events (POLLIN/POLLOUT);
 * returns the events ready, 0 on timeout. */
int edgeq_kq_wait(struct edgeq_kq *kq, short events, int timeout_ms);

/* ---- agent */

/* Attach as the queue's agent accepting the opcodes of @op_mask (bit n =
 * opcode n). -EBUSY when another agent is attached. */
int edgeq_kq_agent_attach(struct edgeq_kq *kq, uint64_t op_mask);
int edgeq_kq_agent_detach(struct edgeq_kq *kq);
/* Read up to @max dispatched ops (blocking unless O_NONBLOCK). */
int edgeq_kq_agent_next(struct edgeq_kq *kq, struct edgeq_agent_op *ops,
			unsigned int max);
/* Report results; returns how many were accepted (-ENOENT: tag unknown,
 * e.g. the op timed out). */
int edgeq_kq_agent_done(struct edgeq_kq *kq, const struct edgeq_agent_done *d,
			unsigned int n);
/* A new O_CLOEXEC fd of the memfd behind @handle; *@length its size. */
int edgeq_kq_agent_tensor_fd(struct edgeq_kq *kq, uint32_t handle,
			     uint64_t *length);
/*
 * The mapping of tensor @ref of an op from client @client_id: *@p points at
 * ref->offset, checked to hold ref->length bytes. Mappings are cached per
 * handle and client for the life of @kq.
 */
int edgeq_kq_agent_map(struct edgeq_kq *kq, uint32_t client_id,
		       const struct edgeq_tensor_ref *ref, void **p);

/* The whole mapping behind a tensor ref (for backends that import it). */
struct edgeq_kq_mapping {
	void *base;	 /* start of the memfd's mapping, page aligned */
	uint64_t length; /* bytes mapped (the memfd's size) */
	uint64_t id;	 /* names this mapping; never reused by the kq */
};
/* As edgeq_kq_agent_map(), giving the mapping rather than the pointer. */
int edgeq_kq_agent_mapping(struct edgeq_kq *kq, uint32_t client_id,
			   const struct edgeq_tensor_ref *ref,
			   struct edgeq_kq_mapping *m);
/* @fn(@arg, id) runs before a cached mapping is unmapped (a backend drops
 * what it imported of it). */
void edgeq_kq_agent_on_unmap(struct edgeq_kq *kq,
			     void (*fn)(void *arg, uint64_t id), void *arg);

/* ---- execution (the CPU agent; also usable by the engine's CPU path) */

/*
 * Run @op on the CPU with the engine's kernels (edgeq_kernels_select()):
 * @t[i] points at tensor i (ref offset applied), whose length is
 * op->tensors[i].length. Shapes are checked against the lengths first.
 * Returns 0, -EINVAL (shape/length mismatch), -EOPNOTSUPP (dtype or op not
 * implemented).
 */
int edgeq_kq_exec(const struct edgeq_op_desc *op, void *const t[]);

/*
 * A ROPE or ROPE_FREQ op's rotated dims (0: invalid), its tokens (a
 * ROPE_FREQ with a third dim, EDGEQ_F_TOKENS; else 1), and its cos/sin
 * pairs into @cs[0 .. tokens * dims), a token's table after another, as
 * edgeq_kq_exec() computes them (the decoder's table): @freq is
 * ROPE_FREQ's frequency tensor, NULL for ROPE. For the device backends,
 * which compute the table on the host.
 */
uint32_t edgeq_op_rope_dims(const struct edgeq_op_desc *op);
uint64_t edgeq_op_rope_tokens(const struct edgeq_op_desc *op);
/*
 * ATTENTION's query @t (0 for a one-query op) attends to rows [*first,
 * *end) of its K and V (EDGEQ_F_TOKENS: causal, param[1]'s window).
 */
void edgeq_op_attn_span(const struct edgeq_op_desc *op, uint64_t t,
			uint64_t *first, uint64_t *end);
void edgeq_op_rope_table(const struct edgeq_op_desc *op, const float *freq,
			 float *cs);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_KQ_H */
