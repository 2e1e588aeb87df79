/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement: which device runs each op of a decode step, and when to change
 * that as devices throttle or vanish (the heterogeneity ledger).
 *
 * The pieces, each usable alone:
 *  - device profiles (what a device can run and how fast), read from an INI
 *    file (share/edgeq/devices.ini) or the built-in defaults;
 *  - device state (agent alive, in-flight limit, cooling state, frequency)
 *    giving each device a capacity factor in [0, 1];
 *  - an op chain: the ops of one decode step in execution order, each with
 *    its arithmetic, the bytes it moves and the activation it hands on;
 *  - the cost model: op time = max(compute, memory) on its device; at every
 *    device boundary a transfer (synchronisation even with shared memory,
 *    plus a copy where memory is not shared) and the launch of a segment;
 *  - the planner: dynamic programming over the chain for the assignment of
 *    least predicted step time (adjacent ops a device cannot run end up in
 *    one fallback segment rather than bouncing);
 *  - the placer: the plan in force, re-planned at token boundaries with
 *    hysteresis, at once when an agent is lost, and calibrated by measured
 *    op times (EWMA of measured / modelled).
 *
 * Nothing here prints. Errors are -errno, with a message in struct
 * edgeq_error where one helps.
 */
#ifndef EDGEQ_PLACEMENT_H
#define EDGEQ_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>
#include <linux/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where edgeq.ko's queues appear. */
#define EDGEQ_SYSFS_CLASS "/sys/class/edgeq"
#define EDGEQ_MAX_DEVICES 8
#define EDGEQ_DEV_NAME_MAX 32
#define EDGEQ_OP_NAME_MAX 24
#define EDGEQ_MAX_BASE_OPS 24 /* distinct op names per chain (per layer) */

/* What an op does; a profile lists the kinds a device accepts. */
enum edgeq_op_kind {
	EDGEQ_OPK_EMBED = 0, /* token embedding rows */
	EDGEQ_OPK_RMSNORM,
	EDGEQ_OPK_MATMUL, /* weight matrix x activation vector(s) */
	EDGEQ_OPK_ROPE,
	EDGEQ_OPK_ATTN, /* q.K^T or p.V over the KV cache */
	EDGEQ_OPK_SOFTMAX,
	EDGEQ_OPK_SWIGLU, /* silu(gate) * up */
	EDGEQ_OPK_ADD,	  /* residual add */
	EDGEQ_OPK_COUNT
};

/* "matmul" etc.; NULL when out of range. */
const char *edgeq_op_kind_name(enum edgeq_op_kind k);
/* The kind for a name, or -EINVAL. */
int edgeq_op_kind_parse(const char *name);
/* "q4_0", "f16" ... for a GGUF type id; "?" when unknown. */
const char *edgeq_dtype_name(uint32_t type);
/* The GGUF type id for a name, or -EINVAL. */
int edgeq_dtype_parse(const char *name);

/* What a kind of device can do at full capacity (one [device.NAME] section). */
struct edgeq_device_profile {
	char name[EDGEQ_DEV_NAME_MAX]; /* "cpu", "npu", "gpu" */
	uint64_t ops_mask; /* bit (1 << enum edgeq_op_kind) per accepted kind */
	uint64_t dtype_mask; /* bit (1 << GGUF type id) per accepted dtype */
	double gflops;	     /* sustained arithmetic, 1e9 flop/s */
	double mem_gbs;	     /* memory bandwidth it reaches, 1e9 B/s */
	double launch_us;    /* submitting one segment (a run of ops) */
	double op_us;	     /* fixed cost of each op inside a segment */
	double sync_us;	     /* handing a tensor in or out: cache maintenance,
			      * fence and completion, even with shared memory */
	double copy_gbs;     /* copy bandwidth to/from host memory; 0: shared */
};

/*
 * Built-in profiles when @path is NULL, else those of an INI file (which
 * replace built-in ones of the same name). Returns the number found, or
 * -errno with a message naming the line.
 */
