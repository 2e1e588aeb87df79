// SPDX-License-Identifier: GPL-2.0-or-later
/* place-run's kq backend: the library's (edgeq_place_kq_new). */
#include <stdio.h>

#include "place_kq.h"

int place_kq_new(const struct edgeq_devices *d, struct place_kq **out,
		 struct edgeq_place_backend *be)
{
	struct edgeq_error err = { 0 };
	int ret;

	ret = edgeq_place_kq_new(d, (struct edgeq_place_kq **)out, be, &err);
	if (ret)
		fprintf(stderr, "place-run: %s\n", err.msg);
	return ret;
}

void place_kq_free(struct place_kq *k)
{
	edgeq_place_kq_free((struct edgeq_place_kq *)k);
}
