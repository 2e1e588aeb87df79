// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the shared core: sizes, errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <edgeq/edgeq.h>

static void test_parse_size_units(void **state)
{
	uint64_t v;

	assert_int_equal(edgeq_parse_size("512", 0, &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(edgeq_parse_size("64K", 0, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(edgeq_parse_size("1.5G", 0, &v), 0);
	assert_int_equal(v, 1610612736ull);
	assert_int_equal(edgeq_parse_size("2GiB", 0, &v), 0);
	assert_int_equal(v, 2147483648ull);
	assert_int_equal(edgeq_parse_size("3MB", 0, &v), 0);
	assert_int_equal(v, 3145728);
}

static void test_parse_size_percent(void **state)
{
	uint64_t v;

	assert_int_equal(edgeq_parse_size("50%", 1000, &v), 0);
	assert_int_equal(v, 500);
	/* a percentage needs a total, and cannot exceed it */
	assert_int_equal(edgeq_parse_size("50%", 0, &v), -EINVAL);
	assert_int_equal(edgeq_parse_size("150%", 1000, &v), -EINVAL);
}

static void test_parse_size_rejects(void **state)
{
	uint64_t v = 7;
	const char *bad[] = { "",      "-1",  "+5",    "12Q", "K",
			      "1e400", "nan", "5 G x", NULL };

	for (int i = 0; bad[i]; i++)
		assert_int_not_equal(edgeq_parse_size(bad[i], 100, &v), 0);
	assert_int_equal(v, 7); /* out-parameter untouched on failure */
	assert_int_equal(edgeq_parse_size("99999999999T", 0, &v), -ERANGE);
}

static void test_error_set(void **state)
{
	struct edgeq_error e;

	assert_int_equal(edgeq_error_set(&e, EINVAL, "field %s at %d", "x", 4),
			 -EINVAL);
	assert_int_equal(e.code, EINVAL);
	assert_string_equal(e.msg, "field x at 4");
	assert_int_equal(edgeq_error_set(NULL, -ENOMEM, "no"), -ENOMEM);
	edgeq_error_clear(&e);
	assert_int_equal(e.code, 0);
	assert_string_equal(e.msg, "");
}

static void test_peak_rss(void **state)
{
	assert_true(edgeq_peak_rss() > 1024 * 1024);
	assert_true(edgeq_now_ns() > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size_units),
		cmocka_unit_test(test_parse_size_percent),
		cmocka_unit_test(test_parse_size_rejects),
		cmocka_unit_test(test_error_set),
		cmocka_unit_test(test_peak_rss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
