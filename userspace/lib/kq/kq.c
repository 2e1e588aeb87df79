// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kq: open, register, submit, complete and agent calls over edgeq.ko's
 * queue files (include/edgeq/kq.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <edgeq/kq.h>

#define KQ_MAP_MAX 1024 /* cached agent mappings before a flush */

struct kq_map {
	uint32_t handle, client_id;
	void *base;
	uint64_t length;
	uint64_t id; /* never reused for the life of the kq */
};

struct edgeq_kq {
	int fd;
	struct kq_map *maps; /* agent: tensor mappings */
	size_t nmaps, capmaps;
	uint64_t next_id;
	void (*on_unmap)(void *arg, uint64_t id);
	void *on_unmap_arg;
};

static void kq_unmap(struct edgeq_kq *kq, struct kq_map *m)
{
	if (kq->on_unmap)
		kq->on_unmap(kq->on_unmap_arg, m->id);
	munmap(m->base, m->length);
}

static const struct {
	uint8_t ntensors, ndims;
} kq_arity[EDGEQ_OP_COUNT] = {
	[EDGEQ_OP_NOP] = { 0, 0 },	 [EDGEQ_OP_MATVEC] = { 3, 2 },
	[EDGEQ_OP_MATMUL] = { 3, 3 },	 [EDGEQ_OP_RMSNORM] = { 3, 1 },
	[EDGEQ_OP_ROPE] = { 1, 2 },	 [EDGEQ_OP_SOFTMAX] = { 1, 2 },
	[EDGEQ_OP_ATTENTION] = { 4, 4 }, [EDGEQ_OP_SILU_MUL] = { 3, 1 },
	[EDGEQ_OP_ADD] = { 3, 1 },	 [EDGEQ_OP_STORE] = { 2, 1 },
	[EDGEQ_OP_ROPE_FREQ] = { 2, 2 }, [EDGEQ_OP_GELU_MUL] = { 3, 1 },
};

int edgeq_op_arity(uint16_t opcode, unsigned int *ntensors, unsigned int *ndims)
{
	if (opcode >= EDGEQ_OP_COUNT)
		return -EINVAL;
	*ntensors = kq_arity[opcode].ntensors;
	*ndims = kq_arity[opcode].ndims;
	return 0;
}

bool edgeq_op_ndims_valid(uint16_t opcode, unsigned int ndims)
{
	if (opcode >= EDGEQ_OP_COUNT)
		return false;
	return ndims == kq_arity[opcode].ndims ||
	       ((opcode == EDGEQ_OP_RMSNORM || opcode == EDGEQ_OP_ADD) &&
		ndims == 2) ||
	       (opcode == EDGEQ_OP_ROPE_FREQ && ndims == 3);
}

int edgeq_kq_open(const char *name, int flags, struct edgeq_kq **out)
{
	char path[64];
	struct edgeq_kq *kq;
	int fd;

	if (!name || !*name || (flags & ~O_NONBLOCK))
		return -EINVAL;
	if (name[0] == '/') {
		if (strlen(name) >= sizeof(path))
			return -ENAMETOOLONG;
		strcpy(path, name);
	} else if (strchr(name, '/') || strlen(name) >= EDGEQ_NAME_MAX) {
		return -EINVAL;
	} else {
		snprintf(path, sizeof(path), EDGEQ_KQ_DEVDIR "/%s", name);
	}
	kq = calloc(1, sizeof(*kq));
	if (!kq)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CLOEXEC | flags);
	if (fd < 0) {
		int e = errno;

		free(kq);
		return -e;
	}
	kq->fd = fd;
	*out = kq;
	return 0;
}

void edgeq_kq_close(struct edgeq_kq *kq)
{
	size_t i;

	if (!kq)
		return;
	for (i = 0; i < kq->nmaps; i++)
		kq_unmap(kq, &kq->maps[i]);
	free(kq->maps);
	close(kq->fd);
	free(kq);
}

int edgeq_kq_fd(const struct edgeq_kq *kq)
{
	return kq->fd;
}

static int kq_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

int edgeq_kq_features(struct edgeq_kq *kq, struct edgeq_features *f)
{
	memset(f, 0, sizeof(*f));
	f->size = sizeof(*f);
	return kq_ioctl(kq->fd, EDGEQ_IOC_GET_FEATURES, f);
}

