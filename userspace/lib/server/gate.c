// SPDX-License-Identifier: LGPL-2.1-or-later
/* The gate in front of libmicrohttpd: see gate.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <edgeq/edgeq.h>

#include "server/gate.h"

#define GATE_TICK_MS 50

struct gate_conn {
	int fd;
	struct sockaddr_storage addr;
	socklen_t alen;
	uint64_t deadline_ns;
};

struct srv_gate {
	struct srv_gate_config c;
	pthread_t thread;
	atomic_bool stop;
	bool stopped; /* srv_gate_stop ran (the caller's thread only) */
	int wake[2];  /* pipe: stop */
	struct gate_conn *pending;
	size_t n_pending;
	pthread_mutex_t lock; /* held: the per-address counts below, httpd */
	struct gate_addr {
		struct sockaddr_storage addr;
		unsigned int n; /* pending + handed over */
	} * addrs;
	size_t n_addrs, cap_addrs;
	char *buf;
};

/* ---- the head, checked */

static bool tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c);
}

static int refuse(char *why, size_t wlen, int status, const char *msg)
{
	snprintf(why, wlen, "%s", msg);
	return status;
}

int srv_gate_check_head(const char *head, size_t len, char *why, size_t wlen)
{
	const char *p = head, *end = head + len, *eol, *sp1, *sp2;
	int n_cl = 0, n_te = 0, n_host = 0;
	bool http11;

	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol || eol == p || eol[-1] != '\r')
		return refuse(why, wlen, 400,
			      "the request line must end with CRLF");
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == p || sp2 == sp1 + 1)
		return refuse(
			why, wlen, 400,
			"the request line must be METHOD TARGET HTTP/1.x");
	for (const char *q = p; q < sp1; q++)
		if (!tchar((unsigned char)*q))
			return refuse(why, wlen, 400, "bad method");
	for (const char *q = sp1 + 1; q < sp2; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return refuse(
				why, wlen, 400,
				"control character or space in the target");
	if (eol - 1 - (sp2 + 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7))
		return refuse(why, wlen,
			      !strncmp(sp2 + 1, "HTTP/", 5) ? 505 : 400,
			      "only HTTP/1.0 and HTTP/1.1 are served");
	if (sp2[8] != '0' && sp2[8] != '1')
		return refuse(why, wlen, 505,
			      "only HTTP/1.0 and HTTP/1.1 are served");
	http11 = sp2[8] == '1';
	for (p = eol + 1; p < end;) {
		const char *colon, *v, *ve;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol || eol[-1] != '\r' || eol - 1 < p)
			return refuse(why, wlen, 400,
				      "header lines must end with CRLF");
		if (eol - 1 == p)
			break; /* the blank line */
		if (*p == ' ' || *p == '\t')
			return refuse(why, wlen, 400,
				      "obsolete line folding in a header");
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			return refuse(why, wlen, 400,
				      "a header line without a name");
		for (const char *q = p; q < colon; q++)
			if (!tchar((unsigned char)*q))
				return refuse(
					why, wlen, 400,
					"bad character (or a space before the colon) in a header name");
		v = colon + 1;
		ve = eol - 1;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++)
			if (((unsigned char)*q < ' ' && *q != '\t') ||
			    *q == 0x7f)
				return refuse(
					why, wlen, 400,
					"control character in a header value");
		if (colon - p == 14 && !strncasecmp(p, "Content-Length", 14)) {
			if (++n_cl > 1)
				return refuse(why, wlen, 400,
					      "more than one Content-Length");
			if (ve == v || ve - v > 18)
				return refuse(
					why, wlen, 400,
					"Content-Length must be a number of at most 18 digits");
			for (const char *q = v; q < ve; q++)
				if (*q < '0' || *q > '9')
					return refuse(
						why, wlen, 400,
						"Content-Length must be a plain decimal number");
		} else if (colon - p == 17 &&
			   !strncasecmp(p, "Transfer-Encoding", 17)) {
			if (++n_te > 1)
				return refuse(
					why, wlen, 400,
					"more than one Transfer-Encoding");
			if (ve - v != 7 || strncasecmp(v, "chunked", 7))
				return refuse(
					why, wlen, 501,
					"the only transfer coding served is chunked");
		} else if (colon - p == 4 && !strncasecmp(p, "Host", 4)) {
			n_host++;
		}
		p = eol + 1;
	}
	if (n_cl && n_te)
		return refuse(why, wlen, 400,
			      "Content-Length together with Transfer-Encoding");
	if (n_host > 1 || (http11 && !n_host))
		return refuse(why, wlen, 400,
			      "HTTP/1.1 needs exactly one Host header");
	return 0;
}

