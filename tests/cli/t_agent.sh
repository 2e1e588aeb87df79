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
check "unknown backend" test "$(st --queue npu0 --backend tpu)" = 2
check "says which backends" grep -q "auto, vulkan, cuda or cpu" "$T/out"
check "--list-devices succeeds" test "$(st --list-devices)" = 0
check "lists the cpu backend" grep -q "^cpu 0: " "$T/out"
# the CUDA backend: built where nvcc is, its driver loaded at run time;
# without a driver or a GPU it is listed as absent and refused, exit 6
if grep -q "^cuda: no device" "$T/out"; then
	check "--backend cuda without a driver: unavailable (6)" \
		test "$(st --queue npu0 --backend cuda)" = 6
	check "says why" grep -q "no CUDA driver (libcuda.so.1) or GPU" "$T/out"
elif grep -q "^cuda: not built in" "$T/out"; then
	check "--backend cuda not built: unavailable (6)" \
		test "$(st --queue npu0 --backend cuda)" = 6
	check "says why" grep -q "not built in" "$T/out"
fi
st --list-devices >/dev/null # what the checks below read
if grep -q "^vulkan 0: " "$T/out"; then
	check "bad device index is a usage error" \
		test "$(st --queue npu0 --backend vulkan --device 99)" = 2
	check "says where to look" grep -q -- "--list-devices" "$T/out"
	check "bad device name too" \
		test "$(st --queue npu0 --backend vulkan --device no-such-gpu)" = 2
	st --queue zz-none --backend vulkan --verbose >/dev/null
	check "every op kind warms up on the device" grep -q "warm-up on vulkan: " "$T/out"
	check "a chain outlasting the device wait is waited for" \
		test "$(EDGEQ_VK_TIMEOUT_MS=0 st --queue zz-none --backend vulkan -v)" = 1
	check "and then completes" grep -q "warm-up on vulkan: " "$T/out"
else
	check "no vulkan device: said so" grep -q "^vulkan: " "$T/out"
	check "auto falls back to cpu, saying so" sh -c \
		"'$EDGEQ' agent --queue zz-none 2>&1 | grep -q 'using the CPU backend'"
fi
# edgeq status lists live agents from their state files
mkdir -p "$T/run"
printf 'pid=%d\nbackend=vulkan\ndevice=llvmpipe (test)\nmemory=import\n' $$ >"$T/run/agent-gpu0"
printf 'pid=999999999\nbackend=cpu\ndevice=x\nmemory=host\n' >"$T/run/agent-npu9"
EDGEQ_RUN_DIR=$T/run "$EDGEQ" status --no-bpf >"$T/st" 2>&1
check "status shows the agent's backend and memory path" \
	grep -q "gpu0 *vulkan on llvmpipe (test), memory import (pid $$)" "$T/st"
check "status leaves out dead agents" sh -c "! grep -q npu9 '$T/st'"
check "listed in help" sh -c "'$EDGEQ' help | grep -q agent"
summary
