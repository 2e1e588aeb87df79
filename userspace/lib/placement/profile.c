// SPDX-License-Identifier: LGPL-2.1-or-later
/* Device profiles: names of op kinds and dtypes, the INI reader, defaults. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#include <edgeq/placement.h>

static const char *const op_kind_names[EDGEQ_OPK_COUNT] = {
	[EDGEQ_OPK_EMBED] = "embed",   [EDGEQ_OPK_RMSNORM] = "rmsnorm",
	[EDGEQ_OPK_MATMUL] = "matmul", [EDGEQ_OPK_ROPE] = "rope",
	[EDGEQ_OPK_ATTN] = "attn",     [EDGEQ_OPK_SOFTMAX] = "softmax",
	[EDGEQ_OPK_SWIGLU] = "swiglu", [EDGEQ_OPK_ADD] = "add",
};

/* GGUF type ids and the bytes of one block of blck elements. */
struct dtype_info {
	const char *name;
	uint32_t id;
	uint32_t blck;
	uint32_t size;
};

static const struct dtype_info dtypes[] = {
	{ "f32", 0, 1, 4 },	  { "f16", 1, 1, 2 },
	{ "q4_0", 2, 32, 18 },	  { "q4_1", 3, 32, 20 },
	{ "q5_0", 6, 32, 22 },	  { "q5_1", 7, 32, 24 },
	{ "q8_0", 8, 32, 34 },	  { "q8_1", 9, 32, 36 },
	{ "q2_k", 10, 256, 84 },  { "q3_k", 11, 256, 110 },
	{ "q4_k", 12, 256, 144 }, { "q5_k", 13, 256, 176 },
	{ "q6_k", 14, 256, 210 }, { "q8_k", 15, 256, 292 },
	{ "bf16", 30, 1, 2 },
};

#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

const char *edgeq_op_kind_name(enum edgeq_op_kind k)
{
	if ((unsigned)k >= EDGEQ_OPK_COUNT)
		return NULL;
	return op_kind_names[k];
}

int edgeq_op_kind_parse(const char *name)
{
	for (int k = 0; k < EDGEQ_OPK_COUNT; k++)
		if (!strcasecmp(name, op_kind_names[k]))
			return k;
	return -EINVAL;
}

static const struct dtype_info *dtype_find(uint32_t id)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (dtypes[i].id == id)
			return &dtypes[i];
	return NULL;
}

const char *edgeq_dtype_name(uint32_t type)
{
	const struct dtype_info *t = dtype_find(type);

	return t ? t->name : "?";
}

int edgeq_dtype_parse(const char *name)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (!strcasecmp(name, dtypes[i].name))
			return (int)dtypes[i].id;
	return -EINVAL;
}

double edgeq_dtype_bytes(uint32_t type, double n)
{
	const struct dtype_info *t = dtype_find(type);

	if (!t)
		t = dtype_find(0);
	return n / t->blck * t->size;
}

bool edgeq_devprof_supports(const struct edgeq_device_profile *p,
			    enum edgeq_op_kind kind, uint32_t dtype)
{
	if ((unsigned)kind >= EDGEQ_OPK_COUNT || dtype >= 64)
		return false;
	return (p->ops_mask >> kind & 1) && (p->dtype_mask >> dtype & 1);
}

const struct edgeq_device_profile *
edgeq_devprof_find(const struct edgeq_device_profile *p, size_t n,
		   const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	return NULL;
}

/*
 * The built-in profiles: the same as share/edgeq/devices.ini (a unit test
 * checks that they agree).
 */
static const char builtin_profiles[] =
	"[device.cpu]\n"
	"ops = all\ndtypes = all\ngflops = 50\nmem_gbs = 20\n"
	"launch_us = 1\nop_us = 0.5\nsync_us = 0.5\ncopy_gbs = 0\n"
	"[device.npu]\n"
	"ops = matmul attn swiglu add\ndtypes = f32 f16 q8_0 q4_0\n"
	"gflops = 200\nmem_gbs = 40\n"
	"launch_us = 20\nop_us = 2\nsync_us = 8\ncopy_gbs = 0\n"
	"[device.dla]\n"
	"ops = matmul swiglu add\ndtypes = f16 q8_0\ngflops = 100\nmem_gbs = 30\n"
	"launch_us = 40\nop_us = 4\nsync_us = 15\ncopy_gbs = 0\n"
	"[device.gpu]\n"
	"ops = rmsnorm matmul rope attn softmax swiglu add\ndtypes = all\n"
	"gflops = 1000\nmem_gbs = 60\n"
	"launch_us = 10\nop_us = 4\nsync_us = 10\ncopy_gbs = 0\n"
	"[device.dgpu]\n"
	"ops = rmsnorm matmul rope attn softmax swiglu add\ndtypes = all\n"
	"gflops = 10000\nmem_gbs = 400\n"
	"launch_us = 8\nop_us = 3\nsync_us = 10\ncopy_gbs = 12\n";