int edgeq_devprofs_load(const char *path, struct edgeq_device_profile *out,
			size_t max, struct edgeq_error *err);
/* The default profile file: $EDGEQ_DEVICES, else /etc/edgeq/devices.ini,
 * the installed share/edgeq/devices.ini, ./share/edgeq/devices.ini; NULL
 * when none exists (built-in profiles only). */
const char *edgeq_devprofs_default_path(void);
/* This machine's measured profiles (edgeq calibrate): $EDGEQ_CALIBRATION
 * (empty: none), else /var/lib/edgeq/calibration.ini when it exists. */
const char *edgeq_devprofs_calibration_path(void);
/*
 * edgeq_devprofs_load(@path), then the calibration file's keys over them
 * (the measured over the configured, key by key); *@calibrated (if not
 * NULL) is its path when one was applied, else NULL. A calibration file
 * that cannot be read or parsed fails with a message naming it.
 */
int edgeq_devprofs_load_all(const char *path, struct edgeq_device_profile *out,
			    size_t max, const char **calibrated,
			    struct edgeq_error *err);
/* The profile called @name among @n, or NULL. */
const struct edgeq_device_profile *
edgeq_devprof_find(const struct edgeq_device_profile *p, size_t n,
		   const char *name);
bool edgeq_devprof_supports(const struct edgeq_device_profile *p,
			    enum edgeq_op_kind kind, uint32_t dtype);

/* What a device is right now, from the module and the pressure monitor. */
struct edgeq_device_state {
	bool agent_alive; /* the queue has an agent (always true for cpu) */
	uint32_t inflight_limit; /* the module's current limit; 0: paused */
	uint32_t cooling_state;	 /* thermal cooling device state ... */
	uint32_t cooling_max;	 /* ... and its maximum (0: none) */
	double freq_ratio;	 /* current / maximum frequency; 0: unknown */
	double temp_c;		 /* for the explanation only; 0: unknown */
	uint32_t timeout_ms;	 /* the module's op timeout; 0: none/unknown */
};

/* A state with everything at full capacity. */
void edgeq_device_state_init(struct edgeq_device_state *s);
/*
 * The capacity factor in [0, 1]: 0 without agent or with a paused queue;
 * otherwise the smaller of (1 - cooling_state / cooling_max) and the
 * frequency ratio (the top cooling state pauses the queue, as the module
 * does).
 */
double edgeq_device_capacity(const struct edgeq_device_state *s);

/* One device instance: the cpu, or an edgeq queue ("npu0") and its profile. */
struct edgeq_device {
	char name[EDGEQ_DEV_NAME_MAX];
	struct edgeq_device_profile prof;
	struct edgeq_device_state state;
};

/* The devices a plan may use. dev[0] is the host CPU, the fallback. */
struct edgeq_devices {
	size_t n;
	struct edgeq_device dev[EDGEQ_MAX_DEVICES];
};

/* Start a set with the host CPU using profile @cpu. */
void edgeq_devices_init(struct edgeq_devices *d,
			const struct edgeq_device_profile *cpu);
/* Add a device; returns its index or -ENOSPC / -EEXIST. */
int edgeq_devices_add(struct edgeq_devices *d, const char *name,
		      const struct edgeq_device_profile *prof);
/* Index of @name or -ENOENT. */
int edgeq_devices_find(const struct edgeq_devices *d, const char *name);
/*
 * Add a device for each queue under @sysfs_dir (normally
 * /sys/class/edgeq), reading its state; the profile is the queue name
 * without its trailing digits ("npu0" -> "npu") unless @map ("npu0=gpu,..")
 * says otherwise. Returns the number of queues added (0 when the module is
 * not loaded).
 */
int edgeq_devices_discover(struct edgeq_devices *d, const char *sysfs_dir,
			   const struct edgeq_device_profile *profs,
			   size_t n_profs, const char *map,
			   struct edgeq_error *err);
