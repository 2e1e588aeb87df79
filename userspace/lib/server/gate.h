/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gate: edgeq serve's own accept loop in front of libmicrohttpd.
 *
 * Every new connection waits here until its request head is complete
 * (peeked, not consumed, so libmicrohttpd reads it again), under a deadline
 * for the whole head, a size limit and a cap per client address. A head
 * with ambiguous or unsupported framing (two Content-Length headers, one
 * that is not a plain number, Content-Length with Transfer-Encoding, a
 * transfer coding other than chunked, no Host on HTTP/1.1, obsolete line
 * folding, a space before a colon, a version other than HTTP/1.0 and 1.1)
 * is answered here with an OpenAI-shaped JSON error and the connection is
 * closed; a good one is handed to libmicrohttpd with MHD_add_connection().
 * So a client trickling its head a byte a second holds one pending slot
 * for at most the deadline, and never one of libmicrohttpd's connections.
 */
#ifndef EDGEQ_SERVER_GATE_H
#define EDGEQ_SERVER_GATE_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

struct srv_gate;

struct srv_gate_config {
	int listen_fd;		     /* listening socket, owned by the caller */
	struct MHD_Daemon *httpd;    /* started with MHD_USE_NO_LISTEN_SOCKET */
	unsigned int head_ms;	     /* the whole request head within this */
	unsigned int per_addr;	     /* connections per client address */
	unsigned int max_pending;    /* heads being waited for, in all */
	size_t max_head;	     /* bytes */
	unsigned long long max_body; /* a first chunk larger is refused */
	bool tls; /* the bytes are TLS: hand over at once (caps still hold) */
	/* told of each refusal (status 400, 408, 413, 431, 501, 505, 503) */
	void (*on_refuse)(void *arg, int status, const char *why);
	void *arg;
};

int srv_gate_start(const struct srv_gate_config *c, struct srv_gate **out);
/* Where new connections go from now on (a TLS reload's new daemon). */
void srv_gate_set_httpd(struct srv_gate *g, struct MHD_Daemon *httpd);
/* Stop accepting (the listening socket stays open); heads still awaited
 * get a 503. srv_gate_closed stays callable until srv_gate_free: free it
 * after libmicrohttpd's daemons stopped, whose closing connections call
 * it. */
void srv_gate_stop(struct srv_gate *g);
void srv_gate_free(struct srv_gate *g);
/* Connections of one address that libmicrohttpd holds now, as the gate
 * counts them: call when libmicrohttpd closes one of its connections. */
void srv_gate_closed(struct srv_gate *g, const struct sockaddr *addr);

/*
 * Check a complete request head (up to and including the blank line).
 * Returns 0, or the HTTP status to refuse it with and @why.
 */
int srv_gate_check_head(const char *head, size_t len, char *why, size_t wlen);

#endif /* EDGEQ_SERVER_GATE_H */