struct load_ctx {
	struct edgeq_device_profile *out;
	size_t max, n;
	struct edgeq_device_profile *cur;
	char cur_section[64];
	int bad;	/* -errno of the first problem */
	char what[160]; /* and what it was */
};

static int parse_list(const char *v, bool kinds, uint64_t *mask)
{
	char buf[256], *save = NULL, *tok;
	uint64_t m = 0;

	if (strlen(v) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, v);
	for (tok = strtok_r(buf, " ,\t", &save); tok;
	     tok = strtok_r(NULL, " ,\t", &save)) {
		int id;

		if (!strcasecmp(tok, "all")) {
			m = kinds ? (1ull << EDGEQ_OPK_COUNT) - 1 : ~0ull;
			continue;
		}
		id = kinds ? edgeq_op_kind_parse(tok) : edgeq_dtype_parse(tok);
		if (id < 0 || id >= 64)
			return -EINVAL;
		m |= 1ull << id;
	}
	*mask = m;
	return 0;
}

static int parse_num(const char *v, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno || end == v || *end || !isfinite(x) || x < 0)
		return -EINVAL;
	*out = x;
	return 0;
}

static struct edgeq_device_profile *section_profile(struct load_ctx *lc,
						    const char *section)
{
	const char *name;
	size_t i;

	if (strncmp(section, "device.", 7))
		return NULL; /* another part's section: not ours */
	name = section + 7;
	if (!*name || strlen(name) >= EDGEQ_DEV_NAME_MAX)
		return NULL;
	for (i = 0; i < lc->n; i++)
		if (!strcmp(lc->out[i].name, name))
			return &lc->out[i];
	if (lc->n == lc->max) {
		if (!lc->bad) {
			lc->bad = -ENOSPC;
			snprintf(lc->what, sizeof(lc->what),
				 "more than %zu device profiles", lc->max);
		}
		return NULL;
	}
	memset(&lc->out[lc->n], 0, sizeof(lc->out[0]));
	snprintf(lc->out[lc->n].name, sizeof(lc->out[0].name), "%s", name);
	return &lc->out[lc->n++];
}

static int profile_ini_line(void *user, const char *section, const char *name,
			    const char *value)
{
	struct load_ctx *lc = user;
	struct edgeq_device_profile *p;
	double *num = NULL;
	int ret = 0;

	if (strcmp(section, lc->cur_section)) {
		snprintf(lc->cur_section, sizeof(lc->cur_section), "%s",
			 section);
		lc->cur = section_profile(lc, section);
	}
	p = lc->cur;
	if (!p)
		return lc->bad ? 0 : 1;
	if (!strcmp(name, "ops"))
		ret = parse_list(value, true, &p->ops_mask);
	else if (!strcmp(name, "dtypes"))
		ret = parse_list(value, false, &p->dtype_mask);
	else if (!strcmp(name, "gflops"))
		num = &p->gflops;
	else if (!strcmp(name, "mem_gbs"))
		num = &p->mem_gbs;
	else if (!strcmp(name, "launch_us"))
		num = &p->launch_us;
	else if (!strcmp(name, "op_us"))
		num = &p->op_us;
	else if (!strcmp(name, "sync_us"))
		num = &p->sync_us;
	else if (!strcmp(name, "copy_gbs"))
		num = &p->copy_gbs;
	else
		ret = -ENOENT;
	if (num)
		ret = parse_num(value, num);
	if (ret) {
		lc->bad = -EINVAL;
		snprintf(lc->what, sizeof(lc->what), "[%s] %s = %s: %s",
			 section, name, value,
			 ret == -ENOENT ? "unknown key" : "bad value");
		return 0;
	}
	return 1;
}