/* ---- per-address counts */

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (b->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       16);
	return true; /* unix sockets: one peer "address" */
}

/* +1 or -1 for @addr; false (nothing counted) when +1 would pass the cap */
static bool addr_count(struct srv_gate *g, const struct sockaddr *addr,
		       int delta)
{
	struct gate_addr *a = NULL;
	bool ok = true;

	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->n_addrs; i++)
		if (same_addr(&g->addrs[i].addr, addr)) {
			a = &g->addrs[i];
			break;
		}
	if (delta > 0) {
		if (!a) {
			if (g->n_addrs == g->cap_addrs) {
				size_t cap = g->cap_addrs ? g->cap_addrs * 2 :
							    64;
				struct gate_addr *na =
					realloc(g->addrs, cap * sizeof(*na));

				if (!na) {
					ok = false;
					goto out;
				}
				g->addrs = na;
				g->cap_addrs = cap;
			}
			a = &g->addrs[g->n_addrs++];
			memset(a, 0, sizeof(*a));
			memcpy(&a->addr, addr,
			       addr->sa_family == AF_INET6 ?
				       sizeof(struct sockaddr_in6) :
			       addr->sa_family == AF_INET ?
				       sizeof(struct sockaddr_in) :
				       sizeof(sa_family_t));
		}
		if (g->c.per_addr && a->n >= g->c.per_addr)
			ok = false;
		else
			a->n++;
	} else if (a && a->n) {
		if (!--a->n)
			*a = g->addrs[--g->n_addrs];
	}
out:
	pthread_mutex_unlock(&g->lock);
	return ok;
}

void srv_gate_set_httpd(struct srv_gate *g, struct MHD_Daemon *httpd)
{
	pthread_mutex_lock(&g->lock);
	g->c.httpd = httpd;
	pthread_mutex_unlock(&g->lock);
}

void srv_gate_closed(struct srv_gate *g, const struct sockaddr *addr)
{
	if (g && addr)
		addr_count(g, addr, -1);
}

/* ---- the loop */

static const char *reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

