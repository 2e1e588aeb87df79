// SPDX-License-Identifier: LGPL-2.1-or-later
// Matrix products with F32 weights (mv.glsl), float64 for exact fma.
#version 450
#extension GL_GOOGLE_include_directive : require
#define TT 1u
#define WT_F32 1
#define USE_F64 1
#include "common.glsl"
#include "mv.glsl"
