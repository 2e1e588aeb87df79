// SPDX-License-Identifier: LGPL-2.1-or-later
// q8_k for devices without float64 (q8_k.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "q8_k.glsl"
