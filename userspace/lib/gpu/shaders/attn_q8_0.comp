// SPDX-License-Identifier: LGPL-2.1-or-later
// Attention over a Q8_0 KV cache (attn.glsl), float64 for exact fma.
#version 450
#extension GL_GOOGLE_include_directive : require
#define KV_Q8_0 1
#define USE_F64 1
#include "common.glsl"
#include "attn.glsl"
