// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq.ko tests, run inside the test VM (tests/kmod/t_kmod):
 *   kmodtest CASE     runs one case; exit 0 pass, 77 skip, else fail.
 * Each case expects the module loaded with queues=npu0,gpu0 sim_sensor=1.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <edgeq/edgeq.h>
#include <edgeq/kq.h>
#include "kernels/kernels.h"

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #c);                                 \
			return 1;                                              \
		}                                                              \
	} while (0)
#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);           \
		if (_a != _b) {                                               \
			fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", \
				__FILE__, __LINE__, #a, _a, _b);              \
			return 1;                                             \
		}                                                             \
	} while (0)

static const char *edgeq_bin;
static void *volatile bad_ptr = (void *)8; /* unmapped */

/* ---- helpers */

/* The number in file @name of directory @dir; -1 when unreadable. */
static long read_long(const char *dir, const char *name)
{
	char path[256], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 0);
}

static long sysfs_get(const char *q, const char *attr)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/sys/class/edgeq/%s", q);
	return read_long(dir, attr);
}

/* Writes printf-style @fmt to @dir/@name; 0 or -errno. */
static int write_attr(const char *dir, const char *name, const char *fmt,
		      va_list ap)
{
	char path[256], buf[64];
	int fd, ret = 0;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, strlen(buf)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int sysfs_set(const char *q, const char *attr, const char *fmt, ...)
{
	char dir[128];
	va_list ap;
	int ret;

	snprintf(dir, sizeof(dir), "/sys/class/edgeq/%s", q);
	va_start(ap, fmt);
	ret = write_attr(dir, attr, fmt, ap);
	va_end(ap);
	return ret;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait until sysfs @attr of @q equals @v (up to @ms). */
static bool wait_sysfs(const char *q, const char *attr, long v, int ms)
{
	for (; ms > 0; ms -= 10) {
		if (sysfs_get(q, attr) == v)
			return true;
		msleep(10);
	}
	return sysfs_get(q, attr) == v;
}

/* Wait until sysfs @attr of @q is at least @v (up to @ms). */
static bool wait_sysfs_ge(const char *q, const char *attr, long v, int ms)
{
	for (; ms > 0; ms -= 10) {
		if (sysfs_get(q, attr) >= v)
			return true;
		msleep(10);
	}
	return sysfs_get(q, attr) >= v;
}

static pid_t start_agent(const char *queue, const char *profile,
			 const char *delay_us)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(edgeq_bin, "edgeq", "agent", "--backend", "cpu",
		      "--queue", queue, "--profile", profile, "--delay-us",
		      delay_us, (char *)NULL);
		fprintf(stderr, "kmodtest: cannot run %s: %s\n", edgeq_bin,
			strerror(errno));
		_exit(127);
	}
	return pid;
}

static void stop_agent(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static void reset_queue(const char *q)
{
	sysfs_set(q, "max_inflight", "8");
	sysfs_set(q, "timeout_ms", "5000");
	sysfs_set(q, "policy", "fail");
	sysfs_set(q, "sched", "rr");
	sysfs_set(q, "cooling_state", "0");
}

/* A memfd tensor registered with @kq. */
struct tensor {
	int fd;
	void *map;
	size_t size;
	uint32_t handle;
};

static int tensor_new(struct edgeq_kq *kq, size_t size, struct tensor *t)
{
	int ret = edgeq_kq_memfd("kmodtest", size, &t->fd, &t->map);

	if (ret)
		return ret;
	t->size = size;
	return edgeq_kq_tensor_register(kq, t->fd, &t->handle);
}

static void tensor_free(struct tensor *t)
{
	munmap(t->map, t->size);
	close(t->fd);
}

/* ---- cases */

static int t_features(void)
{
	struct edgeq_features f;
	struct edgeq_kq *kq;
	int fd;

	CHECK(!edgeq_kq_open("npu0", 0, &kq));
	CHECK(!edgeq_kq_features(kq, &f));
	CHECK_EQ(f.version, EDGEQ_API_VERSION);
	CHECK_EQ(f.op_size, sizeof(struct edgeq_op_desc));
	CHECK_EQ(f.completion_size, sizeof(struct edgeq_completion));
	CHECK_EQ(f.agent_op_size, sizeof(struct edgeq_agent_op));
	CHECK(f.features & EDGEQ_F_WRITE_SUBMIT);
	CHECK(f.features & EDGEQ_F_SIM_SENSOR);
	CHECK(!(f.features & ~EDGEQ_F_ALL));
	f.size = 3;
	CHECK_EQ(ioctl(edgeq_kq_fd(kq), EDGEQ_IOC_GET_FEATURES, &f), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(ioctl(edgeq_kq_fd(kq), EDGEQ_IOC_GET_FEATURES, NULL), -1);
	CHECK_EQ(errno, EFAULT);
	CHECK_EQ(ioctl(edgeq_kq_fd(kq), _IO(0xEE, 0x7f), 0), -1);
	CHECK_EQ(errno, ENOTTY);
	edgeq_kq_close(kq);
	fd = open(EDGEQ_KQ_CONTROL, O_RDWR);
	CHECK(fd >= 0);
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	CHECK(!ioctl(fd, EDGEQ_IOC_GET_FEATURES, &f));
	CHECK_EQ(f.max_tensors, EDGEQ_MAX_TENSORS);
	close(fd);
	return 0;
}

static int t_create_destroy(void)
{
	struct edgeq_completion c;
	struct edgeq_op_desc op;
	struct edgeq_kq *kq, *agent;
	struct stat st;
	uint32_t id;
	char name[16];
	int i, n;

	CHECK(!edgeq_kq_queue_create("t0", 4, 1000, &id));
	CHECK(!stat("/dev/edgeq/t0", &st));
	CHECK_EQ(sysfs_get("t0", "id"), id);
	CHECK_EQ(sysfs_get("t0", "max_inflight"), 4);
	CHECK_EQ(edgeq_kq_queue_create("t0", 0, 0, NULL), -EEXIST);
	CHECK_EQ(edgeq_kq_queue_create("", 0, 0, NULL), -EINVAL);
	CHECK_EQ(edgeq_kq_queue_create("Bad", 0, 0, NULL), -EINVAL);
	CHECK_EQ(edgeq_kq_queue_create("a/b", 0, 0, NULL), -EINVAL);
	CHECK_EQ(edgeq_kq_queue_create("abcdefghijklmn", 0, 0, NULL), -EINVAL);
	CHECK_EQ(edgeq_kq_queue_create("t1", 257, 0, NULL), -EINVAL);
	CHECK_EQ(edgeq_kq_queue_destroy("nosuch"), -ENOENT);

	/* Destroy with open files, an agent and an op in flight. */
	CHECK(!edgeq_kq_open("t0", 0, &kq));
	CHECK(!edgeq_kq_open("t0", O_NONBLOCK, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, ~0ULL >> (64 - EDGEQ_OP_COUNT)));
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 7);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	CHECK(!edgeq_kq_queue_destroy("t0"));
	CHECK(stat("/dev/edgeq/t0", &st) < 0);
	n = edgeq_kq_complete(kq, &c, 1);
	CHECK_EQ(n, 1);
	CHECK_EQ(c.status, -ENODEV);
	CHECK_EQ(c.cookie, 7);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), -ENODEV);
	CHECK(edgeq_kq_wait(kq, POLLIN, 0) & POLLERR);
	edgeq_kq_close(agent);
	edgeq_kq_close(kq);

	/* Fill the table. */
	for (i = 0; i < EDGEQ_MAX_QUEUES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		n = edgeq_kq_queue_create(name, 0, 0, NULL);
		if (n)
			break;
	}
	CHECK_EQ(n, -ENOSPC);
	CHECK(i == EDGEQ_MAX_QUEUES - 2); /* npu0 and gpu0 hold two */
	while (i--) {
		snprintf(name, sizeof(name), "f%d", i);
		CHECK(!edgeq_kq_queue_destroy(name));
	}
	return 0;
}

static void fill(float *x, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 9) % 2001) / 1000.0f - 1.0f;
	}
}

/* One client: ADD, SILU_MUL, RMSNORM and MATVEC through the agent, results
 * compared bit for bit with edgeq_kq_exec() run locally. */