static int kq_control(unsigned long cmd, struct edgeq_queue_ctl *c)
{
	int fd = open(EDGEQ_KQ_CONTROL, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = kq_ioctl(fd, cmd, c);
	close(fd);
	return ret;
}

int edgeq_kq_queue_create(const char *name, uint32_t max_inflight,
			  uint32_t timeout_ms, uint32_t *id)
{
	struct edgeq_queue_ctl c = { .size = sizeof(c) };
	int ret;

	if (strlen(name) >= sizeof(c.name))
		return -EINVAL;
	strcpy(c.name, name);
	c.max_inflight = max_inflight;
	c.timeout_ms = timeout_ms;
	ret = kq_control(EDGEQ_IOC_QUEUE_CREATE, &c);
	if (!ret && id)
		*id = c.id;
	return ret;
}

int edgeq_kq_queue_destroy(const char *name)
{
	struct edgeq_queue_ctl c = { .size = sizeof(c) };

	if (strlen(name) >= sizeof(c.name))
		return -EINVAL;
	strcpy(c.name, name);
	return kq_control(EDGEQ_IOC_QUEUE_DESTROY, &c);
}

int edgeq_kq_memfd(const char *name, size_t size, int *fdp, void **map)
{
	void *p;
	int fd, e;

	if (!size)
		return -EINVAL;
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		    0)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	*fdp = fd;
	*map = p;
	return 0;
fail:
	e = errno;
	close(fd);
	return -e;
}

int edgeq_kq_tensor_register(struct edgeq_kq *kq, int memfd, uint32_t *handle)
{
	struct edgeq_tensor_reg r = { .size = sizeof(r), .fd = memfd };
	int ret = kq_ioctl(kq->fd, EDGEQ_IOC_TENSOR_REGISTER, &r);

	if (!ret)
		*handle = r.handle;
	return ret;
}

int edgeq_kq_tensor_unregister(struct edgeq_kq *kq, uint32_t handle)
{
	struct edgeq_tensor_unreg u = { .size = sizeof(u), .handle = handle };

	return kq_ioctl(kq->fd, EDGEQ_IOC_TENSOR_UNREGISTER, &u);
}

void edgeq_op_desc_init(struct edgeq_op_desc *op, uint16_t opcode,
			uint64_t cookie)
{
	unsigned int nt = 0, nd = 0;

	memset(op, 0, sizeof(*op));
	op->size = sizeof(*op);
	op->opcode = opcode;
	op->cookie = cookie;
	op->priority = EDGEQ_PRIO_NORMAL;
	if (!edgeq_op_arity(opcode, &nt, &nd)) {
		op->ntensors = nt;
		op->ndims = (uint8_t)nd;
	}
}

void edgeq_op_desc_tensor(struct edgeq_op_desc *op, unsigned int i,
			  uint32_t handle, uint64_t offset, uint64_t length)
{
	if (i >= EDGEQ_MAX_TENSORS)
		return;
	op->tensors[i].handle = handle;
	op->tensors[i].offset = offset;
	op->tensors[i].length = length;
}

/* write()/read() of whole records; a partial write counts records. */
static int kq_write(int fd, const void *buf, size_t rec, unsigned int n)
{
	ssize_t w = write(fd, buf, rec * n);

	if (w < 0)
		return -errno;
	return (int)(w / (ssize_t)rec);
}

static int kq_read(int fd, void *buf, size_t rec, unsigned int n)
{
	ssize_t r = read(fd, buf, rec * n);

	if (r < 0)
		return -errno;
	return (int)(r / (ssize_t)rec);
}

int edgeq_kq_submit(struct edgeq_kq *kq, const struct edgeq_op_desc *ops,
		    unsigned int n)
{
	if (!n)
		return 0;
	return kq_write(kq->fd, ops, sizeof(*ops), n);
}

int edgeq_kq_submit_ioctl(struct edgeq_kq *kq, const struct edgeq_op_desc *ops,
			  unsigned int n)
{
	struct edgeq_submit s = {
		.size = sizeof(s),
		.count = n,
		.ops = (uintptr_t)ops,
	};
	int ret = kq_ioctl(kq->fd, EDGEQ_IOC_SUBMIT, &s);

	return ret ? ret : (int)s.submitted;
}

int edgeq_kq_complete(struct edgeq_kq *kq, struct edgeq_completion *c,
		      unsigned int max)
{
	return kq_read(kq->fd, c, sizeof(*c), max);
}

