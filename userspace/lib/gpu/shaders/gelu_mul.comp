// SPDX-License-Identifier: LGPL-2.1-or-later
// Element-wise GELU_MUL (ew.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#define EW_GELU_MUL 1
#define USE_F64 1
#include "common.glsl"
#include "ew.glsl"
