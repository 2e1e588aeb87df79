// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix-matrix products with F32 weights (mv.glsl), 8 activation rows a
// workgroup, no float64.
#version 450
#extension GL_GOOGLE_include_directive : require
#define TT 8u
#define WT_F32 1
#include "common.glsl"
#include "mv.glsl"
