#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `edgeq agent` argument handling on a host without the module (the
# protocol itself is tested in the VM: tests/kmod).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
st() { "$EDGEQ" agent "$@" >"$T/out" 2>&1; echo $?; }
check "needs --queue" test "$(st)" = 2
check "unknown profile" test "$(st --queue npu0 --profile tpu)" = 2
check "speed bounds" test "$(st --queue npu0 --speed 0.001)" = 2
check "negative delay" test "$(st --queue npu0 --delay-us -5)" = 2
if [ ! -e /dev/edgeq/zz-none ]; then
	check "missing queue fails" test "$(st --queue zz-none)" -ne 0
	check "says why" grep -q "is edgeq.ko loaded" "$T/out"
fi
check "listed in help" sh -c "'$EDGEQ' help | grep -q agent"
summary
