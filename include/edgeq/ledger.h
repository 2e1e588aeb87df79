/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ledgers: what a model costs on a device, computed before the device is
 * bought (edgeq plan) and checked after it is deployed (edgeq bench).
 *
 * Units: bytes, seconds, bytes/s, tokens/s, FLOP/s. GB means 1e9 bytes, GiB
 * 2^30. Every formula and its assumptions are in Documentation/ledgers.rst.
 * Nothing here prints; the functions are pure arithmetic except those that
 * read files (profiles, GGUF) or measure the machine (local profile).
 */
#ifndef EDGEQ_LEDGER_H
#define EDGEQ_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <edgeq/edgeq.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device as the ledgers see it; one section of profiles.ini. */
struct edgeq_profile {
	char name[64];	 /* "jetson-orin-nano-8gb", "local" */
	char desc[128];	 /* a line for humans */
	char family[64]; /* device family for manifests ("jetson-orin-nano") */
	double mem_bw; /* memory read bandwidth, bytes/s (datasheet or measured) */
	double efficiency; /* share of mem_bw a decode step realises (0.85) */
	uint64_t ram;	   /* bytes of memory the model shares with the OS */
	uint64_t reserved; /* bytes the OS and other programs keep */
	double flash_bw;   /* sequential read of the model's storage, bytes/s */
	double fault_latency; /* seconds per major page fault (one page) */
	uint32_t page_size;   /* bytes per fault without read-ahead */
	double compute;	      /* usable FLOP/s for prefill (matrix-matrix) */
	double throttle;      /* sustained / peak speed after heat soak (0.7) */
	int cores;
	bool measured; /* filled live (local) */
	/*
	 * The CPU's expected weight stream for decode, all cores, per weight
	 * type, from the kernels' counted instructions per byte and the
	 * cores' clock (tools/kcount --profiles): where it is under
	 * mem_bw x efficiency, decode on the CPU is bound by its kernels,
	 * not by memory. Absent (0 types) where not counted.
	 */
	double cpu_ghz;
	unsigned int n_cpu_stream;
	struct {
		char type[16]; /* "Q4_0" */
		double bw;     /* bytes/s */
	} cpu_stream[8];
};

/*
 * Load profile @name from the INI file @path (NULL: $EDGEQ_PROFILES, then
 * ../share/edgeq/profiles.ini next to the command, then the installed
 * one). For "local" only the file's [local] defaults are applied: the
 * caller then measures with edgeq_profile_local(). -ENOENT with a message
 * naming the profiles available when @name is not in the file.
 */
int edgeq_profile_load(const char *path, const char *name,
		       struct edgeq_profile *p, struct edgeq_error *err);
/* The names in the file, comma separated, into @buf. */
int edgeq_profile_list(const char *path, char *buf, size_t len,
		       struct edgeq_error *err);
/* The path edgeq_profile_load() would use for @path (never NULL). */
const char *edgeq_profile_path(const char *path);

/*
 * Measure this machine into @p (fields the measurement does not cover keep
 * their value): memory read bandwidth, RAM, cores, and the read bandwidth of
 * @disk_file (a model file; NULL: a temporary file under $TMPDIR).
 */
int edgeq_profile_local(struct edgeq_profile *p, const char *disk_file,
			struct edgeq_error *err);

/* Memory read bandwidth of this machine in bytes/s, measured now. Uses the
 * threads reading a 128 MiB buffer, best of three passes. */
double edgeq_ledger_membw(void);
/* The same over a buffer of @bytes (64 KiB to 1 GiB): the bandwidth of the
 * memory level a working set of that size lives in (a model smaller than
 * the last-level cache is read from the cache, not from DRAM). */
double edgeq_ledger_membw_at(uint64_t bytes);

/* The shape of a model as far as the ledgers need it. */
struct edgeq_model_shape {
	char arch[32];
	char name[128];
	uint64_t n_params;
	uint64_t weight_bytes; /* quantized size incl. block scales */
	uint64_t token_bytes;  /* weight bytes one decode step reads (no
				  * token embedding rows but the one used) */
	uint32_t n_layer, n_head, n_head_kv, head_dim, n_embd, n_ff, n_vocab;
	uint32_t n_ctx_train; /* 0: unknown */
	double bpw;	      /* bits per weight incl. metadata */
};

/*
 * A model from its parameter count and bits per weight, shaped like Llama 3
 * 8B (32 layers, 8 KV heads of 128, width 4096) unless the caller overrides
 * fields afterwards.
 */
void edgeq_shape_from_params(struct edgeq_model_shape *s, uint64_t n_params,
			     double bpw);
/* Read the shape from a GGUF file's metadata and tensor table. */
int edgeq_shape_from_gguf(const char *path, struct edgeq_model_shape *s,
			  struct edgeq_error *err);

/* ---- the ledgers: pure arithmetic ---- */

/* Bytes of weights for @n_params at @bpw bits each. */
uint64_t edgeq_ledger_weight_bytes(uint64_t n_params, double bpw);
/* KV cache bytes: batch x ctx x layers x 2 (K and V) x kv heads x head dim
 * x bytes per element. */
