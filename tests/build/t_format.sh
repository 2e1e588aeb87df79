#!/usr/bin/env bash
# Userspace C sources follow the kernel style (.clang-format); kmod/ is
# checked by checkpatch in the kmod suite instead.
set -u
cd "$EDGEQ_TOP"
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
make -s format-check
