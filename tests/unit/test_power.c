// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests for the power rails (edgeq_power_*) on fake sysfs trees: a
 * Jetson Orin's INA3221 under hwmon, an x86 box's intel-rapl powercap zones,
 * and boxes with nothing readable.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <edgeq/power.h>

#define assert_near(a, b, tol) \
	assert_true((a) > (b) - (tol) && (a) < (b) + (tol))

static char root[64];

static void put(const char *rel, const char *val)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", val);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/edgeq-power-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) ? -1 : 0;
}

static const struct edgeq_power_rail *rail(struct edgeq_power *p,
					   const char *name)
{
	const struct edgeq_power_rail *r;
	unsigned int i, n = edgeq_power_rails(p, &r);

	for (i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

/* An Orin Nano's INA3221: in/curr pairs per channel, VDD_IN the total. */
static void mk_ina3221(const char *hw)
{
	static const char *const files[][2] = {
		{ "name", "ina3221" },
		{ "in1_label", "VDD_IN" },
		{ "in1_input", "5000" },   /* mV */
		{ "curr1_input", "1200" }, /* mA: 6 W */
		{ "in2_label", "VDD_CPU_GPU_CV" },
		{ "in2_input", "5000" },
		{ "curr2_input", "400" },
		{ "in3_label", "NC" },
		{ "in3_input", "0" },
		{ "curr3_input", "0" },
		{ "in4_input",
		  "12" }, /* a shunt voltage: no current, no rail */
	};
	char p[128];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", hw, files[i][0]);
		put(p, files[i][1]);
	}
}

/*
 * Joules integrated from edgeq_power_start() (at some instant in [lo, t])
 * to t + dt: what @watts give over dt, plus at most the start-to-t gap
 * (a loaded machine can take milliseconds between the two).
 */
static void assert_energy(double joules, double watts, double dt_s, uint64_t lo,
			  uint64_t t)
{
	double gap = (double)(t - lo) / 1e9;

	assert_true(joules > watts * dt_s - 0.01);
	assert_true(joules < watts * (dt_s + gap) + 0.01);
}

static void test_jetson_ina3221(void **state)
{
	const struct edgeq_power_rail *in, *cpu;
	struct edgeq_power_reading r;
	struct edgeq_power *p;
	uint64_t t, lo;

	mk_ina3221("class/hwmon/hwmon1");
	put("class/hwmon/hwmon0/name", "soc_thermal"); /* no power channel */
	put("class/hwmon/hwmon0/temp1_input", "45000");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_int_equal(edgeq_power_rails(p, &in), 2); /* NC skipped */
	assert_string_equal(edgeq_power_none_reason(p), "");
	in = rail(p, "VDD_IN");
	cpu = rail(p, "VDD_CPU_GPU_CV");
	assert_non_null(in);
	assert_non_null(cpu);
	assert_string_equal(in->source, "hwmon");
	assert_string_equal(in->chip, "ina3221");
	assert_true(in->in_total);
	assert_false(cpu->in_total); /* part of VDD_IN already */

	lo = edgeq_now_ns();
	assert_int_equal(edgeq_power_start(p, 0), 0);
	t = edgeq_now_ns();
	assert_near(in->watts, 6.0, 1e-9);
	assert_near(cpu->watts, 2.0, 1e-9);
	/* 1 s later VDD_IN draws 8 W: trapezoid (6 + 8) / 2 * 1 s = 7 J */
	put("class/hwmon/hwmon1/curr1_input", "1600");
	assert_int_equal(edgeq_power_sample(p, t + 1000000000ull), 0);
	assert_energy(in->joules, 7.0, 1.0, lo, t);
	assert_energy(cpu->joules, 2.0, 1.0, lo, t);
	assert_int_equal(edgeq_power_read(p, &r), 0);
	assert_int_equal(r.n_rails, 2);
	assert_energy(r.joules, 7.0, 1.0, lo, t); /* the total: VDD_IN alone */
	assert_near(r.watts, 8.0, 1e-9);
	assert_true(r.samples >= 2);
	edgeq_power_free(p);
}

static void test_hwmon_power_input(void **state)
{
	struct edgeq_power_reading r;
	struct edgeq_power *p;
	uint64_t t, lo;

	/* an INA2xx-style power channel in uW, attributes under device/ */
	put("class/hwmon/hwmon2/name", "ina226");
	put("class/hwmon/hwmon2/device/power1_input", "2500000");
	put("class/hwmon/hwmon2/device/power1_label", "board");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_non_null(rail(p, "board"));
	lo = edgeq_now_ns();
	assert_int_equal(edgeq_power_start(p, 0), 0);
	t = edgeq_now_ns();
	assert_int_equal(edgeq_power_sample(p, t + 2000000000ull), 0);
	assert_int_equal(edgeq_power_read(p, &r), 0);
	assert_energy(r.joules, 2.5, 2.0, lo, t); /* 2.5 W for 2 s */
	edgeq_power_free(p);
}

static void test_powercap_rapl(void **state)
{
	const struct edgeq_power_rail *pkg;
	struct edgeq_power_reading r;
	struct edgeq_power *p;
	uint64_t t;

	put("class/powercap/intel-rapl:0/name", "package-0");
	put("class/powercap/intel-rapl:0/energy_uj", "1000000");
	put("class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850");
	/* a subzone: already inside package-0 */
	put("class/powercap/intel-rapl:0:0/name", "core");
	put("class/powercap/intel-rapl:0:0/energy_uj", "500000");
	put("class/powercap/intel-rapl:1/name", "package-1");
	put("class/powercap/intel-rapl:1/energy_uj", "0");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_int_equal(edgeq_power_rails(p, &pkg), 2);
	assert_null(rail(p, "core"));
	pkg = rail(p, "package-0");
	assert_non_null(pkg);
	assert_string_equal(pkg->source, "powercap");
	assert_true(pkg->in_total && rail(p, "package-1")->in_total);

	assert_int_equal(edgeq_power_start(p, 0), 0);
	t = edgeq_now_ns();
	put("class/powercap/intel-rapl:0/energy_uj", "4000000");
	put("class/powercap/intel-rapl:1/energy_uj", "1000000");
	assert_int_equal(edgeq_power_sample(p, t + 1000000000ull), 0);
	assert_near(pkg->joules, 3.0, 1e-9);
	assert_near(pkg->watts, 3.0, 0.01);
	/* the counter wraps at max_energy_range_uj */
	put("class/powercap/intel-rapl:0/energy_uj", "1000000");
	assert_int_equal(edgeq_power_sample(p, t + 2000000000ull), 0);
	assert_near(pkg->joules, 3.0 + 262143.32885 - 4.0 + 1.0, 1e-6);
	assert_int_equal(edgeq_power_read(p, &r), 0);
	assert_near(r.joules, pkg->joules + 1.0, 1e-6); /* both packages */
	edgeq_power_free(p);
}

static void test_psys_is_the_total(void **state)
{
	struct edgeq_power *p;

	put("class/powercap/intel-rapl:0/name", "package-0");
	put("class/powercap/intel-rapl:0/energy_uj", "10");
	put("class/powercap/intel-rapl:1/name", "psys");
	put("class/powercap/intel-rapl:1/energy_uj", "20");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_false(rail(p, "package-0")->in_total);
	assert_true(rail(p, "psys")->in_total);
	edgeq_power_free(p);
}

static void test_nothing_readable(void **state)
{
	struct edgeq_power_reading r;
	struct edgeq_power *p;
	const struct edgeq_power_rail *x;

	/* a VM: a hwmon without power channels, no powercap at all */
	put("class/hwmon/hwmon0/name", "acpitz");
	put("class/hwmon/hwmon0/temp1_input", "27800");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_int_equal(edgeq_power_rails(p, &x), 0);
	assert_string_equal(
		edgeq_power_none_reason(p),
		"no readable power rail: no hwmon power or voltage and current channel, no powercap zone");
	assert_int_equal(edgeq_power_start(p, 100), 0); /* no thread */
	assert_int_equal(edgeq_power_read(p, &r), -ENODATA);
	assert_int_equal(r.n_rails, 0);
	assert_int_equal(edgeq_power_sample(p, 1), -ENODATA);
	edgeq_power_free(p);

	/* an energy counter that cannot be read (here: not a file) */
	put("class/powercap/intel-rapl:0/name", "package-0");
	put("class/powercap/intel-rapl:0/energy_uj/x", "1");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_int_equal(edgeq_power_rails(p, &x), 0);
	assert_non_null(strstr(edgeq_power_none_reason(p),
			       "powercap energy_uj unreadable"));
	edgeq_power_free(p);

	/* no sysfs at all */
	assert_int_equal(edgeq_power_open("/nonexistent/edgeq", &p, NULL), 0);
	assert_int_equal(edgeq_power_rails(p, &x), 0);
	edgeq_power_free(p);
}

static void test_sampler_thread(void **state)
{
	struct edgeq_power_reading r;
	struct edgeq_power *p;

	put("class/hwmon/hwmon0/name", "ina3221");
	put("class/hwmon/hwmon0/in1_label", "VDD_IN");
	put("class/hwmon/hwmon0/in1_input", "5000");
	put("class/hwmon/hwmon0/curr1_input", "1000");
	assert_int_equal(edgeq_power_open(root, &p, NULL), 0);
	assert_int_equal(edgeq_power_start(p, 10), 0);
	usleep(200000);
	assert_int_equal(edgeq_power_read(p, &r), 0);
	edgeq_power_stop(p);
	assert_true(r.samples >= 3); /* the thread sampled on its own */
	assert_true(r.seconds >= 0.19);
	assert_near(r.avg_watts, 5.0, 0.05);
	assert_near(r.joules, 5.0 * r.seconds, 0.05);
	edgeq_power_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_jetson_ina3221, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hwmon_power_input, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_powercap_rapl, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_psys_is_the_total, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nothing_readable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sampler_thread, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