/* Read one queue's state from sysfs; -ENOENT when it is gone. */
int edgeq_device_read_state(const char *sysfs_dir, const char *name,
			    struct edgeq_device_state *s);

/* One op of a decode step. */
struct edgeq_op {
	char name[EDGEQ_OP_NAME_MAX]; /* base name: "attn_qkv", "ffn_down" */
	enum edgeq_op_kind kind;
	uint32_t also;	  /* other kinds it needs (bit per kind), e.g. softmax
			 * inside attention */
	uint32_t dtype;	  /* GGUF type of its main operand */
	int layer;	  /* block index; -1 outside the blocks */
	uint16_t base;	  /* index of name in the chain's base table */
	double flops;	  /* arithmetic of one decode step */
	double bytes;	  /* bytes it reads and writes on its device */
	double out_bytes; /* the activation handed to the next op */
	double weight_bytes; /* of its weights: what a device keeps a copy of */
};

/* The ops of one decode step, in execution order. */
struct edgeq_op_chain {
	size_t n;
	struct edgeq_op *ops;
	double in_bytes; /* what the first op receives from the host */
	size_t n_base;	 /* distinct op names */
	char base[EDGEQ_MAX_BASE_OPS][EDGEQ_OP_NAME_MAX];
};

/* The shape the llama chain is built from (engine.h's model info plus the
 * weight types). */
struct edgeq_place_shape {
	uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab;
	uint32_t wtype;	 /* GGUF type of the block matrices */
	uint32_t otype;	 /* type of the output matrix */
	uint32_t etype;	 /* type of the token embedding */
	uint32_t kvtype; /* KV cache type (F16 default) */
	uint32_t n_kv;	 /* positions attended to (context so far) */
};

/*
 * Build the decode-step chain of a llama-family model: embedding, then per
 * block attn_norm, attn_qkv, rope, attention (q.K^T, softmax, p.V: one op
 * of kind attn that also needs softmax), attn_out, attn_add, ffn_norm,
 * ffn_gate_up, ffn_swiglu, ffn_down, ffn_add, then output_norm and output.
 * Ops grouped this way are the units the executor runs. Free with edgeq_op_chain_free().
 */
int edgeq_op_chain_llama(const struct edgeq_place_shape *s,
			 struct edgeq_op_chain *c);
/* An empty chain of @n ops for callers that fill it themselves. */
int edgeq_op_chain_alloc(struct edgeq_op_chain *c, size_t n);
/* Set base names (call after filling the ops' names). */
void edgeq_op_chain_index(struct edgeq_op_chain *c);
void edgeq_op_chain_free(struct edgeq_op_chain *c);
/* Bytes of @n elements of GGUF type @type (block metadata included). */
double edgeq_dtype_bytes(uint32_t type, double n);

/* Measured / modelled time per device and op name; 1 when unmeasured. */
struct edgeq_calib {
	double ratio[EDGEQ_MAX_DEVICES][EDGEQ_MAX_BASE_OPS];
	double meas_ns[EDGEQ_MAX_DEVICES][EDGEQ_MAX_BASE_OPS]; /* EWMA */
	uint32_t count[EDGEQ_MAX_DEVICES][EDGEQ_MAX_BASE_OPS];
};

void edgeq_calib_init(struct edgeq_calib *c);
/*
 * Feed one measurement of op @op on device @dev: @measured_ns against the
 * uncalibrated model time @model_ns. @alpha is the EWMA weight of the new
 * sample (0 < alpha <= 1).
 */
void edgeq_calib_observe(struct edgeq_calib *c, const struct edgeq_op *op,
			 int dev, double model_ns, double measured_ns,
			 double alpha);
/*
 * Save/load calibration as text lines "DEVICE OP RATIO MEASURED_NS COUNT",
 * keyed by device and op names so a file outlives the chain it came from.
 * Load matches the names of @d and @c; unknown lines are ignored.
 */
int edgeq_calib_save(const struct edgeq_calib *cal,
		     const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c, const char *path);
