// SPDX-License-Identifier: LGPL-2.1-or-later
// STORE with float64 division (store.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define USE_F64 1
#include "common.glsl"
#include "store.glsl"
