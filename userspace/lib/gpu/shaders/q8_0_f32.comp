// SPDX-License-Identifier: LGPL-2.1-or-later
// q8_0 for devices without float64 (q8_0.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "q8_0.glsl"
