/* SPDX-License-Identifier: GPL-2.0 */
/*
 * edgeq.ko internals: a queue, the files open on it, the ops they submit.
 *
 * Locking: everything of a queue (lists, counters, knobs, agent, tensor
 * registry, its open files) is under queue->lock, a spinlock taken from
 * process context and the timeout work. Nothing sleeps under it. The global
 * queue table is under edgeq_mutex, held from the creation of a queue to
 * its registration and from its destruction's start to the removal of its
 * char device, so a minor is never in use twice. q->sensor_mutex keeps the
 * simulated sensor while a sysfs write moves its trips. Per-user counters
 * are atomics in struct edgeq_user.
 */
#ifndef EDGEQ_DRV_H
#define EDGEQ_DRV_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/spinlock.h>
#include <linux/thermal.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/edgeq.h>

/* Longest queue name: "edgeq-<name>" must fit THERMAL_NAME_LENGTH. */
#define EDGEQ_NAME_LEN 13
#define EDGEQ_MAX_BATCH 64	     /* ops per write()/SUBMIT */
#define EDGEQ_MAX_OUTSTANDING 1024   /* ops of a client not yet read back */
#define EDGEQ_MAX_CLIENT_TENSORS 256 /* registered memfds per file */
#define EDGEQ_MAX_INFLIGHT 256	     /* bound of the max_inflight knob */
#define EDGEQ_MAX_TIMEOUT_MS 600000
#define EDGEQ_COOLING_STATES 4 /* max_state of the cooling device */

enum edgeq_policy {
	EDGEQ_POLICY_FAIL = 0,	  /* agent loss fails every op: -ENODEV */
	EDGEQ_POLICY_REQUEUE = 1, /* in-flight ops wait for a new agent */
};

enum edgeq_sched {
	EDGEQ_SCHED_RR = 0,  /* one op per client in turn */
	EDGEQ_SCHED_DRR = 1, /* deficit round-robin by tensor bytes */
};

/* DRR: a client earns a quantum per turn; an op costs its bytes plus a fixed
 * overhead, capped so a turn loop stays short.
 */
#define EDGEQ_DRR_QUANTUM (256U << 10)
#define EDGEQ_DRR_OP_COST (4U << 10)
#define EDGEQ_DRR_MAX_COST (16ULL * EDGEQ_DRR_QUANTUM)

enum edgeq_req_state {
	EDGEQ_REQ_WAITING,  /* on client->waiting[prio] */
	EDGEQ_REQ_INFLIGHT, /* on queue->inflight, with the agent */
	EDGEQ_REQ_DONE,	    /* on client->done */
};

struct edgeq_sensor;
struct device_node;

struct edgeq_queue {
	/* /sys/class/edgeq/<name>; its refcount keeps the queue (files hold one) */
	struct device dev;
	struct cdev cdev;      /* /dev/edgeq/<name> */
	struct list_head node; /* in the global table (edgeq_mutex) */
	u32 id;		       /* minor number; tracepoint queue id */
	char name[EDGEQ_NAME_MAX];
	spinlock_t lock; /* everything below, see the top of this file */
	bool dead; /* destroyed: every call gets -ENODEV */
	struct list_head files; /* struct edgeq_file open on it (qnode) */

	/* knobs */
	u32 max_inflight; /* configured limit, 1..EDGEQ_MAX_INFLIGHT */
	u32 timeout_ms;	  /* 0: no timeout */
	enum edgeq_policy policy;
	enum edgeq_sched sched;
	u32 cool_state; /* 0..EDGEQ_COOLING_STATES */

	/* the agent */
	struct edgeq_file *agent;   /* NULL when none is attached */
	pid_t agent_pid;	    /* its tgid in the initial namespace */
	u64 agent_op_mask;	    /* opcodes it accepts */
	wait_queue_head_t agent_wq; /* agent read()/poll() */

	/* scheduling */
	/* clients with waiting ops at that level, RR */
	struct list_head active[EDGEQ_PRIO_COUNT];
	u32 nr_waiting;
	u32 nr_inflight;
	struct list_head inflight; /* dispatched ops, dispatch order */
	/* every op not completed, submit order (the timeout scan) */
	struct list_head all;
	u64 next_tag;
	struct delayed_work timeout_work;

	/* tensors: handle -> struct edgeq_tensor; changed under lock */
	struct xarray tensors;
	u32 next_handle;
	u32 next_client_id;
	u32 nr_clients;

	/* counters since creation */
	u64 submitted, ops, busy_ns, bytes, errors, timeouts;

	/* thermal */
	struct thermal_cooling_device *cooling;
	struct device_node *cooling_np; /* its device-tree node, or NULL */
	struct edgeq_sensor *sensor; /* set and cleared under both locks */
	struct mutex sensor_mutex;
	int sim_ambient_mc, sim_rise_mc, sim_tau_ms, sim_trip_mc;
	/* cooling bound to another zone (bind.c, under its lock) */
	struct thermal_zone_device *bind_tz;
	int bind_trips;
	char bind_zone[THERMAL_NAME_LENGTH];
	bool bind_closed; /* going: no new binding */
};

/*
 * What one user (euid of the opener) holds over every file of every queue:
 * ops submitted and not read back, registered memfds. Bounded by the
 * max_user_ops and max_user_tensors parameters.
 */
struct edgeq_user {
	struct list_head node; /* edgeq_users, under edgeq_users_lock */
	kuid_t uid;
	u32 refs; /* open files; under edgeq_users_lock */
	atomic_t ops;
	atomic_t tensors;
};

