// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kfuzz: a protocol-aware fuzzer of edgeq.ko, run inside the test VM
 * (tests/kmod/t_kfuzz; longer: make kfuzz, or EDGEQ_KFUZZ_SECS).
 *
 *   kfuzz [SECONDS]    default $EDGEQ_KFUZZ_SECS or 20
 *
 * It knows the ioctls, the descriptor layouts and the agent protocol, and
 * runs at once: several unprivileged client processes (two users) that
 * register memfds and submit ops built to fit them, then mutated (lengths
 * short by a byte, shapes off, bad handles, priorities they may not use);
 * an agent process that reads ops, fetches and maps their memfds, checks
 * what the kernel promised (lengths, scope), completes them with random
 * status, detaches, crashes and comes back; and an admin that turns every
 * sysfs knob and module parameter, valid and not, and destroys and
 * re-creates a queue under everyone.
 *
 * A finding is a result the ABI rules out: an errno not documented for the
 * call, an op the kernel must refuse that it took (short tensor, HIGH or RT
 * unprivileged, an unprivileged ATTACH), a completion with a cookie never
 * submitted on that file or twice, an agent fd for a handle of no op it
 * holds, a memfd shorter than the kernel said, an invalid knob value
 * accepted. The VM runner fails the run on any kernel warning or stack
 * dump. Prints calls per kind, errnos seen and findings; exit 1 on any.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <edgeq/edgeq.h>
#include <edgeq/kq.h>

#define NQUEUES 2
#define MAX_CLIENTS 8
#define MAX_FINDINGS 32
#define MAXERR 134

enum kind {
	K_OPEN,
	K_REGISTER,
	K_UNREGISTER,
	K_SUBMIT,
	K_SUBMIT_BAD,
	K_READ,
	K_POLL,
	K_URING,
	K_IOCTL,
	K_ATTACH,
	K_AGENT_READ,
	K_AGENT_DONE,
	K_AGENT_FD,
	K_AGENT_CYCLE,
	K_SYSFS,
	K_PARAM,
	K_DESTROY,
	K_COUNT,
};

static const char *const kind_names[K_COUNT] = {
	"open",	      "register",   "unregister", "submit",	 "submit-bad",
	"read",	      "poll",	    "io_uring",	  "ioctl",	 "attach",
	"agent-read", "agent-done", "agent-fd",	  "agent-cycle", "sysfs",
	"param",      "destroy",
};

/* Shared by every process (MAP_SHARED). */
struct shared {
	long calls[K_COUNT];
	long errnos[MAXERR];
	int nfindings; /* all of them */
	int ndistinct; /* distinct messages kept, with their counts */
	char findings[MAX_FINDINGS][160];
	int fcount[MAX_FINDINGS];
	volatile int stop;
};

static struct shared *sh;
static const char *const qnames[NQUEUES] = { "kf0", "kf1" };
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned int pick(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

static void finding(const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	int i, n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&sh->nfindings, 1, __ATOMIC_RELAXED);
	n = __atomic_load_n(&sh->ndistinct, __ATOMIC_ACQUIRE);
	for (i = 0; i < n && i < MAX_FINDINGS; i++) {
		if (!strcmp(sh->findings[i], msg)) {
			__atomic_add_fetch(&sh->fcount[i], 1, __ATOMIC_RELAXED);
			return;
		}
	}
	i = __atomic_fetch_add(&sh->ndistinct, 1, __ATOMIC_ACQ_REL);
	if (i >= MAX_FINDINGS)
		return;
	strcpy(sh->findings[i], msg);
	__atomic_add_fetch(&sh->fcount[i], 1, __ATOMIC_RELAXED);
}

/* Counts a call of @k that returned @ret (-errno or >= 0). */
static void count(enum kind k, long ret)
{
	__atomic_add_fetch(&sh->calls[k], 1, __ATOMIC_RELAXED);
	if (ret < 0 && -ret < MAXERR)
		__atomic_add_fetch(&sh->errnos[-ret], 1, __ATOMIC_RELAXED);
}

