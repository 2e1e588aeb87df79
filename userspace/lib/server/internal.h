/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the server's files share: the server, its slots and one request. */
#ifndef EDGEQ_SERVER_INTERNAL_H
#define EDGEQ_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>

#include <edgeq/engine.h>
#include <edgeq/session.h>
#include <edgeq/stream.h>

#include "server/gate.h"
#include "server/keys.h"
#include "server/server.h"

enum srv_state { SRV_LOADING = 0, SRV_READY, SRV_FAILED, SRV_STOPPING };

struct srv {
	struct srv_config cfg;
	struct MHD_Daemon *httpd[2];
	int listen_fd[2];
	int port;
	_Atomic int state;
	_Atomic bool cancel_all;
	/* local generations submitted whose answer has not left yet (a
	 * finished generation may still be on its way to the client) */
	_Atomic int answering;
	struct edgeq_model *model;
	const struct edgeq_model_info *info;
	char model_id[160];
	enum srv_template tmpl;	   /* built-in format: fallback, stop text */
	struct edgeq_tmpl *jinja;  /* the chat template, or NULL (built-in) */
	char *bos_text, *eos_text; /* for the template's bos/eos_token */
	const char *jinja_stop;	   /* stop text the template uses, or NULL */
	char tmpl_desc[200];	   /* which template chats use, for the log */
	bool add_bos_chat;
	time_t created;
	uint32_t n_ctx;

	/* the slots, their wait queue and the engine thread */
	struct edgeq_session *sess;
	int n_slots;
	struct edgeq_model *draft_model; /* --draft MODEL, or NULL */
	/* the tokenizer, loaded ahead of the weights (vocab_only) */
	struct edgeq_model *_Atomic vocab;
	int draft_kind; /* enum edgeq_draft_kind */

	pthread_mutex_t lock;		 /* speeds, pressure */
	double peak_tok_s, prompt_tok_s; /* measured, EWMA */
	_Atomic uint64_t seq;

	struct srv_pressure pressure; /* under lock */
	struct srv_metrics *metrics;
	struct edgeq_router_config rcfg;
	char load_error[600];

	struct srv_gate *gate[2];      /* accept loops in front of httpd[] */
	char *tls_cert, *tls_key;      /* PEM text, while TLS is on */
	pthread_mutex_t tls_lock;      /* reloads */
	struct MHD_Daemon *retired[8]; /* TCP daemons of older certificates */

	pthread_mutex_t keys_lock; /* swaps of keys */
	struct srv_keys *keys;	   /* NULL: no keys file */
};

enum srv_kind { SRV_CHAT = 0, SRV_COMPLETION };

/* One HTTP request, from the first byte to the response's end. */
struct srv_req {
	struct srv *s;
	struct MHD_Connection *conn;
	char id[48];
	uint64_t t0;
	const char *endpoint; /* metrics label */
	struct srv_buf body;
	bool too_big;

	/* parsed request */
	json_t *json;
	enum srv_kind kind;
	bool stream, include_usage;
	size_t tc_sent; /* streamed with tools: content bytes of text sent */
	bool answering; /* counted in srv.answering */
	int max_tokens;
	struct edgeq_sampler_params sp;
	char *prompt; /* rendered prompt text */
	/* its leading system prompt (rendered alone, a prefix of prompt),
	 * which a context shift keeps; NULL: keep BOS only */
	char *keep_text;
	bool add_bos, parse_special;
	const char *stops[6];
	int n_stops;
	char warning[256]; /* fields accepted but not acted on (a header) */
	enum edgeq_privacy privacy;
	double slo_tok_s, deadline_s;

	/* the API key it came with (NULL without a keys file) */
	struct srv_keys *keyset; /* a reference: the set the key lives in */
	struct srv_key *key;
	bool key_admitted; /* holds one of the key's in-flight places */
	int retry_after;   /* seconds for a 429's Retry-After; 0: 1 */
	bool close;	   /* answer with Connection: close */
	const char *allow; /* a 405's Allow header */
	bool head;	   /* a HEAD request: MHD sends no body */

	/* routing */
	struct edgeq_route_decision dec;
	enum edgeq_route route;
	uint32_t failed;
	char fallback[160]; /* why an upstream was not used; "" if none */

	/* local generation (the session's) */
	struct edgeq_gen *gen;
	bool have_event; /* ev came with the first wait, unread */
	struct edgeq_gen_event ev;
	int ev_ret;
	int32_t *toks;
	size_t n_prompt;
	uint32_t n_keep;   /* prompt tokens a context shift keeps */
	uint32_t n_shifts; /* context shifts the answer took */
	int n_gen;
	uint64_t t_first, t_last;
	struct srv_buf text;  /* released text (non-streaming answer) */
	struct srv_buf delta; /* released by the last step */
	const char *finish;   /* "stop", "length", or NULL while running */
	bool cancelled, counted;

	/* streaming output */
	struct srv_buf out;
	size_t out_off;
	int phase; /* 0 first chunk, 1 tokens, 2 final sent */

	/* upstream relay */
	CURL *curl;
	CURLM *multi;
	struct curl_slist *hdrs;
	char *up_body;
	long up_status;
	bool up_done;
	CURLcode up_result;
	char up_ctype[128];
};

/* respond.c */
void srv_add_common_headers(struct MHD_Response *resp);
/* The request's Origin when CORS allows it, else NULL. */
const char *srv_cors_origin(struct srv_req *r);
bool srv_client_gone(struct srv_req *r);
int srv_send_error(struct srv_req *r, int status, const char *type,
		   const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int srv_send_json(struct srv_req *r, int status, json_t *j);
void srv_add_route_headers(struct srv_req *r, struct MHD_Response *resp);
void srv_log_request(struct srv_req *r, int status);

/* pressure.c: the share of peak speed left now (1 when nothing
 * throttles); the session's on_pressure hook; the monitor's log line */
double srv_throttle(struct srv *s);
void srv_on_pressure(void *arg, const struct edgeq_pressure_state *st,
		     uint64_t budget_was, uint64_t budget);
void srv_log_pressure(struct srv *s);

/* chat.c: the prompt text of @msgs plus the assistant's turn, in the
 * model's chat format (the one place chat formatting happens; BOS not
 * included). */
int srv_chat_render(struct srv *s, const struct srv_msg *msgs, size_t n,
		    struct srv_buf *out);

/* respond.c: send a 400 naming @param; returns -EINVAL. */
int srv_bad_request(struct srv_req *r, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* request.c: parse and validate; on error sends the 4xx and returns it */
int srv_parse_request(struct srv_req *r);

/* chat.c: the model's chat template (or --chat-template FILE) */
int srv_chat_template_load(struct srv *s, struct edgeq_error *err);
void srv_chat_template_free(struct srv *s);
/* Render r's messages and tools into r->prompt; a 400 on refusal. */
int srv_chat_prompt(struct srv_req *r, json_t *msgs);
/* Name in r->warning the request fields the engine does not act on. */
void srv_chat_fields(struct srv_req *r);

/* local.c */
int srv_tokenize_prompt(struct srv_req *r);
int srv_local_respond(struct srv_req *r);
void srv_local_end(struct srv_req *r);

/* upstream.c: 0 when a response was queued, -EIO when the upstream
 * failed and nothing was sent (the caller falls back) */
int srv_upstream_respond(struct srv_req *r, enum edgeq_route route);
void srv_upstream_end(struct srv_req *r);

#endif
