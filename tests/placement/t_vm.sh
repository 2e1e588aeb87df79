#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# The placement scenario in the test VM: throttle through the kernel's
# governor and BPF, agent killed mid-generation (tests/placement/vm-scenario.sh).
# timeout: 280
set -u
top=${EDGEQ_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$top/${O:-build}
why=$("$top/tools/vm/run-in-vm" --probe 2>&1) || { echo "$why"; exit 77; }
# edgeq.ko against Debian's 6.1 headers, as the kernel suite builds it
kdir=$(ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V | tail -1)
if [ -n "$kdir" ]; then
	make -s -C "$top" modules KDIR="$kdir" >"$B/test-logs/placement-kmod-build.log" 2>&1 ||
		{ tail -20 "$B/test-logs/placement-kmod-build.log"; echo "make modules failed"; exit 1; }
fi
[ -r "$top/kmod/edgeq.ko" ] || { echo "kmod/edgeq.ko not built and no Debian 6.1 headers to build it"; exit 77; }
"${EDGEQ:-$B/edgeq}" help agent >/dev/null 2>&1 || { echo "edgeq agent not built in"; exit 77; }
[ -x "$B/tools/place-run" ] && [ -x "$B/tools/gguf-gen" ] || { echo "place-run/gguf-gen not built"; exit 77; }
exec "$top/tools/vm/run-in-vm" --timeout 260 --params "queues=npu0 sim_sensor=1" \
	--log "$B/vm/placement-guest.log" -- bash "$top/tests/placement/vm-scenario.sh"
