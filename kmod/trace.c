// SPDX-License-Identifier: GPL-2.0
/* Instantiates the edgeq tracepoints (edgeq_trace.h). */
#define CREATE_TRACE_POINTS
#include "edgeq_trace.h"
