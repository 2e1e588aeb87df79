// SPDX-License-Identifier: GPL-2.0-or-later
/* The shape placement needs, read from a GGUF model. */
#include <errno.h>

#include "plan_placement.h"

int plan_placement_model_shape(const char *path, struct edgeq_place_shape *s,
			       struct edgeq_error *err)
{
	return edgeq_error_set(err, ENOSYS,
			       "%s: reading GGUF models is not built in yet; "
			       "use --shape tiny|1b",
			       path);
}