/* @err must be one of the zero-terminated list. */
static void allowed(enum kind k, long ret, ...)
{
	va_list ap;
	int e;

	count(k, ret);
	if (ret >= 0)
		return;
	va_start(ap, ret);
	while ((e = va_arg(ap, int)))
		if (-ret == e)
			break;
	va_end(ap);
	if (!e)
		finding("%s: undocumented error %ld (%s)", kind_names[k], ret,
			strerror((int)-ret));
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* ---- clients */

struct tensor {
	int fd;
	uint32_t handle;
	uint64_t size;
};

struct cfile {
	struct edgeq_kq *kq;
	struct tensor t[6];
	int nt;
	uint64_t next_cookie;
	/* cookies submitted and not yet completed: a small open table */
	uint64_t out[1024];
	int nout;
};

static int cookie_take(struct cfile *c, uint64_t cookie)
{
	int i;

	for (i = 0; i < c->nout; i++) {
		if (c->out[i] == cookie) {
			c->out[i] = c->out[--c->nout];
			return 0;
		}
	}
	return -1;
}

static void cfile_close(struct cfile *c)
{
	int i;

	if (!c->kq)
		return;
	edgeq_kq_close(c->kq);
	for (i = 0; i < c->nt; i++)
		close(c->t[i].fd);
	memset(c, 0, sizeof(*c));
}

static void client_open(struct cfile *c)
{
	int ret = edgeq_kq_open(qnames[pick(NQUEUES)], pick(2) ? O_NONBLOCK : 0,
				&c->kq);

	allowed(K_OPEN, ret, ENOENT, ENODEV, ENXIO, EACCES, 0);
	if (ret)
		c->kq = NULL;
	c->next_cookie = rnd() & 0xffffffff;
}

static void client_register(struct cfile *c)
{
	struct tensor *t;
	void *map;
	int ret, fd, bad = pick(8);
	uint32_t h;

	if (c->nt == 6)
		return;
	t = &c->t[c->nt];
	t->size = 4096ULL << pick(7);
	ret = edgeq_kq_memfd("kfuzz", t->size, &fd, &map);
	if (ret)
		return;
	munmap(map, t->size);
	if (bad == 0) {
		/* Not a sealed memfd, or no fd at all. */
		int other = pick(3) ? open("/dev/null", O_RDWR) :
				      memfd_create("unsealed", 0);

		ret = edgeq_kq_tensor_register(c->kq, other, &h);
		if (!ret)
			finding("register: a non-sealed fd was accepted");
		allowed(K_REGISTER, ret, EINVAL, EBADF, ENODEV, 0);
		close(other);
		close(fd);
		return;
	}
	ret = edgeq_kq_tensor_register(c->kq, fd, &t->handle);
	allowed(K_REGISTER, ret, EMFILE, EDQUOT, ENODEV, EBUSY, ENOMEM, 0);
	if (ret) {
		close(fd);
		return;
	}
	t->fd = fd;
	c->nt++;
}

static void client_unregister(struct cfile *c)
{
	uint32_t h;
	int i, ret;

	if (!c->nt || !pick(4)) {
		h = (uint32_t)rnd() % 64;
		ret = edgeq_kq_tensor_unregister(c->kq, h);
		allowed(K_UNREGISTER, ret, ENOENT, EBUSY, ENODEV, 0);
		return;
	}
	i = (int)pick(c->nt);
	ret = edgeq_kq_tensor_unregister(c->kq, c->t[i].handle);
	allowed(K_UNREGISTER, ret, EBUSY, ENODEV, ENOENT, 0);
	if (!ret) {
		close(c->t[i].fd);
		c->t[i] = c->t[--c->nt];
	}
}

/*
 * A well-formed op of a random kind over @c's tensors, each region fitting
 * its memfd. Returns false when @c has no tensor for one that takes some.
 */
static bool build_op(struct cfile *c, struct edgeq_op_desc *op)
{
	static const uint32_t dtypes[] = { EDGEQ_DTYPE_F32,  EDGEQ_DTYPE_F16,
					   EDGEQ_DTYPE_Q4_0, EDGEQ_DTYPE_Q8_0,
					   EDGEQ_DTYPE_Q4_K, EDGEQ_DTYPE_Q6_K,
					   EDGEQ_DTYPE_BF16 };
	static const uint16_t row[] = { 4, 2, 18, 34, 144, 210, 2 };
	static const uint16_t blk[] = { 1, 1, 32, 32, 256, 256, 1 };
	uint16_t opcode = (uint16_t)pick(EDGEQ_OP_COUNT);
	uint64_t len[4] = { 0 }, a = 1 + pick(8), b = 1 + pick(8);
	unsigned int i, d = pick(7);
	struct tensor *t;

	edgeq_op_desc_init(op, opcode, c->next_cookie++);
	op->priority = (uint8_t)pick(2); /* LOW or NORMAL */
	switch (opcode) {
	case EDGEQ_OP_NOP:
		return true;
	case EDGEQ_OP_MATVEC:
	case EDGEQ_OP_MATMUL:
		op->dtype = dtypes[d];
		op->shape[0] = a;
		op->shape[1] = blk[d] * b;
		len[0] = a * b * row[d];
		len[1] = op->shape[1] * 4;
		len[2] = a * 4;
		if (opcode == EDGEQ_OP_MATMUL) {
			op->shape[2] = 1 + pick(4);
			len[1] *= op->shape[2];
			len[2] *= op->shape[2];
		}
		break;
	case EDGEQ_OP_RMSNORM:
		op->shape[0] = a * 16;
		len[0] = len[1] = len[2] = a * 64;
		if (pick(2)) { /* rows (EDGEQ_F_NORM_ROWS) */
			op->ndims = 2;
			op->shape[1] = b;
			len[0] = len[2] = a * b * 64;
		}
		break;
	case EDGEQ_OP_SILU_MUL:
	case EDGEQ_OP_GELU_MUL:
	case EDGEQ_OP_ADD:
		op->shape[0] = a * 16;
		len[0] = len[1] = len[2] = a * 64;
		if (opcode == EDGEQ_OP_ADD && pick(2)) { /* rows, one b */
			op->ndims = 2;
			op->shape[1] = b;
			len[0] = len[2] = a * b * 64;
		}
		break;
	case EDGEQ_OP_ROPE:
		op->shape[0] = a;
		op->shape[1] = 2 * b;
		len[0] = a * 2 * b * 4;
		break;
	case EDGEQ_OP_ROPE_FREQ:
		op->shape[0] = a;
		op->shape[1] = 2 * b;
		len[0] = a * 2 * b * 4;
		len[1] = b * 4;
		if (pick(2)) { /* a prompt's tokens (EDGEQ_F_TOKENS) */
			op->ndims = 3;
			op->shape[2] = 1 + pick(8);
			op->param[0] = pick(64) | 0x3f800000ULL << 32;
			len[0] *= op->shape[2];
		}
		break;
	case EDGEQ_OP_SOFTMAX:
		op->shape[0] = a;
		op->shape[1] = b;
		len[0] = a * b * 4;
		break;
	case EDGEQ_OP_ATTENTION:
		op->dtype = pick(2) ? EDGEQ_DTYPE_F32 : EDGEQ_DTYPE_Q8_0;
		op->shape[0] = 2 * a; /* heads */
		op->shape[1] = a;     /* kv heads */
		op->shape[2] = 32;    /* head dim */
		op->shape[3] = b;     /* positions */
		len[0] = len[3] = 2 * a * 32 * 4;
		len[1] = len[2] = b * a * (op->dtype ? 34 : 128);
		if (pick(2)) { /* causal queries, a window (EDGEQ_F_TOKENS) */
			uint64_t n = 1 + pick((unsigned int)b);

			op->param[1] =
				(uint64_t)pick((unsigned int)b + 1) << 32 | n;
			len[0] = len[3] = n * 2 * a * 32 * 4;
		}
		break;
	case EDGEQ_OP_STORE:
		op->dtype = pick(2) ? EDGEQ_DTYPE_F32 : EDGEQ_DTYPE_F16;
		op->shape[0] = a * 16;
		len[0] = a * 64;
		len[1] = a * (op->dtype ? 32 : 64);
		if (!pick(3)) { /* Q8_0 rows: whole blocks */
			op->dtype = EDGEQ_DTYPE_Q8_0;
			op->shape[0] = a * 32;
			len[0] = a * 128;
			len[1] = a * 34;
		}
		break;
	}
	if (!c->nt)
		return false;
	for (i = 0; i < op->ntensors; i++) {
		t = &c->t[pick(c->nt)];
		if (len[i] > t->size)
			return false;
		edgeq_op_desc_tensor(op, i, t->handle,
				     (t->size - len[i]) & ~63ULL & rnd(),
				     len[i]);
	}
	return true;
}

/* Submits well-formed ops; each accepted one is tracked by its cookie. */
static void client_submit(struct cfile *c)
{
	struct edgeq_op_desc ops[8];
	unsigned int n = 1 + pick(8), i;
	int ret;

	for (i = 0; i < n; i++)
		if (!build_op(c, &ops[i]))
			edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP,
					   c->next_cookie++);
	if (c->nout + (int)n > 1024)
		return;
	ret = pick(2) ? edgeq_kq_submit(c->kq, ops, n) :
			edgeq_kq_submit_ioctl(c->kq, ops, n);
	allowed(K_SUBMIT, ret, ENODEV, EOPNOTSUPP, EAGAIN, EDQUOT, ENOENT, 0);
	for (i = 0; ret > 0 && i < (unsigned int)ret; i++)
		c->out[c->nout++] = ops[i].cookie;
}