static int client_exchange(const char *queue, int id, int rounds)
{
	enum { N = 256, ROWS = 64 };
	struct edgeq_completion comp[8];
	struct edgeq_op_desc ops[4];
	struct edgeq_kq *kq;
	struct tensor t;
	float *a, *b, *w, *out, *ref;
	size_t off_a = 0, off_b = N * 4, off_w = 2 * N * 4,
	       off_out = off_w + ROWS * N * 4, sz = off_out + 4 * N * 4;
	int r, i, got;

	CHECK(!edgeq_kq_open(queue, 0, &kq));
	CHECK(!tensor_new(kq, sz, &t));
	a = (float *)((char *)t.map + off_a);
	b = (float *)((char *)t.map + off_b);
	w = (float *)((char *)t.map + off_w);
	out = (float *)((char *)t.map + off_out);
	ref = malloc(4 * N * 4);
	CHECK(ref);
	for (r = 0; r < rounds; r++) {
		fill(a, N, id * 100 + r);
		fill(b, N, id * 100 + r + 7);
		fill(w, ROWS * N, id + 3);
		memset(out, 0, 4 * N * 4);
		edgeq_op_desc_init(&ops[0], EDGEQ_OP_ADD, 1);
		ops[0].shape[0] = N;
		edgeq_op_desc_tensor(&ops[0], 0, t.handle, off_a, N * 4);
		edgeq_op_desc_tensor(&ops[0], 1, t.handle, off_b, N * 4);
		edgeq_op_desc_tensor(&ops[0], 2, t.handle, off_out, N * 4);
		edgeq_op_desc_init(&ops[1], EDGEQ_OP_SILU_MUL, 2);
		ops[1].shape[0] = N;
		edgeq_op_desc_tensor(&ops[1], 0, t.handle, off_a, N * 4);
		edgeq_op_desc_tensor(&ops[1], 1, t.handle, off_b, N * 4);
		edgeq_op_desc_tensor(&ops[1], 2, t.handle, off_out + N * 4,
				     N * 4);
		edgeq_op_desc_init(&ops[2], EDGEQ_OP_RMSNORM, 3);
		ops[2].shape[0] = N;
		ops[2].param[0] = 0x3727c5ac; /* 1e-5f */
		edgeq_op_desc_tensor(&ops[2], 0, t.handle, off_a, N * 4);
		edgeq_op_desc_tensor(&ops[2], 1, t.handle, off_b, N * 4);
		edgeq_op_desc_tensor(&ops[2], 2, t.handle, off_out + 2 * N * 4,
				     N * 4);
		edgeq_op_desc_init(&ops[3], EDGEQ_OP_MATVEC, 4);
		ops[3].dtype = EDGEQ_DTYPE_F32;
		ops[3].shape[0] = ROWS;
		ops[3].shape[1] = N;
		edgeq_op_desc_tensor(&ops[3], 0, t.handle, off_w, ROWS * N * 4);
		if (id % 2) {
			/* Odd clients: Q8_0 weights, as the engine has them. */
			size_t wq = edgeq_row_size(EDGEQ_TYPE_Q8_0, N) * ROWS;
			void *tmp = malloc(wq);

			CHECK(tmp);
			CHECK(!edgeq_type_traits(EDGEQ_TYPE_Q8_0)
				       ->from_float(w, tmp, ROWS * N));
			memcpy(w, tmp, wq);
			free(tmp);
			ops[3].dtype = EDGEQ_DTYPE_Q8_0;
			ops[3].tensors[0].length = wq;
		}
		edgeq_op_desc_tensor(&ops[3], 1, t.handle, off_a, N * 4);
		edgeq_op_desc_tensor(&ops[3], 2, t.handle, off_out + 3 * N * 4,
				     ROWS * 4);
		/* Alternate write() and the ioctl. */
		if (r % 2)
			CHECK_EQ(edgeq_kq_submit_ioctl(kq, ops, 4), 4);
		else
			CHECK_EQ(edgeq_kq_submit(kq, ops, 4), 4);
		for (got = 0; got < 4;) {
			int n = edgeq_kq_complete(kq, comp, 8);

			CHECK(n > 0);
			for (i = 0; i < n; i++) {
				CHECK_EQ(comp[i].status, 0);
				CHECK(comp[i].cookie >= 1 &&
				      comp[i].cookie <= 4);
				CHECK(comp[i].latency_ns > 0);
			}
			got += n;
		}
		/* The same ops locally. */
		for (i = 0; i < 4; i++) {
			void *tp[4] = { 0 };
			unsigned int k;

			for (k = 0; k < ops[i].ntensors; k++)
				tp[k] = (char *)t.map +
					ops[i].tensors[k].offset;
			tp[2] = ref + i * N;
			CHECK(!edgeq_kq_exec(&ops[i], tp));
		}
		CHECK(!memcmp(ref, out, N * 4));
		CHECK(!memcmp(ref + N, out + N, N * 4));
		CHECK(!memcmp(ref + 2 * N, out + 2 * N, N * 4));
		CHECK(!memcmp(ref + 3 * N, out + 3 * N, ROWS * 4));
	}
	/* fdinfo: DRM usage-stats keys. */
	{
		char path[64], line[128];
		bool engine = false, ops_ok = false;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d",
			 edgeq_kq_fd(kq));
		f = fopen(path, "r");
		CHECK(f);
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;
			char key[64];

			if (sscanf(line, "%63[^:]:\t%llu", key, &v) != 2)
				continue;
			if (!strcmp(key, "drm-engine-npu0") && v > 0)
				engine = true;
			if (!strcmp(key, "edgeq-ops-npu0") &&
			    v == 4ULL * rounds)
				ops_ok = true;
		}
		fclose(f);
		CHECK(engine && ops_ok);
	}
	CHECK(!edgeq_kq_tensor_unregister(kq, t.handle));
	tensor_free(&t);
	free(ref);
	edgeq_kq_close(kq);
	return 0;
}

static int t_exchange(void)
{
	long ops0 = sysfs_get("npu0", "ops");
	pid_t agent, kids[3];
	int i, st, bad = 0;

	reset_queue("npu0");
	agent = start_agent("npu0", "gpu", "0");
	CHECK(wait_sysfs("npu0", "agent_pid", agent, 20000));
	for (i = 0; i < 3; i++) {
		kids[i] = fork();
		if (!kids[i])
			_exit(client_exchange("npu0", i, 5));
	}
	for (i = 0; i < 3; i++) {
		waitpid(kids[i], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	stop_agent(agent);
	CHECK(!bad);
	CHECK_EQ(sysfs_get("npu0", "ops") - ops0, 3 * 5 * 4);
	CHECK(sysfs_get("npu0", "busy_ns") > 0);
	CHECK(wait_sysfs("npu0", "agent_pid", 0, 2000));
	return 0;
}

/* Submit-time validation and the npu profile. */
static int t_validation(void)
{
	struct edgeq_op_desc op, bad;
	struct edgeq_kq *kq, *other;
	struct tensor t, t2;
	uint32_t h;
	pid_t agent;
	int fd;

	reset_queue("npu0");
	CHECK(!edgeq_kq_open("npu0", 0, &kq));
	CHECK(!edgeq_kq_open("npu0", 0, &other));
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 1);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), -ENODEV); /* no agent */

	/* Registration: memfd with the shrink seal only. */
	fd = open("/proc/self/exe", O_RDONLY);
	CHECK_EQ(edgeq_kq_tensor_register(kq, fd, &h), -EINVAL);
	close(fd);
	fd = memfd_create("unsealed", 0);
	CHECK(!ftruncate(fd, 4096));
	CHECK_EQ(edgeq_kq_tensor_register(kq, fd, &h), -EINVAL);
	close(fd);
	CHECK_EQ(edgeq_kq_tensor_register(kq, -1, &h), -EINVAL);
	CHECK_EQ(edgeq_kq_tensor_register(kq, 999, &h), -EBADF);
	CHECK(!tensor_new(kq, 4096, &t));
	CHECK(!tensor_new(other, 4096, &t2));

	agent = start_agent("npu0", "npu", "200000");
	CHECK(wait_sysfs("npu0", "agent_pid", agent, 20000));
	CHECK_EQ(sysfs_get("npu0", "agent_ops") & (1 << EDGEQ_OP_SOFTMAX), 0);
	edgeq_op_desc_init(&op, EDGEQ_OP_SOFTMAX, 1);
	op.shape[0] = 16;
	op.shape[1] = 1;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 64);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), -EOPNOTSUPP);

	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 2);
	op.shape[0] = 16;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 64);
	edgeq_op_desc_tensor(&op, 1, t.handle, 64, 64);
	edgeq_op_desc_tensor(&op, 2, t.handle, 128, 64);
#define BAD(mut, err)                                        \
	do {                                                 \
		bad = op;                                    \
		mut;                                         \
		CHECK_EQ(edgeq_kq_submit(kq, &bad, 1), err); \
	} while (0)
	BAD(bad.size = 100, -EINVAL);
	BAD(bad.opcode = EDGEQ_OP_COUNT, -EINVAL);
	BAD(bad.priority = 9, -EINVAL);
	BAD(bad.ndims = 2, -EINVAL);
	BAD(bad.shape[1] = 5, -EINVAL);
	BAD(bad.shape[0] = 0, -EINVAL);
	BAD(bad.ntensors = 4, -EINVAL);
	BAD(bad.tensors[3].length = 1, -EINVAL);
	BAD(bad.dtype = 5, -EINVAL);
	BAD(bad.flags = 0x80, -EINVAL);
	BAD(bad.reserved0 = 1, -EINVAL);
	BAD(bad.reserved[3] = 1, -EINVAL);
	BAD(bad.tensors[0].reserved = 1, -EINVAL);
	BAD(bad.tensors[0].length = 0, -EINVAL);
	BAD(bad.tensors[0].offset = 4096 - 63, -EINVAL);  /* past the end */
	BAD(bad.tensors[0].offset = ~0ULL - 10, -EINVAL); /* overflow */
	BAD(bad.tensors[0].handle = 0, -EINVAL);
	BAD(bad.tensors[0].handle = 12345, -ENOENT);
	BAD(bad.tensors[0].handle = t2.handle, -ENOENT); /* other's */
	/* A bad op after a good one: the good one is accepted. */
	{
		struct edgeq_op_desc two[2] = { op, op };

		two[1].reserved0 = 1;
		CHECK_EQ(edgeq_kq_submit(kq, two, 2), 1);
		CHECK_EQ(write(edgeq_kq_fd(kq), two, 100), -1);
		CHECK_EQ(errno, EINVAL);
		CHECK_EQ(write(edgeq_kq_fd(kq), bad_ptr, sizeof(op)), -1);
		CHECK_EQ(errno, EFAULT);
		/* The ioctl: partial -> submitted 1; first bad -> its error. */
		CHECK_EQ(edgeq_kq_submit_ioctl(kq, two, 2), 1);
		CHECK_EQ(edgeq_kq_submit_ioctl(kq, two + 1, 1), -EINVAL);
		{
			struct edgeq_submit sub = { .size = sizeof(sub),
						    .count = 1,
						    .ops = 8 };

			CHECK_EQ(ioctl(edgeq_kq_fd(kq), EDGEQ_IOC_SUBMIT, &sub),
				 -1);
			CHECK_EQ(errno, EFAULT);
			sub.ops = (uintptr_t)two;
			sub.count = 65;
			CHECK_EQ(ioctl(edgeq_kq_fd(kq), EDGEQ_IOC_SUBMIT, &sub),
				 -1);
			CHECK_EQ(errno, EINVAL);
			sub.count = 1;
			sub.reserved[1] = 1;
			CHECK_EQ(ioctl(edgeq_kq_fd(kq), EDGEQ_IOC_SUBMIT, &sub),
				 -1);
			CHECK_EQ(errno, EINVAL);
		}
	}
	/* The op in flight holds its tensor. */
	CHECK_EQ(edgeq_kq_tensor_unregister(kq, t.handle), -EBUSY);
	CHECK_EQ(edgeq_kq_tensor_unregister(kq, t2.handle), -ENOENT);
	{
		struct edgeq_completion c;

		CHECK_EQ(edgeq_kq_complete(kq, &c, 1), 1);
		CHECK_EQ(c.status, 0);
		CHECK_EQ(edgeq_kq_complete(kq, &c, 1), 1);
		CHECK_EQ(c.status, 0);
		CHECK_EQ(read(edgeq_kq_fd(kq), &c, 10), -1);
		CHECK_EQ(errno, EINVAL);
	}
	CHECK(!edgeq_kq_tensor_unregister(kq, t.handle));
	CHECK_EQ(edgeq_kq_tensor_unregister(kq, t.handle), -ENOENT);
	/* A second agent is refused; a client file cannot be one. */
	CHECK_EQ(edgeq_kq_agent_attach(other, 1), -EBUSY);
	stop_agent(agent);
	CHECK(wait_sysfs("npu0", "agent_pid", 0, 2000));
	CHECK_EQ(edgeq_kq_agent_attach(other, 1), -EBUSY); /* has tensors */
	tensor_free(&t);
	tensor_free(&t2);
	edgeq_kq_close(kq);
	edgeq_kq_close(other);
	return 0;
}

