/* SPDX-License-Identifier: GPL-2.0-or-later */
/* place-run's backend over edgeq queues (kq), when kq is built in. */
#ifndef PLACE_KQ_H
#define PLACE_KQ_H

#include <edgeq/placement.h>

struct place_kq;

/* Open every queue of @d (dev[1..]) and fill @be. -ENOSYS without kq. */
int place_kq_new(const struct edgeq_devices *d, struct place_kq **out,
		 struct edgeq_place_backend *be);
void place_kq_free(struct place_kq *k);

#endif
