#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 420
# A queue's cooling device bound by a device-tree zone, as on a Jetson:
# the aarch64 VM boots with tests/cross/edgeq-dt.dtsi appended to qemu's
# device tree (a node for queue dt0, a zone whose cooling-maps name it and
# whose sensor is edgeq's simulated one); the arm64 edgeq.ko
# (tools/vm/kmod-arm64) must register the cooling device on the node, the
# zone must bind it through its cooling-maps, and the zone's step_wise
# governor must throttle the queue when the sensor is hot and release it
# when it cools (tests/cross/guest-arm64-dt). The binding the kernels that
# bind only through a zone's own ops (6.12) leave as the only kernel path.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
B=${O:-build}
why=$(tools/vm/run-in-vm --arch arm64 --dt-append tests/cross/edgeq-dt.dtsi --probe 2>&1) ||
	skip_all "no aarch64 VM with a device tree here: $(tail -n 1 <<<"$why")"
kver=$(ls "$B"/vm-arm64/root/boot/vmlinuz-* | sed 's|.*/vmlinuz-||' | sort -V | tail -n 1)
ko=$(O=$B tools/vm/kmod-arm64 "$kver" 2>"$T/kmod.log")
krc=$?
if [ $krc -ne 0 ]; then
	tail -n 5 "$T/kmod.log"
	[ $krc -eq 77 ] && skip_all "no arm64 edgeq.ko: $(tail -n 1 "$T/kmod.log")"
	check "edgeq.ko cross-builds for arm64 $kver" false
	summary
	exit
fi
tools/vm/run-in-vm --arch arm64 --no-module --timeout 300 --dt-append tests/cross/edgeq-dt.dtsi \
	--log "$B/vm/guest-arm64-dt.log" -- "$PWD/tests/cross/guest-arm64-dt" "$ko" >"$T/vm.log" 2>&1
rc=$?
check "the aarch64 VM with the device tree ran (exit $rc)" test $rc -eq 0 || tail -n 20 "$T/vm.log"
R=$B/vm/out/dt-result.txt
sed 's/^/# /' "$R" 2>/dev/null
check "cooling device on the tree's node, the zone bound it, throttled and released" \
	test "$(tail -n 1 "$R" 2>/dev/null)" = rc=0
summary