/* Round-robin between clients within a level, strict between levels. */
static int t_fairness(void)
{
	struct edgeq_kq *agent, *c[3];
	struct edgeq_agent_op a[1];
	struct edgeq_agent_done d;
	struct edgeq_op_desc op;
	uint32_t order[64];
	int i, n = 0, k;

	reset_queue("gpu0");
	sysfs_set("gpu0", "max_inflight", "1");
	CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	for (i = 0; i < 3; i++)
		CHECK(!edgeq_kq_open("gpu0", 0, &c[i]));
	/* Client 0 floods first, then 1 and 2; all at NORMAL. */
	for (i = 0; i < 3; i++) {
		for (k = 0; k < 10; k++) {
			edgeq_op_desc_init(&op, EDGEQ_OP_NOP, i * 100 + k);
			CHECK_EQ(edgeq_kq_submit(c[i], &op, 1), 1);
		}
	}
	/* One HIGH op from client 2 jumps the queue; LOW waits for all. */
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 999);
	op.priority = EDGEQ_PRIO_LOW;
	CHECK_EQ(edgeq_kq_submit(c[1], &op, 1), 1);
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 500);
	op.priority = EDGEQ_PRIO_HIGH;
	CHECK_EQ(edgeq_kq_submit(c[2], &op, 1), 1);

	while (n < 32) {
		k = edgeq_kq_agent_next(agent, a, 1);
		if (k == -EAGAIN)
			break;
		CHECK_EQ(k, 1);
		/* Limit 1: nothing more until this one is done. */
		CHECK_EQ(edgeq_kq_agent_next(agent, a + 0, 1) == -EAGAIN ? 0 :
									   1,
			 0);
		order[n++] = (uint32_t)a[0].op.cookie;
		memset(&d, 0, sizeof(d));
		d.tag = a[0].tag;
		CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
	}
	CHECK_EQ(n, 32);
	CHECK_EQ(order[0], 500);
	/* Then 0,1,2,0,1,2... by cookie hundreds. */
	for (i = 1; i < 31; i++)
		CHECK_EQ(order[i] / 100, (i - 1) % 3);
	CHECK_EQ(order[31], 999);

	/* DRR by bytes: 20 ops of 768 KiB from client 0, then 20 NOPs from
	 * client 1; the small ones go first. */
	CHECK(!sysfs_set("gpu0", "sched", "drr"));
	CHECK_EQ(sysfs_set("gpu0", "sched", "wfq"), -EINVAL);
	edgeq_kq_close(agent);
	CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, (1 << EDGEQ_OP_NOP) |
						    (1 << EDGEQ_OP_ADD)));
	{
		struct tensor big;

		CHECK(!tensor_new(c[0], 768 << 10, &big));
		for (k = 0; k < 20; k++) {
			edgeq_op_desc_init(&op, EDGEQ_OP_ADD, k);
			op.shape[0] = 65536;
			for (i = 0; i < 3; i++)
				edgeq_op_desc_tensor(&op, (unsigned int)i,
						     big.handle,
						     i * (256 << 10),
						     256 << 10);
			CHECK_EQ(edgeq_kq_submit(c[0], &op, 1), 1);
		}
		for (k = 0; k < 20; k++) {
			edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 100 + k);
			CHECK_EQ(edgeq_kq_submit(c[1], &op, 1), 1);
		}
		for (n = 0; n < 40; n++) {
			CHECK_EQ(edgeq_kq_agent_next(agent, a, 1), 1);
			order[n] = (uint32_t)a[0].op.cookie;
			memset(&d, 0, sizeof(d));
			d.tag = a[0].tag;
			CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
		}
		for (n = 0; n < 20; n++)
			CHECK_EQ(order[n], 100 + n);
		for (n = 20; n < 40; n++)
			CHECK_EQ(order[n], n - 20);
		tensor_free(&big);
	}
	sysfs_set("gpu0", "sched", "rr");
	for (i = 0; i < 3; i++)
		edgeq_kq_close(c[i]);
	edgeq_kq_close(agent);
	reset_queue("gpu0");
	return 0;
}

static int count_trace(const char *needle)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/sys/kernel/tracing/trace", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static int trace_enable(const char *event, bool on)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path),
		 "/sys/kernel/tracing/events/edgeq/%s/enable", event);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, on ? "1" : "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

static void trace_clear(void)
{
	int fd = open("/sys/kernel/tracing/trace", O_WRONLY | O_TRUNC);

	if (fd >= 0)
		close(fd);
}

/* Cooling state -> in-flight limit, throttle tracepoint. */
static int t_cooling(void)
{
	struct edgeq_agent_op a[16];
	struct edgeq_kq *agent, *c;
	struct edgeq_op_desc ops[16];
	struct edgeq_completion comp[16];
	int i, n, got;
	static const int limit[5] = { 8, 6, 4, 2, 0 };
	int s;

	reset_queue("gpu0");
	CHECK(!trace_enable("edgeq_throttle", true));
	trace_clear();
	CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	CHECK(!edgeq_kq_open("gpu0", 0, &c));
	for (s = 0; s <= 4; s++) {
		CHECK(!sysfs_set("gpu0", "cooling_state", "%d", s));
		CHECK_EQ(sysfs_get("gpu0", "effective_inflight"), limit[s]);
		for (i = 0; i < 16; i++)
			edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP, i);
		CHECK_EQ(edgeq_kq_submit(c, ops, 16), 16);
		n = edgeq_kq_agent_next(agent, a, 16);
		if (limit[s]) {
			CHECK_EQ(n, limit[s]);
			CHECK_EQ(edgeq_kq_agent_next(agent, a + n, 1), -EAGAIN);
			CHECK_EQ(sysfs_get("gpu0", "nr_inflight"), limit[s]);
		} else {
			CHECK_EQ(n, -EAGAIN); /* paused */
			CHECK(!(edgeq_kq_wait(agent, POLLIN, 0) & POLLIN));
			CHECK(!sysfs_set("gpu0", "cooling_state", "0"));
			n = edgeq_kq_agent_next(agent, a, 16);
			CHECK_EQ(n, 8);
		}
		/* Drain everything. */
		for (got = 0; got < 16;) {
			for (i = 0; i < n; i++) {
				struct edgeq_agent_done d = { .tag = a[i].tag };

				CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
			}
			got += n;
			if (got < 16) {
				n = edgeq_kq_agent_next(agent, a, 16);
				CHECK(n > 0);
			}
		}
		for (got = 0; got < 16; got += n)
			CHECK((n = edgeq_kq_complete(c, comp, 16)) > 0);
	}
	CHECK_EQ(sysfs_set("gpu0", "cooling_state", "5"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "cooling_state", "x"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "max_inflight", "0"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "max_inflight", "257"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "policy", "maybe"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "timeout_ms", "-1"), -EINVAL);
	CHECK_EQ(sysfs_set("gpu0", "sim_tau_ms", "0"), -EINVAL);
	CHECK(count_trace(
		      "edgeq_throttle: queue=1 state=1->2 max_inflight=4") ==
	      1);
	CHECK(count_trace("state=3->4 max_inflight=0") == 1);
	trace_enable("edgeq_throttle", false);
	edgeq_kq_close(c);
	edgeq_kq_close(agent);
	return 0;
}

/* Simulated sensor: a busy queue heats, step_wise raises the cooling
 * state, the throttle tracepoint fires. */
static int t_sensor(void)
{
	struct edgeq_agent_op a[8];
	struct edgeq_completion comp[8];
	struct edgeq_op_desc ops[8];
	struct edgeq_kq *agent, *c;
	int i, n, max_state = 0, rounds;
	long t0;

	if (sysfs_get("npu0", "sim_temp_mC") < 0) {
		printf("no simulated sensor (load with sim_sensor=1)\n");
		return 77;
	}
	reset_queue("npu0");
	sysfs_set("npu0", "sim_tau_ms", "300");
	sysfs_set("npu0", "sim_trip_mC", "60000");
	CHECK(!trace_enable("edgeq_throttle", true));
	trace_clear();
	t0 = sysfs_get("npu0", "sim_temp_mC");
	CHECK(t0 < 60000);
	CHECK(!edgeq_kq_open("npu0", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	CHECK(!edgeq_kq_open("npu0", 0, &c));
	/* Keep ops in flight ~all the time, each reported busy for as long
	 * as it was with the agent. */
	for (rounds = 0; rounds < 400 && max_state < 2; rounds++) {
		for (i = 0; i < 4; i++)
			edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP, i);
		CHECK_EQ(edgeq_kq_submit(c, ops, 4), 4);
		n = edgeq_kq_agent_next(agent, a, 8);
		CHECK(n > 0);
		msleep(10);
		for (i = 0; i < n; i++) {
			struct edgeq_agent_done d = { .tag = a[i].tag,
						      .busy_ns = ~0ULL >> 1 };

			CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
		}
		/* Throttled below 4: finish the rest. */
		for (i = n; i < 4;) {
			int m = edgeq_kq_agent_next(agent, a, 8), j;

			CHECK(m > 0);
			for (j = 0; j < m; j++) {
				struct edgeq_agent_done d = { .tag = a[j].tag };

				CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
			}
			i += m;
		}
		for (i = 0; i < 4; i += n)
			CHECK((n = edgeq_kq_complete(c, comp, 8)) > 0);
		if (sysfs_get("npu0", "cooling_state") > max_state)
			max_state = (int)sysfs_get("npu0", "cooling_state");
	}
	printf("sensor: %d rounds, temp %ld -> %ld mC, cooling state %d\n",
	       rounds, t0, sysfs_get("npu0", "sim_temp_mC"), max_state);
	CHECK(max_state >= 2);
	CHECK(sysfs_get("npu0", "sim_temp_mC") > 60000);
	CHECK(count_trace("edgeq_throttle: queue=0 state=0->1") >= 1);
	trace_enable("edgeq_throttle", false);
	edgeq_kq_close(c);
	edgeq_kq_close(agent);
	/* Idle: it cools down and the governor lifts the state. */
	sysfs_set("npu0", "sim_tau_ms", "100");
	for (i = 0; i < 100 && sysfs_get("npu0", "cooling_state"); i++)
		msleep(100);
	CHECK_EQ(sysfs_get("npu0", "cooling_state"), 0);
	sysfs_set("npu0", "sim_tau_ms", "2000");
	sysfs_set("npu0", "sim_trip_mC", "70000");
	return 0;
}

/* A socket on kobject uevents (the kernel's broadcast group). */
static int uevent_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_KOBJECT_UEVENT);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits up to @ms for a uevent holding both @a and @b. */
static bool uevent_wait(int fd, const char *a, const char *b, int ms)
{
	char buf[4096];
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (poll(&p, 1, ms) > 0) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		bool fa = false, fb = false;
		ssize_t i;

		if (n <= 0)
			return false;
		buf[n] = 0;
		for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
			fa |= !strcmp(buf + i, a);
			fb |= !strcmp(buf + i, b);
		}
		if (fa && fb)
			return true;
	}
	return false;
}