int edgeq_calib_load(struct edgeq_calib *cal, const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c, const char *path,
		     struct edgeq_error *err);

/* Modelled time of @op on device @dev (calibrated when @cal is non-NULL);
 * INFINITY when the device cannot run it or has no capacity. */
double edgeq_op_time_ns(const struct edgeq_devices *d, int dev,
			const struct edgeq_op *op,
			const struct edgeq_calib *cal);
/* Handing @bytes from device @from to device @to (0 when equal). */
double edgeq_transfer_ns(const struct edgeq_devices *d, int from, int to,
			 double bytes);

/* An assignment of the chain's ops to devices, with its predicted costs. */
struct edgeq_placement {
	size_t n_ops;
	uint8_t *dev;	    /* device index per op */
	double step_ns;	    /* predicted time of one decode step */
	double op_ns;	    /* of which running ops (launches included) */
	double transfer_ns; /* of which device boundaries */
	double dev_ns[EDGEQ_MAX_DEVICES]; /* busy time per device, launches incl. */
	uint32_t n_segments; /* runs of consecutive ops on one device */
	uint32_t n_boundaries;
};

int edgeq_placement_alloc(struct edgeq_placement *p, size_t n_ops);
void edgeq_placement_free(struct edgeq_placement *p);
int edgeq_placement_copy(struct edgeq_placement *dst,
			 const struct edgeq_placement *src);
/* The share of the step spent in transfers (the fallback tax), 0..1. */
double edgeq_placement_fallback_tax(const struct edgeq_placement *p);
/* Fill p->dev with @assign (n entries) and evaluate it; -EINVAL when an op
 * lands on a device that cannot run it (step_ns is then INFINITY). */
int edgeq_placement_evaluate(const struct edgeq_devices *d,
			     const struct edgeq_op_chain *c,
			     const struct edgeq_calib *cal,
			     const uint8_t *assign, struct edgeq_placement *p);
/*
 * The plan of least predicted step time (dynamic programming over the
 * chain; the data starts and ends on the host). Exact for the cost model.
 * @p must have been allocated for c->n ops.
 */
int edgeq_placement_optimal(const struct edgeq_devices *d,
			    const struct edgeq_op_chain *c,
			    const struct edgeq_calib *cal,
			    struct edgeq_placement *p);
/* The naive plan: each op on the device fastest for it alone, falling back
 * op by op, transfers ignored when choosing (what per-op fallback does). */
int edgeq_placement_naive(const struct edgeq_devices *d,
			  const struct edgeq_op_chain *c,
			  const struct edgeq_calib *cal,
			  struct edgeq_placement *p);
/* All ops on the CPU. */
int edgeq_placement_cpu(const struct edgeq_devices *d,
			const struct edgeq_op_chain *c,
			const struct edgeq_calib *cal,
			struct edgeq_placement *p);

struct edgeq_placer_params {
	double margin;	    /* switch only if >= this share faster (0.05) */
	uint32_t min_dwell; /* tokens a plan is kept after a switch (1) */
	double alpha;	    /* calibration EWMA weight (0.25) */
	bool calibrate;	    /* feed observations into the model (true) */
	/* the most weight bytes a plan puts on one device other than the
	 * CPU: its weight-copy bound; 0: no limit (0) */
	uint64_t dev_bytes;
};

void edgeq_placer_params_init(struct edgeq_placer_params *p);

/* Why the plan changed at a boundary. */
enum edgeq_replan_reason {
	EDGEQ_REPLAN_NONE = 0,
	EDGEQ_REPLAN_INITIAL,
	EDGEQ_REPLAN_FASTER, /* capacity or calibration made another plan win */
	EDGEQ_REPLAN_LOST,   /* a device in the plan lost its agent or paused */
	EDGEQ_REPLAN_MEMORY, /* the plan no longer fits a device's bound */
};

struct edgeq_placer;

