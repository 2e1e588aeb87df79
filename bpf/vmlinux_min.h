/* SPDX-License-Identifier: (LGPL-2.1-or-later OR BSD-2-Clause) */
/*
 * The hand-kept subset of vmlinux.h that bpf/pressure.bpf.c needs, for build
 * hosts without /sys/kernel/btf/vmlinux. Every struct carries
 * preserve_access_index, so field offsets are relocated (CO-RE) against the
 * target kernel's BTF at load time; only the fields used are listed.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#pragma clang attribute push(__attribute__((preserve_access_index)), \
			     apply_to = record)

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __s8 s8;
typedef __u8 u8;
typedef __s16 s16;
typedef __u16 u16;
typedef __s32 s32;
typedef __u32 u32;
typedef __s64 s64;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef int pid_t;
typedef unsigned int uid_t;
typedef unsigned int gfp_t;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_F_MMAPABLE = 1024,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum cgroup_subsys_id {
	memory_cgrp_id = 4,
};

enum thermal_trip_type {
	THERMAL_TRIP_ACTIVE = 0,
	THERMAL_TRIP_PASSIVE = 1,
	THERMAL_TRIP_HOT = 2,
	THERMAL_TRIP_CRITICAL = 3,
};

struct kobject {
	const char *name;
};

struct device {
	struct kobject kobj;
};

struct thermal_zone_device {
	int id;
	char type[20];
	int temperature;
	int last_temperature;
};

struct thermal_cooling_device {
	int id;
	const char *type;
	unsigned long max_state;
};

struct kernfs_node {
	u64 id;
};

struct cgroup {
	struct kernfs_node *kn;
};

struct cgroup_subsys_state {
	struct cgroup *cgroup;
	struct cgroup_subsys_state *parent;
};

struct css_set {
	struct cgroup_subsys_state *subsys[16];
};

struct task_struct {
	pid_t pid;
	pid_t tgid;
	struct css_set *cgroups;
	char comm[16];
};

#pragma clang attribute pop

#endif /* __VMLINUX_H__ */