/* An agent killed mid-flight: -ENODEV at once, then a new agent serves. */
static int t_agent_killed(void)
{
	struct edgeq_completion comp[8];
	struct edgeq_op_desc ops[4];
	struct edgeq_kq *c;
	uint64_t t0;
	pid_t agent;
	int i, n, got, ue = uevent_open();

	reset_queue("npu0");
	CHECK(!sysfs_set("npu0", "timeout_ms", "60000")); /* TCG is slow */
	CHECK(ue >= 0);
	CHECK(!edgeq_kq_open("npu0", 0, &c));
	agent = start_agent("npu0", "cpu", "3000000");
	CHECK(wait_sysfs("npu0", "agent_pid", agent, 20000));
	for (i = 0; i < 4; i++)
		edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP, i);
	CHECK_EQ(edgeq_kq_submit(c, ops, 4), 4);
	/* The agent may have taken 1..4 of them: it reads while we submit. */
	CHECK(wait_sysfs_ge("npu0", "nr_inflight", 1, 3000));
	t0 = edgeq_now_ns();
	kill(agent, SIGKILL);
	waitpid(agent, NULL, 0);
	for (got = 0; got < 4; got += n) {
		n = edgeq_kq_complete(c, comp, 8);
		CHECK(n > 0);
		for (i = 0; i < n; i++)
			CHECK_EQ(comp[i].status, -ENODEV);
	}
	printf("agent killed: 4 ops failed %.1f ms after the kill\n",
	       (double)(edgeq_now_ns() - t0) / 1e6);
	CHECK(edgeq_now_ns() - t0 < 1000000000ULL); /* not the 5 s timeout */
	CHECK_EQ(sysfs_get("npu0", "agent_pid"), 0);
	CHECK(uevent_wait(ue, "EDGEQ_EVENT=agent-detach", "EDGEQ_QUEUE=npu0",
			  2000));
	close(ue);

	/* Policy requeue: the new agent completes them. */
	CHECK(!sysfs_set("npu0", "policy", "requeue"));
	agent = start_agent("npu0", "cpu", "3000000");
	CHECK(wait_sysfs("npu0", "agent_pid", agent, 20000));
	CHECK_EQ(edgeq_kq_submit(c, ops, 4), 4);
	CHECK(wait_sysfs_ge("npu0", "nr_inflight", 1, 3000));
	kill(agent, SIGKILL);
	waitpid(agent, NULL, 0);
	CHECK(wait_sysfs("npu0", "nr_waiting", 4, 1000));
	CHECK(!(edgeq_kq_wait(c, POLLIN, 100) & POLLIN));
	agent = start_agent("npu0", "cpu", "0");
	for (got = 0; got < 4; got += n) {
		n = edgeq_kq_complete(c, comp, 8);
		CHECK(n > 0);
		for (i = 0; i < n; i++)
			CHECK_EQ(comp[i].status, 0);
	}
	stop_agent(agent);
	edgeq_kq_close(c);
	reset_queue("npu0");
	return 0;
}

static int t_timeout(void)
{
	struct edgeq_completion comp;
	struct edgeq_op_desc op;
	struct edgeq_agent_op a;
	struct edgeq_agent_done d = { 0 };
	struct edgeq_kq *agent, *c;
	long timeouts = sysfs_get("gpu0", "timeouts");
	uint64_t t0;

	reset_queue("gpu0");
	CHECK(!sysfs_set("gpu0", "timeout_ms", "300"));
	CHECK(!trace_enable("edgeq_agent_timeout", true));
	trace_clear();
	CHECK(!edgeq_kq_open("gpu0", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	CHECK(!edgeq_kq_open("gpu0", 0, &c));
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 42);
	t0 = edgeq_now_ns();
	CHECK_EQ(edgeq_kq_submit(c, &op, 1), 1);
	CHECK_EQ(edgeq_kq_agent_next(agent, &a, 1), 1);
	CHECK_EQ(edgeq_kq_complete(c, &comp, 1), 1);
	CHECK_EQ(comp.status, -ETIMEDOUT);
	CHECK_EQ(comp.cookie, 42);
	CHECK(edgeq_now_ns() - t0 >= 300000000ULL);
	CHECK_EQ(sysfs_get("gpu0", "timeouts"), timeouts + 1);
	d.tag = a.tag;
	CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), -ENOENT); /* too late */
	d.status = 5;
	CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), -EINVAL);
	CHECK_EQ(count_trace("edgeq_agent_timeout: queue=1 cookie=42"), 1);
	trace_enable("edgeq_agent_timeout", false);
	edgeq_kq_close(c);
	edgeq_kq_close(agent);
	reset_queue("gpu0");
	return 0;
}

/* ---- fuzzer: random ioctls, writes and reads on every kind of file */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void mutate(void *p, size_t len)
{
	unsigned char *b = p;
	int i, n = (int)(rnd() % 4);

	for (i = 0; i < n; i++) {
		switch (rnd() % 4) {
		case 0:
			b[rnd() % len] ^= (unsigned char)(1u << (rnd() % 8));
			break;
		case 1:
			b[rnd() % len] = (unsigned char)rnd();
			break;
		case 2:
			b[rnd() % len] = 0;
			break;
		default:
			b[rnd() % len] = 0xff;
			break;
		}
	}
}

static int t_fuzz(void)
{
	static const unsigned long cmds[] = {
		EDGEQ_IOC_GET_FEATURES,	     EDGEQ_IOC_QUEUE_CREATE,
		EDGEQ_IOC_QUEUE_DESTROY,     EDGEQ_IOC_TENSOR_REGISTER,
		EDGEQ_IOC_TENSOR_UNREGISTER, EDGEQ_IOC_SUBMIT,
		EDGEQ_IOC_AGENT_ATTACH,	     EDGEQ_IOC_AGENT_DETACH,
		EDGEQ_IOC_AGENT_TENSOR_FD,
	};
	long calls = 0, target = getenv("EDGEQ_FUZZ_CALLS") ?
					 atol(getenv("EDGEQ_FUZZ_CALLS")) :
					 100000;
	struct edgeq_kq *kq[3];
	struct tensor t;
	unsigned char buf[4096];
	struct edgeq_op_desc good;
	int ctl, i, fd;

	reset_queue("gpu0");
	sysfs_set("gpu0", "timeout_ms", "50");
	ctl = open(EDGEQ_KQ_CONTROL, O_RDWR);
	CHECK(ctl >= 0);
	for (i = 0; i < 3; i++)
		CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &kq[i]));
	CHECK(!edgeq_kq_agent_attach(kq[2], ~0ULL >> (64 - EDGEQ_OP_COUNT)));
	CHECK(!tensor_new(kq[0], 65536, &t));
	edgeq_op_desc_init(&good, EDGEQ_OP_ADD, 1);
	good.shape[0] = 16;
	for (i = 0; i < 3; i++)
		edgeq_op_desc_tensor(&good, i, t.handle, i * 64, 64);

	while (calls < target) {
		int which = (int)(rnd() % 4), kind = (int)(rnd() % 10);
		size_t len;

		fd = which == 3 ? ctl : edgeq_kq_fd(kq[which]);
		memset(buf, 0, 512);
		switch (kind) {
		case 0:
		case 1:
		case 2:
		case 3: {
			unsigned long cmd = cmds[rnd() % 9];

			if (rnd() % 8 == 0)
				cmd = _IOC(rnd() % 4, 0xEE, rnd() % 48,
					   rnd() % 300);
			/* A plausible struct: its size first, then noise. */
			*(uint32_t *)buf = (uint32_t)_IOC_SIZE(cmd);
			if (cmd == EDGEQ_IOC_TENSOR_REGISTER)
				((int32_t *)buf)[1] =
					rnd() % 2 ? t.fd : (int)(rnd() % 64);
			if (cmd == EDGEQ_IOC_SUBMIT) {
				struct edgeq_op_desc *o = (void *)(buf + 1024);
				*(uint64_t *)(buf + 8) = (uintptr_t)o;
				((uint32_t *)buf)[1] = (uint32_t)(rnd() % 3);
				*o = good;
				mutate(o, sizeof(*o));
			}
			if (cmd == EDGEQ_IOC_QUEUE_DESTROY ||
			    cmd == EDGEQ_IOC_QUEUE_CREATE)
				memcpy(buf + 8, rnd() % 2 ? "fz" : "fz-1", 5);
			if (cmd == EDGEQ_IOC_AGENT_TENSOR_FD)
				((uint32_t *)buf)[1] = t.handle;
			mutate(buf, 64);
			if (rnd() % 64 == 0) {
				ioctl(fd, cmd, (void *)8); /* bad pointer */
			} else if (!ioctl(fd, cmd, buf) &&
				   cmd == EDGEQ_IOC_AGENT_TENSOR_FD) {
				close(((int32_t *)buf)[3]);
			}
			break;
		}
		case 4:
		case 5:
		case 6: {
			int nops = 1 + (int)(rnd() % 3);
			struct edgeq_op_desc *o = (void *)buf;

			for (i = 0; i < nops; i++) {
				o[i] = good;
				if (rnd() % 2)
					mutate(&o[i], sizeof(o[i]));
			}
			len = nops * sizeof(*o);
			if (rnd() % 16 == 0)
				len = rnd() % 1024;
			if (write(fd, buf, len) < 0 && errno == 0)
				return 1;
			break;
		}
		case 7: {
			/* Agent results with random tags. */
			struct edgeq_agent_done *d = (void *)buf;

			d->tag = rnd() % 2 ? rnd() % 64 : rnd();
			d->status = -(int)(rnd() % 5000);
			mutate(d, sizeof(*d));
			if (write(edgeq_kq_fd(kq[2]), d, sizeof(*d)) < 0 &&
			    errno == 0)
				return 1;
			break;
		}
		default:
			len = rnd() % 2 ? rnd() % 600 : 240 * (1 + rnd() % 3);
			if (read(fd, buf, len) < 0 && errno == 0)
				return 1;
			break;
		}
		calls++;
		if (calls % 5000 == 0 && rnd() % 2) {
			/* Re-attach now and then; destroy what was created. */
			edgeq_kq_queue_destroy("fz");
			edgeq_kq_queue_destroy("fz-1");
			edgeq_kq_agent_detach(kq[2]);
			edgeq_kq_agent_attach(kq[2],
					      ~0ULL >> (64 - EDGEQ_OP_COUNT));
		}
	}
	edgeq_kq_queue_destroy("fz");
	edgeq_kq_queue_destroy("fz-1");
	printf("fuzz: %ld calls\n", calls);
	for (i = 0; i < 3; i++)
		edgeq_kq_close(kq[i]);
	tensor_free(&t);
	close(ctl);
	CHECK(sysfs_get("npu0", "id") == 0); /* the module still answers */
	reset_queue("gpu0");
	return 0;
}

/* ---- io_uring: WRITE submits, POLL_ADD waits, READ reaps */

struct uring_agent {
	const char *queue;
	int ops;
};

