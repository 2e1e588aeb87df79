// SPDX-License-Identifier: LGPL-2.1-or-later
// RMSNORM with a float64 sum of squares (rmsnorm.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define RMS_F64 1
#define USE_F64 1
#include "common.glsl"
#include "rmsnorm.glsl"