int edgeq_kq_wait(struct edgeq_kq *kq, short events, int timeout_ms)
{
	struct pollfd p = { .fd = kq->fd, .events = events };
	int r;

	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r ? p.revents : 0;
}

int edgeq_kq_agent_attach(struct edgeq_kq *kq, uint64_t op_mask)
{
	struct edgeq_agent_attach a = { .size = sizeof(a), .op_mask = op_mask };

	return kq_ioctl(kq->fd, EDGEQ_IOC_AGENT_ATTACH, &a);
}

int edgeq_kq_agent_detach(struct edgeq_kq *kq)
{
	return ioctl(kq->fd, EDGEQ_IOC_AGENT_DETACH, 0) < 0 ? -errno : 0;
}

int edgeq_kq_agent_next(struct edgeq_kq *kq, struct edgeq_agent_op *ops,
			unsigned int max)
{
	return kq_read(kq->fd, ops, sizeof(*ops), max);
}

int edgeq_kq_agent_done(struct edgeq_kq *kq, const struct edgeq_agent_done *d,
			unsigned int n)
{
	return kq_write(kq->fd, d, sizeof(*d), n);
}

int edgeq_kq_agent_tensor_fd(struct edgeq_kq *kq, uint32_t handle,
			     uint64_t *length)
{
	struct edgeq_agent_tensor_fd a = { .size = sizeof(a),
					   .handle = handle };
	int ret = kq_ioctl(kq->fd, EDGEQ_IOC_AGENT_TENSOR_FD, &a);

	if (ret)
		return ret;
	if (length)
		*length = a.length;
	return a.fd;
}

static void kq_flush_maps(struct edgeq_kq *kq)
{
	size_t i;

	for (i = 0; i < kq->nmaps; i++)
		kq_unmap(kq, &kq->maps[i]);
	kq->nmaps = 0;
}

void edgeq_kq_agent_on_unmap(struct edgeq_kq *kq,
			     void (*fn)(void *arg, uint64_t id), void *arg)
{
	kq->on_unmap = fn;
	kq->on_unmap_arg = arg;
}

int edgeq_kq_agent_mapping(struct edgeq_kq *kq, uint32_t client_id,
			   const struct edgeq_tensor_ref *ref,
			   struct edgeq_kq_mapping *out)
{
	struct kq_map *m = NULL;
	uint64_t length;
	size_t i;
	void *base;
	int fd;

	for (i = 0; i < kq->nmaps; i++) {
		if (kq->maps[i].handle == ref->handle) {
			m = &kq->maps[i];
			break;
		}
	}
	if (m && m->client_id != client_id) {
		/* The handle was reused by another client: drop the old map. */
		kq_unmap(kq, m);
		*m = kq->maps[--kq->nmaps];
		m = NULL;
	}
	if (!m) {
		fd = edgeq_kq_agent_tensor_fd(kq, ref->handle, &length);
		if (fd < 0)
			return fd;
		base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED,
			    fd, 0);
		close(fd);
		if (base == MAP_FAILED)
			return -errno;
		if (kq->nmaps == KQ_MAP_MAX)
			kq_flush_maps(kq);
		if (kq->nmaps == kq->capmaps) {
			size_t cap = kq->capmaps ? kq->capmaps * 2 : 16;
			struct kq_map *nm =
				realloc(kq->maps, cap * sizeof(*nm));

			if (!nm) {
				munmap(base, length);
				return -ENOMEM;
			}
			kq->maps = nm;
			kq->capmaps = cap;
		}
		m = &kq->maps[kq->nmaps++];
		m->handle = ref->handle;
		m->client_id = client_id;
		m->base = base;
		m->length = length;
		m->id = ++kq->next_id;
	}
	if (ref->offset > m->length || ref->length > m->length - ref->offset)
		return -EINVAL;
	out->base = m->base;
	out->length = m->length;
	out->id = m->id;
	return 0;
}

int edgeq_kq_agent_map(struct edgeq_kq *kq, uint32_t client_id,
		       const struct edgeq_tensor_ref *ref, void **p)
{
	struct edgeq_kq_mapping m;
	int ret = edgeq_kq_agent_mapping(kq, client_id, ref, &m);

	if (!ret)
		*p = (char *)m.base + ref->offset;
	return ret;
}