static void *uring_agent_thread(void *arg)
{
	struct uring_agent *ua = arg;
	struct edgeq_agent_op a[8];
	struct edgeq_kq *kq;
	int served = 0, n, i;

	if (edgeq_kq_open(ua->queue, 0, &kq))
		return (void *)1;
	if (edgeq_kq_agent_attach(kq, ~0ULL >> (64 - EDGEQ_OP_COUNT)))
		return (void *)1;
	while (served < ua->ops) {
		n = edgeq_kq_agent_next(kq, a, 8);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			struct edgeq_agent_done d = { .tag = a[i].tag,
						      .busy_ns = 1000 };

			edgeq_kq_agent_done(kq, &d, 1);
		}
		served += n;
	}
	edgeq_kq_close(kq);
	return NULL;
}

static int t_io_uring(void)
{
	enum { OPS = 64, BATCH = 8 };
	struct uring_agent ua = { "gpu0", OPS };
	struct edgeq_completion comp[BATCH];
	struct edgeq_op_desc ops[BATCH];
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct edgeq_kq *c;
	pthread_t th;
	int done = 0, sent = 0, i, ret, fd;
	bool seen[OPS] = { 0 };
	uint64_t t0;

	reset_queue("gpu0");
	ret = io_uring_queue_init(16, &ring, 0);
	if (ret) {
		printf("io_uring unavailable: %s\n", strerror(-ret));
		return 77;
	}
	CHECK(!pthread_create(&th, NULL, uring_agent_thread, &ua));
	CHECK(wait_sysfs("gpu0", "agent_pid", getpid(), 5000));
	CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &c));
	fd = edgeq_kq_fd(c);
	t0 = edgeq_now_ns();
	while (done < OPS) {
		if (sent < OPS) {
			for (i = 0; i < BATCH; i++)
				edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP,
						   sent + i);
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_write(sqe, fd, ops, sizeof(ops), 0);
			sqe->user_data = 1;
			CHECK_EQ(io_uring_submit(&ring), 1);
			CHECK(!io_uring_wait_cqe(&ring, &cqe));
			CHECK_EQ(cqe->res, (int)sizeof(ops));
			io_uring_cqe_seen(&ring, cqe);
			sent += BATCH;
		}
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_poll_add(sqe, fd, POLLIN);
		sqe->user_data = 2;
		CHECK_EQ(io_uring_submit(&ring), 1);
		CHECK(!io_uring_wait_cqe(&ring, &cqe));
		CHECK(cqe->res & POLLIN);
		io_uring_cqe_seen(&ring, cqe);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, comp, sizeof(comp), 0);
		sqe->user_data = 3;
		CHECK_EQ(io_uring_submit(&ring), 1);
		CHECK(!io_uring_wait_cqe(&ring, &cqe));
		ret = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		if (ret == -EAGAIN)
			continue;
		CHECK(ret > 0 && ret % (int)sizeof(comp[0]) == 0);
		for (i = 0; i < ret / (int)sizeof(comp[0]); i++) {
			CHECK_EQ(comp[i].status, 0);
			CHECK(comp[i].cookie < OPS && !seen[comp[i].cookie]);
			seen[comp[i].cookie] = true;
			done++;
		}
	}
	printf("io_uring: %d ops, %.1f us per op round trip (TCG guest)\n", OPS,
	       (double)(edgeq_now_ns() - t0) / 1e3 / OPS);
	pthread_join(th, NULL);
	io_uring_queue_exit(&ring);
	edgeq_kq_close(c);
	return 0;
}

/* Round-trip latency of NOPs through the module (one client, one agent
 * thread), for the closing note. */
static int t_latency(void)
{
	struct uring_agent ua = { "gpu0", 500 };
	struct edgeq_completion comp;
	struct edgeq_op_desc op;
	struct edgeq_kq *c;
	pthread_t th;
	uint64_t t0;
	int i;

	reset_queue("gpu0");
	CHECK(!pthread_create(&th, NULL, uring_agent_thread, &ua));
	CHECK(wait_sysfs("gpu0", "agent_pid", getpid(), 5000));
	CHECK(!edgeq_kq_open("gpu0", 0, &c));
	t0 = edgeq_now_ns();
	for (i = 0; i < ua.ops; i++) {
		edgeq_op_desc_init(&op, EDGEQ_OP_NOP, i);
		CHECK_EQ(edgeq_kq_submit(c, &op, 1), 1);
		CHECK_EQ(edgeq_kq_complete(c, &comp, 1), 1);
		CHECK_EQ(comp.status, 0);
	}
	printf("latency: %d NOP round trips, %.1f us each (TCG guest)\n",
	       ua.ops, (double)(edgeq_now_ns() - t0) / 1e3 / ua.ops);
	pthread_join(th, NULL);
	edgeq_kq_close(c);
	return 0;
}

/* ---- races: destroy, agent close and submissions from several threads */

static volatile int race_stop;

static void *race_destroyer(void *arg)
{
	while (!race_stop) {
		edgeq_kq_queue_destroy("rz");
		sched_yield();
		edgeq_kq_queue_create("rz", 2, 50, NULL);
		sched_yield();
	}
	return NULL;
}

static void *race_agent(void *arg)
{
	struct edgeq_agent_op a[4];
	struct edgeq_kq *kq;
	int n, i;

	while (!race_stop) {
		if (edgeq_kq_open("rz", O_NONBLOCK, &kq))
			continue;
		if (!edgeq_kq_agent_attach(kq, 1)) {
			for (i = 0; i < 20; i++) {
				n = edgeq_kq_agent_next(kq, a, 4);
				while (n-- > 0) {
					struct edgeq_agent_done d = {
						.tag = a[n].tag
					};

					edgeq_kq_agent_done(kq, &d, 1);
				}
			}
		}
		edgeq_kq_close(kq);
	}
	return NULL;
}

static void *race_client(void *arg)
{
	struct edgeq_completion c[8];
	struct edgeq_op_desc op[4];
	struct edgeq_kq *kq;
	long *count = arg;
	int i;

	while (!race_stop) {
		if (edgeq_kq_open("rz", O_NONBLOCK, &kq))
			continue;
		for (i = 0; i < 4; i++)
			edgeq_op_desc_init(&op[i], EDGEQ_OP_NOP, i);
		for (i = 0; i < 10; i++) {
			if (edgeq_kq_submit(kq, op, 4) > 0)
				(*count)++;
			edgeq_kq_complete(kq, c, 8);
		}
		edgeq_kq_close(kq); /* often with ops in flight */
	}
	return NULL;
}

static int t_race(void)
{
	pthread_t th[4];
	long submits[2] = { 0, 0 };
	int i;

	CHECK(!edgeq_kq_queue_create("rz", 2, 50, NULL));
	CHECK(!pthread_create(&th[0], NULL, race_destroyer, NULL));
	CHECK(!pthread_create(&th[1], NULL, race_agent, NULL));
	CHECK(!pthread_create(&th[2], NULL, race_client, &submits[0]));
	CHECK(!pthread_create(&th[3], NULL, race_client, &submits[1]));
	msleep(getenv("EDGEQ_RACE_MS") ? atoi(getenv("EDGEQ_RACE_MS")) : 3000);
	race_stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	edgeq_kq_queue_destroy("rz");
	printf("race: %ld accepted submissions\n", submits[0] + submits[1]);
	CHECK(submits[0] + submits[1] > 0);
	return 0;
}

/* ---- issue 16: destroy, wakeups, names, agent scope, trips, limits */

static int param_set(const char *name, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = write_attr("/sys/module/edgeq/parameters", name, fmt, ap);
	va_end(ap);
	return ret;
}

static volatile int dr_stop;
static long dr_bad, dr_rounds;

/* Create a queue, open it, talk to it, destroy it: the open must reach the
 * queue just created, never a dying one that shared its minor. */
