// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Calibration: measured op times correct the model. Per device and op name
 * the ratio measured / modelled is kept as an EWMA, so a prediction is the
 * model's time times that ratio, and the explanation can show predicted
 * against measured.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <edgeq/placement.h>

#define RATIO_MIN 0.01
#define RATIO_MAX 10000.0

void edgeq_calib_init(struct edgeq_calib *c)
{
	memset(c, 0, sizeof(*c));
	for (int d = 0; d < EDGEQ_MAX_DEVICES; d++)
		for (int b = 0; b < EDGEQ_MAX_BASE_OPS; b++)
			c->ratio[d][b] = 1.0;
}

void edgeq_calib_observe(struct edgeq_calib *c, const struct edgeq_op *op,
			 int dev, double model_ns, double measured_ns,
			 double alpha)
{
	unsigned b = op->base;
	double r;

	if (dev < 0 || dev >= EDGEQ_MAX_DEVICES || b >= EDGEQ_MAX_BASE_OPS ||
	    !(model_ns > 0) || !isfinite(model_ns) || !(measured_ns >= 0) ||
	    !isfinite(measured_ns))
		return;
	if (!(alpha > 0) || alpha > 1)
		alpha = 1;
	r = measured_ns / model_ns;
	if (r < RATIO_MIN)
		r = RATIO_MIN;
	if (r > RATIO_MAX)
		r = RATIO_MAX;
	if (!c->count[dev][b]) {
		c->ratio[dev][b] = r;
		c->meas_ns[dev][b] = measured_ns;
	} else {
		c->ratio[dev][b] += alpha * (r - c->ratio[dev][b]);
		c->meas_ns[dev][b] +=
			alpha * (measured_ns - c->meas_ns[dev][b]);
	}
	if (c->count[dev][b] < UINT32_MAX)
		c->count[dev][b]++;
}

int edgeq_calib_save(const struct edgeq_calib *cal,
		     const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c, const char *path)
{
	char tmp[4096];
	FILE *f;
	int ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# edgeq placement calibration: device op ratio "
		   "measured_ns count\n");
	for (size_t k = 0; k < d->n; k++)
		for (size_t b = 0; b < c->n_base; b++)
			if (cal->count[k][b])
				fprintf(f, "%s %s %.6g %.6g %u\n",
					d->dev[k].name, c->base[b],
					cal->ratio[k][b], cal->meas_ns[k][b],
					cal->count[k][b]);
	if (fflush(f) || ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -EIO;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		remove(tmp);
	return ret;
}

int edgeq_calib_load(struct edgeq_calib *cal, const struct edgeq_devices *d,
		     const struct edgeq_op_chain *c, const char *path,
		     struct edgeq_error *err)
{
	char line[256], dev[64], op[64];
	unsigned lineno = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return edgeq_error_set(err, errno, "%s: %s", path,
				       strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		double ratio, meas;
		unsigned count;
		int k = -1, b = -1;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%63s %63s %lf %lf %u", dev, op, &ratio, &meas,
			   &count) != 5 ||
		    !(ratio >= RATIO_MIN && ratio <= RATIO_MAX) ||
		    !(meas >= 0) || !isfinite(meas)) {
			fclose(f);
			return edgeq_error_set(err, EINVAL,
					       "%s:%u: expected 'DEVICE OP "
					       "RATIO MEASURED_NS COUNT'",
					       path, lineno);
		}
		k = edgeq_devices_find(d, dev);
		for (size_t i = 0; i < c->n_base; i++)
			if (!strcmp(c->base[i], op))
				b = (int)i;
		if (k < 0 || b < 0 || !count)
			continue; /* a device or op this run does not have */
		cal->ratio[k][b] = ratio;
		cal->meas_ns[k][b] = meas;
		cal->count[k][b] = count;
	}
	fclose(f);
	return 0;
}
