// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bundle store: one directory per bundle, `current` and `previous`
 * symlinks switched by rename(2). Every file is fsync'd before it becomes
 * reachable, and the directory after every rename, so a crash or power cut
 * at any point leaves `current` naming a complete bundle.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include <edgeq/manifest.h>

#include "manifest/manifest_int.h"
#include "core/fsutil.h"

/* Room for a file name under a path of up to PATH_MAX. */
#define SPATH (PATH_MAX + 512)

/* Test hook: $EDGEQ_TEST_KILL_AT=N kills the process at step N. */
static void step(int n)
{
	const char *at = getenv("EDGEQ_TEST_KILL_AT");

	if (at && atoi(at) == n)
		raise(SIGKILL);
}

int edgeq_store_open(struct edgeq_store *s, const char *dir,
		     struct edgeq_error *err)
{
	int ret;

	if (!dir || !*dir)
		dir = getenv("EDGEQ_BUNDLES");
	if (!dir || !*dir)
		dir = "/var/lib/edgeq/bundles";
	if (strlen(dir) >= sizeof(s->dir) - 128)
		return edgeq_error_set(err, ENAMETOOLONG,
				       "bundle store path too long");
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	ret = eq_mkdir_p(s->dir);
	if (ret)
		return edgeq_error_set(err, -ret, "bundle store %s: %s", s->dir,
				       strerror(-ret));
	return 0;
}

void edgeq_store_paths(const struct edgeq_store *s, const char *id,
		       char *manifest, char *model, size_t len)
{
	if (manifest)
		snprintf(manifest, len, "%s/%s/manifest.json", s->dir, id);
	if (model)
		snprintf(model, len, "%s/%s/model.gguf", s->dir, id);
}

int edgeq_store_get(struct edgeq_store *s, const char *which, char *id,
		    size_t idlen, struct edgeq_error *err)
{
	char link[PATH_MAX], target[256], man[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%s", s->dir, which);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return edgeq_error_set(err, ENOENT, "no %s bundle in %s", which,
				       s->dir);
	target[n] = '\0';
	edgeq_store_paths(s, target, man, NULL, sizeof(man));
	if (access(man, R_OK))
		return edgeq_error_set(
			err, ENOENT,
			"%s names bundle %s, which has no manifest", which,
			target);
	snprintf(id, idlen, "%s", target);
	return 0;
}

/* Write @len bytes to a new file and fsync it. */
static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	const char *p = buf;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	return close(fd) < 0 ? -errno : 0;
}

static int copy_file(const char *from, const char *to, int kill_step)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out, ret = 0;
	char buf[1 << 16];
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	step(kill_step); /* copied, not yet durable */
	if (!ret && fsync(out) < 0)
		ret = -errno;
	close(in);
	if (close(out) < 0 && !ret)
		ret = -errno;
	return ret;
}

static void rm_tree(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char p[SPATH];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* Remove what a crashed install left: .tmp-* directories and link temps. */
static void clean_stale(struct edgeq_store *s)
{
	struct dirent *de;
	DIR *d = opendir(s->dir);
	char p[SPATH];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, ".tmp-", 5) &&
		    strncmp(de->d_name, ".link-", 6))
			continue;
		snprintf(p, sizeof(p), "%s/%s", s->dir, de->d_name);
		if (de->d_name[1] == 't')
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
}

/* Point @which at @id atomically: symlink beside it, rename over it. */
static int set_link(struct edgeq_store *s, const char *which, const char *id)
{
	char tmp[PATH_MAX], link[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s/.link-%s-%d", s->dir, which,
		 (int)getpid());
	snprintf(link, sizeof(link), "%s/%s", s->dir, which);
	unlink(tmp);
	if (symlink(id, tmp) < 0)
		return -errno;
	if (rename(tmp, link) < 0) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return eq_fsync_dir(s->dir);
}

int edgeq_store_install(struct edgeq_store *s, const char *signed_json,
			const char *model_path, char *id, size_t idlen,
			struct edgeq_error *err)
{
	char tmp[PATH_MAX], final[PATH_MAX], p[SPATH], bid[17], cur[256];
	unsigned char md[32];
	struct stat sb;
	int ret;

