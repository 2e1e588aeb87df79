#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 120
# The fallback under qemu-aarch64-static: the aarch64 edgeq of `make cross`
# reports "source": "psi" on a fake thermal tree,
# and --watch works without io_uring (qemu-user has none).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/fake.sh"
cd "$EDGEQ_TOP"
command -v qemu-aarch64-static >/dev/null || skip_all "qemu-aarch64-static not installed (tools/install-deps)"
bin=build-aarch64/edgeq
# tests/cross (make cross) runs before this in the VM lane
[ -x "$bin" ] || skip_all "no $bin: run make cross first (the cross suite does)"
check "it is an aarch64 binary" bash -c "file '$bin' | grep -q aarch64"
F=$T/fake
mkfake "$F"
export EDGEQ_SYSFS_ROOT=$F/sys EDGEQ_PROC_ROOT=$F/proc EDGEQ_DEVICES_CONF=
qemu-aarch64-static "$bin" status --json >"$T/s.json" 2>"$T/err"
check "status --json under qemu-aarch64 exits 0" test $? -eq 0 || cat "$T/err"
check "source is psi" test "$(jget "$T/s.json" 'd["source"]')" = psi
check "the reason is given" test -n "$(jget "$T/s.json" 'd["fallback_reason"] or ""')"
check "five zones from the fake tree" test "$(jget "$T/s.json" 'len(d["zones"])')" = 5
check "cpu headroom 35 C" test "$(jget "$T/s.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["headroom_mc"]')" = 35000
# real /proc under qemu too: PSI and meminfo of the host kernel
qemu-aarch64-static "$bin" status --json --proc-root /proc >"$T/r.json" 2>"$T/err"
check "real /proc: MemAvailable read" test "$(jget "$T/r.json" 'd["memory"]["available"] > 0')" = True
timeout 20 qemu-aarch64-static "$bin" status --json --watch -n 2 --refresh-ms 100 >"$T/w.json" 2>"$T/err" &
wp=$!
sleep 2
put "$F/sys/class/thermal/thermal_zone1/temp" 88000
wait $wp
check "--watch under qemu (no io_uring) exits 0" test $? -eq 0 || cat "$T/err"
check "--watch printed 2 lines" test "$(wc -l <"$T/w.json")" -eq 2
tail -1 "$T/w.json" >"$T/last.json"
check "the change reached the watch: gpu 88 C" test "$(jget "$T/last.json" 'd["zones"][1]["temp_mc"]')" = 88000
summary