/* The placer copies @d and @c's ops; the initial plan is the optimal one. */
int edgeq_placer_new(const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c,
		     const struct edgeq_placer_params *params,
		     struct edgeq_placer **out);
void edgeq_placer_free(struct edgeq_placer *p);
/*
 * A device's new state. Safe from another thread (the pressure monitor):
 * it takes effect at the next token boundary. Returns -ENOENT for an
 * unknown device.
 */
int edgeq_placer_set_state(struct edgeq_placer *p, int dev,
			   const struct edgeq_device_state *s);
/* Has a state update arrived since the last boundary? (cheap, any thread) */
bool edgeq_placer_pending(const struct edgeq_placer *p);
/*
 * A token boundary: apply pending state and calibration, re-plan, switch
 * with hysteresis (at once when the plan in force became infeasible).
 * Returns the reason (EDGEQ_REPLAN_NONE when the plan stays).
 */
enum edgeq_replan_reason edgeq_placer_boundary(struct edgeq_placer *p);
/*
 * The device @dev failed mid-step (its agent died): mark it lost and switch
 * at once, without waiting for the boundary. The executor re-runs the failed
 * op and the rest of the step under the new plan.
 */
void edgeq_placer_device_lost(struct edgeq_placer *p, int dev);
/* Record that op @i took @ns on device @dev (calibration). */
void edgeq_placer_observe(struct edgeq_placer *p, size_t i, int dev,
			  uint64_t ns);
/* The plan in force (valid until the next boundary or device_lost). */
const struct edgeq_placement *edgeq_placer_plan(const struct edgeq_placer *p);
const struct edgeq_devices *edgeq_placer_devices(const struct edgeq_placer *p);
const struct edgeq_op_chain *edgeq_placer_chain(const struct edgeq_placer *p);
struct edgeq_calib *edgeq_placer_calib(struct edgeq_placer *p);
/* Number of plan switches so far, and the boundary count. */
uint64_t edgeq_placer_switches(const struct edgeq_placer *p);
uint64_t edgeq_placer_tokens(const struct edgeq_placer *p);

struct edgeq_pressure_state;

/*
 * Each device's state from the pressure monitor's @ps (may be NULL) and, for
 * queues, the module's sysfs under @sysfs_dir (NULL: not read): agent,
 * in-flight limit, the cooling state of cooling device "edgeq-<queue>", and
 * the throttle factor of the monitor's device of the same name or profile
 * ("cpu" for the host). @out has d->n entries.
 */
void edgeq_placement_states(const struct edgeq_devices *d,
			    const struct edgeq_pressure_state *ps,
			    const char *sysfs_dir,
			    struct edgeq_device_state *out);
/*
 * A new bound for params.dev_bytes (memory pressure moves it); takes effect
 * at the next boundary, at once when the plan in force no longer fits.
 */
void edgeq_placer_set_dev_bytes(struct edgeq_placer *p, uint64_t bytes);
/* The weight bytes plan @pl puts on device @dev (edgeq_op.weight_bytes). */
uint64_t edgeq_placement_dev_bytes(const struct edgeq_op_chain *c,
				   const struct edgeq_placement *pl, int dev);

/* Hand the placer every state that differs from the one in force (it takes
 * effect at the next boundary). Returns the number of devices changed. */
int edgeq_placer_update_pressure(struct edgeq_placer *p,
				 const struct edgeq_pressure_state *ps,
				 const char *sysfs_dir);

/* ---- execution: the forward pass on the placed devices ---- */

/*
 * Speculative decoding with device queues: which model they should take.
 * Predicted decode steps (ns) of the target and the draft, on @d's best
 * plan and on the CPU alone; the tokens per second of each assignment
 * (target on the queues with the draft on the CPU, or the reverse) at
 * acceptance @accept and its best draft length up to @max_len (0 when
 * drafting does not pay there); and the choice: the larger rate.
 * Returns 0, or -EINVAL (a bad acceptance or length, a shape the chain
 * builder refuses).
 */