static void *dr_cycler(void *arg)
{
	const char *name = arg;
	struct edgeq_features f;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/edgeq/%s", name);
	while (!dr_stop) {
		if (edgeq_kq_queue_create(name, 0, 0, NULL))
			continue;
		fd = open(path, O_RDWR);
		memset(&f, 0, sizeof(f));
		f.size = sizeof(f);
		if (fd < 0 || ioctl(fd, EDGEQ_IOC_GET_FEATURES, &f)) {
			fprintf(stderr, "destroy_race: %s: %s\n", name,
				strerror(errno));
			__atomic_add_fetch(&dr_bad, 1, __ATOMIC_RELAXED);
		}
		if (fd >= 0)
			close(fd);
		edgeq_kq_queue_destroy(name);
		__atomic_add_fetch(&dr_rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Opens whatever exists, racing every destroy. */
static void *dr_opener(void *arg)
{
	static const char *const names[] = { "/dev/edgeq/dra", "/dev/edgeq/drb",
					     "/dev/edgeq/drc" };
	unsigned int i = 0;
	int fd;

	while (!dr_stop) {
		fd = open(names[i++ % 3], O_RDWR | O_NONBLOCK);
		if (fd >= 0) {
			struct edgeq_completion c;

			if (read(fd, &c, sizeof(c)) < 0 && errno != ENODEV &&
			    errno != EAGAIN) {
				fprintf(stderr, "destroy_race: read: %s\n",
					strerror(errno));
				__atomic_add_fetch(&dr_bad, 1,
						   __ATOMIC_RELAXED);
			}
			close(fd);
		}
	}
	return NULL;
}

static int t_destroy_race(void)
{
	static char *names[] = { "dra", "drb", "drc" };
	pthread_t th[5];
	int i;

	dr_stop = 0;
	for (i = 0; i < 3; i++)
		CHECK(!pthread_create(&th[i], NULL, dr_cycler, names[i]));
	for (i = 3; i < 5; i++)
		CHECK(!pthread_create(&th[i], NULL, dr_opener, NULL));
	msleep(getenv("EDGEQ_RACE_MS") ? atoi(getenv("EDGEQ_RACE_MS")) : 4000);
	dr_stop = 1;
	for (i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	printf("destroy_race: %ld create/open/destroy rounds, %ld bad opens\n",
	       dr_rounds, dr_bad);
	CHECK(dr_rounds > 30);
	CHECK_EQ(dr_bad, 0);
	return 0;
}

struct waiter {
	struct edgeq_kq *kq;
	int kind; /* 0 read, 1 epoll, 2 io_uring poll, 3 agent read */
	volatile int done;
	int result;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;
	int fd = edgeq_kq_fd(w->kq);

	if (w->kind == 0 || w->kind == 3) {
		char buf[256];

		w->result = read(fd, buf, w->kind ? 240 : 48) < 0 ? -errno : 0;
	} else if (w->kind == 1) {
		struct epoll_event ev = { .events = EPOLLIN }, out;
		int ep = epoll_create1(0);

		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		w->result = epoll_wait(ep, &out, 1, 20000) == 1 ?
				    (int)out.events :
				    -ETIMEDOUT;
		close(ep);
	} else {
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;

		if (io_uring_queue_init(4, &ring, 0)) {
			w->result = -ENOSYS;
		} else {
			sqe = io_uring_get_sqe(&ring);
			io_uring_prep_poll_add(sqe, fd, POLLIN);
			io_uring_submit(&ring);
			w->result = io_uring_wait_cqe(&ring, &cqe) ? -EIO :
								     cqe->res;
			io_uring_queue_exit(&ring);
		}
	}
	w->done = 1;
	return NULL;
}

/* Destroy wakes a blocked reader, an epoll and an io_uring poller and the
 * agent, with -ENODEV / EPOLLERR | EPOLLHUP. */
static int t_destroy_wake(void)
{
	struct waiter w[4];
	pthread_t th[4];
	int i, ms;

	CHECK(!edgeq_kq_queue_create("dw", 0, 0, NULL));
	for (i = 0; i < 4; i++) {
		w[i].kind = i;
		w[i].done = 0;
		CHECK(!edgeq_kq_open("dw", 0, &w[i].kq));
	}
	CHECK(!edgeq_kq_agent_attach(w[3].kq, 1));
	for (i = 0; i < 4; i++)
		CHECK(!pthread_create(&th[i], NULL, waiter_thread, &w[i]));
	msleep(300); /* all four asleep */
	for (i = 0; i < 4; i++)
		CHECK_EQ(w[i].done, 0);
	CHECK(!edgeq_kq_queue_destroy("dw"));
	for (ms = 0; ms < 3000; ms += 10) {
		if (w[0].done && w[1].done && w[2].done && w[3].done)
			break;
		msleep(10);
	}
	for (i = 0; i < 4; i++)
		if (!w[i].done)
			fprintf(stderr, "destroy_wake: waiter %d not woken\n",
				i);
	for (i = 0; i < 4; i++)
		CHECK(w[i].done);
	printf("destroy_wake: woken in %d ms: read %d, epoll 0x%x, "
	       "io_uring 0x%x, agent %d\n",
	       ms, w[0].result, w[1].result, w[2].result, w[3].result);
	CHECK_EQ(w[0].result, -ENODEV);
	CHECK(w[1].result > 0 && (w[1].result & EPOLLERR));
	CHECK(w[2].result > 0 && (w[2].result & POLLERR));
	CHECK_EQ(w[3].result, -ENODEV);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		edgeq_kq_close(w[i].kq);
	}
	return 0;
}

struct pollout {
	struct edgeq_kq *kq;
	int revents;
	uint64_t ns;
};

static void *pollout_thread(void *arg)
{
	struct pollout *p = arg;
	struct pollfd pfd = { .fd = edgeq_kq_fd(p->kq), .events = POLLOUT };
	uint64_t t0 = edgeq_now_ns();

	p->revents = poll(&pfd, 1, 10000) == 1 ? pfd.revents : 0;
	p->ns = edgeq_now_ns() - t0;
	return NULL;
}

/* A client polling for POLLOUT is woken when an agent attaches. */
static int t_attach_wake(void)
{
	struct edgeq_kq *agent;
	struct pollout p;
	pthread_t th;

	reset_queue("gpu0");
	CHECK(!edgeq_kq_open("gpu0", 0, &p.kq));
	CHECK(!edgeq_kq_open("gpu0", 0, &agent));
	CHECK(!(edgeq_kq_wait(p.kq, POLLOUT, 0) & POLLOUT)); /* no agent */
	CHECK(!pthread_create(&th, NULL, pollout_thread, &p));
	msleep(300);
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	pthread_join(th, NULL);
	printf("attach_wake: POLLOUT after %.0f ms\n", (double)p.ns / 1e6);
	CHECK(p.revents & POLLOUT);
	CHECK(p.ns < 5000000000ULL);
	edgeq_kq_close(agent);
	edgeq_kq_close(p.kq);
	return 0;
}

/* A client at max_outstanding polling for POLLOUT is woken when a read
 * (here by another thread) makes room. */
static int t_pollout_wake(void)
{
	struct edgeq_op_desc ops[64];
	struct edgeq_completion comp;
	struct edgeq_agent_op a;
	struct edgeq_agent_done d = { 0 };
	struct edgeq_features f;
	struct edgeq_kq *agent;
	struct pollout p;
	pthread_t th;
	unsigned int i;

	reset_queue("gpu0");
	sysfs_set("gpu0", "timeout_ms", "0");
	CHECK(!edgeq_kq_open("gpu0", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));
	CHECK(!edgeq_kq_open("gpu0", 0, &p.kq));
	for (i = 0; i < 64; i++)
		edgeq_op_desc_init(&ops[i], EDGEQ_OP_NOP, i);
	CHECK(!edgeq_kq_features(p.kq, &f));
	for (i = 0; i < f.max_outstanding / 64; i++)
		CHECK_EQ(edgeq_kq_submit(p.kq, ops, 64), 64);
	CHECK_EQ(edgeq_kq_submit(p.kq, ops, 1), -EAGAIN);
	CHECK(!(edgeq_kq_wait(p.kq, POLLOUT, 0) & POLLOUT));
	CHECK_EQ(edgeq_kq_agent_next(agent, &a, 1), 1);
	d.tag = a.tag;
	CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
	CHECK(!pthread_create(&th, NULL, pollout_thread, &p));
	msleep(300);
	CHECK_EQ(edgeq_kq_complete(p.kq, &comp, 1), 1);
	pthread_join(th, NULL);
	printf("pollout_wake: POLLOUT after %.0f ms\n", (double)p.ns / 1e6);
	CHECK(p.revents & POLLOUT);
	CHECK(p.ns < 5000000000ULL);
	edgeq_kq_close(p.kq);
	edgeq_kq_close(agent);
	reset_queue("gpu0");
	return 0;
}

/* Queue names: [a-z0-9_-] and nothing else (no Latin-1 letters). */
static int t_names(void)
{
	static const char *const bad[] = { "caf\xe9", "\xdf",	  "a\xff",
					   "A",	      "a b",	  "a.b",
					   "a/b",     "\xe0\xe1", "q\x7f" };
	static const char *const good[] = { "a", "z-9_", "0", "_-" };
	size_t i;
	struct stat st;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (edgeq_kq_queue_create(bad[i], 0, 0, NULL) != -EINVAL) {
			fprintf(stderr, "names: bad name %zu accepted\n", i);
			edgeq_kq_queue_destroy(bad[i]);
			return 1;
		}
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char path[64];

		CHECK(!edgeq_kq_queue_create(good[i], 0, 0, NULL));
		snprintf(path, sizeof(path), "/dev/edgeq/%s", good[i]);
		CHECK(!stat(path, &st));
		CHECK(!edgeq_kq_queue_destroy(good[i]));
	}
	return 0;
}

/* The agent gets fds only for handles of ops it holds in flight. */
static int t_agent_scope(void)
{
	struct edgeq_agent_op a;
	struct edgeq_agent_done d = { 0 };
	struct edgeq_op_desc op;
	struct edgeq_completion c;
	struct edgeq_kq *agent, *kq;
	struct tensor t, idle;
	uint64_t len;
	int fd;

	reset_queue("gpu0");
	CHECK(!edgeq_kq_open("gpu0", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, ~0ULL >> (64 - EDGEQ_OP_COUNT)));
	CHECK(!edgeq_kq_open("gpu0", 0, &kq));
	CHECK(!tensor_new(kq, 4096, &t));
	CHECK(!tensor_new(kq, 4096, &idle));
	CHECK_EQ(edgeq_kq_agent_tensor_fd(agent, t.handle, &len), -ENOENT);
	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 5);
	op.shape[0] = 16;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 64);
	edgeq_op_desc_tensor(&op, 1, t.handle, 64, 64);
	edgeq_op_desc_tensor(&op, 2, t.handle, 128, 64);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	/* Waiting, not yet given to the agent: still refused. */
	CHECK_EQ(edgeq_kq_agent_tensor_fd(agent, t.handle, &len), -ENOENT);
	CHECK_EQ(edgeq_kq_agent_next(agent, &a, 1), 1);
	fd = edgeq_kq_agent_tensor_fd(agent, t.handle, &len);
	CHECK(fd >= 0);
	CHECK_EQ(len, 4096);
	close(fd);
	/* Registered by the same client, but in no op it was given. */
	CHECK_EQ(edgeq_kq_agent_tensor_fd(agent, idle.handle, &len), -ENOENT);
	d.tag = a.tag;
	CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
	CHECK_EQ(edgeq_kq_complete(kq, &c, 1), 1);
	CHECK_EQ(edgeq_kq_agent_tensor_fd(agent, t.handle, &len), -ENOENT);
	tensor_free(&t);
	tensor_free(&idle);
	edgeq_kq_close(kq);
	edgeq_kq_close(agent);
	return 0;
}

/* The thermal zone of a queue's simulated sensor, by type. */
static int find_zone(const char *type, char *dir, size_t len)
{
	char path[128], buf[64];
	int i;

	for (i = 0; i < 256; i++) {
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/class/thermal/thermal_zone%d/type", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    !strncmp(buf, type, strlen(type)) &&
		    buf[strlen(type)] == '\n') {
			fclose(f);
			snprintf(dir, len, "/sys/class/thermal/thermal_zone%d",
				 i);
			return 0;
		}
		fclose(f);
	}
	return -ENOENT;
}

/* sim_trip_mC moves the zone's trips, on every kernel (6.8+ copies them). */
static int t_trips(void)
{
	char zone[128];

	if (find_zone("edgeq-npu0", zone, sizeof(zone))) {
		printf("no edgeq-npu0 thermal zone (load with sim_sensor=1)\n");
		return 77;
	}
	CHECK_EQ(read_long(zone, "trip_point_0_temp"), 70000);
	CHECK(!sysfs_set("npu0", "sim_trip_mC", "55000"));
	CHECK_EQ(read_long(zone, "trip_point_0_temp"), 55000);
	CHECK_EQ(read_long(zone, "trip_point_1_temp"), 65000);
	CHECK(!sysfs_set("npu0", "sim_trip_mC", "70000"));
	CHECK_EQ(read_long(zone, "trip_point_0_temp"), 70000);
	CHECK_EQ(read_long(zone, "trip_point_1_temp"), 80000);
	return 0;
}

