// SPDX-License-Identifier: GPL-2.0-or-later
/* Until kq (the queue client library) is built in: no kq backend. */
#include <errno.h>
#include <stddef.h>

#include "place_kq.h"

int place_kq_new(const struct edgeq_devices *d, struct place_kq **out,
		 struct edgeq_place_backend *be)
{
	return -ENOSYS;
}

void place_kq_free(struct place_kq *k)
{
}