struct edgeq_model;
/* The placement shape of a loaded model (what attach plans with); -EINVAL
 * for a model without layers or an output head. */
int edgeq_place_model_shape(const struct edgeq_model *m,
			    struct edgeq_place_shape *s);

struct edgeq_draft_choice {
	double target_dev_ns, target_cpu_ns, draft_dev_ns, draft_cpu_ns;
	double rate_target_on, rate_draft_on; /* tokens per second */
	int k_target_on, k_draft_on;
	bool draft_on_device;
};
int edgeq_place_draft_choice(const struct edgeq_devices *d,
			     const struct edgeq_place_shape *target,
			     const struct edgeq_place_shape *draft,
			     double accept, int max_len,
			     struct edgeq_draft_choice *out);

struct edgeq_ctx;
struct edgeq_pressure;
struct edgeq_place_exec;

/*
 * A weight matrix as a backend sees it. Its identity is the tensor (its
 * GGUF name, which also names the layer, within the model of the ctx the
 * executor is attached to), never its address: with --weights stream the
 * bytes of different layers pass through the same reused slot buffers.
 */
struct edgeq_place_weight {
	const char *name; /* GGUF tensor name, e.g. "blk.3.attn_q.weight" */
	int layer;	  /* its block, or -1 (output) */
	uint32_t type;	  /* GGUF type */
	const void *data; /* its bytes now (valid for this call only) */
	uint64_t bytes;
};

/* Where a tensor of a chained op lives (struct edgeq_place_chain). */
enum edgeq_place_mem {
	EDGEQ_PLACE_MEM_WEIGHT = 0, /* chain->w[index], from its start */
	EDGEQ_PLACE_MEM_ACT = 1,    /* the backend's activation area */
	EDGEQ_PLACE_MEM_KV = 2,	    /* the ctx's KV cache mapping */
};

struct edgeq_place_tref {
	uint32_t mem;	/* enum edgeq_place_mem */
	uint32_t index; /* the weight (EDGEQ_PLACE_MEM_WEIGHT) */
	uint64_t offset, length;
};

/* One op of a chain: the descriptor without its tensor handles. */
struct edgeq_place_cop {
	struct edgeq_op_desc op;
	struct edgeq_place_tref t[EDGEQ_MAX_TENSORS];
};

/*
 * Whole decoder blocks of one token as one chain of dependent ops: the
 * backend copies @in_len bytes of @in into its activation area at offset 0,
 * runs the ops in order as one submission, and copies @out_len bytes from
 * offset 0 back to @out. The KV cache rows the STORE ops write go straight
 * into the ctx's shared mapping (@kv_fd, @kv_base; unified memory: no copy).
 */
struct edgeq_place_chain {
	const struct edgeq_place_cop *ops;
	unsigned int n_ops;
	const struct edgeq_place_weight *w;
	unsigned int n_w;
	uint64_t act_bytes; /* of the activation area the ops use */
	const void *in;
	uint64_t in_len;
	void *out;
	uint64_t out_len;
	/* with the output head: its logits, from @head_off of the area */
	void *head_out;
	uint64_t head_off, head_len;
	int kv_fd;
	void *kv_base;
	uint64_t kv_len;
	uint64_t kv_id; /* that mapping's identity (forget_kv()) */
};

/* How a device other than the CPU runs a matrix op (the constructors
 * below fill the whole struct; one filled by hand starts zeroed). */
