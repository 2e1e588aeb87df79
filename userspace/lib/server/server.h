/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * edgeq serve internals: the HTTP server (libmicrohttpd, one thread per
 * connection), request parsing (jansson), chat templates, the generation
 * slots over the engine, upstream forwarding (libcurl), metrics and logs.
 * Not exported from the shared library (no edgeq_ prefix); the edgeq
 * command links the static one.
 */
#ifndef EDGEQ_SERVER_H
#define EDGEQ_SERVER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <edgeq/edgeq.h>
#include <edgeq/router.h>

struct edgeq_pressure_opts;
struct edgeq_pressure_state;

struct edgeq_ctx;
struct srv_buf;

/* ---- configuration (filled by `edgeq serve` from flags, env and file) */
struct srv_config {
	const char *model_path;
	const char *model_name;	  /* id in /v1/models; NULL: from metadata */
	const char *listen;	  /* address; "" or "none": no TCP */
	int port;		  /* 0: an ephemeral port (logged) */
	const char *unix_socket;  /* path, or NULL */
	unsigned int socket_mode; /* permissions of the unix socket */
	const char *port_file;	  /* write the bound port there (tests) */
	const char *api_key;	  /* bearer token, or NULL: no auth */
	const char *keys_file;	  /* API keys (keys.h); replaces api_key */
	bool metrics_public;	  /* /metrics answers without a key */
	const char *cors_origins; /* comma-separated, or "*"; NULL: no CORS */
	/* what a signed bundle sets (serve_bundle.c); 0 / 0 masks: none */
	double ttft_slo_s;			    /* the router's TTFT SLO */
	uint32_t class_routes[EDGEQ_PRIVACY_COUNT]; /* 1u << route */
	double throttle_c, critical_c; /* admission by temperature */
	const char *tls_cert;	       /* PEM certificate chain: TLS on TCP */
	const char *tls_key;	       /* its PEM private key */
	int threads;
	int ctx_size; /* tokens per slot */
	int slots;    /* generations at once */
	int queue;    /* requests waiting for a slot before 429 */
	int max_connections;
	int max_tokens; /* cap on max_tokens per request */
	int default_max_tokens;
	uint64_t max_body;	/* bytes */
	int load_delay_ms;	/* test hook: hold /health at 503 longer */
	int token_delay_ms;	/* test hook: sleep before each token */
	int shutdown_timeout_s; /* SIGTERM: finish in-flight within this */
	int upstream_timeout_s;
	int request_timeout_s;	   /* idle connection timeout */
	int request_deadline_s;	   /* a request's head and body, in all */
	int max_conns_per_client;  /* connections per client address */
	bool log_prompts;	   /* prompts/completions to the log: off */
	bool prefix_cache;	   /* reuse a slot's KV for a common prefix */
	int kv_type;		   /* enum edgeq_kv_type of the slots */
	bool context_shift;	   /* at the limit, drop the older half */
	const char *chat_template; /* auto, llama3, chatml, llama2, mistral */
	enum edgeq_privacy default_class;
	const char *private_url, *private_model, *private_key;
	const char *public_url, *public_model, *public_key;
	const char *upstream_ca; /* CA bundle for https upstreams */
	const char *private_pin, *public_pin; /* "sha256//BASE64" key pins */
	double local_tok_s;	/* fixed sustained-speed estimate; 0: measure */
	const char *log_target; /* auto, journal, stderr */
	int weights_mode;	/* enum edgeq_weights_mode */
	uint64_t weights_budget; /* bytes; 0: derived from memory */
	/* the engine session's pressure monitor (NULL: none); its memory
	 * level moves the weights budget up to weights_budget */
	const struct edgeq_pressure_opts *pressure;
	const char *draft; /* speculative decoding: lookup, layers:L,
				  * a model file; NULL: none */
	int draft_max;	   /* most tokens drafted per pass (4) */

