// SPDX-License-Identifier: LGPL-2.1-or-later
// STORE, float only (store.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "store.glsl"
