// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * edgeq_pull(): fetch a GGUF file into the model store (see
 * include/edgeq/pull.h). One transfer per attempt, each starting from the
 * source URL again (a hub's CDN URLs are signed and expire), following
 * redirects by hand so that every hop is checked: only http and https, no
 * downgrade to http, no http to a remote host, the token only to the host it
 * was given for. Bytes go to .partial/NAME.part at the offset they belong to
 * and into a running SHA-256; a dropped transfer resumes with Range and
 * If-Range.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include <edgeq/gguf.h>
#include <edgeq/manifest.h>
#include <edgeq/pull.h>
#include "core/fsutil.h"

#define PULL_MAX_HOPS 10
#define PULL_MAX_DELAY_MS 30000u

void edgeq_pull_params_init(struct edgeq_pull_params *p)
{
	memset(p, 0, sizeof(*p));
	p->retries = 5;
	p->retry_delay_ms = 1000;
	p->stall_s = 30;
}

/* ---- names and URLs ---- */

static bool name_char_ok(int c)
{
	return isalnum(c) || c == '.' || c == '_' || c == '-' || c == '+';
}

static int check_name(const char *name, struct edgeq_error *err)
{
	size_t n = strlen(name);

	if (n == 0 || n > 200 || name[0] == '.')
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!name_char_ok((unsigned char)name[i]))
			goto bad;
	return 0;
bad:
	return edgeq_error_set(
		err, EINVAL,
		"'%s' is not a usable file name in the store: 1-200 of A-Z a-z 0-9 . _ - +, not starting with '.' (use --name)",
		name);
}