/* An op the kernel must refuse: what it must answer is known. */
static void client_submit_bad(struct cfile *c)
{
	struct edgeq_op_desc op;
	const char *what;
	int ret, want = EINVAL, i;

	if (!build_op(c, &op) || !op.ntensors) {
		/* Priorities an unprivileged client may not use. */
		edgeq_op_desc_init(&op, EDGEQ_OP_NOP, c->next_cookie++);
		op.priority = pick(2) ? EDGEQ_PRIO_HIGH : EDGEQ_PRIO_RT;
		what = "HIGH/RT from an unprivileged client";
		want = EPERM;
	} else {
		i = (int)pick(op.ntensors);
		switch (pick(5)) {
		case 0:
			op.tensors[i].length--; /* a byte short of the shape */
			what = "a tensor shorter than its shape";
			break;
		case 1:
			op.shape[0] = 0;
			what = "a zero dim";
			break;
		case 2:
			op.reserved[pick(4)] = rnd() | 1;
			what = "a reserved word set";
			break;
		case 3:
			op.tensors[i].offset = ~0ULL - pick(100);
			what = "an offset past 2^40";
			break;
		default:
			op.ndims = (uint8_t)(op.ndims + 1 + pick(3));
			what = "a wrong ndims";
			break;
		}
	}
	ret = pick(2) ? edgeq_kq_submit(c->kq, &op, 1) :
			edgeq_kq_submit_ioctl(c->kq, &op, 1);
	count(K_SUBMIT_BAD, ret);
	if (ret >= 0) {
		finding("submit: %s was accepted (opcode %u)", what, op.opcode);
		if (c->nout < 1024)
			c->out[c->nout++] = op.cookie;
	} else if (-ret != want && -ret != ENODEV) {
		finding("submit: %s: error %d, expected %d", what, -ret, want);
	}
}

