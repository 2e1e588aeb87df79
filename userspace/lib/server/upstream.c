// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Forward a request to an OpenAI-compatible upstream (vLLM, llama.cpp's
 * server) with libcurl and relay its answer, SSE included. An upstream that
 * cannot be reached, times out or answers with an error before the first
 * byte of a body reaches the client counts as failed: the caller falls back
 * to local. Only http and https; no redirects; the client's bearer token is
 * never forwarded (each endpoint has its own key).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "edgeq_config.h"
#include "server/internal.h"

static size_t on_body(char *d, size_t size, size_t n, void *cls)
{
	struct srv_req *r = cls;

	srv_buf_add(&r->out, d, size * n);
	return r->out.oom ? 0 : size * n;
}

static size_t on_header(char *d, size_t size, size_t n, void *cls)
{
	struct srv_req *r = cls;
	size_t len = size * n, k;

	if (len > 13 && !strncasecmp(d, "Content-Type:", 13)) {
		d += 13, len -= 13;
		while (len && (*d == ' ' || *d == '\t'))
			d++, len--;
		while (len && (d[len - 1] == '\r' || d[len - 1] == '\n'))
			len--;
		k = len < sizeof(r->up_ctype) - 1 ? len :
						    sizeof(r->up_ctype) - 1;
		memcpy(r->up_ctype, d, k);
		r->up_ctype[k] = '\0';
	}
	return size * n;
}

static int build(struct srv_req *r, enum edgeq_route route)
{
	const struct srv_config *c = &r->s->cfg;
	const char *base = route == EDGEQ_ROUTE_PRIVATE ? c->private_url :
							  c->public_url;
	const char *model = route == EDGEQ_ROUTE_PRIVATE ? c->private_model :
							   c->public_model;
	const char *key = route == EDGEQ_ROUTE_PRIVATE ? c->private_key :
							 c->public_key;
	const char *path = r->kind == SRV_CHAT ? "chat/completions" :
						 "completions";
	char url[1024], auth[600];
	const char *pin;
	json_t *fwd;
	size_t bl;

	/* the request without edgeq's own fields */
	fwd = json_deep_copy(r->json);
	if (!fwd)
		return -ENOMEM;
	json_object_del(fwd, "edgeq_privacy");
	json_object_del(fwd, "edgeq_slo_tokens_per_s");
	json_object_del(fwd, "edgeq_deadline_s");
	if (model && *model)
		json_object_set_new(fwd, "model", json_string(model));
	r->up_body = json_dumps(fwd, JSON_COMPACT);
	json_decref(fwd);
	if (!r->up_body)
		return -ENOMEM;

	bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	if (bl >= 3 && !strncmp(base + bl - 3, "/v1", 3))
		snprintf(url, sizeof(url), "%.*s/%s", (int)bl, base, path);
	else
		snprintf(url, sizeof(url), "%.*s/v1/%s", (int)bl, base, path);

	r->curl = curl_easy_init();
	if (!r->curl)
		return -ENOMEM;
	r->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	r->hdrs = curl_slist_append(r->hdrs,
				    r->stream ? "Accept: text/event-stream" :
						"Accept: application/json");
	if (key && *key) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
		r->hdrs = curl_slist_append(r->hdrs, auth);
	}
	curl_easy_setopt(r->curl, CURLOPT_URL, url);
#if EDGEQ_HAVE_CURLOPT_PROTOCOLS_STR
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	/* libcurl < 7.85 (Ubuntu 22.04 has 7.81): the bitmask, deprecated since */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#pragma GCC diagnostic pop
#endif
	curl_easy_setopt(r->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, r->up_body);
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, (long)c->upstream_timeout_s);
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->curl, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->curl, CURLOPT_USERAGENT, "edgeq/" EDGEQ_VERSION);
	/* https upstreams: the configured CA bundle and key pin, if any;
	 * libcurl verifies the peer and its name by default */
	if (c->upstream_ca)
		curl_easy_setopt(r->curl, CURLOPT_CAINFO, c->upstream_ca);
	pin = route == EDGEQ_ROUTE_PRIVATE ? c->private_pin : c->public_pin;
	if (pin)
		curl_easy_setopt(r->curl, CURLOPT_PINNEDPUBLICKEY, pin);
	return 0;
}

int srv_check_upstream_url(const char *what, const char *url,
			   struct edgeq_error *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL;
	int ret = 0;

	if (!u)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0)) {
		ret = edgeq_error_set(err, EINVAL, "%s '%s' is not a URL", what,
				      url);
	} else if (strcmp(scheme, "https") && strcmp(scheme, "http")) {
		ret = edgeq_error_set(
			err, EINVAL, "%s '%s': only http and https", what, url);
	} else if (curl_url_get(u, CURLUPART_HOST, &host, 0)) {
		ret = edgeq_error_set(err, EINVAL, "%s '%s' has no host", what,
				      url);
	} else if (!strcmp(scheme, "http") && strncmp(host, "127.", 4) &&
		   strcmp(host, "[::1]") && strcasecmp(host, "localhost")) {
		ret = edgeq_error_set(
			err, EINVAL,
			"%s '%s': prompts may go to a host that is not loopback only over https",
			what, url);
	}
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ret;
}