static bool hub_part_ok(const char *s, size_t n)
{
	if (n == 0 || n > 96 || (n == 1 && s[0] == '.') ||
	    (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* Append @s to @out, percent-encoding each '/'-separated segment. */
static int append_path(CURL *c, char *out, size_t len, const char *s,
		       bool check_segments)
{
	const char *seg = s;

	while (*seg) {
		const char *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		char *esc;

		if (check_segments &&
		    (n == 0 || (n == 1 && seg[0] == '.') ||
		     (n == 2 && seg[0] == '.' && seg[1] == '.')))
			return -EINVAL;
		esc = curl_easy_escape(c, seg, (int)n);
		if (!esc)
			return -ENOMEM;
		if (strlen(out) + 1 + strlen(esc) >= len) {
			curl_free(esc);
			return -ENAMETOOLONG;
		}
		strcat(out, "/");
		strcat(out, esc);
		curl_free(esc);
		seg += n;
		if (*seg == '/')
			seg++;
	}
	return 0;
}

static const char *hub_endpoint(const struct edgeq_pull_params *p)
{
	const char *e = p->endpoint;

	if (!e || !*e)
		e = getenv("EDGEQ_HF_ENDPOINT");
	if (!e || !*e)
		e = getenv("HF_ENDPOINT");
	return e && *e ? e : EDGEQ_PULL_DEFAULT_ENDPOINT;
}

static int resolve_hub(const struct edgeq_pull_params *p, CURL *c, char *url,
		       size_t url_len, char *name, size_t name_len,
		       struct edgeq_error *err)
{
	const char *spec = p->source + 3, *owner = spec, *repo, *file;
	const char *ep = hub_endpoint(p);
	const char *rev = p->revision && *p->revision ? p->revision : "main";
	size_t eplen = strlen(ep);

	repo = strchr(owner, '/');
	file = repo ? strchr(repo + 1, '/') : NULL;
	if (!repo || !file || !file[1] ||
	    !hub_part_ok(owner, (size_t)(repo - owner)) ||
	    !hub_part_ok(repo + 1, (size_t)(file - repo - 1)))
		return edgeq_error_set(
			err, EINVAL,
			"'%s': expected hf:OWNER/REPO/FILE (owner and repository of A-Z a-z 0-9 . _ -)",
			p->source);
	file++;
	while (eplen && ep[eplen - 1] == '/')
		eplen--;
	if (strncasecmp(ep, "http://", 7) && strncasecmp(ep, "https://", 8))
		return edgeq_error_set(
			err, EINVAL, "hub endpoint '%s' is not an http(s) URL",
			ep);
	if (eplen + 1 >= url_len)
		return edgeq_error_set(err, ENAMETOOLONG,
				       "hub endpoint too long");
	snprintf(url, url_len, "%.*s/%.*s/%.*s/resolve", (int)eplen, ep,
		 (int)(repo - owner), owner, (int)(file - repo - 2), repo + 1);
	if (append_path(c, url, url_len, rev, true) ||
	    append_path(c, url, url_len, file, true))
		return edgeq_error_set(
			err, EINVAL,
			"'%s': a bad revision or file path (empty, '.' or '..' segments)",
			p->source);
	if (name) {
		const char *base = strrchr(file, '/');

		snprintf(name, name_len, "%s", base ? base + 1 : file);
	}
	return 0;
}

static int resolve_url(const struct edgeq_pull_params *p, char *url,
		       size_t url_len, char *name, size_t name_len,
		       struct edgeq_error *err)
{
	CURLU *u;
	char *path = NULL;
	int ret = 0;

	if (strncasecmp(p->source, "http://", 7) &&
	    strncasecmp(p->source, "https://", 8))
		return edgeq_error_set(
			err, EINVAL,
			"'%s' is neither an http(s) URL nor hf:OWNER/REPO/FILE",
			p->source);
	u = curl_url();
	if (!u)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, p->source, 0) ||
	    curl_url_get(u, CURLUPART_PATH, &path, CURLU_URLDECODE)) {
		ret = edgeq_error_set(err, EINVAL, "'%s' is not a valid URL",
				      p->source);
		goto out;
	}
	if (strlen(p->source) >= url_len) {
		ret = edgeq_error_set(err, ENAMETOOLONG, "URL too long");
		goto out;
	}
	snprintf(url, url_len, "%s", p->source);
	if (name) {
		const char *base = strrchr(path, '/');

		snprintf(name, name_len, "%s", base ? base + 1 : path);
	}
out:
	curl_free(path);
	curl_url_cleanup(u);
	return ret;
}

int edgeq_pull_resolve(const struct edgeq_pull_params *p, char *url,
		       size_t url_len, char *name, size_t name_len,
		       struct edgeq_error *err)
{
	char ubuf[2048], nbuf[256];
	CURL *c;
	int ret;

	if (!p->source || !*p->source)
		return edgeq_error_set(err, EINVAL, "nothing to pull");
	if (!url) {
		url = ubuf;
		url_len = sizeof(ubuf);
	}
	if (!name) {
		name = nbuf;
		name_len = sizeof(nbuf);
	}
	c = curl_easy_init();
	if (!c)
		return edgeq_error_set(err, ENOMEM, "libcurl failed to start");
	if (!strncmp(p->source, "hf:", 3))
		ret = resolve_hub(p, c, url, url_len, name, name_len, err);
	else
		ret = resolve_url(p, url, url_len, name, name_len, err);
	curl_easy_cleanup(c);
	if (ret)
		return ret;
	if (p->name)
		snprintf(name, name_len, "%s", p->name);
	return check_name(name, err);
}

/* ---- the transfer ---- */

struct pull_xfer {
	CURL *curl;
	int fd;
	uint64_t offset; /* bytes in the part file, all hashed */
	crypto_hash_sha256_state sha;
	const struct edgeq_pull_params *p;
	struct edgeq_error *err;
	int fail;	   /* -errno set from a callback */
	long code;	   /* of the response being received */
	bool body;	   /* the final response's body has begun */
	uint64_t total;	   /* the whole file's size, 0 unknown */
	uint64_t t0_bytes; /* offset when the attempt began */
	uint64_t t0_ns, last_ns;
	/* per response */
	char etag[160], content_range[96];
	uint64_t content_length;
	bool have_length;
	/* sticky across the hops of one attempt */
	char linked_etag[160];
	uint64_t linked_size;
	char errbody[200];
};

static bool is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (int i = 0; i < 64; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* ETag: W/"abc" -> abc (weak ones are marked by a leading 'W'). */
static void etag_value(const char *v, char *out, size_t len, bool *weak)
{
	size_t n;

	*weak = !strncmp(v, "W/", 2);
	if (*weak)
		v += 2;
	if (*v == '"')
		v++;
	n = strlen(v);
	if (n && v[n - 1] == '"')
		n--;
	snprintf(out, len, "%.*s", (int)n, v);
}

static bool header_is(const char *line, size_t n, const char *name,
		      const char **value, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return false;
	line += k + 1;
	n -= k + 1;
	while (n && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' ||
		     line[n - 1] == ' '))
		n--;
	*value = line;
	*vlen = n;
	return true;
}

static size_t on_header(char *buf, size_t sz, size_t nitems, void *arg)
{
	struct pull_xfer *x = arg;
	size_t n = sz * nitems, vl;
	const char *v;
	char tmp[160];

	if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
		x->etag[0] = x->content_range[0] = '\0';
		x->content_length = 0;
		x->have_length = false;
		return n;
	}
	if (header_is(buf, n, "ETag", &v, &vl)) {
		snprintf(x->etag, sizeof(x->etag), "%.*s", (int)vl, v);
	} else if (header_is(buf, n, "X-Linked-Etag", &v, &vl)) {
		snprintf(x->linked_etag, sizeof(x->linked_etag), "%.*s",
			 (int)vl, v);
	} else if (header_is(buf, n, "X-Linked-Size", &v, &vl)) {
		snprintf(tmp, sizeof(tmp), "%.*s", (int)vl, v);
		x->linked_size = strtoull(tmp, NULL, 10);
	} else if (header_is(buf, n, "Content-Range", &v, &vl)) {
		snprintf(x->content_range, sizeof(x->content_range), "%.*s",
			 (int)vl, v);
	} else if (header_is(buf, n, "Content-Length", &v, &vl)) {
		snprintf(tmp, sizeof(tmp), "%.*s", (int)vl, v);
		x->content_length = strtoull(tmp, NULL, 10);
		x->have_length = true;
	}
	return n;
}