/* One open file of a queue: a client, or the agent after ATTACH. */
struct edgeq_file {
	struct edgeq_queue *q;
	struct list_head qnode; /* in q->files */
	struct edgeq_user *user;
	bool unlimited; /* opened with CAP_SYS_RESOURCE: no per-user limit */
	u32 id;		/* per-queue client id */
	bool is_agent;
	struct pid *pid;				/* tgid of the opener */
	struct list_head waiting[EDGEQ_PRIO_COUNT];	/* its waiting ops */
	struct list_head active_node[EDGEQ_PRIO_COUNT]; /* in q->active[] */
	u64 deficit[EDGEQ_PRIO_COUNT]; /* DRR credit per level */
	struct list_head done;	       /* completed, not yet read */
	u32 outstanding;	       /* submitted and not yet read back */
	struct list_head tensors;      /* its struct edgeq_tensor */
	u32 ntensors;
	wait_queue_head_t wq;	 /* client read()/poll() */
	u64 busy_ns, ops, bytes; /* fdinfo accounting */
};

/* A registered memfd. */
struct edgeq_tensor {
	struct file *file; /* reference held until unregistered */
	struct edgeq_file *owner;
	struct list_head node; /* in owner->tensors */
	u32 handle;
	u32 users;  /* ops of the owner referencing it */
	u32 inflight; /* of those, ops with the agent (its fds for them) */
	u64 length; /* size at registration */
};

/* One submitted op. */
struct edgeq_req {
	struct edgeq_op_desc op;
	struct edgeq_file *client; /* NULL once the client closed */
	struct list_head node;	   /* waiting/inflight/done list */
	struct list_head all;	   /* q->all until completed */
	enum edgeq_req_state state;
	u64 tag; /* agent's handle while in flight */
	u64 submit_ns, dispatch_ns;
	u64 bytes;
	u32 client_id;
	pid_t client_tgid;	/* for tracepoints */
	struct pid *client_pid; /* reference, for the agent's view */
	struct edgeq_tensor *tensors[EDGEQ_MAX_TENSORS];
	struct edgeq_completion comp;
};

/* main.c */
extern struct class *edgeq_class;
struct edgeq_queue *edgeq_queue_create(const char *name, u32 max_inflight,
				       u32 timeout_ms);
int edgeq_queue_destroy(const char *name);
int edgeq_get_features(void __user *arg);
bool edgeq_sim_sensor_enabled(void);
struct edgeq_user *edgeq_user_get(kuid_t uid);
void edgeq_user_put(struct edgeq_user *u);
bool edgeq_user_charge(struct edgeq_file *f, bool tensors, int n);
void edgeq_user_uncharge(struct edgeq_file *f, bool tensors, int n);

/* queue.c: the char device */
extern const struct file_operations edgeq_queue_fops;

/* sched.c: submission, dispatch, completion, timeouts */
int edgeq_op_check(const struct edgeq_op_desc *op);
int edgeq_submit(struct edgeq_file *f, struct edgeq_req *req);
struct edgeq_req *edgeq_pick(struct edgeq_queue *q);
void edgeq_requeue(struct edgeq_queue *q, struct edgeq_req *req);
void edgeq_complete(struct edgeq_queue *q, struct edgeq_req *req, int status,
		    u64 busy_ns);
void edgeq_fail_waiting(struct edgeq_queue *q, int status);
u32 edgeq_limit(const struct edgeq_queue *q);
bool edgeq_can_dispatch(const struct edgeq_queue *q);
void edgeq_timeout_work(struct work_struct *work);
void edgeq_kick_timeout(struct edgeq_queue *q);
void edgeq_client_release(struct edgeq_file *f);

/* agent.c */
int edgeq_agent_attach(struct edgeq_file *f, void __user *arg);
int edgeq_agent_detach(struct edgeq_file *f);
bool edgeq_agent_detach_locked(struct edgeq_queue *q, bool force_fail);
void edgeq_agent_detached(struct edgeq_queue *q);
ssize_t edgeq_agent_read(struct edgeq_file *f, char __user *buf, size_t len,
			 bool nonblock);
ssize_t edgeq_agent_write(struct edgeq_file *f, const char __user *buf,
			  size_t len);
int edgeq_agent_tensor_fd(struct edgeq_file *f, void __user *arg);

/* sysfs.c */
extern const struct attribute_group *edgeq_queue_groups[];

/* cooling.c */
int edgeq_cooling_register(struct edgeq_queue *q);
void edgeq_cooling_unregister(struct edgeq_queue *q);
int edgeq_set_cool_state(struct edgeq_queue *q, unsigned long state);
struct device_node *edgeq_queue_node(const char *compatible, const char *name);

/* sensor.c */
int edgeq_sensor_register(struct edgeq_queue *q);
void edgeq_sensor_unregister(struct edgeq_queue *q);
int edgeq_sensor_temp(struct edgeq_queue *q);
void edgeq_sensor_set_trips(struct edgeq_queue *q);
struct thermal_zone_device *edgeq_sensor_zone(struct edgeq_queue *q);

/* bind.c */
int edgeq_bind(struct edgeq_queue *q, const char *type);
ssize_t edgeq_bind_show(struct edgeq_queue *q, char *buf);
void edgeq_bind_queue_gone(struct edgeq_queue *q, struct edgeq_queue **all,
			   int n);

#endif /* EDGEQ_DRV_H */
