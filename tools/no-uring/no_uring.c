// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * no-uring: run a command with io_uring_setup(2) refused by a seccomp
 * filter, as container runtimes' default profiles do, to test the weight
 * streamer's pread fallback for real.
 *
 *   no-uring [--errno eperm|enosys] COMMAND [ARG...]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425 /* the same number on every architecture */
#endif

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "no-uring: add this architecture's AUDIT_ARCH"
#endif

static int refuse_io_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO |
				 ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
}

int main(int argc, char **argv)
{
	int err = EPERM, i = 1, ret;

	if (argc > 2 && !strcmp(argv[1], "--errno")) {
		if (!strcmp(argv[2], "enosys"))
			err = ENOSYS;
		else if (strcmp(argv[2], "eperm"))
			goto usage;
		i = 3;
	}
	if (i >= argc)
		goto usage;
	ret = refuse_io_uring(err);
	if (ret) {
		fprintf(stderr, "no-uring: seccomp: %s\n", strerror(-ret));
		return 77;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "no-uring: %s: %s\n", argv[i], strerror(errno));
	return 127;
usage:
	fprintf(stderr,
		"usage: no-uring [--errno eperm|enosys] COMMAND [ARG...]\n");
	return 2;
}