/* "bytes START-END/TOTAL" or "bytes * /TOTAL" (no space); 0 or -EPROTO. */
static int parse_content_range(const char *s, uint64_t *start, uint64_t *total)
{
	unsigned long long a, b, t;

	if (sscanf(s, "bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b &&
	    b < t) {
		*start = a;
		*total = t;
		return 0;
	}
	if (sscanf(s, "bytes */%llu", &t) == 1) {
		*start = UINT64_MAX;
		*total = t;
		return 0;
	}
	return -EPROTO;
}

static bool is_redirect(long code)
{
	return code == 301 || code == 302 || code == 303 || code == 307 ||
	       code == 308;
}

static int restart_from_zero(struct pull_xfer *x)
{
	if (ftruncate(x->fd, 0) < 0)
		return -errno;
	x->offset = 0;
	x->t0_bytes = 0;
	crypto_hash_sha256_init(&x->sha);
	return 0;
}

/* The final response's headers are in: decide where its body goes. */
static int begin_body(struct pull_xfer *x)
{
	struct statvfs vfs;
	uint64_t start, total = 0, need, avail;

	if (x->code == 200) {
		if (x->offset && restart_from_zero(x))
			return edgeq_error_set(
				x->err, errno,
				"truncating the partial file: %s",
				strerror(errno));
		if (x->have_length)
			total = x->content_length;
	} else if (x->code == 206) {
		if (parse_content_range(x->content_range, &start, &total) ||
		    start != x->offset)
			return edgeq_error_set(
				x->err, EPROTO,
				"the server answered a request for bytes from %llu with 'Content-Range: %s'",
				(unsigned long long)x->offset,
				x->content_range);
	}
	if (!total && x->linked_size)
		total = x->linked_size;
	if (total && x->linked_size && total != x->linked_size)
		return edgeq_error_set(
			x->err, EPROTO,
			"the hub says the file has %llu bytes (X-Linked-Size), the download server %llu",
			(unsigned long long)x->linked_size,
			(unsigned long long)total);
	x->total = total;
	if (total && total < x->offset)
		return edgeq_error_set(
			x->err, EPROTO,
			"the server's file (%llu bytes) is shorter than what was already fetched",
			(unsigned long long)total);
	need = total ? total - x->offset : 0;
	if (need && fstatvfs(x->fd, &vfs) == 0) {
		avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		if (avail < need)
			return edgeq_error_set(
				x->err, ENOSPC,
				"the store needs %.1f MiB more and its file system has %.1f MiB free; free space and pull again (it resumes)",
				need / 1048576.0, avail / 1048576.0);
	}
	x->body = true;
	return 0;
}

static void report_progress(struct pull_xfer *x, bool force)
{
	uint64_t now = edgeq_now_ns();
	double secs;

	if (!x->p->progress || (!force && now - x->last_ns < 100000000ull))
		return;
	x->last_ns = now;
	secs = (now - x->t0_ns) / 1e9;
	x->p->progress(x->p->progress_arg, x->offset, x->total,
		       secs > 0 ? (x->offset - x->t0_bytes) / secs : 0);
}

static size_t on_body(char *buf, size_t sz, size_t nitems, void *arg)
{
	struct pull_xfer *x = arg;
	size_t n = sz * nitems, done = 0;
	int ret;

	if (!x->body) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->code);
		if (x->code != 200 && x->code != 206) {
			/* a redirect's or an error's body: keep the start */
			size_t have = strlen(x->errbody);

			if (have + 1 < sizeof(x->errbody))
				snprintf(x->errbody + have,
					 sizeof(x->errbody) - have, "%.*s",
					 (int)n, buf);
			return n;
		}
		ret = begin_body(x);
		if (ret) {
			x->fail = ret;
			return 0;
		}
	}
	while (done < n) {
		ssize_t w =
			pwrite(x->fd, buf + done, n - done, (off_t)x->offset);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;

			x->fail = edgeq_error_set(
				x->err, e,
				e == ENOSPC || e == EDQUOT ?
					"the store's file system is full after %llu bytes; the partial file is kept: free space and pull again (it resumes)" :
					"writing the partial file at byte %llu: %s",
				(unsigned long long)x->offset, strerror(e));
			return 0;
		}
		crypto_hash_sha256_update(&x->sha,
					  (const unsigned char *)buf + done,
					  (unsigned long long)w);
		x->offset += (uint64_t)w;
		done += (size_t)w;
	}
	report_progress(x, false);
	return n;
}

