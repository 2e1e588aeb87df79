// SPDX-License-Identifier: LGPL-2.1-or-later
/* Percentiles and the soak split that edgeq bench reports. */
#include <math.h>
#include <stdlib.h>

#include <edgeq/ledger.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double edgeq_stats_percentile(double *v, size_t n, double p)
{
	double rank, frac;
	size_t lo;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (p <= 0)
		return v[0];
	if (p >= 100)
		return v[n - 1];
	rank = p / 100.0 * (double)(n - 1);
	lo = (size_t)floor(rank);
	frac = rank - (double)lo;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + frac * (v[lo + 1] - v[lo]);
}

double edgeq_stats_mean(const double *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

double edgeq_stats_stddev(const double *v, size_t n)
{
	double m = edgeq_stats_mean(v, n), s = 0;

	if (n < 2)
		return 0;
	for (size_t i = 0; i < n; i++)
		s += (v[i] - m) * (v[i] - m);
	return sqrt(s / (double)(n - 1));
}

void edgeq_soak_split(const double *t, const double *tokens, size_t n,
		      double burst_s, struct edgeq_soak_split *out)
{
	double bt = 0, bs = 0, st = 0, ss = 0, prev = 0;

	for (size_t i = 0; i < n; i++) {
		double dt = t[i] - prev;

		if (t[i] <= burst_s + 1e-9) {
			bt += tokens[i];
			bs += dt;
		} else {
			st += tokens[i];
			ss += dt;
		}
		prev = t[i];
	}
	out->burst_tps = bs > 0 ? bt / bs : 0;
	out->steady_tps = ss > 0 ? st / ss : out->burst_tps;
	out->ratio = out->burst_tps > 0 ? out->steady_tps / out->burst_tps : 1;
}