uint64_t edgeq_ledger_kv_bytes(uint64_t batch, uint64_t ctx, uint64_t layers,
			       uint64_t kv_heads, uint64_t head_dim,
			       double elem_bytes);
/* Decode upper bound, tokens/s: bw x eff / bytes per token. */
double edgeq_ledger_decode_bound(double bw, double eff, double bytes_per_token);
/* Prefill upper bound, tokens/s: min(compute / (2 x params), bandwidth x
 * batch / weight bytes). */
double edgeq_ledger_prefill_bound(double compute, uint64_t n_params, double bw,
				  double eff, uint64_t weight_bytes,
				  uint32_t batch);

/* Speculative decoding, the standard geometric model. */
struct edgeq_spec {
	double expected_tokens; /* per target step: (1 - a^(k+1)) / (1 - a) */
	double cost;		/* per target step: k x c + 1 */
	double speedup;		/* expected_tokens / cost */
};
void edgeq_ledger_speculative(double accept, int draft_len, double draft_cost,
			      struct edgeq_spec *out);
/*
 * The model's inputs as a run measured them, and its prediction for them
 * with @draft_cost: a = accepted drafts over accepted drafts plus verify
 * passes that rejected one (the geometric model's maximum-likelihood
 * rate), k = drafts per verify pass (rounded for the model); 0 without
 * any.
 */
void edgeq_ledger_speculative_measured(uint64_t drafted, uint64_t accepted,
				       uint64_t rejected, uint64_t verifies,
				       double draft_cost, double *accept,
				       double *draft_len,
				       struct edgeq_spec *out);

/* Loading @bytes from flash. */
struct edgeq_load {
	double preload_s;   /* bytes / flash_bw */
	double on_demand_s; /* + one fault per page */
	double prefetch_s;  /* + one fault per window of pages */
	double partial_s;   /* working-set share of prefetch_s */
	uint64_t pages;
};
void edgeq_ledger_load(double bytes, double flash_bw, double fault_latency,
		       uint32_t page_size, uint32_t window, double working_set,
		       struct edgeq_load *out);

/* A request's time at a given speed: prompt / prefill + gen / decode. */
double edgeq_ledger_request_s(double prompt_tokens, double gen_tokens,
			      double prefill_tps, double decode_tps);

/* Truncate to two decimals (a tok/s figure one can promise). */
double edgeq_ledger_trunc2(double v);

/* ---- the whole plan ---- */

struct edgeq_plan_params {
	uint32_t ctx;		/* context length the bound is for (4096) */
	uint32_t batch;		/* sequences (1) */
	uint32_t prefill_batch; /* tokens per prefill step (512) */
	double kv_elem_bytes;	/* 2 = F16 */
	double efficiency;	/* 0: the profile's */
	double accept;		/* speculative: acceptance rate (0.75) */
	int draft_len;		/* (4) */
	double draft_cost;	/* (0.15) */
	double throttle;	/* 0: the profile's */
	uint32_t prompt_len, gen_len; /* the SLO request (512, 256) */
	double slo_s;		      /* seconds (0: none) */
	uint32_t window;	      /* prefetch window in pages (32) */
	double working_set; /* share of weight pages a session touches (0.3) */
};

struct edgeq_plan {
	/* bandwidth */
	double bytes_per_token;	 /* weights + KV x ctx */
	double kv_bytes_per_pos; /* per position, all layers */
	double decode_tps;	 /* at ctx */
	double decode_tps_empty; /* at position 0 (weights only) */
	double prefill_tps;
	/* memory */
	uint64_t weights, kv, workspace, runtime, total, ram;
	bool fits;
	uint64_t max_ctx; /* longest context that fits (batch as given) */
	/* load */
	struct edgeq_load load;
	/* speculative */
	struct edgeq_spec spec;
	double spec_tps;
	/* sustained */
	double sustained_tps, sustained_prefill_tps;
	double req_peak_s, req_sustained_s;
	bool slo_met_peak, slo_met_sustained;
};

void edgeq_plan_params_init(struct edgeq_plan_params *pp);
int edgeq_plan_compute(const struct edgeq_profile *prof,
		       const struct edgeq_model_shape *shape,
		       const struct edgeq_plan_params *pp,
		       struct edgeq_plan *out, struct edgeq_error *err);

/* ---- statistics for edgeq bench ---- */

/* The @p-th percentile (0..100) of @n samples, linear between ranks; sorts
 * @v in place. 0 when n is 0. */
double edgeq_stats_percentile(double *v, size_t n, double p);
double edgeq_stats_mean(const double *v, size_t n);
/* Sample standard deviation (n - 1); 0 below two samples. */
double edgeq_stats_stddev(const double *v, size_t n);

/* A soak run split into the burst (the first @burst_s seconds) and the
 * steady state (the rest), token-weighted: tokens / seconds in each part. */
struct edgeq_soak_split {
	double burst_tps, steady_tps;
	double ratio; /* steady / burst (1 when no steady part) */
};
/* @t: end time of each sample interval (s, increasing from 0), @tokens:
 * tokens generated in that interval. */
void edgeq_soak_split(const double *t, const double *tokens, size_t n,
		      double burst_s, struct edgeq_soak_split *out);

#ifdef __cplusplus
}
#endif
#endif /* EDGEQ_LEDGER_H */
