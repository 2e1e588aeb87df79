// SPDX-License-Identifier: LGPL-2.1-or-later
/* Small files of sysfs and procfs (core/readfile.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/readfile.h"

int eq_read_trimmed(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}
