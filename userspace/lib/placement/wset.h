/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Weight sets: one sealed memfd copy per weight identity (its tensor name),
 * for the backends that hand weights to a device (kq_backend.c,
 * dev_backend.c). Never keyed by address: with --weights stream the same
 * slot buffer carries different layers.
 *
 * A budget bounds the copies (they are anonymous shared memory: on an edge
 * box's hard ceiling, a second copy of the offloaded weights beside the
 * file's pages): a new copy that would exceed it drops the least recently
 * used ones first, never one the current call (place_wset_begin()) uses;
 * a weight that cannot fit is refused with -ENOSPC (the caller runs that
 * op on the CPU).
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
	uint64_t id;	 /* 1, 2 ...: never reused */
	uint64_t used;	 /* the call that used it last */
};

struct place_wset {
	struct place_wslot *w;
	size_t n, cap;
	uint64_t bytes;	  /* of all copies */
	uint64_t budget;  /* most bytes of copies; 0: no limit */
	uint64_t tick;	  /* the current call */
	uint64_t next_id; /* the last id given */
	uint64_t dropped; /* copies dropped for the budget */
	/* called before a copy is dropped for the budget (the backend lets
	 * go of it: the queue's handle, the device's import) */
	void (*on_drop)(void *arg, const struct place_wslot *ws);
	void *drop_arg;
};

/* A new call: the slots it gets are kept until the next one. */
static inline void place_wset_begin(struct place_wset *s)
{
	s->tick++;
}

/*
 * The slot of @w: found by name (-EINVAL when that name had another size),
 * or made, the bytes copied in, with *@created set; a caller that fails to
 * finish a new slot calls place_wset_drop_last().
 */
int place_wset_get(struct place_wset *s, const struct edgeq_place_weight *w,
		   struct place_wslot **out, bool *created);
void place_wset_drop_last(struct place_wset *s);
/* A new budget (0: none), the least recently used copies dropped now
 * until the others fit it. */
void place_wset_set_budget(struct place_wset *s, uint64_t budget);
void place_wset_fini(struct place_wset *s);

#endif /* EDGEQ_PLACEMENT_WSET_H */