static bool host_is_loopback(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL;
	bool lo = false;

	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0))
		lo = !strncmp(host, "127.", 4) || !strcmp(host, "[::1]") ||
		     !strcasecmp(host, "localhost");
	curl_free(host);
	curl_url_cleanup(u);
	return lo;
}

static bool same_host(const char *a, const char *b)
{
	CURLU *ua = curl_url(), *ub = curl_url();
	char *ha = NULL, *hb = NULL, *pa = NULL, *pb = NULL;
	bool same = false;

	if (ua && ub && !curl_url_set(ua, CURLUPART_URL, a, 0) &&
	    !curl_url_set(ub, CURLUPART_URL, b, 0) &&
	    !curl_url_get(ua, CURLUPART_HOST, &ha, 0) &&
	    !curl_url_get(ub, CURLUPART_HOST, &hb, 0) &&
	    !curl_url_get(ua, CURLUPART_PORT, &pa, CURLU_DEFAULT_PORT) &&
	    !curl_url_get(ub, CURLUPART_PORT, &pb, CURLU_DEFAULT_PORT))
		same = !strcasecmp(ha, hb) && !strcmp(pa, pb);
	curl_free(ha);
	curl_free(hb);
	curl_free(pa);
	curl_free(pb);
	curl_url_cleanup(ua);
	curl_url_cleanup(ub);
	return same;
}

/* Whether a hop to @url may be made (after a hop from @from, or first). */
static int check_hop(const struct edgeq_pull_params *p, const char *from,
		     const char *url, struct edgeq_error *err)
{
	bool https = !strncasecmp(url, "https://", 8);

	if (!https && strncasecmp(url, "http://", 7))
		return edgeq_error_set(
			err, EPROTO,
			"refusing to follow a redirect to '%.200s': only http and https",
			url);
	if (https || p->insecure_http)
		return 0;
	if (from && !strncasecmp(from, "https://", 8))
		return edgeq_error_set(
			err, EPROTO,
			"refusing a redirect from https to plain http (%.200s); --insecure-http allows it",
			url);
	if (!host_is_loopback(url))
		return edgeq_error_set(
			err, EPROTO,
			"%.200s: plain http to a host that is not loopback could be tampered with; use https, or --insecure-http",
			url);
	return 0;
}

