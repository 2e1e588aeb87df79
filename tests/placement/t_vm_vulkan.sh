#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# The real module with the Vulkan agent on lavapipe, in the test VM
# (tests/placement/vm-vulkan.sh).
# timeout: 1220
set -u
top=${EDGEQ_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$top/${O:-build}
why=$("$top/tools/vm/run-in-vm" --probe 2>&1) || { echo "$why"; exit 77; }
kdir=$(ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V | tail -1)
if [ -n "$kdir" ]; then
	make -s -C "$top" modules KDIR="$kdir" >"$B/test-logs/placement-kmod-build.log" 2>&1 ||
		{ tail -20 "$B/test-logs/placement-kmod-build.log"; echo "make modules failed"; exit 1; }
fi
[ -r "$top/kmod/edgeq.ko" ] || { echo "kmod/edgeq.ko not built and no Debian 6.1 headers to build it"; exit 77; }
"${EDGEQ:-$B/edgeq}" agent --list-devices 2>/dev/null | grep -q '^vulkan 0: ' ||
	{ echo "no Vulkan device on the host (mesa-vulkan-drivers: tools/install-deps)"; exit 77; }
[ -x "$B/tools/place-run" ] && [ -x "$B/tools/gguf-gen" ] || { echo "place-run/gguf-gen not built"; exit 77; }
exec "$top/tools/vm/run-in-vm" --timeout 1200 --params "queues=gpu0" \
	--log "$B/vm/vulkan-guest.log" -- bash "$top/tests/placement/vm-vulkan.sh"