/* A profile needs positive speeds to be usable. */
static int check_profiles(struct load_ctx *lc)
{
	for (size_t i = 0; i < lc->n; i++) {
		const struct edgeq_device_profile *p = &lc->out[i];

		if (p->gflops <= 0 || p->mem_gbs <= 0) {
			lc->bad = -EINVAL;
			snprintf(lc->what, sizeof(lc->what),
				 "[device.%s] needs gflops and mem_gbs > 0",
				 p->name);
			return lc->bad;
		}
	}
	return 0;
}

/* @path's sections over those in @lc; errors name @what@path and the line
 * (too many profiles is left in lc->bad for the caller). */
static int parse_file(struct load_ctx *lc, const char *path, const char *what,
		      struct edgeq_error *err)
{
	int line;

	lc->cur_section[0] = '\0';
	lc->cur = NULL;
	line = ini_parse(path, profile_ini_line, lc);
	if (line == -1)
		return edgeq_error_set(err, errno ? errno : ENOENT,
				       "%s%s: cannot open: %s", what, path,
				       strerror(errno ? errno : ENOENT));
	if (line == -2)
		return edgeq_error_set(err, ENOMEM, "%s%s: out of memory", what,
				       path);
	if (lc->bad && lc->bad != -ENOSPC)
		return edgeq_error_set(err, EINVAL, "%s%s:%d: %s", what, path,
				       line, lc->what);
	if (line > 0)
		return edgeq_error_set(err, EINVAL, "%s%s:%d: not an INI line",
				       what, path, line);
	return 0;
}

int edgeq_devprofs_load(const char *path, struct edgeq_device_profile *out,
			size_t max, struct edgeq_error *err)
{
	struct load_ctx lc = { .out = out, .max = max };
	int line, ret;

	line = ini_parse_string(builtin_profiles, profile_ini_line, &lc);
	if (line || lc.bad)
		return edgeq_error_set(err, EINVAL, "built-in profiles: %s",
				       lc.what);
	if (path) {
		ret = parse_file(&lc, path, "", err);
		if (ret)
			return ret;
	}
	if (lc.bad)
		return edgeq_error_set(err, -lc.bad, "%s", lc.what);
	if (check_profiles(&lc))
		return edgeq_error_set(err, EINVAL, "%s%s%s", path ? path : "",
				       path ? ": " : "", lc.what);
	return (int)lc.n;
}

const char *edgeq_devprofs_calibration_path(void)
{
	static const char def[] = "/var/lib/edgeq/calibration.ini";
	const char *env = getenv("EDGEQ_CALIBRATION");

	if (env)
		return *env ? env : NULL;
	return access(def, R_OK) ? NULL : def;
}

int edgeq_devprofs_load_all(const char *path, struct edgeq_device_profile *out,
			    size_t max, const char **calibrated,
			    struct edgeq_error *err)
{
	struct load_ctx lc = { .out = out, .max = max };
	const char *cal = edgeq_devprofs_calibration_path();
	int n, ret;

	if (calibrated)
		*calibrated = NULL;
	n = edgeq_devprofs_load(path, out, max, err);
	if (n < 0 || !cal)
		return n;
	lc.n = (size_t)n;
	ret = parse_file(&lc, cal, "calibration ", err);
	if (ret)
		return ret;
	if (lc.bad)
		return edgeq_error_set(err, -lc.bad, "calibration %s: %s", cal,
				       lc.what);
	if (check_profiles(&lc))
		return edgeq_error_set(err, EINVAL, "calibration %s: %s", cal,
				       lc.what);
	if (calibrated)
		*calibrated = cal;
	return (int)lc.n;
}

const char *edgeq_devprofs_default_path(void)
{
	static const char *const candidates[] = {
		"/etc/edgeq/devices.ini",
#ifdef EDGEQ_DATADIR
		EDGEQ_DATADIR "/devices.ini",
#endif
		"/usr/local/share/edgeq/devices.ini",
		"/usr/share/edgeq/devices.ini",
		"share/edgeq/devices.ini", /* running from the source tree */
	};
	const char *env = getenv("EDGEQ_DEVICES");

	if (env && *env)
		return env;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (!access(candidates[i], R_OK))
			return candidates[i];
	return NULL;
}