static void set_protocols(CURL *c)
{
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

/* Whether a failed transfer is worth another attempt. */
static bool retryable(CURLcode rc, long code)
{
	if (rc == CURLE_OK)
		return code == 0 || code == 408 || code == 429 || code >= 500;
	switch (rc) {
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

struct pull_state {
	char url[2048];
	char part[4096], meta[4096];
	char validator[160]; /* from the last attempt, for If-Range */
	char linked[160];    /* the hub's digest seen on the last attempt */
};

/*
 * One attempt: from the source URL through its redirects to the file's
 * bytes. Returns 0 when the file is complete, -EAGAIN when another attempt
 * may succeed (the reason is in @err), another -errno otherwise.
 */
static int attempt(struct pull_xfer *x, struct pull_state *st)
{
	const struct edgeq_pull_params *p = x->p;
	char url[2048], prev[2048] = "", range[64], ifr[200], auth[1100];
	const char *token = p->token;
	CURLcode rc = CURLE_OK;
	int hops, ret;

	if (!token && !strncmp(p->source, "hf:", 3))
		token = getenv("HF_TOKEN");
	snprintf(url, sizeof(url), "%s", st->url);
	x->linked_etag[0] = '\0';
	x->linked_size = 0;
	for (hops = 0; hops <= PULL_MAX_HOPS; hops++) {
		struct curl_slist *hdrs = NULL;
		char *next = NULL;

		ret = check_hop(p, hops ? prev : NULL, url, x->err);
		if (ret)
			return ret;
		x->body = false;
		x->code = 0;
		x->fail = 0;
		x->errbody[0] = '\0';
		curl_easy_reset(x->curl);
		curl_easy_setopt(x->curl, CURLOPT_URL, url);
		set_protocols(x->curl);
		curl_easy_setopt(x->curl, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(x->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(x->curl, CURLOPT_CONNECTTIMEOUT, 30L);
		curl_easy_setopt(x->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(x->curl, CURLOPT_LOW_SPEED_TIME,
				 (long)(p->stall_s ? p->stall_s : 30));
		curl_easy_setopt(x->curl, CURLOPT_USERAGENT,
				 "edgeq/" EDGEQ_VERSION);
		curl_easy_setopt(x->curl, CURLOPT_ACCEPT_ENCODING, "identity");
		if (p->ca_file)
			curl_easy_setopt(x->curl, CURLOPT_CAINFO, p->ca_file);
		curl_easy_setopt(x->curl, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(x->curl, CURLOPT_HEADERDATA, x);
		curl_easy_setopt(x->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(x->curl, CURLOPT_WRITEDATA, x);
		if (x->offset) {
			snprintf(range, sizeof(range), "Range: bytes=%llu-",
				 (unsigned long long)x->offset);
			hdrs = curl_slist_append(hdrs, range);
			if (st->validator[0]) {
				snprintf(ifr, sizeof(ifr), "If-Range: \"%s\"",
					 st->validator);
				hdrs = curl_slist_append(hdrs, ifr);
			}
		}
		if (token && *token && same_host(url, st->url)) {
			snprintf(auth, sizeof(auth),
				 "Authorization: Bearer %.1000s", token);
			hdrs = curl_slist_append(hdrs, auth);
		}
		curl_easy_setopt(x->curl, CURLOPT_HTTPHEADER, hdrs);
		rc = curl_easy_perform(x->curl);
		curl_slist_free_all(hdrs);
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->code);
		if (x->fail)
			return x->fail;
		if (rc != CURLE_OK && !x->body)
			break;
		if (!is_redirect(x->code))
			break;
		if (curl_easy_getinfo(x->curl, CURLINFO_REDIRECT_URL, &next) ||
		    !next)
			return edgeq_error_set(
				x->err, EPROTO,
				"%.200s: HTTP %ld without a Location", url,
				x->code);
		snprintf(prev, sizeof(prev), "%s", url);
		if (strlen(next) >= sizeof(url))
			return edgeq_error_set(x->err, EPROTO,
					       "redirect URL too long");
		snprintf(url, sizeof(url), "%s", next);
	}
	if (hops > PULL_MAX_HOPS)
		return edgeq_error_set(x->err, EPROTO,
				       "more than %d redirects from %.200s",
				       PULL_MAX_HOPS, st->url);
	if (x->linked_etag[0]) {
		bool weak;
		char v[160];

		etag_value(x->linked_etag, v, sizeof(v), &weak);
		if (st->linked[0] && strcasecmp(st->linked, v) && x->offset) {
			/* the file changed on the hub since the last attempt */
			if (restart_from_zero(x))
				return edgeq_error_set(x->err, errno,
						       "truncating: %s",
						       strerror(errno));
			snprintf(st->linked, sizeof(st->linked), "%s", v);
			return edgeq_error_set(
				x->err, EAGAIN,
				"the file changed on the hub; starting again");
		}
		snprintf(st->linked, sizeof(st->linked), "%s", v);
	}
	if (x->etag[0] && (x->code == 200 || x->code == 206)) {
		bool weak;

		etag_value(x->etag, st->validator, sizeof(st->validator),
			   &weak);
		if (weak)
			st->validator[0] = '\0';
	}
	if (x->code == 416) {
		uint64_t start, total;

		if (!parse_content_range(x->content_range, &start, &total) &&
		    total == x->offset) {
			x->total = total;
			return 0; /* it was all there already */
		}
		if (restart_from_zero(x))
			return edgeq_error_set(x->err, errno, "truncating: %s",
					       strerror(errno));
		return edgeq_error_set(
			x->err, EAGAIN,
			"the server refused the resume range; starting again");
	}
	if (rc != CURLE_OK) {
		ret = edgeq_error_set(x->err, retryable(rc, 0) ? EAGAIN : EIO,
				      "%.200s: %s after %llu bytes", url,
				      curl_easy_strerror(rc),
				      (unsigned long long)x->offset);
		if (rc == CURLE_PEER_FAILED_VERIFICATION ||
		    rc == CURLE_SSL_CONNECT_ERROR ||
		    rc == CURLE_SSL_CACERT_BADFILE ||
		    rc == CURLE_UNSUPPORTED_PROTOCOL)
			ret = edgeq_error_set(x->err, EPROTO, "%.200s: %s", url,
					      curl_easy_strerror(rc));
		return ret;
	}
	if (x->code == 404 || x->code == 410)
		return edgeq_error_set(x->err, ENOENT,
				       "%.200s: not found (HTTP %ld)", url,
				       x->code);
	if (x->code == 401 || x->code == 403)
		return edgeq_error_set(
			x->err, EACCES,
			"%.200s: HTTP %ld: the server wants a token that may read it (--token, or $HF_TOKEN for hf:)",
			url, x->code);
	if (x->code != 200 && x->code != 206)
		return edgeq_error_set(
			x->err, retryable(CURLE_OK, x->code) ? EAGAIN : EPROTO,
			"%.200s: HTTP %ld %.80s", url, x->code, x->errbody);
	if (!x->body) { /* an empty body: a zero-length file */
		int r2 = begin_body(x);

		if (r2)
			return r2;
	}
	if (x->total && x->offset < x->total)
		return edgeq_error_set(
			x->err, EAGAIN,
			"%.200s: the connection ended at byte %llu of %llu",
			url, (unsigned long long)x->offset,
			(unsigned long long)x->total);
	if (x->total && x->offset > x->total)
		return edgeq_error_set(
			x->err, EPROTO,
			"the server sent more than the %llu bytes it announced",
			(unsigned long long)x->total);
	return 0;
}

/* ---- the partial file and its notes ---- */

static void meta_save(const struct pull_state *st)
{
	json_t *m = json_pack("{s:s, s:s, s:s}", "url", st->url, "validator",
			      st->validator, "linked", st->linked);

	if (m)
		json_dump_file(m, st->meta, JSON_COMPACT);
	json_decref(m);
}

/* Whether the part file belongs to this URL; fills the validators. */
static bool meta_load(struct pull_state *st)
{
	json_t *m = json_load_file(st->meta, 0, NULL);
	const char *url = NULL, *val = NULL, *linked = NULL;
	bool ok = false;

	if (m &&
	    !json_unpack(m, "{s:s, s:s, s:s}", "url", &url, "validator", &val,
			 "linked", &linked) &&
	    !strcmp(url, st->url)) {
		snprintf(st->validator, sizeof(st->validator), "%s", val);
		snprintf(st->linked, sizeof(st->linked), "%s", linked);
		ok = true;
	}
	json_decref(m);
	return ok;
}

/* Hash the bytes already in the part file (a resumed pull). */
static int hash_prefix(struct pull_xfer *x, uint64_t len)
{
	unsigned char *buf = malloc(1 << 20);
	uint64_t at = 0;

	if (!buf)
		return -ENOMEM;
	crypto_hash_sha256_init(&x->sha);
	while (at < len) {
		size_t want = len - at < (1u << 20) ? (size_t)(len - at) :
						      (1u << 20);
		ssize_t n = pread(x->fd, buf, want, (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? -errno : -EIO;
		}
		crypto_hash_sha256_update(&x->sha, buf, (unsigned long long)n);
		at += (uint64_t)n;
	}
	free(buf);
	x->offset = len;
	return 0;
}

static const char *store_dir(const struct edgeq_pull_params *p)
{
	const char *s = p->store;

	if (!s || !*s)
		s = getenv("EDGEQ_MODELS_DIR");
	return s && *s ? s : EDGEQ_PULL_DEFAULT_STORE;
}

static int write_manifest(const char *model, const char *name,
			  const char *store, char *out, size_t len,
			  struct edgeq_error *err)
{
	struct edgeq_manifest_params mp;
	char tmp[4200], *json = NULL;
	char bname[256];
	size_t n;
	FILE *f;
	int ret;

	snprintf(bname, sizeof(bname), "%s", name);
	n = strlen(bname);
	if (n > 5 && !strcmp(bname + n - 5, ".gguf"))
		bname[n - 5] = '\0';
	edgeq_manifest_params_init(&mp);
	mp.model = model;
	mp.name = bname;
	mp.module_abi = 0;  /* a pulled model asks for no module */
	mp.bpf_dir = store; /* holds no BPF objects: none are pinned */
	ret = edgeq_manifest_create(&mp, &json, err);
	if (ret)
		return ret;
	if ((size_t)snprintf(out, len, "%s.manifest.json", model) >= len) {
		free(json);
		return edgeq_error_set(err, ENAMETOOLONG, "path too long");
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	f = fopen(tmp, "we");
	if (!f) {
		ret = edgeq_error_set(err, errno, "%s: %s", tmp,
				      strerror(errno));
		goto out;
	}
	if (fputs(json, f) < 0 || fputc('\n', f) < 0 || fflush(f) ||
	    fsync(fileno(f))) {
		ret = edgeq_error_set(err, errno, "writing %s: %s", tmp,
				      strerror(errno));
		fclose(f);
		unlink(tmp);
		goto out;
	}
	fclose(f);
	if (rename(tmp, out) < 0) {
		ret = edgeq_error_set(err, errno, "%s: %s", out,
				      strerror(errno));
		unlink(tmp);
	}
out:
	free(json);
	return ret;
}

static void drop_partial(const struct pull_state *st)
{
	unlink(st->part);
	unlink(st->meta);
}

/* The finished part file: check it, then make it the store's. */
static int finish(const struct edgeq_pull_params *p, struct pull_xfer *x,
		  struct pull_state *st, const char *final, const char *name,
		  const char *store, struct edgeq_pull_result *r,
		  struct edgeq_error *err)
{
	unsigned char md[32];
	const char *want = NULL;
	size_t n = strlen(name);
	int ret;

	crypto_hash_sha256_final(&x->sha, md);
	sodium_bin2hex(r->sha256, sizeof(r->sha256), md, sizeof(md));
	r->size = x->offset;
	if (p->sha256) {
		want = p->sha256;
		r->digest_from = "--sha256";
	} else if (is_hex64(st->linked)) {
		want = st->linked;
		r->digest_from = "X-Linked-Etag";
	} else if (is_hex64(st->validator)) {
		want = st->validator;
		r->digest_from = "ETag";
	}
	if (want && strcasecmp(want, r->sha256)) {
		drop_partial(st);
		return edgeq_error_set(
			err, EBADMSG,
			"checksum mismatch: %s says sha256 %s, the %llu bytes received hash to %s; the download was removed",
			r->digest_from, want, (unsigned long long)r->size,
			r->sha256);
	}
	if (!want && p->require_sha256)
		return edgeq_error_set(
			err, EBADMSG,
			"the server states no SHA-256 for %s and none was given (--sha256); the file is kept in %s",
			name, st->part);
	if (n > 5 && !strcmp(name + n - 5, ".gguf")) {
		struct edgeq_error gerr = { 0 };
		struct edgeq_gguf *g = NULL;

		ret = edgeq_gguf_open_flags(st->part, EDGEQ_GGUF_ANY_TYPE, &g,
					    &gerr);
		if (ret) {
			drop_partial(st);
			return edgeq_error_set(
				err, EBADMSG,
				"what the server sent is not a usable GGUF file (%s); it was removed",
				gerr.msg);
		}
		edgeq_gguf_close(g);
	}
	if (fsync(x->fd) < 0)
		return edgeq_error_set(err, errno, "fsync %s: %s", st->part,
				       strerror(errno));
	if (rename(st->part, final) < 0)
		return edgeq_error_set(err, errno, "rename into %s: %s", final,
				       strerror(errno));
	unlink(st->meta);
	ret = eq_fsync_dir(store);
	if (ret)
		return edgeq_error_set(err, -ret, "fsync %s: %s", store,
				       strerror(-ret));
	snprintf(r->path, sizeof(r->path), "%s", final);
	return write_manifest(final, name, store, r->manifest,
			      sizeof(r->manifest), err);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int edgeq_pull(const struct edgeq_pull_params *p, struct edgeq_pull_result *r,
	       struct edgeq_error *err)
{
	struct pull_state *st;
	struct pull_xfer x;
	char name[256], final[4096], pdir[3800];
	const char *store = store_dir(p);
	unsigned int delay = p->retry_delay_ms;
	struct stat sb;
	int ret;

	memset(r, 0, sizeof(*r));
	if (p->sha256 && !is_hex64(p->sha256))
		return edgeq_error_set(err, EINVAL,
				       "--sha256 wants 64 hex digits, not '%s'",
				       p->sha256);
	st = calloc(1, sizeof(*st));
	if (!st)
		return edgeq_error_set(err, ENOMEM, "out of memory");
	ret = edgeq_pull_resolve(p, st->url, sizeof(st->url), name,
				 sizeof(name), err);
	if (ret)
		goto out_free;
	snprintf(r->url, sizeof(r->url), "%s", st->url);
	if (sodium_init() < 0) {
		ret = edgeq_error_set(err, EIO, "libsodium failed to start");
		goto out_free;
	}
	if (strlen(store) > 3000) {
		ret = edgeq_error_set(err, ENAMETOOLONG,
				      "model store path too long");
		goto out_free;
	}
	snprintf(pdir, sizeof(pdir), "%s/.partial", store);
	ret = eq_mkdir_p(pdir);
	if (ret) {
		ret = edgeq_error_set(err, -ret, "model store %s: %s", store,
				      strerror(-ret));
		goto out_free;
	}
	snprintf(final, sizeof(final), "%s/%s", store, name);
	if (!p->force && stat(final, &sb) == 0) {
		ret = edgeq_error_set(
			err, EEXIST,
			"%s is already in the store (%s); --force replaces it",
			name, final);
		goto out_free;
	}
	snprintf(st->part, sizeof(st->part), "%s/%s.part", pdir, name);
	snprintf(st->meta, sizeof(st->meta), "%s/%s.part.json", pdir, name);

	memset(&x, 0, sizeof(x));
	x.p = p;
	x.err = err;
	x.fd = open(st->part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (x.fd < 0) {
		ret = edgeq_error_set(err, errno, "%s: %s", st->part,
				      strerror(errno));
		goto out_free;
	}
	if (flock(x.fd, LOCK_EX | LOCK_NB) < 0) {
		ret = edgeq_error_set(
			err, EBUSY,
			"another pull of %s is running (%s is locked)", name,
			st->part);
		goto out_close;
	}
	crypto_hash_sha256_init(&x.sha);
	if (fstat(x.fd, &sb) == 0 && sb.st_size > 0) {
		if (meta_load(st)) {
			ret = hash_prefix(&x, (uint64_t)sb.st_size);
			if (ret) {
				ret = edgeq_error_set(err, -ret,
						      "reading %s: %s",
						      st->part, strerror(-ret));
				goto out_close;
			}
			r->resumed_from = x.offset;
		} else if (ftruncate(x.fd, 0) < 0) {
			ret = edgeq_error_set(err, errno, "%s: %s", st->part,
					      strerror(errno));
			goto out_close;
		}
	}
	x.curl = curl_easy_init();
	if (!x.curl) {
		ret = edgeq_error_set(err, ENOMEM, "libcurl failed to start");
		goto out_close;
	}
	for (;;) {
		r->attempts++;
		x.t0_ns = edgeq_now_ns();
		x.t0_bytes = x.offset;
		ret = attempt(&x, st);
		meta_save(st);
		if (ret != -EAGAIN)
			break;
		if (r->attempts > p->retries) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			ret = edgeq_error_set(
				err, EIO,
				"%s; gave up after %u attempts (%llu bytes kept: pull again to resume)",
				why, r->attempts, (unsigned long long)x.offset);
			break;
		}
		sleep_ms(delay);
		delay = delay * 2 > PULL_MAX_DELAY_MS ? PULL_MAX_DELAY_MS :
							delay * 2;
	}
	report_progress(&x, true);
	if (!ret)
		ret = finish(p, &x, st, final, name, store, r, err);
	curl_easy_cleanup(x.curl);
out_close:
	close(x.fd);
out_free:
	free(st);
	return ret;
}