/* The text of @q's attribute @attr, its newline dropped; "" if unreadable. */
static void sysfs_text(const char *q, const char *attr, char *buf, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/edgeq/%s/%s", q, attr);
	buf[0] = 0;
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* Whether thermal zone @zone (a sysfs dir) lists a cooling device of @type. */
static bool zone_has_cdev(const char *zone, const char *type)
{
	char path[256], buf[64];
	int i;

	for (i = 0; i < 64; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/cdev%d/type", zone, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		if (!strcmp(buf, type))
			return true;
	}
	return false;
}

/*
 * cooling_zone binds a queue's cooling device to a zone that is not its
 * own, found by type: gpu0 to npu0's simulated zone. Heating npu0's zone
 * (its ambient above its trip, gpu0's own zone cool) makes step_wise raise
 * gpu0's state and lift it when it cools; unknown, duplicate and over-long
 * zones are refused; destroying the zone's queue drops the binding. On
 * 6.12, which binds only through the zone's own ops, the write is refused.
 */
static int t_bind(void)
{
	char zone[128], buf[64];
	struct utsname u;
	int i, hot = 0;

	if (find_zone("edgeq-npu0", zone, sizeof(zone))) {
		printf("no edgeq-npu0 thermal zone (load with sim_sensor=1)\n");
		return 77;
	}
	reset_queue("gpu0");
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));
	CHECK(!uname(&u));
	if (strverscmp(u.release, "6.12") >= 0) {
		CHECK_EQ(sysfs_set("gpu0", "cooling_zone", "edgeq-npu0"),
			 -EOPNOTSUPP);
		sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
		CHECK(!strcmp(buf, ""));
		return 0;
	}
	CHECK_EQ(sysfs_set("gpu0", "cooling_zone", "no-such-zone"), -ENODEV);
	CHECK_EQ(sysfs_set("gpu0", "cooling_zone", "edgeq-gpu0"), -EEXIST);
	CHECK_EQ(sysfs_set("gpu0", "cooling_zone",
			   "a-zone-type-longer-than-the-kernel-keeps"),
		 -ENAMETOOLONG);
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));
	CHECK(!zone_has_cdev(zone, "edgeq-gpu0"));
	CHECK(!sysfs_set("gpu0", "cooling_zone", "edgeq-npu0\n"));
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, "edgeq-npu0"));
	CHECK(zone_has_cdev(zone, "edgeq-npu0"));
	CHECK(zone_has_cdev(zone, "edgeq-gpu0"));

	sysfs_set("npu0", "sim_tau_ms", "100");
	sysfs_set("npu0", "sim_trip_mC", "50000");
	CHECK(!sysfs_set("npu0", "sim_ambient_mC", "90000"));
	for (i = 0; i < 200 && !hot; i++) {
		hot = sysfs_get("gpu0", "cooling_state") >= 1;
		msleep(50);
	}
	printf("bind: npu0 zone %ld mC, gpu0 zone %ld mC, gpu0 state %ld\n",
	       sysfs_get("npu0", "sim_temp_mC"),
	       sysfs_get("gpu0", "sim_temp_mC"),
	       sysfs_get("gpu0", "cooling_state"));
	CHECK(hot);
	CHECK(sysfs_get("gpu0", "sim_temp_mC") < 70000);
	sysfs_set("npu0", "sim_ambient_mC", "40000");
	CHECK(wait_sysfs("gpu0", "cooling_state", 0, 20000));
	CHECK(wait_sysfs("npu0", "cooling_state", 0, 20000));
	sysfs_set("npu0", "sim_tau_ms", "2000");
	sysfs_set("npu0", "sim_trip_mC", "70000");

	/* an empty write unbinds */
	CHECK(!sysfs_set("gpu0", "cooling_zone", "\n"));
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));
	CHECK(!zone_has_cdev(zone, "edgeq-gpu0"));

	/* the zone's queue goes: the binding goes with it */
	CHECK(!edgeq_kq_queue_create("hot0", 0, 0, NULL));
	CHECK(!sysfs_set("gpu0", "cooling_zone", "edgeq-hot0"));
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, "edgeq-hot0"));
	CHECK(!edgeq_kq_queue_destroy("hot0"));
	sysfs_text("gpu0", "cooling_zone", buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));
	CHECK_EQ(sysfs_set("gpu0", "cooling_zone", "edgeq-hot0"), -ENODEV);
	/* and a bound queue may go itself */
	CHECK(!edgeq_kq_queue_create("hot1", 0, 0, NULL));
	CHECK(!sysfs_set("hot1", "cooling_zone", "edgeq-npu0"));
	CHECK(!edgeq_kq_queue_destroy("hot1"));
	CHECK(!zone_has_cdev(zone, "edgeq-hot1"));
	return 0;
}

/* Node owner, group and mode come from the node_* parameters. */
static int t_node_mode(void)
{
	struct stat st;

	CHECK(!stat("/dev/edgeq/npu0", &st));
	CHECK_EQ(st.st_mode & 07777, 0660);
	CHECK_EQ(st.st_uid, 0);
	CHECK_EQ(st.st_gid, 0);
	CHECK(!param_set("node_gid", "1234"));
	CHECK(!param_set("node_uid", "4321"));
	CHECK(!param_set("node_mode", "0640"));
	CHECK_EQ(param_set("node_mode", "01000"), -EINVAL);
	CHECK_EQ(param_set("node_gid", "4294967295"), -EINVAL);
	CHECK(!edgeq_kq_queue_create("nm", 0, 0, NULL));
	CHECK(!stat("/dev/edgeq/nm", &st));
	CHECK(!edgeq_kq_queue_destroy("nm"));
	param_set("node_gid", "0");
	param_set("node_uid", "0");
	param_set("node_mode", "0660");
	CHECK_EQ(st.st_mode & 07777, 0640);
	CHECK_EQ(st.st_uid, 4321);
	CHECK_EQ(st.st_gid, 1234);
	return 0;
}

/* Drops to nobody, without any capability. */
static int drop_privileges(void)
{
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return -errno;
	return 0;
}

/* Runs @fn in a child that is nobody; its exit status. */
static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(drop_privileges() ? 3 : fn(arg));
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* An unprivileged client: HIGH and RT refused, its flood at NORMAL. */
static int flood_child(void *arg)
{
	struct edgeq_op_desc op[64];
	struct edgeq_kq *kq;
	int i, *ready = arg;

	CHECK(!edgeq_kq_open("uq", 0, &kq));
	edgeq_op_desc_init(&op[0], EDGEQ_OP_NOP, 0);
	op[0].priority = EDGEQ_PRIO_HIGH;
	CHECK_EQ(edgeq_kq_submit(kq, op, 1), -EPERM);
	op[0].priority = EDGEQ_PRIO_RT;
	CHECK_EQ(edgeq_kq_submit(kq, op, 1), -EPERM);
	for (i = 0; i < 64; i++)
		edgeq_op_desc_init(&op[i], EDGEQ_OP_NOP, 1000 + i);
	CHECK_EQ(edgeq_kq_submit(kq, op, 64), 64);
	__atomic_store_n(ready, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 64;) {
		struct edgeq_completion c[16];
		int n = edgeq_kq_complete(kq, c, 16);

		CHECK(n > 0);
		i += n;
	}
	edgeq_kq_close(kq);
	return 0;
}

/* Another one: its single op goes within a few dispatches of the flood. */
static int victim_child(void *arg)
{
	struct edgeq_op_desc op;
	struct edgeq_completion c;
	struct edgeq_kq *kq;
	(void)arg;

	CHECK(!edgeq_kq_open("uq", 0, &kq));
	edgeq_op_desc_init(&op, EDGEQ_OP_NOP, 7);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	CHECK_EQ(edgeq_kq_complete(kq, &c, 1), 1);
	CHECK_EQ(c.status, 0);
	edgeq_kq_close(kq);
	return 0;
}

/* Per-user bounds: ops over all the user's files, registered memfds. */
static int limits_child(void *arg)
{
	struct edgeq_op_desc op[8];
	struct edgeq_kq *a, *b;
	struct tensor t[3];
	int i;
	(void)arg;

	CHECK(!edgeq_kq_open("uq", 0, &a));
	CHECK(!edgeq_kq_open("uq", 0, &b));
	for (i = 0; i < 8; i++)
		edgeq_op_desc_init(&op[i], EDGEQ_OP_NOP, i);
	CHECK_EQ(edgeq_kq_submit(a, op, 5), 5);
	CHECK_EQ(edgeq_kq_submit(b, op, 3), 3);
	CHECK_EQ(edgeq_kq_submit(b, op, 1), -EDQUOT);
	CHECK_EQ(edgeq_kq_submit(a, op, 1), -EDQUOT);
	edgeq_kq_close(a); /* its five are given back */
	CHECK(!edgeq_kq_open("uq", 0, &a));
	CHECK_EQ(edgeq_kq_submit(a, op, 5), 5);
	CHECK_EQ(edgeq_kq_submit(a, op, 1), -EDQUOT);
	CHECK(!tensor_new(a, 4096, &t[0]));
	CHECK(!tensor_new(b, 4096, &t[1]));
	CHECK_EQ(tensor_new(b, 4096, &t[2]), -EDQUOT);
	close(t[2].fd);
	CHECK(!edgeq_kq_tensor_unregister(a, t[0].handle));
	CHECK(!tensor_new(b, 4096, &t[2]));
	edgeq_kq_close(a);
	edgeq_kq_close(b);
	for (i = 0; i < 3; i++)
		tensor_free(&t[i]);
	return 0;
}

