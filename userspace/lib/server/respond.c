// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Responses: the headers every answer carries (CORS, the route taken), JSON
 * bodies and OpenAI-style errors, the client-gone check between tokens, and
 * the per-request log line. The endpoints (server.c) and the local and
 * upstream generators (local.c, upstream.c) all answer through these, and
 * this file calls none of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

void srv_add_common_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

/* The request's Origin when CORS allows it, else NULL. */
const char *srv_cors_origin(struct srv_req *r)
{
	const char *list = r->s->cfg.cors_origins, *o, *p;
	size_t n;

	if (!list || !*list)
		return NULL;
	o = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
	if (!o || !*o)
		return NULL;
	if (!strcmp(list, "*"))
		return o;
	n = strlen(o);
	for (p = list; *p;) {
		size_t l = strcspn(p, ", ");

		if (l == n && !strncmp(p, o, n))
			return o;
		p += l;
		p += strspn(p, ", ");
	}
	return NULL;
}

void srv_add_route_headers(struct srv_req *r, struct MHD_Response *resp)
{
	const char *origin = srv_cors_origin(r);

	if (origin) {
		MHD_add_response_header(resp, "Access-Control-Allow-Origin",
					origin);
		MHD_add_response_header(
			resp, "Access-Control-Expose-Headers",
			"X-Edgeq-Request-Id, X-Edgeq-Privacy, X-Edgeq-Route, X-Edgeq-Fallback, Retry-After");
		MHD_add_response_header(resp, "Vary", "Origin");
	}
	MHD_add_response_header(resp, "X-Edgeq-Request-Id", r->id);
	if (!r->json)
		return;
	MHD_add_response_header(resp, "X-Edgeq-Privacy",
				edgeq_privacy_name(r->privacy));
	MHD_add_response_header(resp, "X-Edgeq-Route",
				edgeq_route_name(r->route));
	if (r->fallback[0])
		MHD_add_response_header(resp, "X-Edgeq-Fallback", r->fallback);
	if (r->warning[0])
		MHD_add_response_header(resp, "X-Edgeq-Warning", r->warning);
}

int srv_send_json(struct srv_req *r, int status, json_t *j)
{
	struct MHD_Response *resp;
	char *txt = json_dumps(j, JSON_COMPACT);
	int ret;

	if (!txt)
		return MHD_NO;
	resp = MHD_create_response_from_buffer(strlen(txt), txt,
					       MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(txt);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	srv_add_common_headers(resp);
	srv_add_route_headers(r, resp);
	if (status == 429 || status == 503) {
		char ra[16];

		snprintf(ra, sizeof(ra), "%d",
			 r->retry_after > 0 ? r->retry_after : 1);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	if (status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
	if (status == 405 && r->allow)
		MHD_add_response_header(resp, "Allow", r->allow);
	if (r->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
					"close");
	ret = MHD_queue_response(r->conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	srv_metrics_request(r->s->metrics, r->endpoint, status);
	return ret;
}

/* OpenAI's error shape: {"error": {"message", "type", "param", "code"}} */
int srv_send_error(struct srv_req *r, int status, const char *type,
		   const char *param, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *j;
	int ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = json_pack("{s:{s:s,s:s,s:s?,s:s?}}", "error", "message", msg,
		      "type", type, "param", param, "code",
		      status == 429 ? "rate_limit_exceeded" :
		      status == 404 && param && !strcmp(param, "model") ?
				      "model_not_found" :
				      NULL);
	if (!j)
		return MHD_NO;
	ret = srv_send_json(r, status, j);
	json_decref(j);
	if (status >= 400 && strcmp(r->endpoint, "health"))
		srv_log(status >= 500 ? SRV_WARN : SRV_INFO,
			(const char *const[]){ "EDGEQ_EVENT=request-refused",
					       NULL },
			"request %s refused: %d %s", r->id, status, msg);
	return ret;
}

bool srv_client_gone(struct srv_req *r)
{
	const union MHD_ConnectionInfo *ci;
	ssize_t n;
	char c;

	ci = MHD_get_connection_info(r->conn,
				     MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return true;
	n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return true;
	return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
	       errno != EINTR;
}

void srv_log_request(struct srv_req *r, int status)
{
	char f[13][96];
	const char *fields[14];
	int n = 0;

	snprintf(f[n], sizeof(f[n]), "EDGEQ_REQUEST_ID=%s", r->id), n++;
	if (r->key)
		snprintf(f[n], sizeof(f[n]), "EDGEQ_KEY=%s", r->key->name), n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_CLASS=%s",
		 edgeq_privacy_name(r->privacy)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_ROUTE=%s",
		 edgeq_route_name(r->route)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_REASON=%s",
		 edgeq_route_reason_name(r->dec.reason)),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_STATUS=%d", status), n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_PROMPT_TOKENS=%zu", r->n_prompt),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_COMPLETION_TOKENS=%d", r->n_gen),
		n++;
	snprintf(f[n], sizeof(f[n]), "EDGEQ_DURATION_MS=%.1f",
		 (edgeq_now_ns() - r->t0) / 1e6),
		n++;
	if (r->t_first)
		snprintf(f[n], sizeof(f[n]), "EDGEQ_TTFT_MS=%.1f",
			 (r->t_first - r->t0) / 1e6),
			n++;
	if (r->cancelled)
		snprintf(f[n], sizeof(f[n]), "EDGEQ_CANCELLED=1"), n++;
	if (r->fallback[0])
		snprintf(f[n], sizeof(f[n]), "EDGEQ_FALLBACK_FROM=%.70s",
			 r->fallback),
			n++;
	fields[n] = NULL;
	while (n--)
		fields[n] = f[n];
	srv_log(SRV_INFO, fields, "request %s %s", r->id,
		r->cancelled ? "cancelled" : "done");
	if (r->s->cfg.log_prompts)
		srv_log(SRV_INFO,
			(const char *const[]){ "EDGEQ_EVENT=prompt-log", NULL },
			"request %s prompt=%s completion=%s", r->id,
			r->prompt ? r->prompt : "", r->text.p ? r->text.p : "");
}

int srv_bad_request(struct srv_req *r, const char *param, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	srv_send_error(r, 400, "invalid_request_error", param, "%s", msg);
	return -EINVAL;
}