	if (sodium_init() < 0)
		return edgeq_error_set(err, EIO, "libsodium failed to start");
	crypto_hash_sha256(md, (const unsigned char *)signed_json,
			   strlen(signed_json));
	sodium_bin2hex(bid, sizeof(bid), md, 8);
	clean_stale(s);
	snprintf(final, sizeof(final), "%s/%s", s->dir, bid);
	if (stat(final, &sb) < 0) {
		snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d", s->dir, bid,
			 (int)getpid());
		if (mkdir(tmp, 0755) < 0)
			return edgeq_error_set(err, errno, "%s: %s", tmp,
					       strerror(errno));
		step(1);
		snprintf(p, sizeof(p), "%s/model.gguf", tmp);
		ret = copy_file(model_path, p, 2);
		if (ret)
			goto fail_tmp;
		step(3);
		snprintf(p, sizeof(p), "%s/manifest.json", tmp);
		ret = write_file(p, signed_json, strlen(signed_json));
		if (ret)
			goto fail_tmp;
		step(4);
		ret = eq_fsync_dir(tmp);
		if (ret)
			goto fail_tmp;
		if (rename(tmp, final) < 0) {
			ret = -errno;
			goto fail_tmp;
		}
		step(5);
		ret = eq_fsync_dir(s->dir);
		if (ret)
			return edgeq_error_set(err, -ret, "%s: fsync: %s",
					       s->dir, strerror(-ret));
		step(6);
	}
	if (!edgeq_store_get(s, "current", cur, sizeof(cur), NULL) &&
	    strcmp(cur, bid)) {
		ret = set_link(s, "previous", cur);
		if (ret)
			return edgeq_error_set(err, -ret,
					       "%s: switching previous: %s",
					       s->dir, strerror(-ret));
	}
	step(7);
	ret = set_link(s, "current", bid);
	if (ret)
		return edgeq_error_set(err, -ret, "%s: switching current: %s",
				       s->dir, strerror(-ret));
	step(8);
	snprintf(id, idlen, "%s", bid);
	return 0;

fail_tmp:
	rm_tree(tmp);
	return edgeq_error_set(err, -ret, "installing bundle %s: %s", bid,
			       strerror(-ret));
}

int edgeq_store_rollback(struct edgeq_store *s, const char *reason,
			 struct edgeq_error *err)
{
	char cur[256] = "", prev[256], p[SPATH], line[1024], date[32];
	time_t t = time(NULL);
	struct tm tm;
	int fd, ret;

	ret = edgeq_store_get(s, "previous", prev, sizeof(prev), err);
	if (ret)
		return edgeq_error_set(
			err, ENOENT, "no previous bundle to roll back to in %s",
			s->dir);
	edgeq_store_get(s, "current", cur, sizeof(cur), NULL);
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(line, sizeof(line), "%s rollback %s -> %s: %s\n", date,
		 cur[0] ? cur : "(none)", prev, reason ? reason : "by hand");
	if (cur[0]) {
		snprintf(p, sizeof(p), "%s/%s/rejected", s->dir, cur);
		write_file(p, line, strlen(line));
	}
	ret = set_link(s, "current", prev);
	if (ret)
		return edgeq_error_set(err, -ret, "%s: switching current: %s",
				       s->dir, strerror(-ret));
	snprintf(p, sizeof(p), "%s/previous", s->dir);
	unlink(p);
	eq_fsync_dir(s->dir);
	snprintf(p, sizeof(p), "%s/rollback.log", s->dir);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, strlen(line)) < 0 || fsync(fd) < 0)
			ret = -errno;
		close(fd);
	}
	return 0;
}

int edgeq_bundle_select(struct edgeq_store *s, const char *trust_key,
			const struct edgeq_verify_env *env, char *model,
			size_t len, bool *probation, struct edgeq_error *err)
{
	char id[256], man[SPATH], mod[SPATH], why[512];
	struct edgeq_error le = { 0 };
	struct edgeq_verify_env e;
	char *text;
	int ret;

	if (env)
		e = *env;
	else
		edgeq_verify_env_init(&e);
	for (int tries = 0; tries < 2; tries++) {
		ret = edgeq_store_get(s, "current", id, sizeof(id), &le);
		if (ret)
			break;
		edgeq_store_paths(s, id, man, mod, SPATH);
		ret = edgeq_read_text(man, &text, NULL, &le);
		if (!ret) {
			e.model = mod;
			ret = edgeq_manifest_verify(text, trust_key, &e, &le);
			free(text);
		}
		if (!ret) {
			snprintf(model, len, "%s", mod);
			snprintf(man, sizeof(man), "%s/%s/good", s->dir, id);
			*probation = access(man, F_OK) != 0;
			return 0;
		}
		snprintf(why, sizeof(why),
			 "bundle %.64s refused at start: %.400s", id, le.msg);
		if (edgeq_store_rollback(s, why, NULL))
			break; /* nothing to fall back to */
	}
	return edgeq_error_set(err, -ret, "%s", le.msg);
}