static int t_unprivileged(void)
{
	struct edgeq_agent_op a[4];
	struct edgeq_kq *agent;
	int *ready, served = 0, victim_at = -1, st, n, i;
	pid_t flood, victim;

	CHECK(!param_set("node_mode", "0666"));
	CHECK(!edgeq_kq_queue_create("uq", 1, 0, NULL));
	param_set("node_mode", "0660");
	CHECK(!edgeq_kq_open("uq", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, 1));

	/* Starvation: a flood of 64 NORMAL ops, then one op of another. */
	ready = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(ready != MAP_FAILED);
	flood = fork();
	if (flood == 0)
		_exit(drop_privileges() ? 3 : flood_child(ready));
	while (!__atomic_load_n(ready, __ATOMIC_ACQUIRE))
		msleep(5);
	victim = fork();
	if (victim == 0)
		_exit(drop_privileges() ? 3 : victim_child(NULL));
	CHECK(wait_sysfs_ge("uq", "nr_waiting", 65, 5000));
	while (served < 65) {
		n = edgeq_kq_agent_next(agent, a, 4);
		CHECK(n > 0);
		for (i = 0; i < n; i++) {
			struct edgeq_agent_done d = { .tag = a[i].tag };

			if (a[i].op.cookie == 7)
				victim_at = served;
			served++;
			CHECK_EQ(edgeq_kq_agent_done(agent, &d, 1), 1);
		}
	}
	CHECK(waitpid(flood, &st, 0) == flood && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK(waitpid(victim, &st, 0) == victim && WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	printf("unprivileged: the other client's op went %d of 65\n",
	       victim_at + 1);
	CHECK(victim_at >= 0 && victim_at <= 2);
	munmap(ready, 4096);

	/* Per-user bounds, as nobody (root is CAP_SYS_RESOURCE). */
	CHECK(!param_set("max_user_ops", "8"));
	CHECK(!param_set("max_user_tensors", "2"));
	CHECK_EQ(param_set("max_user_ops", "0"), -EINVAL);
	st = as_nobody(limits_child, NULL);
	param_set("max_user_ops", "4096");
	param_set("max_user_tensors", "1024");
	CHECK_EQ(st, 0);
	edgeq_kq_close(agent);
	CHECK(!edgeq_kq_queue_destroy("uq"));
	return 0;
}

/* Lengths against shapes: what the agent would read past is refused. */
static int t_shapes(void)
{
	struct edgeq_op_desc op, bad;
	struct edgeq_kq *agent, *kq;
	struct tensor t;

	reset_queue("gpu0");
	CHECK(!edgeq_kq_open("gpu0", 0, &agent));
	CHECK(!edgeq_kq_agent_attach(agent, ~0ULL >> (64 - EDGEQ_OP_COUNT)));
	CHECK(!edgeq_kq_open("gpu0", O_NONBLOCK, &kq));
	CHECK(!tensor_new(kq, 1 << 20, &t));
	/* MATVEC 8 x 64 Q4_0: 8 rows of 2 blocks of 18 bytes. */
	edgeq_op_desc_init(&op, EDGEQ_OP_MATVEC, 1);
	op.dtype = EDGEQ_DTYPE_Q4_0;
	op.shape[0] = 8;
	op.shape[1] = 64;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 8 * 36);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 64 * 4);
	edgeq_op_desc_tensor(&op, 2, t.handle, 8192, 8 * 4);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[0].length = 8 * 36 - 1, -EINVAL);
	BAD(bad.tensors[1].length = 64 * 4 - 4, -EINVAL);
	BAD(bad.tensors[2].length = 7 * 4, -EINVAL);
	BAD(bad.shape[1] = 65, -EINVAL); /* not whole blocks */
	BAD(bad.shape[0] = 0xffffffffULL, -EINVAL);
	/* ATTENTION {4 heads, 2 kv, 32 dim, 3 pos}, F16 K and V. */
	edgeq_op_desc_init(&op, EDGEQ_OP_ATTENTION, 2);
	op.dtype = EDGEQ_DTYPE_F16;
	op.shape[0] = 4;
	op.shape[1] = 2;
	op.shape[2] = 32;
	op.shape[3] = 3;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 4 * 32 * 4);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 3 * 2 * 32 * 2);
	edgeq_op_desc_tensor(&op, 2, t.handle, 8192, 3 * 2 * 32 * 2);
	edgeq_op_desc_tensor(&op, 3, t.handle, 12288, 4 * 32 * 4);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[2].length -= 2, -EINVAL);
	BAD(bad.shape[1] = 3, -EINVAL); /* heads % kv_heads */
	BAD(bad.dtype = EDGEQ_DTYPE_Q4_K, -EINVAL);
	/* a prompt's 3 causal queries (EDGEQ_F_TOKENS), window 2: q and out
	 * a row of heads per query; no more queries than positions */
	op.param[1] = 2ULL << 32 | 3;
	op.tensors[0].length = 3 * 4 * 32 * 4;
	op.tensors[3].length = 3 * 4 * 32 * 4;
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[0].length -= 4, -EINVAL);
	BAD(bad.tensors[3].length = 2 * 4 * 32 * 4, -EINVAL);
	BAD(bad.param[1] = 4, -EINVAL);
	BAD(bad.param[1] = 0xffffffffULL, -EINVAL);
	/* ROPE: rotated dims even and at most head_dim. */
	edgeq_op_desc_init(&op, EDGEQ_OP_ROPE, 3);
	op.shape[0] = 2;
	op.shape[1] = 8;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 2 * 8 * 4);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.param[1] = 9ULL << 32, -EINVAL);
	BAD(bad.param[1] = 3ULL << 32, -EINVAL);
	BAD(bad.tensors[0].length = 2 * 8 * 4 - 1, -EINVAL);
	/* SOFTMAX {n, rows}, element-wise {n}. */
	edgeq_op_desc_init(&op, EDGEQ_OP_SOFTMAX, 4);
	op.shape[0] = 10;
	op.shape[1] = 3;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 120);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.shape[1] = 4, -EINVAL);
	{
		struct edgeq_features f;

		CHECK(!edgeq_kq_features(kq, &f));
		CHECK(f.features & EDGEQ_F_OP_STORE);
		CHECK(f.features & EDGEQ_F_OP_ROPE_FREQ);
		CHECK(f.features & EDGEQ_F_NORM_ROWS);
		CHECK(f.features & EDGEQ_F_OP_GELU_MUL);
		CHECK(f.features & EDGEQ_F_STORE_Q8_0);
		CHECK(f.features & EDGEQ_F_TOKENS);
	}
	/* SILU_MUL and GELU_MUL (EDGEQ_F_OP_GELU_MUL) alike */
	for (int i = 0; i < 2; i++) {
		edgeq_op_desc_init(
			&op, i ? EDGEQ_OP_GELU_MUL : EDGEQ_OP_SILU_MUL, 5);
		op.shape[0] = 10;
		edgeq_op_desc_tensor(&op, 0, t.handle, 0, 40);
		edgeq_op_desc_tensor(&op, 1, t.handle, 40, 40);
		edgeq_op_desc_tensor(&op, 2, t.handle, 80, 40);
		CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
		BAD(bad.tensors[1].length = 39, -EINVAL);
		BAD(bad.tensors[2].length = 36, -EINVAL);
		BAD(bad.ndims = 2, -EINVAL);
		BAD(bad.ntensors = 2, -EINVAL);
	}
	/* ADD {n, rows} (EDGEQ_F_TOKENS): rows of a and out, one row of b */
	edgeq_op_desc_init(&op, EDGEQ_OP_ADD, 5);
	op.ndims = 2;
	op.shape[0] = 10;
	op.shape[1] = 3;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 3 * 40);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 40);
	edgeq_op_desc_tensor(&op, 2, t.handle, 0, 3 * 40);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[0].length = 2 * 40, -EINVAL);
	BAD(bad.tensors[2].length = 3 * 40 - 4, -EINVAL);
	BAD(bad.tensors[1].length = 36, -EINVAL);
	BAD(bad.shape[1] = 4, -EINVAL);
	BAD(bad.opcode = EDGEQ_OP_SILU_MUL, -EINVAL);
	/* STORE {n}: F32 into an F32, F16 or Q8_0 row; no other types. */
	edgeq_op_desc_init(&op, EDGEQ_OP_STORE, 6);
	op.dtype = EDGEQ_DTYPE_F16;
	op.shape[0] = 10;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 40);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 20);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[1].length = 19, -EINVAL);
	BAD(bad.tensors[0].length = 36, -EINVAL);
	BAD(bad.dtype = EDGEQ_DTYPE_Q8_0, -EINVAL); /* 10: not whole blocks */
	BAD(bad.dtype = EDGEQ_DTYPE_Q4_0, -EINVAL);
	BAD(bad.ntensors = 3, -EINVAL);
	/* into a Q8_0 row (EDGEQ_F_STORE_Q8_0): whole blocks of 34 bytes */
	edgeq_op_desc_init(&op, EDGEQ_OP_STORE, 6);
	op.dtype = EDGEQ_DTYPE_Q8_0;
	op.shape[0] = 64;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 256);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 68);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[1].length = 67, -EINVAL);
	BAD(bad.shape[0] = 48, -EINVAL);
	/* ROPE_FREQ: a frequency per rotated pair */
	edgeq_op_desc_init(&op, EDGEQ_OP_ROPE_FREQ, 7);
	op.shape[0] = 2;
	op.shape[1] = 8;
	op.param[1] = 6ULL << 32;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 2 * 8 * 4);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 3 * 4);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[1].length = 8, -EINVAL);
	BAD(bad.param[1] = 0, -EINVAL); /* all 8 dims: 4 pairs */
	BAD(bad.param[1] = 7ULL << 32, -EINVAL);
	BAD(bad.ntensors = 1, -EINVAL);
	/* over a prompt's 5 tokens (EDGEQ_F_TOKENS): {heads, dim, tokens} */
	op.ndims = 3;
	op.shape[2] = 5;
	op.tensors[0].length = 5 * 2 * 8 * 4;
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[0].length -= 4, -EINVAL);
	BAD(bad.shape[2] = 0, -EINVAL);
	BAD(bad.shape[2] = 0x100000000ULL, -EINVAL);
	BAD((bad.opcode = EDGEQ_OP_ROPE, bad.ntensors = 1), -EINVAL);
	BAD(bad.ndims = 4, -EINVAL);
	/* RMSNORM {n, rows} (EDGEQ_F_NORM_ROWS): rows of x and y, one
	 * weight row */
	edgeq_op_desc_init(&op, EDGEQ_OP_RMSNORM, 8);
	op.ndims = 2;
	op.shape[0] = 8;
	op.shape[1] = 3;
	edgeq_op_desc_tensor(&op, 0, t.handle, 0, 3 * 8 * 4);
	edgeq_op_desc_tensor(&op, 1, t.handle, 4096, 8 * 4);
	edgeq_op_desc_tensor(&op, 2, t.handle, 0, 3 * 8 * 4);
	CHECK_EQ(edgeq_kq_submit(kq, &op, 1), 1);
	BAD(bad.tensors[0].length = 3 * 8 * 4 - 4, -EINVAL);
	BAD(bad.tensors[2].length = 2 * 8 * 4, -EINVAL);
	BAD(bad.shape[1] = 0, -EINVAL);
	BAD(bad.shape[1] = 4, -EINVAL);
	BAD(bad.ndims = 3, -EINVAL);
	/* the weight is one row: a second is not needed, one short is bad */
	BAD(bad.tensors[1].length = 7 * 4, -EINVAL);
	BAD((bad.ndims = 1, bad.shape[1] = 0, bad.tensors[1].length = 4),
	    -EINVAL);
	edgeq_kq_close(kq);
	edgeq_kq_close(agent);
	tensor_free(&t);
	return 0;
}
#undef BAD

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "features", t_features },
	{ "create_destroy", t_create_destroy },
	{ "exchange", t_exchange },
	{ "validation", t_validation },
	{ "fairness", t_fairness },
	{ "cooling", t_cooling },
	{ "sensor", t_sensor },
	{ "agent_killed", t_agent_killed },
	{ "timeout", t_timeout },
	{ "io_uring", t_io_uring },
	{ "latency", t_latency },
	{ "fuzz", t_fuzz },
	{ "race", t_race },
	{ "destroy_race", t_destroy_race },
	{ "destroy_wake", t_destroy_wake },
	{ "attach_wake", t_attach_wake },
	{ "pollout_wake", t_pollout_wake },
	{ "names", t_names },
	{ "agent_scope", t_agent_scope },
	{ "trips", t_trips },
	{ "bind", t_bind },
	{ "node_mode", t_node_mode },
	{ "unprivileged", t_unprivileged },
	{ "shapes", t_shapes },
};

int main(int argc, char **argv)
{
	size_t i;

	edgeq_bin = getenv("EDGEQ") ? getenv("EDGEQ") : "build/edgeq";
	signal(SIGPIPE, SIG_IGN);
	if (argc != 2) {
		fprintf(stderr, "usage: kmodtest CASE\ncases:");
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			fprintf(stderr, " %s", cases[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, argv[1]))
			return cases[i].fn();
	fprintf(stderr, "kmodtest: no case %s\n", argv[1]);
	return 2;
}