	/*
	 * Hooks for the daemon (all optional, called with @hook_arg):
	 * on_ctx after each slot's context is created (placement attaches
	 * there; non-zero fails the load), on_ctx_free before it is freed,
	 * on_generation when a local generation ends (its decode tok/s, 0
	 * when too short to measure), on_metrics to append to /metrics,
	 * on_pressure with every state of the session's monitor (on its
	 * thread: placement hands it to the slots' executors).
	 */
	void *hook_arg;
	int (*on_ctx)(void *arg, struct edgeq_ctx *c, int slot,
		      struct edgeq_error *err);
	void (*on_ctx_free)(void *arg, struct edgeq_ctx *c, int slot);
	void (*on_generation)(void *arg, double decode_tok_s, int n_gen);
	void (*on_metrics)(void *arg, struct srv_buf *out);
	void (*on_pressure)(void *arg, const struct edgeq_pressure_state *st);
};

void srv_config_init(struct srv_config *c);

/* ---- growing buffer */
struct srv_buf {
	char *p;
	size_t len, cap;
	bool oom;
};
void srv_buf_add(struct srv_buf *b, const void *d, size_t n);
void srv_buf_printf(struct srv_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void srv_buf_free(struct srv_buf *b);

/* ---- logs: journal with structured fields under systemd, else stderr */
enum { SRV_ERR = 3, SRV_WARN = 4, SRV_NOTICE = 5, SRV_INFO = 6, SRV_DEBUG = 7 };
void srv_log_setup(const char *target);
/* @fields: NULL-terminated "KEY=value" strings (journal field names,
 * upper case, EDGEQ_ prefixed); may be NULL. */
void srv_log(int prio, const char *const *fields, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- metrics */
enum srv_hist { SRV_H_TTFT = 0, SRV_H_ITL, SRV_H_DURATION, SRV_H_COUNT };
struct srv_metrics;
struct srv_metrics *srv_metrics_new(void);
void srv_metrics_free(struct srv_metrics *m);
void srv_metrics_observe(struct srv_metrics *m, enum srv_hist h, double v);
void srv_metrics_add_tokens(struct srv_metrics *m, uint64_t prompt,
			    uint64_t gen);
void srv_metrics_request(struct srv_metrics *m, const char *endpoint,
			 int status);
void srv_metrics_route(struct srv_metrics *m, enum edgeq_privacy p,
		       enum edgeq_route r, enum edgeq_route_reason why);
void srv_metrics_upstream(struct srv_metrics *m, enum edgeq_route r, bool ok);
void srv_metrics_cancelled(struct srv_metrics *m);
/* Append the metrics that are not gauges of the live server. */
void srv_metrics_render(struct srv_metrics *m, struct srv_buf *out);
struct edgeq_session_status;
/* The engine session's figures: steps, and with speculation its drafts,
 * acceptance, tokens per pass and the ledger's prediction. */
void srv_metrics_render_session(const struct edgeq_session_status *ss,
				bool speculative, struct srv_buf *out);

struct edgeq_stream_status;
/* The weight streamer's gauges (mode; budget, residency, reads, stalls). */
void srv_metrics_render_weights(const struct edgeq_stream_status *w,
				struct srv_buf *out);
struct srv_pressure;
/* The pressure monitor's gauges (source, memory level, throttle, heat). */
void srv_metrics_render_pressure(const struct srv_pressure *p,
				 struct srv_buf *out);

/* ---- chat templates */
enum srv_template {
	SRV_TMPL_CHATML = 0,
	SRV_TMPL_LLAMA3,
	SRV_TMPL_LLAMA2,
	SRV_TMPL_MISTRAL,
	SRV_TMPL_COUNT,
};

struct srv_msg {
	const char *role; /* system, user, assistant, tool */
	const char *content;
};

/*
 * Tool calls in a chat answer (toolcall.c: Hermes/Qwen <tool_call> blocks,
 * Mistral [TOOL_CALLS], Llama 3.x JSON): an OpenAI tool_calls array and
 * the text around them in @content (trimmed), or NULL (the answer is
 * text) with @content emptied.
 */
json_t *srv_tool_calls(const char *text, size_t len, struct srv_buf *content);
/* How much of a streamed answer so far can go out as content: all but
 * what may begin a tool call (a marker or its prefix at the end; an
 * answer that starts as a JSON object). */
size_t srv_tool_safe_len(const char *text, size_t len);

const char *srv_template_name(enum srv_template t);
int srv_template_parse(const char *s, enum srv_template *out);
/*
 * Pick a template from the model: the GGUF tokenizer.chat_template text
 * (may be NULL), the architecture and name, and which special tokens the
 * vocabulary has.
 */
enum srv_template srv_template_detect(const char *jinja, const char *arch,
				      const char *name, bool has_llama3_tokens,
				      bool has_chatml_tokens);
/* Render @msgs plus the assistant prompt into @out (BOS not included). */
int srv_template_render(enum srv_template t, const struct srv_msg *msgs,
			size_t n, struct srv_buf *out);
/* Text that ends the assistant's turn, beside the EOG tokens; or NULL. */
const char *srv_template_stop(enum srv_template t);

/* ---- UTF-8 helpers */
/* Copy @s to @out replacing invalid sequences with U+FFFD. */
void srv_utf8_sanitize(const char *s, size_t n, struct srv_buf *out);

/* ---- the server */
struct srv;

int srv_new(const struct srv_config *cfg, struct srv **out,
	    struct edgeq_error *err);
/* Listen (TCP and/or unix socket); /health answers 503 until loaded. */
int srv_start(struct srv *s, struct edgeq_error *err);
/* Load the model (blocking; call from a thread). */
int srv_load(struct srv *s, struct edgeq_error *err);
bool srv_ready(struct srv *s);
/* The event loop's liveness check for the watchdog: false when a
 * generation has made no progress for @stall_ns. */
bool srv_alive(struct srv *s, uint64_t stall_ns);
/* Whether the listener accepts a connection and answers GET /health (any
 * status) within @timeout_ms; checked at most once a second, cached. */
bool srv_listener_answers(struct srv *s, int timeout_ms);
/* Stop taking requests, let in-flight ones finish for up to @timeout_ns,
 * then cancel the rest; returns the number cancelled. */
int srv_shutdown(struct srv *s, uint64_t timeout_ns);
void srv_free(struct srv *s);
/* Read the keys file again (SIGHUP); on an error the old keys stay.
 * Requests in flight finish under the keys they were admitted with. */
int srv_reload_keys(struct srv *s, struct edgeq_error *err);
/* An upstream URL edgeq may send prompts to: http or https, and https
 * unless its host is loopback. 0 or -EINVAL with why. */
int srv_check_upstream_url(const char *what, const char *url,
			   struct edgeq_error *err);
/* Read the TLS certificate and key again (SIGHUP): new connections get
 * them; connections already open keep theirs. 0 without TLS. */
int srv_reload_tls(struct srv *s, struct edgeq_error *err);
/* What the session's pressure monitor says, reduced to what the server
 * uses (the router's throttle, /metrics). */
#define SRV_MAX_DEVICES 8
struct srv_pressure {
	bool valid;
	const char *source; /* "bpf", "psi" */
	double throttle;    /* of the device the engine runs on ("cpu") */
	bool have_throttle; /* a device with a throttle source exists */
	double mem_some10;  /* PSI some avg10 / 100; < 0 absent */
	double stall_ms_per_s;
	int mem_level; /* enum edgeq_mem_level */
	int n_dev;
	struct {
		char name[16];
		double throttle;
		int32_t temp_mc; /* INT32_MIN: unknown */
		uint32_t level;	 /* 0 ok, 1 warn, 2 crit */
	} dev[SRV_MAX_DEVICES];
};

/* The bound TCP port, or 0. */
int srv_port(struct srv *s);

#endif /* EDGEQ_SERVER_H */