static void answer(struct srv_gate *g, int fd, int status, const char *why)
{
	char body[400], msg[700];
	int bl, ml;

	bl = snprintf(
		body, sizeof(body),
		"{\"error\":{\"message\":\"%s\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}",
		why);
	ml = snprintf(msg, sizeof(msg),
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		      "Connection: close\r\nContent-Length: %d\r\n%s\r\n%s",
		      status, reason(status), bl,
		      status == 503 ? "Retry-After: 1\r\n" : "", body);
	if (send(fd, msg, (size_t)ml, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is gone or not reading: nothing to tell it */
	}
	shutdown(fd, SHUT_WR);
	if (g->c.on_refuse)
		g->c.on_refuse(g->c.arg, status, why);
}

static void drop(struct srv_gate *g, size_t i, int status, const char *why)
{
	struct gate_conn *c = &g->pending[i];

	if (status)
		answer(g, c->fd, status, why);
	close(c->fd);
	addr_count(g, (struct sockaddr *)&c->addr, -1);
	g->pending[i] = g->pending[--g->n_pending];
}

static void hand_over(struct srv_gate *g, size_t i)
{
	struct gate_conn *c = &g->pending[i];
	int fl = fcntl(c->fd, F_GETFL);

	struct MHD_Daemon *d;

	if (fl >= 0)
		fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
	pthread_mutex_lock(&g->lock);
	d = g->c.httpd;
	pthread_mutex_unlock(&g->lock);
	if (MHD_add_connection(d, c->fd, (struct sockaddr *)&c->addr,
			       c->alen) != MHD_YES) {
		/* libmicrohttpd closed it (its connection limit) */
		addr_count(g, (struct sockaddr *)&c->addr, -1);
		if (g->c.on_refuse)
			g->c.on_refuse(g->c.arg, 503,
				       "the HTTP server's connection limit");
	}
	g->pending[i] = g->pending[--g->n_pending];
}

static void accept_new(struct srv_gate *g)
{
	for (;;) {
		struct gate_conn c = { 0 };
		int fd;

		c.alen = sizeof(c.addr);
		fd = accept4(g->c.listen_fd, (struct sockaddr *)&c.addr,
			     &c.alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		c.fd = fd;
		if (c.alen == 0 || c.addr.ss_family == AF_UNIX)
			c.addr.ss_family = AF_UNIX;
		if (g->n_pending >= g->c.max_pending) {
			answer(g, fd, 503, "too many connections waiting");
			close(fd);
			continue;
		}
		if (!addr_count(g, (struct sockaddr *)&c.addr, +1)) {
			answer(g, fd, 503,
			       "too many connections from this address");
			close(fd);
			continue;
		}
		c.deadline_ns = edgeq_now_ns() + g->c.head_ms * 1000000ull;
		g->pending[g->n_pending++] = c;
		if (g->c.tls) /* its head is encrypted: libmicrohttpd checks */
			hand_over(g, g->n_pending - 1);
	}
}

/* Is @needle (lower case) in [@h, @h + @n), in any case? */
static bool casemem(const char *h, size_t n, const char *needle)
{
	size_t nl = strlen(needle), i;

	for (i = 0; i + nl <= n; i++)
		if (!strncasecmp(h + i, needle, nl))
			return true;
	return false;
}

/*
 * A chunked body whose first chunk (when it came with the head) announces
 * more than the body limit, or a size of more than 15 hex digits, would
 * only be waited for: refuse it now.
 */
static int check_first_chunk(struct srv_gate *g, const char *head,
			     const char *body, const char *end, char *why,
			     size_t wlen)
{
	unsigned long long size = 0;
	const char *p = body;
	int digits = 0;

	if (!casemem(head, (size_t)(body - head), "\ntransfer-encoding:"))
		return 0;
	for (; p < end && *p != '\r' && *p != ';'; p++, digits++) {
		int c = *p, v = c >= '0' && c <= '9' ? c - '0' :
				c >= 'a' && c <= 'f' ? c - 'a' + 10 :
				c >= 'A' && c <= 'F' ? c - 'A' + 10 :
						       -1;

		if (v < 0)
			return refuse(why, wlen, 400, "bad chunk size");
		if (digits >= 15)
			return refuse(why, wlen, 413,
				      "a chunk larger than the body limit");
		size = size * 16 + (unsigned long long)v;
	}
	if (g->c.max_body && size > g->c.max_body)
		return refuse(why, wlen, 413,
			      "a chunk larger than the body limit");
	return 0;
}

/* Look at what a pending connection has sent; hand it over, refuse it or
 * leave it. Returns true when it left the list. */
static bool look(struct srv_gate *g, size_t i, uint64_t now)
{
	struct gate_conn *c = &g->pending[i];
	char why[160];
	ssize_t n;
	const char *eoh;
	int st;

	n = recv(c->fd, g->buf, g->c.max_head, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		       errno != EINTR)) {
		drop(g, i, 0, NULL); /* closed before a whole head */
		return true;
	}
	if (n > 0) {
		g->buf[n] = '\0';
		eoh = memmem(g->buf, (size_t)n, "\r\n\r\n", 4);
		if (!eoh) /* bare LF line ends: refused by the check */
			eoh = memmem(g->buf, (size_t)n, "\n\n", 2) ?
				      (const char *)memmem(g->buf, (size_t)n,
							   "\n\n", 2) -
					      2 :
				      NULL;
		if (eoh && eoh < g->buf)
			eoh = g->buf;
		if (eoh) {
			st = srv_gate_check_head(g->buf,
						 (size_t)(eoh + 4 - g->buf),
						 why, sizeof(why));
			if (!st)
				st = check_first_chunk(g, g->buf, eoh + 4,
						       g->buf + n, why,
						       sizeof(why));
			if (st)
				drop(g, i, st, why);
			else
				hand_over(g, i);
			return true;
		}
		if ((size_t)n >= g->c.max_head) {
			drop(g, i, 431, "the request head is too large");
			return true;
		}
	}
	if (now >= c->deadline_ns) {
		drop(g, i, 408, "the request head did not arrive in time");
		return true;
	}
	return false;
}

static void *gate_main(void *arg)
{
	struct srv_gate *g = arg;
	struct pollfd pf[2];

	pf[0].fd = g->c.listen_fd;
	pf[0].events = POLLIN;
	pf[1].fd = g->wake[0];
	pf[1].events = POLLIN;
	while (!atomic_load(&g->stop)) {
		uint64_t now;

		/* a pending head is peeked every tick: its bytes stay in the
		 * socket, so polling it for input would spin */
		poll(pf, 2, g->n_pending ? GATE_TICK_MS : -1);
		if (atomic_load(&g->stop))
			break;
		if (pf[0].revents & POLLIN)
			accept_new(g);
		now = edgeq_now_ns();
		for (size_t i = 0; i < g->n_pending;)
			if (!look(g, i, now))
				i++;
	}
	return NULL;
}

int srv_gate_start(const struct srv_gate_config *c, struct srv_gate **out)
{
	struct srv_gate *g = calloc(1, sizeof(*g));
	int fl;

	if (!g)
		return -ENOMEM;
	g->c = *c;
	if (!g->c.max_head)
		g->c.max_head = 16384;
	if (!g->c.max_pending)
		g->c.max_pending = 1024;
	if (!g->c.head_ms)
		g->c.head_ms = 10000;
	g->pending = calloc(g->c.max_pending, sizeof(*g->pending));
	g->buf = malloc(g->c.max_head + 1); /* + a NUL after what was peeked */
	pthread_mutex_init(&g->lock, NULL);
	if (!g->pending || !g->buf || pipe2(g->wake, O_CLOEXEC) < 0)
		goto fail;
	fl = fcntl(c->listen_fd, F_GETFL);
	if (fl < 0 || fcntl(c->listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		goto fail_pipe;
	if (pthread_create(&g->thread, NULL, gate_main, g))
		goto fail_pipe;
	*out = g;
	return 0;
fail_pipe:
	close(g->wake[0]);
	close(g->wake[1]);
fail:
	pthread_mutex_destroy(&g->lock);
	free(g->pending);
	free(g->buf);
	free(g);
	return -ENOMEM;
}

void srv_gate_stop(struct srv_gate *g)
{
	if (!g || g->stopped)
		return;
	g->stopped = true;
	atomic_store(&g->stop, true);
	if (write(g->wake[1], "x", 1) < 0) {
		/* the thread also wakes at its next tick */
	}
	pthread_join(g->thread, NULL);
	/* heads still being waited for: tell them, do not just hang up */
	for (size_t i = 0; i < g->n_pending; i++) {
		answer(g, g->pending[i].fd, 503, "the server is shutting down");
		close(g->pending[i].fd);
	}
	g->n_pending = 0;
	close(g->wake[0]);
	close(g->wake[1]);
}

void srv_gate_free(struct srv_gate *g)
{
	if (!g)
		return;
	srv_gate_stop(g);
	pthread_mutex_destroy(&g->lock);
	free(g->addrs);
	free(g->pending);
	free(g->buf);
	free(g);
}
