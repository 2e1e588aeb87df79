/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel version differences edgeq.ko meets between 5.10 and 6.12, in one
 * place. Built -Werror by tests/kmod/t_kbuild against Debian's 5.10
 * (bullseye), 6.1 (bookworm) and 6.12 (trixie) headers, x86-64 and arm64;
 * run in the test VM on 6.1 and 6.12. Each version test below has a built
 * version on either side of it (5.15, JetPack 6, lies between 5.10 and 6.1).
 */
#ifndef EDGEQ_COMPAT_H
#define EDGEQ_COMPAT_H

#include <linux/version.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/shmem_fs.h>
#include <linux/thermal.h>

/*
 * 6.0: shmem_mapping() became inline; before, shmem_file() calls it out of
 * line and it is not exported (5.10), so the superblock tells tmpfs.
 */
#if KERNEL_VERSION(6, 0, 0) <= LINUX_VERSION_CODE
#define edgeq_shmem_file(file) shmem_file(file)
#else
static inline bool edgeq_shmem_file(struct file *file)
{
	return file_inode(file)->i_sb->s_magic == TMPFS_MAGIC;
}
#endif

/* 6.2: class and device_type devnode() take a const device. */
#if KERNEL_VERSION(6, 2, 0) <= LINUX_VERSION_CODE
#define EDGEQ_DEVNODE_CONST const
#else
#define EDGEQ_DEVNODE_CONST
#endif

/* 6.12: no_llseek is gone; a NULL .llseek with nonseekable_open() is it. */
#if KERNEL_VERSION(6, 12, 0) <= LINUX_VERSION_CODE
#define edgeq_no_llseek NULL
#else
#define edgeq_no_llseek no_llseek
#endif

/* 6.4: class_create() lost its owner argument. */
#if KERNEL_VERSION(6, 4, 0) <= LINUX_VERSION_CODE
#define edgeq_class_create(name) class_create(name)
#else
#define edgeq_class_create(name) class_create(THIS_MODULE, name)
#endif

/*
 * Thermal zones.
 *  < 6.0: trips only through ops->get_trip_{type,temp,hyst};
 *  6.0:   thermal_zone_device_register_with_trips() takes struct thermal_trip;
 *  < 6.3: the core still calls the get_trip_* ops, so we keep them;
 *  6.9:   the writable-trips mask argument is gone;
 *  6.12:  ops->bind/unbind replaced by ops->should_bind.
 */
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE
#define EDGEQ_TZ_TRIP_OPS 1
#endif
#if KERNEL_VERSION(6, 12, 0) <= LINUX_VERSION_CODE
#define EDGEQ_TZ_SHOULD_BIND 1
#endif

#if KERNEL_VERSION(6, 0, 0) > LINUX_VERSION_CODE
struct edgeq_thermal_trip {
	int temperature;
	int hysteresis;
	enum thermal_trip_type type;
};
#else
#define edgeq_thermal_trip thermal_trip
#endif

static inline struct thermal_zone_device *
edgeq_tz_register(const char *type, struct edgeq_thermal_trip *trips,
		  int ntrips, void *devdata, struct thermal_zone_device_ops *ops,
		  struct thermal_zone_params *tzp, int passive_ms, int polling_ms)
{
#if KERNEL_VERSION(6, 0, 0) > LINUX_VERSION_CODE
	return thermal_zone_device_register(type, ntrips, 0, devdata, ops, tzp,
					    passive_ms, polling_ms);
#elif KERNEL_VERSION(6, 9, 0) > LINUX_VERSION_CODE
	return thermal_zone_device_register_with_trips(type, trips, ntrips, 0,
						       devdata, ops, tzp,
						       passive_ms, polling_ms);
#else
	return thermal_zone_device_register_with_trips(type, trips, ntrips,
						       devdata, ops, tzp,
						       passive_ms, polling_ms);
#endif
}

/*
 * 6.8: the zone keeps its own copy of the trips; a trip moves with
 * thermal_zone_set_trip_temp(), under the zone's lock that
 * thermal_zone_for_each_trip() takes. Before, the zone reads the driver's
 * array (or its get_trip_temp op), which changes under tz->lock.
 */
#if KERNEL_VERSION(6, 8, 0) <= LINUX_VERSION_CODE
#define EDGEQ_TZ_SET_TRIP_TEMP 1
#endif

/*
 * 6.1: devm_thermal_of_zone_register() registers the device-tree zone of a
 * device's sensor node (trips and cooling-maps from the tree) with the
 * driver's ops (still so in 6.12, where the non-devm form is no longer
 * exported); before, a different interface, not used here.
 */
#if KERNEL_VERSION(6, 1, 0) <= LINUX_VERSION_CODE
#define EDGEQ_TZ_OF 1
#endif

/* 6.4: thermal_zone_device_priv() replaces tz->devdata. */
#if KERNEL_VERSION(6, 4, 0) <= LINUX_VERSION_CODE
#define edgeq_tz_priv(tz) thermal_zone_device_priv(tz)
#else
#define edgeq_tz_priv(tz) ((tz)->devdata)
#endif

/* 6.8: thermal_zone_params.governor_name became a const char *. */
#if KERNEL_VERSION(6, 8, 0) <= LINUX_VERSION_CODE
#define edgeq_tzp_set_governor(tzp, name) ((tzp)->governor_name = (name))
#else
#define edgeq_tzp_set_governor(tzp, name)                                   \
	strscpy((tzp)->governor_name, (name), sizeof((tzp)->governor_name))
#endif

#endif /* EDGEQ_COMPAT_H */
