// SPDX-License-Identifier: LGPL-2.1-or-later
// Element-wise ADD (ew.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define EW_ADD 1
#include "common.glsl"
#include "ew.glsl"