struct edgeq_place_backend {
	const char *name;
	/*
	 * y[rows] = W x on device @dev: W (@w) is @rows x @cols, x is
	 * f32[cols]. The same kernels as the CPU path (activations quantized
	 * to the type's vec_dot type, then matvec), so the result is
	 * bit-identical (a GPU backend: within the bounds of
	 * Documentation/gpu-agent.rst). A backend that keeps a copy of the
	 * weight keys it by w->name, never by w->data. Returns 0, or -errno
	 * (-ENODEV: the agent is gone), after which the CPU runs the op.
	 */
	int (*matvec)(void *arg, int dev, const struct edgeq_place_weight *w,
		      uint64_t rows, uint64_t cols, const float *x, float *y);
	/*
	 * Optional: the @n products of one placed op that share x (q, k and
	 * v; gate and up), y[i] = W_i x with W_i (@w[i]) @rows[i] x @cols,
	 * submitted together (one queue write, one chain on the device).
	 * The same results and errors as @n matvec calls; on an error none
	 * of the y[i] is to be used.
	 */
	int (*matvec_n)(void *arg, int dev, const struct edgeq_place_weight *w,
			const uint64_t *rows, unsigned int n, uint64_t cols,
			const float *x, float *const *y);
	/*
	 * Optional: run @c on device @dev (whole blocks: the executor hands
	 * every op of the blocks the plan puts on @dev in one call). 0, or
	 * -errno: -ENOSPC a weight did not fit the copy budget (the device
	 * is kept), -EINVAL/-EOPNOTSUPP an op the device cannot run (chains
	 * are not tried again), else the device failed (lost); on an error
	 * @out is untouched.
	 */
	int (*chain)(void *arg, int dev, const struct edgeq_place_chain *c);
	/* With chain: the EDGEQ_F_* op features its devices take (the
	 * module's for queues): STORE and ROPE_FREQ are needed for blocks,
	 * NORM_ROWS for per-head norms, GELU_MUL for GELU models. */
	uint64_t chain_features;
	/* With chain: the KV mapping @kv_id goes away (the ctx detaches). */
	void (*forget_kv)(void *arg, uint64_t kv_id);
	/* Optional: bound the weight copies of every device to @bytes now
	 * (0: none), dropping the least recently used ones over it. */
	void (*set_copy_budget)(void *arg, uint64_t bytes);
	void *arg;
};

/* The in-process backend: runs the op on the calling thread as a CPU agent
 * would. fail_after > 0 makes it answer -ENODEV from that op on (an agent
 * killed mid-generation, for tests); delay_ns makes it slower. */
struct edgeq_place_inline {
	uint64_t fail_after;
	uint64_t delay_ns; /* added to every op: a slower device */
	uint64_t ops;	   /* ops run */
};

void edgeq_place_backend_inline(struct edgeq_place_backend *be,
				struct edgeq_place_inline *st);

struct edgeq_place_stats {
	uint64_t tokens;	    /* decode steps (token boundaries) */
	uint64_t replans;	    /* plan switches */
	uint64_t last_replan_token; /* token count at the last switch */
	enum edgeq_replan_reason last_reason;
	uint64_t offloaded;	  /* matrix ops run off the CPU */
	uint64_t fallbacks;	  /* ops a device failed; the CPU ran them */
	int last_error;		  /* the backend's last error (-errno) */
	uint64_t pressure_events; /* monitor updates applied */
	uint32_t ops_off_cpu;	  /* ops of the plan in force off the CPU */
	/* decode-step matrix ops run per device (index as in the devices
	 * given to attach; 0 is the CPU, fallbacks included) */
	uint64_t dev_ops[EDGEQ_MAX_DEVICES];
	/* ops a device took but whose weight did not fit its copy budget:
	 * run on the CPU, the device kept */
	uint64_t copy_refused;
	/* decoder blocks run whole on a device, and the submissions (chains)
	 * that carried them; those of prompt batches among them */
	uint64_t blocks, block_chains, prefill_blocks;
	/* why blocks are not chained, "" while they are (or may be) */
	char blocks_off[64];
	/* the weight-copy bound in force (memory pressure lowers the
	 * configured one, placer params.dev_bytes), 0: none; times it moved */
	uint64_t copy_bound, copy_bound_changes;
};

/*
 * Run @c's decode steps on the devices @d (dev[0] the CPU) through @be,
 * placed by a placer with @pp (NULL: defaults). Queues take the matrix ops
 * their profile allows; everything else, and prefill, runs on the CPU.
 * Detach before freeing the ctx.
 */
