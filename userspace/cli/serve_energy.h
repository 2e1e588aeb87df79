/* SPDX-License-Identifier: GPL-2.0-or-later */
/* edgeq serve's energy metrics: the board's power rails (edgeq/power.h). */
#ifndef EDGEQ_CLI_SERVE_ENERGY_H
#define EDGEQ_CLI_SERVE_ENERGY_H

struct srv_buf;

/* Find the rails and start sampling them (every 200 ms). */
void serve_energy_start(void);
/* A local generation produced @n tokens. */
void serve_energy_tokens(int n);
/* Append the energy lines to /metrics. */
void serve_energy_metrics(struct srv_buf *out);
void serve_energy_stop(void);

#endif
