// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix products with F16 weights (mv.glsl), no float64.
#version 450
#extension GL_GOOGLE_include_directive : require
#define TT 1u
#define WT_F16 1
#include "common.glsl"
#include "mv.glsl"
