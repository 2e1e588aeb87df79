/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Weight sets: one sealed memfd copy per weight identity (its tensor name),
 * for the backends that hand weights to a device (kq_backend.c,
 * dev_backend.c). Never keyed by address: with --weights stream the same
 * slot buffer carries different layers.
 */
#ifndef EDGEQ_PLACEMENT_WSET_H
#define EDGEQ_PLACEMENT_WSET_H

#include <stdbool.h>
#include <stdint.h>

#include <edgeq/placement.h>

struct place_wslot {
	char *name;    /* the identity */
	uint64_t hash; /* of the name */
	int fd;	       /* the memfd */
	void *map;     /* its mapping, @bytes long */
	uint64_t bytes;
	uint32_t handle; /* the queue's handle for it (kq) */
	uint64_t id;	 /* 1, 2 ...: its index + 1 */
};

struct place_wset {
	struct place_wslot *w;
	size_t n, cap;
	uint64_t bytes; /* of all copies */
};

/*
 * The slot of @w: found by name (-EINVAL when that name had another size),
 * or made, the bytes copied in, with *@created set; a caller that fails to
 * finish a new slot calls place_wset_drop_last().
 */
int place_wset_get(struct place_wset *s, const struct edgeq_place_weight *w,
		   struct place_wslot **out, bool *created);
void place_wset_drop_last(struct place_wset *s);
void place_wset_fini(struct place_wset *s);

#endif /* EDGEQ_PLACEMENT_WSET_H */
