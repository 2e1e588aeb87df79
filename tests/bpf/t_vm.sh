#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 240
# In the test VM (Debian 6.1, edgeq.ko with queues=npu0 sim_sensor=1): real
# thermal tracepoints from the module's simulated sensor, the governor's
# cooling updates and edgeq_throttle reach the BPF monitor
# (tests/bpf/guest-pressure runs inside, chrooted into this tree).
set -u
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
why=$(tools/vm/run-in-vm --probe 2>&1) || { echo "$why"; echo "no test VM here: $why"; exit 77; }
kdir=$(ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V | tail -1)
[ -n "$kdir" ] || { echo "no Debian 6.1 kernel headers"; exit 77; }
mkdir -p "$O/test-logs"
make -s modules KDIR="$kdir" >"$O/test-logs/bpf-kmod-build.log" 2>&1 || {
	cat "$O/test-logs/bpf-kmod-build.log"; echo "make modules failed"; exit 1; }
tools/vm/run-in-vm --timeout 200 --log "$O/test-logs/bpf-vm-guest.log" \
	--params "queues=npu0 sim_sensor=1" -- tests/bpf/guest-pressure
rc=$?
[ $rc -eq 0 ] || echo "t_vm: the VM run failed (exit $rc); guest log $O/test-logs/bpf-vm-guest.log"
exit $rc
