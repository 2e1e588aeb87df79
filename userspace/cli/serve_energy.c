// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * edgeq serve's energy metrics, all in one place:
 *   edgeq_power_rails{reason=...}       rails read (0: none, and why)
 *   edgeq_power_watts                   board power now
 *   edgeq_rail_power_watts{rail,source} each rail now
 *   edgeq_energy_joules_total           board energy since the server started
 *   edgeq_power_average_watts           that energy over the time since
 *   edgeq_energy_per_token_joules       that energy over the tokens generated
 *                                       locally since (idle time included)
 */
#include <stdatomic.h>
#include <stdint.h>

#include <edgeq/power.h>

#include "serve_energy.h"
#include "server/server.h"

static struct edgeq_power *pw;
static _Atomic uint64_t tokens;

void serve_energy_start(void)
{
	if (edgeq_power_open(NULL, &pw, NULL))
		return;
	if (edgeq_power_start(pw, 200)) {
		edgeq_power_free(pw);
		pw = NULL;
	}
}

void serve_energy_tokens(int n)
{
	if (n > 0)
		atomic_fetch_add(&tokens, (uint64_t)n);
}

/* label values: backslash and quote escaped */
static void label(struct srv_buf *out, const char *s)
{
	for (; *s; s++)
		srv_buf_printf(out, "%s%c", *s == '"' || *s == '\\' ? "\\" : "",
			       *s);
}

void serve_energy_metrics(struct srv_buf *out)
{
	const struct edgeq_power_rail *r;
	struct edgeq_power_reading rd;
	unsigned int i, n = pw ? edgeq_power_rails(pw, &r) : 0;
	uint64_t tk = atomic_load(&tokens);

	srv_buf_printf(
		out,
		"# HELP edgeq_power_rails Board power rails read (hwmon power or voltage and current channels, powercap energy_uj); 0: none is readable here (reason), so no energy figures.\n"
		"# TYPE edgeq_power_rails gauge\n");
	if (!n || edgeq_power_read(pw, &rd)) {
		srv_buf_printf(out, "edgeq_power_rails{reason=\"");
		label(out,
		      pw ? edgeq_power_none_reason(pw) :
			   "no readable power rail: power meter unavailable");
		srv_buf_printf(out, "\"} 0\n");
		return;
	}
	srv_buf_printf(
		out,
		"edgeq_power_rails %u\n"
		"# HELP edgeq_power_watts Board power now (VDD_IN when present, else psys, else every rail).\n"
		"# TYPE edgeq_power_watts gauge\n"
		"edgeq_power_watts %.3f\n"
		"# HELP edgeq_energy_joules_total Board energy since the server started.\n"
		"# TYPE edgeq_energy_joules_total counter\n"
		"edgeq_energy_joules_total %.3f\n"
		"# HELP edgeq_power_average_watts Average board power since the server started.\n"
		"# TYPE edgeq_power_average_watts gauge\n"
		"edgeq_power_average_watts %.3f\n",
		n, rd.watts, rd.joules, rd.avg_watts);
	if (tk)
		srv_buf_printf(
			out,
			"# HELP edgeq_energy_per_token_joules Board energy since the server started over the tokens generated locally since (idle time included).\n"
			"# TYPE edgeq_energy_per_token_joules gauge\n"
			"edgeq_energy_per_token_joules %.6f\n",
			rd.joules / (double)tk);
	srv_buf_printf(out,
		       "# HELP edgeq_rail_power_watts Power per rail now.\n"
		       "# TYPE edgeq_rail_power_watts gauge\n");
	for (i = 0; i < n; i++) {
		srv_buf_printf(out, "edgeq_rail_power_watts{rail=\"");
		label(out, r[i].name);
		srv_buf_printf(out, "\",source=\"%s\"} %.3f\n", r[i].source,
			       r[i].watts);
	}
}

void serve_energy_stop(void)
{
	edgeq_power_free(pw);
	pw = NULL;
}
