// SPDX-License-Identifier: LGPL-2.1-or-later
// q8_k with exact division in float64 (q8_k.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define USE_F64 1
#include "common.glsl"
#include "q8_k.glsl"