static void fail_log(struct srv_req *r, enum edgeq_route route, const char *why)
{
	char f1[80], f2[160];

	snprintf(f1, sizeof(f1), "EDGEQ_REQUEST_ID=%s", r->id);
	snprintf(f2, sizeof(f2), "EDGEQ_UPSTREAM_ERROR=%s", why);
	srv_log(SRV_WARN,
		(const char *const[]){ f1, "EDGEQ_EVENT=upstream-failed", f2,
				       NULL },
		"request %s: %s endpoint failed (%s); falling back", r->id,
		edgeq_route_name(route), why);
	snprintf(r->fallback, sizeof(r->fallback), "%s: %.120s",
		 edgeq_route_name(route), why);
	srv_metrics_upstream(r->s->metrics, route, false);
}

/* Run the multi handle until the body starts, the transfer ends or the
 * client leaves. */
static void pump(struct srv_req *r, bool until_body)
{
	int running = 1, q;
	CURLMsg *m;

	while (running && !r->up_done) {
		curl_multi_perform(r->multi, &running);
		while ((m = curl_multi_info_read(r->multi, &q)))
			if (m->msg == CURLMSG_DONE) {
				r->up_done = true;
				r->up_result = m->data.result;
			}
		if (!running)
			r->up_done = true;
		if (r->out.len > r->out_off && until_body)
			break;
		if (!until_body && r->out.len > r->out_off)
			break;
		if (r->up_done)
			break;
		curl_multi_poll(r->multi, NULL, 0, 100, NULL);
		if (srv_client_gone(r) || atomic_load(&r->s->cancel_all)) {
			r->cancelled = true;
			break;
		}
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->up_status);
}

static ssize_t relay_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct srv_req *r = cls;
	size_t n;

	if (r->out_off >= r->out.len) {
		r->out.len = r->out_off = 0;
		if (r->up_done)
			return MHD_CONTENT_READER_END_OF_STREAM;
		pump(r, false);
		if (r->cancelled)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (r->out.len == 0)
			return r->up_done ? MHD_CONTENT_READER_END_OF_STREAM :
					    0;
	}
	n = r->out.len - r->out_off;
	if (n > max)
		n = max;
	memcpy(buf, r->out.p + r->out_off, n);
	r->out_off += n;
	return (ssize_t)n;
}

static struct MHD_Response *relay_response(struct srv_req *r)
{
	struct MHD_Response *resp;

	if (r->stream)
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
							 relay_reader, r, NULL);
	else
		resp = MHD_create_response_from_buffer(r->out.len, r->out.p,
						       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return NULL;
	MHD_add_response_header(resp, "Content-Type",
				r->up_ctype[0] ? r->up_ctype :
				r->stream      ? "text/event-stream" :
						 "application/json");
	srv_add_route_headers(r, resp);
	return resp;
}

int srv_upstream_respond(struct srv_req *r, enum edgeq_route route)
{
	struct MHD_Response *resp;
	char why[128];
	int ret;

	srv_upstream_end(r); /* a previous attempt */
	ret = build(r, route);
	if (ret) {
		fail_log(r, route, "out of memory");
		return -EIO;
	}
	r->multi = curl_multi_init();
	if (!r->multi || curl_multi_add_handle(r->multi, r->curl)) {
		fail_log(r, route, "curl failed to start");
		return -EIO;
	}
	/* a whole answer, or the start of a stream */
	do
		pump(r, r->stream);
	while (!r->stream && !r->up_done && !r->cancelled);
	if (r->cancelled)
		return -EIO;
	if (r->up_done && r->up_result != CURLE_OK) {
		snprintf(why, sizeof(why), "%s",
			 curl_easy_strerror(r->up_result));
		fail_log(r, route, why);
		return -EIO;
	}
	if (r->up_status < 200 || r->up_status > 299) {
		snprintf(why, sizeof(why), "HTTP status %ld", r->up_status);
		fail_log(r, route, why);
		return -EIO;
	}
	srv_metrics_upstream(r->s->metrics, route, true);
	resp = relay_response(r);
	if (!resp)
		return -EIO;
	ret = MHD_queue_response(r->conn, 200, resp);
	MHD_destroy_response(resp);
	srv_metrics_request(r->s->metrics, r->endpoint, 200);
	srv_log_request(r, 200);
	return ret == MHD_YES ? 0 : -EIO;
}

void srv_upstream_end(struct srv_req *r)
{
	if (r->multi && r->curl)
		curl_multi_remove_handle(r->multi, r->curl);
	if (r->curl)
		curl_easy_cleanup(r->curl);
	if (r->multi)
		curl_multi_cleanup(r->multi);
	curl_slist_free_all(r->hdrs);
	free(r->up_body);
	r->curl = NULL;
	r->multi = NULL;
	r->hdrs = NULL;
	r->up_body = NULL;
	r->up_done = false;
	r->up_result = CURLE_OK;
	r->up_status = 0;
	r->up_ctype[0] = '\0';
	if (!r->gen) {
		r->out.len = 0;
		r->out_off = 0;
	}
}