static void client_read(struct cfile *c)
{
	struct edgeq_completion comp[16];
	int n, i;

	int ev = edgeq_kq_wait(c->kq, POLLIN, 0);

	/* Never block on an idle file. */
	if (ev <= 0 || !(ev & (POLLIN | POLLERR)))
		return;
	n = edgeq_kq_complete(c->kq, comp, 1 + pick(16));
	allowed(K_READ, n, EAGAIN, ENODEV, 0);
	for (i = 0; i < n; i++) {
		if (cookie_take(c, comp[i].cookie))
			finding("read: cookie %llu never submitted here (or twice)",
				(unsigned long long)comp[i].cookie);
		if (comp[i].status > 0 || comp[i].status < -4095)
			finding("read: status %d", comp[i].status);
	}
}

static void client_uring(struct cfile *c)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct edgeq_op_desc op;
	int ret;

	if (c->nout >= 1024 || io_uring_queue_init(4, &ring, 0))
		return;
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, c->next_cookie++);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write(sqe, edgeq_kq_fd(c->kq), &op, sizeof(op), 0);
	io_uring_submit(&ring);
	/*
	 * On a blocking file io_uring waits for EPOLLOUT (an agent attached)
	 * before it writes; the ring's exit cancels such a write.
	 */
	struct __kernel_timespec wts = { 1, 0 };

	if (!io_uring_wait_cqe_timeout(&ring, &cqe, &wts)) {
		ret = cqe->res;
		allowed(K_URING, ret, ENODEV, EOPNOTSUPP, EAGAIN, EDQUOT, 0);
		if (ret == (int)sizeof(op) && c->nout < 1024)
			c->out[c->nout++] = op.cookie;
		io_uring_cqe_seen(&ring, cqe);
	} else {
		/* Cancelled at exit, or written just before: may complete. */
		c->out[c->nout++] = op.cookie;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(sqe, edgeq_kq_fd(c->kq), POLLIN);
	io_uring_submit(&ring);
	{
		struct __kernel_timespec ts = { 0, 20000000 };

		if (!io_uring_wait_cqe_timeout(&ring, &cqe, &ts))
			io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
}

/* Any ioctl, a plausible argument or a bad pointer. */
static void client_ioctl(struct cfile *c)
{
	static const unsigned long cmds[] = {
		EDGEQ_IOC_GET_FEATURES,	     EDGEQ_IOC_QUEUE_CREATE,
		EDGEQ_IOC_QUEUE_DESTROY,     EDGEQ_IOC_TENSOR_REGISTER,
		EDGEQ_IOC_TENSOR_UNREGISTER, EDGEQ_IOC_SUBMIT,
		EDGEQ_IOC_AGENT_DETACH,	     EDGEQ_IOC_AGENT_TENSOR_FD,
	};
	unsigned char buf[256];
	unsigned long cmd = cmds[pick(8)];
	long ret;
	unsigned int i;

	if (!pick(8))
		cmd = _IOC(pick(4), 0xEE, pick(48), pick(300));
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = pick(4) ? 0 : (unsigned char)rnd();
	*(uint32_t *)buf = (uint32_t)_IOC_SIZE(cmd);
	ret = ioctl(edgeq_kq_fd(c->kq), cmd,
		    pick(16) ? (void *)buf : (void *)8);
	ret = ret < 0 ? -errno : ret;
	allowed(K_IOCTL, ret, ENOTTY, EINVAL, EFAULT, EPERM, ENODEV, ENOENT,
		EBUSY, EBADF, EMFILE, EDQUOT, EAGAIN, EOPNOTSUPP, ENOMEM, 0);
	if (ret == 0 && cmd == EDGEQ_IOC_AGENT_TENSOR_FD)
		finding("ioctl: a client got an agent tensor fd");
}

static void client_attach(struct cfile *c)
{
	int ret = edgeq_kq_agent_attach(c->kq, 1 + pick(511));

	count(K_ATTACH, ret);
	if (!ret)
		finding("attach: an unprivileged client became the agent");
	else if (ret != -EPERM && ret != -ENODEV) /* ENODEV: destroyed */
		finding("attach: unprivileged: error %d, expected EPERM", -ret);
}

static int client_main(int idx)
{
	struct cfile f[3] = { 0 };
	uid_t uid = 61000 + (idx % 2); /* two users, several processes each */

	rng = 0x9e3779b97f4a7c15ULL * (idx + 3);
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
		return 3;
	while (!sh->stop) {
		struct cfile *c = &f[pick(3)];

		if (!c->kq) {
			client_open(c);
			continue;
		}
		switch (pick(20)) {
		case 0:
			cfile_close(c);
			break;
		case 1:
		case 2:
			client_register(c);
			break;
		case 3:
			client_unregister(c);
			break;
		case 4:
		case 5:
		case 6:
		case 7:
			client_submit(c);
			break;
		case 8:
		case 9:
			client_submit_bad(c);
			break;
		case 10:
		case 11:
		case 12:
		case 13:
			client_read(c);
			break;
		case 14: {
			int r = edgeq_kq_wait(c->kq, POLLIN | POLLOUT,
					      (int)pick(20));

			count(K_POLL, r < 0 ? r : 0);
			break;
		}
		case 15:
			client_uring(c);
			break;
		case 16:
		case 17:
			client_ioctl(c);
			break;
		case 18:
			client_attach(c);
			break;
		default:
			msleep((int)pick(3));
		}
	}
	return 0;
}

/* ---- the agent */

/* Serves ops on queue @q for a while, checking what the kernel hands out. */
static void agent_session(const char *q)
{
	struct edgeq_agent_op ops[16];
	struct edgeq_kq *kq;
	int n, i, j, ret, rounds = 50 + (int)pick(300);
	uint64_t held[16];
	int nheld = 0;

	ret = edgeq_kq_open(q, O_NONBLOCK, &kq);
	if (ret)
		return;
	ret = edgeq_kq_agent_attach(kq, pick(4) ? (1ULL << EDGEQ_OP_COUNT) - 1 :
						  1 + pick(511));
	allowed(K_AGENT_CYCLE, ret, EBUSY, ENODEV, 0);
	if (ret) {
		edgeq_kq_close(kq);
		return;
	}
	while (!sh->stop && rounds--) {
		edgeq_kq_wait(kq, POLLIN, 10);
		n = edgeq_kq_agent_next(kq, ops, 1 + pick(16));
		allowed(K_AGENT_READ, n, EAGAIN, ENODEV, EINVAL, 0);
		if (n == -ENODEV)
			break;
		for (i = 0; i < n; i++) {
			const struct edgeq_op_desc *op = &ops[i].op;

			for (j = 0; j < (int)op->ntensors && j < 4; j++) {
				const struct edgeq_tensor_ref *r =
					&op->tensors[j];
				uint64_t length;
				int fd = edgeq_kq_agent_tensor_fd(kq, r->handle,
								  &length);

				allowed(K_AGENT_FD, fd, ENOENT, ENODEV, EMFILE,
					0);
				if (fd < 0)
					continue; /* the client closed */
				if (r->offset + r->length > length)
					finding("agent: op %u tensor %d past its memfd (%llu + %llu > %llu)",
						op->opcode, j,
						(unsigned long long)r->offset,
						(unsigned long long)r->length,
						(unsigned long long)length);
				close(fd);
			}
			held[nheld % 16] = ops[i].tag;
			nheld++;
		}
		/* A handle of no op it holds: must be refused. */
		if (!pick(16)) {
			uint64_t length;
			int fd = edgeq_kq_agent_tensor_fd(
				kq, 1000000 + (uint32_t)pick(1000), &length);

			if (fd >= 0) {
				finding("agent: fd for a handle of no op");
				close(fd);
			}
		}
		/* Complete most, with random status; leave some to time out. */
		for (i = 0; i < nheld && i < 16; i++) {
			struct edgeq_agent_done d = { .tag = held[i] };

			if (!pick(10))
				continue;
			d.status = pick(4) ? 0 : -(int)(1 + pick(4095));
			d.busy_ns = rnd() % 1000000;
			if (!pick(20))
				d.tag = rnd(); /* unknown */
			ret = edgeq_kq_agent_done(kq, &d, 1);
			allowed(K_AGENT_DONE, ret, ENOENT, ENODEV, EINVAL, 0);
		}
		nheld = 0;
		if (!pick(40))
			break;
	}
	if (pick(2))
		edgeq_kq_agent_detach(kq);
	edgeq_kq_close(kq);
}

static int agent_main(void)
{
	rng = 0xa5a5a5a5deadbeefULL;
	while (!sh->stop) {
		pid_t pid = fork();

		if (pid == 0) {
			/* One session, sometimes ended by a crash. */
			rng ^= (uint64_t)getpid() << 20;
			agent_session(qnames[pick(NQUEUES)]);
			if (!pick(4))
				raise(SIGKILL);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		count(K_AGENT_CYCLE, 0);
	}
	return 0;
}

/* ---- the admin */

/* Values for a knob; a bad value is never "" (a zero-length write() does
 * not reach the kernel). */
struct knob {
	const char *name;
	const char *good[4];
	const char *bad[3];
};

static const struct knob knobs[] = {
	{ "max_inflight", { "1", "4", "256", "2" }, { "0", "257", "x" } },
	{ "timeout_ms", { "0", "50", "200", "1000" }, { "600001", "-1", "\n" } },
	{ "policy",
	  { "fail", "requeue", "fail", "requeue" },
	  { "x", "\n", "fai" } },
	{ "sched", { "rr", "drr", "rr", "drr" }, { "fifo", "\n", "r" } },
	{ "cooling_state", { "0", "1", "3", "4" }, { "5", "-1", "x" } },
	{ "sim_trip_mC",
	  { "40000", "70000", "0", "150000" },
	  { "150001", "-1", "x" } },
	{ "sim_tau_ms",
	  { "1", "100", "2000", "3600000" },
	  { "0", "3600001", "\n" } },
	{ "sim_rise_mC",
	  { "0", "60000", "200000", "1" },
	  { "-1", "200001", "x" } },
};

static const struct knob params[] = {
	{ "max_user_ops", { "16", "64", "4096", "8" }, { "0", "1048577", "x" } },
	{ "max_user_tensors",
	  { "2", "8", "1024", "4" },
	  { "0", "1048577", "\n" } },
	{ "max_inflight", { "1", "8", "256", "4" }, { "0", "257", "x" } },
	{ "node_mode",
	  { "0666", "0660", "0666", "0600" },
	  { "01000", "x", "\n" } },
};

static void admin_set(const char *dir, const struct knob *k)
{
	char path[160];
	bool bad = !pick(4);
	const char *v = bad ? k->bad[pick(3)] : k->good[pick(4)];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, k->name);
	ret = write_file(path, v);
	count(dir[1] == 's' && dir[5] == 'm' ? K_PARAM : K_SYSFS, ret);
	if (bad && !ret)
		finding("admin: %s = \"%s\" accepted", path, v);
	if (!bad && ret && ret != -ENOENT && ret != -ENODEV)
		finding("admin: %s = \"%s\": error %d", path, v, -ret);
}

static int admin_main(void)
{
	char dir[96];
	int ret;

	rng = 0x1234567887654321ULL;
	while (!sh->stop) {
		switch (pick(12)) {
		case 0:
			admin_set("/sys/module/edgeq/parameters",
				  &params[pick(4)]);
			break;
		case 1:
			/* kf1 goes and comes back under everyone's feet. */
			ret = edgeq_kq_queue_destroy("kf1");
			allowed(K_DESTROY, ret, ENOENT, 0);
			write_file("/sys/module/edgeq/parameters/node_mode",
				   "0666");
			ret = edgeq_kq_queue_create("kf1", 0, 200, NULL);
			allowed(K_DESTROY, ret, EEXIST, 0);
			break;
		default:
			snprintf(dir, sizeof(dir), "/sys/class/edgeq/%s",
				 qnames[pick(NQUEUES)]);
			admin_set(dir, &knobs[pick(8)]);
		}
		msleep((int)pick(20));
	}
	return 0;
}

/* ---- main */

/* Prints what each thread of @pid (io_uring workers too) is doing. */
static void dump_threads(pid_t pid)
{
	static const char *const what[] = { "comm", "stack", "wchan",
					    "syscall" };
	char path[96], buf[2048], cmd[64];
	unsigned int w;
	ssize_t len;
	FILE *ls;
	int fd;

	snprintf(cmd, sizeof(cmd), "ls /proc/%d/task", pid);
	ls = popen(cmd, "r");
	if (!ls)
		return;
	while (fgets(buf, 32, ls)) {
		int tid = atoi(buf);

		for (w = 0; w < 4; w++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid,
				 tid, what[w]);
			fd = open(path, O_RDONLY);
			len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
			buf[len > 0 ? len : 0] = 0;
			if (fd >= 0)
				close(fd);
			fprintf(stderr, "kfuzz: pid %d task %d %s: %s\n", pid,
				tid, what[w], buf);
		}
	}
	pclose(ls);
}

