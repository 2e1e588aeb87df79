// SPDX-License-Identifier: LGPL-2.1-or-later
// RMSNORM for devices without float64 (rmsnorm.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rmsnorm.glsl"
