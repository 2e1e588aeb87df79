// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where the weight budget comes from: cgroup v1 and v2 limits (on the whole
 * path to the root), MemAvailable and never MemFree, read from fake /proc
 * and /sys trees; the default budget and the mode it picks.
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

#include <edgeq/stream.h>

#define MiB (1024ull * 1024)

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512], dir[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int mkroot(void **state)
{
	const char *tmp = getenv("EDGEQ_TEST_TMP");
	char cmd[300];

	snprintf(root, sizeof(root), "%s/budget.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/*", root);
	(void)!system(cmd);
	/* MemFree is tiny, MemAvailable large: the budget follows the latter */
	put("proc/meminfo", "MemTotal:       8000000 kB\n"
			    "MemFree:          10000 kB\n"
			    "MemAvailable:   4000000 kB\n");
	return 0;
}

static int rmroot(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	(void)!system(cmd);
	return 0;
}

static void test_no_cgroup(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	put("proc/self/cgroup", "0::/\n");
	put("proc/self/mountinfo", "");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_version, 0);
	assert_int_equal(mi.mem_available, 4000000ull * 1024);
	assert_int_equal(mi.available, mi.mem_available);
	assert_true(mi.cg_limit == UINT64_MAX);
	rmroot(state);
}

static void test_v1_limit(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	put("proc/self/cgroup", "5:cpu:/\n4:memory:/jobs/llm\n0::/\n");
	put("proc/self/mountinfo",
	    "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	    "31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
	put("sys/fs/cgroup/memory/jobs/llm/memory.limit_in_bytes",
	    "1073741824\n");
	put("sys/fs/cgroup/memory/jobs/llm/memory.usage_in_bytes",
	    "314572800\n");
	put("sys/fs/cgroup/memory/jobs/llm/memory.stat",
	    "cache 0\nhierarchical_memory_limit 9223372036854771712\n"
	    "total_inactive_file 104857600\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_version, 1);
	assert_int_equal(mi.cg_limit, 1024 * MiB);
	assert_int_equal(mi.cg_usage,
			 200 * MiB); /* inactive file is reclaimable */
	assert_int_equal(mi.available, 824 * MiB);
	assert_non_null(strstr(mi.cg_path, "/sys/fs/cgroup/memory/jobs/llm"));
	/* a parent's tighter limit shows in the hierarchical limit */
	put("sys/fs/cgroup/memory/jobs/llm/memory.stat",
	    "hierarchical_memory_limit 536870912\ntotal_inactive_file 0\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_limit, 512 * MiB);
	assert_int_equal(mi.available, 212 * MiB);
	rmroot(state);
}

static void test_v1_unlimited(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	put("proc/self/cgroup", "4:memory:/\n");
	put("proc/self/mountinfo",
	    "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
	put("sys/fs/cgroup/memory/memory.limit_in_bytes",
	    "9223372036854771712\n");
	put("sys/fs/cgroup/memory/memory.usage_in_bytes", "1000\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_version, 1);
	assert_true(mi.cg_limit == UINT64_MAX);
	assert_int_equal(mi.available, mi.mem_available);
	rmroot(state);
}

static void test_v2_limits(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	put("proc/self/cgroup", "0::/user.slice/llm.scope\n");
	put("proc/self/mountinfo",
	    "28 25 0:25 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	put("sys/fs/cgroup/user.slice/llm.scope/memory.current", "104857600\n");
	put("sys/fs/cgroup/user.slice/llm.scope/memory.max", "max\n");
	put("sys/fs/cgroup/user.slice/llm.scope/memory.high", "2147483648\n");
	put("sys/fs/cgroup/user.slice/llm.scope/memory.stat",
	    "anon 1\ninactive_file 0\n");
	/* the parent is tighter than the leaf */
	put("sys/fs/cgroup/user.slice/memory.max", "1610612736\n");
	put("sys/fs/cgroup/user.slice/memory.high", "max\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_version, 2);
	assert_int_equal(mi.cg_limit, 1536 * MiB);
	assert_int_equal(mi.cg_usage, 100 * MiB);
	assert_int_equal(mi.available, 1436 * MiB);
	/* memory.high below max wins */
	put("sys/fs/cgroup/user.slice/llm.scope/memory.high", "805306368\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_limit, 768 * MiB);
	rmroot(state);
}

static void test_v2_container_root(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	/* inside a container namespace the mount root is the cgroup itself */
	put("proc/self/cgroup", "0::/\n");
	put("proc/self/mountinfo",
	    "28 25 0:25 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
	put("sys/fs/cgroup/memory.current", "0\n");
	put("sys/fs/cgroup/memory.max", "268435456\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), 0);
	assert_int_equal(mi.cg_version, 2);
	assert_int_equal(mi.cg_limit, 256 * MiB);
	assert_int_equal(mi.available, 256 * MiB);
	rmroot(state);
}

static void test_no_memavailable_refused(void **state)
{
	struct edgeq_mem_info mi;

	mkroot(state);
	put("proc/meminfo", "MemTotal: 8000000 kB\nMemFree: 4000000 kB\n");
	assert_int_equal(edgeq_mem_probe(root, &mi), -ENODATA);
	rmroot(state);
}

static void test_default_budget_and_mode(void **state)
{
	struct edgeq_mem_info mi = { .available = 1024 * MiB };

	assert_int_equal(edgeq_weights_default_budget(&mi, 0), 896 * MiB);
	assert_int_equal(edgeq_weights_default_budget(&mi, 24 * MiB),
			 1000 * MiB);
	mi.available = 32 * MiB;
	assert_int_equal(edgeq_weights_default_budget(&mi, 0), 0);
	assert_int_equal(edgeq_weights_choose_mode(700 * MiB, 600 * MiB, true),
			 EDGEQ_WEIGHTS_PRELOAD);
	assert_int_equal(edgeq_weights_choose_mode(700 * MiB, 600 * MiB, false),
			 EDGEQ_WEIGHTS_MMAP);
	assert_int_equal(edgeq_weights_choose_mode(300 * MiB, 600 * MiB, true),
			 EDGEQ_WEIGHTS_STREAM);
}

static void test_real_system(void **state)
{
	struct edgeq_mem_info mi;

	/* whatever this machine is, the probe works and is consistent */
	assert_int_equal(edgeq_mem_probe(NULL, &mi), 0);
	assert_true(mi.mem_available > 0);
	assert_true(mi.available <= mi.mem_available);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_cgroup),
		cmocka_unit_test(test_v1_limit),
		cmocka_unit_test(test_v1_unlimited),
		cmocka_unit_test(test_v2_limits),
		cmocka_unit_test(test_v2_container_root),
		cmocka_unit_test(test_no_memavailable_refused),
		cmocka_unit_test(test_default_budget_and_mode),
		cmocka_unit_test(test_real_system),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