static void restore(void)
{
	static const char *const p[][2] = {
		{ "max_user_ops", "4096" },
		{ "max_user_tensors", "1024" },
		{ "max_inflight", "8" },
		{ "node_mode", "0660" },
	};
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		snprintf(path, sizeof(path), "/sys/module/edgeq/parameters/%s",
			 p[i][0]);
		write_file(path, p[i][1]);
	}
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) :
		   getenv("EDGEQ_KFUZZ_SECS") ?
			      atoi(getenv("EDGEQ_KFUZZ_SECS")) :
			      20;
	int nclients = getenv("EDGEQ_KFUZZ_CLIENTS") ?
			       atoi(getenv("EDGEQ_KFUZZ_CLIENTS")) :
			       4;
	pid_t pids[MAX_CLIENTS + 2];
	long total = 0;
	int i, n = 0, st, bad = 0;

	if (nclients < 1 || nclients > MAX_CLIENTS || secs < 1) {
		fprintf(stderr, "kfuzz: 1..%d clients, at least 1 s\n",
			MAX_CLIENTS);
		return 2;
	}
	if (geteuid()) {
		printf("kfuzz needs root (it runs in the test VM)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	memset(sh, 0, sizeof(*sh));
	if (write_file("/sys/module/edgeq/parameters/node_mode", "0666")) {
		printf("no edgeq module with node_mode loaded\n");
		return 77;
	}
	for (i = 0; i < NQUEUES; i++) {
		int ret = edgeq_kq_queue_create(qnames[i], 4, 200, NULL);

		if (ret && ret != -EEXIST) {
			fprintf(stderr, "kfuzz: create %s: %s\n", qnames[i],
				strerror(-ret));
			return 1;
		}
	}
	for (i = 0; i < nclients + 2; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(i < nclients  ? client_main(i) :
			      i == nclients ? agent_main() :
					      admin_main());
		if (pid > 0)
			pids[n++] = pid;
	}
	sleep((unsigned int)secs);
	sh->stop = 1;
	for (i = 0; i < n; i++) {
		int waited = 0;
		pid_t r;

		/* 60 s to stop; one that does not is stuck (in the kernel?). */
		while ((r = waitpid(pids[i], &st, WNOHANG)) == 0 &&
		       waited < 60000) {
			msleep(50);
			waited += 50;
		}
		if (r == 0) {
			finding("process %d (%s) did not stop within 60 s", i,
				i < nclients  ? "client" :
				i == nclients ? "agent" :
						"admin");
			dump_threads(pids[i]);
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &st, 0);
			continue;
		}
		if (r != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "kfuzz: process %d ended with 0x%x\n",
				i, st);
			bad = 1;
		}
	}
	restore();
	for (i = 0; i < NQUEUES; i++)
		edgeq_kq_queue_destroy(qnames[i]);

	printf("kfuzz: %d s, %d unprivileged clients (2 users), 1 agent, 1 admin\n",
	       secs, nclients);
	printf("kfuzz: calls:");
	for (i = 0; i < K_COUNT; i++) {
		printf(" %s %ld", kind_names[i], sh->calls[i]);
		total += sh->calls[i];
	}
	printf("\nkfuzz: %ld calls; errors seen:", total);
	for (i = 1; i < MAXERR; i++)
		if (sh->errnos[i])
			printf(" E%d(%s) %ld", i, strerror(i), sh->errnos[i]);
	printf("\nkfuzz: %d findings\n", sh->nfindings);
	for (i = 0; i < sh->ndistinct && i < MAX_FINDINGS; i++)
		printf("  finding (%dx): %s\n", sh->fcount[i], sh->findings[i]);
	if (total < 1000) {
		printf("kfuzz: too few calls\n");
		bad = 1;
	}
	return sh->nfindings || bad ? 1 : 0;
}