int edgeq_place_attach(struct edgeq_ctx *c, const struct edgeq_devices *d,
		       const struct edgeq_placer_params *pp,
		       const struct edgeq_place_backend *be,
		       struct edgeq_place_exec **out, struct edgeq_error *err);
void edgeq_place_detach(struct edgeq_place_exec *x);
/* The placer (set_state from any thread takes effect at the next token). */
struct edgeq_placer *edgeq_place_placer(struct edgeq_place_exec *x);
void edgeq_place_stats(const struct edgeq_place_exec *x,
		       struct edgeq_place_stats *st);
/* Consume @pm's events at every token boundary (no blocking) and re-read
 * queue state under @sysfs_dir when they arrive. @pm NULL stops. */
int edgeq_place_watch(struct edgeq_place_exec *x, struct edgeq_pressure *pm,
		      const char *sysfs_dir);
/* Hand over a state from a monitor followed elsewhere (a session's), from
 * any thread: applied at the next token boundary as if @pm had delivered
 * it (the latest one wins). 0, or -ENOMEM. */
int edgeq_place_pressure(struct edgeq_place_exec *x,
			 const struct edgeq_pressure_state *ps);

/*
 * The kq backend: ops placed on queue dev[k] (k >= 1) of @d go to its agent
 * through edgeq.ko (/dev/edgeq/<name>), on an io_uring of its own: tensors
 * in memfds the agent maps (weights copied once on first use, activations
 * through a staging buffer), a WRITE of the descriptor and a POLL_ADD for
 * the completion. -ENOENT (with a message) when a queue does not exist.
 */
struct edgeq_place_kq;
int edgeq_place_kq_new(const struct edgeq_devices *d,
		       struct edgeq_place_kq **out,
		       struct edgeq_place_backend *be, struct edgeq_error *err);
void edgeq_place_kq_free(struct edgeq_place_kq *k);
/*
 * Bound the weight copies each queue's memfds hold to @bytes (0: no
 * limit): a new copy drops the least recently used ones first; an op
 * whose weight cannot fit runs on the CPU (the device stays). The copies
 * are anonymous shared memory beside the model file's pages, so on a box
 * with a hard memory ceiling this is the device's share of it.
 */
void edgeq_place_kq_set_copy_budget(struct edgeq_place_kq *k, uint64_t bytes);
/* Bytes of weight copies held and copies dropped for the budget, over all
 * queues. */
void edgeq_place_kq_copies(const struct edgeq_place_kq *k, uint64_t *bytes,
			   uint64_t *dropped);

/*
 * The device backend: ops placed on any device other than the CPU run in
 * this process on execution backend @p->kind ("vulkan", "cpu") and device
 * @p->device (include/edgeq/backend.h), as an agent behind a queue would
 * run them, without edgeq.ko. @p->fail_after > 0: -ENODEV from that op on
 * (a device lost mid-generation, for tests).
 */
struct edgeq_place_dev;
struct edgeq_backend_info;
struct edgeq_place_dev_params {
	const char *kind;
	const char *device; /* NULL: the first usable one */
	uint64_t fail_after;
	uint64_t copy_budget; /* weight copies, bytes (as the kq backend's
			       * edgeq_place_kq_set_copy_budget()); 0: none */
};
int edgeq_place_dev_new(const struct edgeq_place_dev_params *p,
			struct edgeq_place_dev **out,
			struct edgeq_place_backend *be,
			struct edgeq_error *err);
/* What the backend runs on; *@weight_bytes: the weight copies held. */
void edgeq_place_dev_info(const struct edgeq_place_dev *d,
			  struct edgeq_backend_info *info,
			  uint64_t *weight_bytes);
/* Weight copies dropped for the budget so far. */
uint64_t edgeq_place_dev_copies_dropped(const struct edgeq_place_dev *d);
void edgeq_place_dev_free(struct edgeq_place_dev *d);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_PLACEMENT_H */
