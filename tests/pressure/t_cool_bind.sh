#!/usr/bin/env bash
# timeout: 120
# --cool-bind Q:ZONE, the userspace path of a queue's thermal binding (the
# one that works on 6.12): on a fake Orin tree the monitor steps
# /sys/class/edgeq/gpu0/cooling_state one state per refresh while
# gpu-thermal is at or above its passive trip, holds it within the trip's
# hysteresis and steps it back down below; a zone or queue that is not
# there, an unwritable cooling_state and a malformed binding are reported.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/fake.sh"
F=$T/fake
mkfake "$F"
Z=$F/sys/class/thermal/thermal_zone1 Q=$F/sys/class/edgeq/gpu0
put "$Z/trip_point_0_hyst" 3000 # passive 85 C, hysteresis 3 C
put "$Q/cooling_state" 0
put "$Q/cooling_max_state" 4
export EDGEQ_SYSFS_ROOT=$F/sys EDGEQ_PROC_ROOT=$F/proc EDGEQ_DEVICES_CONF= EDGEQ_NO_BPF=1

"$EDGEQ" status --json --watch --refresh-ms 50 --duration 8 \
	--cool-bind gpu0:gpu-thermal >"$T/w.json" 2>"$T/err" &
wp=$!
wait_for() { # FILE VALUE SECONDS
	local i
	for i in $(seq $((${3} * 20))); do
		[ "$(cat "$1")" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
for _ in $(seq 100); do [ -s "$T/w.json" ] && break; sleep 0.05; done
sleep 0.3
check "50 C, below the trip: state stays 0" test "$(cat "$Q/cooling_state")" = 0
put "$Z/temp" 90000
check "90 C, past the passive trip: stepped up to the top state (4)" wait_for "$Q/cooling_state" 4 4
put "$Z/temp" 83000
sleep 0.5
check "83 C, within the 3 C hysteresis: held at 4" test "$(cat "$Q/cooling_state")" = 4
put "$Z/temp" 80000
check "80 C, below trip - hysteresis: stepped back to 0" wait_for "$Q/cooling_state" 0 4
wait $wp
check "--watch exits 0" test $? -eq 0
check "the states went 1, 2, 3, 4 and back one at a time" python3 - "$T/w.json" <<'PY'
import json, sys
seq = []
for l in open(sys.argv[1]):
    c = json.loads(l)['cool_bindings']
    assert len(c) == 1 and c[0]['queue'] == 'gpu0' and c[0]['zone'] == 'gpu-thermal', c
    assert c[0]['trip_mc'] == 85000 and c[0]['hyst_mc'] == 3000, c
    assert c[0]['max_state'] == 4 and c[0]['error'] is None, c
    if not seq or seq[-1] != c[0]['state']:
        seq.append(c[0]['state'])
assert seq == [0, 1, 2, 3, 4, 3, 2, 1, 0], seq
PY

# a zone without a hysteresis file uses the monitor's (2 C)
"$EDGEQ" status --json --cool-bind gpu0:cv0-thermal >"$T/s.json"
check "no hysteresis file: the monitor's 2000" test "$(jget "$T/s.json" 'd["cool_bindings"][0]["hyst_mc"]')" = 2000

"$EDGEQ" status --json --cool-bind gpu0:no-such-zone >"$T/s.json"
check "an absent zone: reported, nothing written" test "$(jget "$T/s.json" 'd["cool_bindings"][0]["error"]')" = "No such device"
"$EDGEQ" status --json --cool-bind npu9:gpu-thermal >"$T/s.json"
check "an absent queue: reported" test "$(jget "$T/s.json" 'd["cool_bindings"][0]["error"]')" = "No such device"
put "$F/sys/class/thermal/thermal_zone9/type" no-trips
put "$F/sys/class/thermal/thermal_zone9/temp" 99000
"$EDGEQ" status --json --cool-bind gpu0:no-trips >"$T/s.json"
check "a zone without a passive or active trip: reported" test "$(jget "$T/s.json" 'd["cool_bindings"][0]["error"]')" = "No such file or directory"
rm "$Q/cooling_state"; mkdir "$Q/cooling_state"
put "$Z/temp" 90000
"$EDGEQ" status --json --cool-bind gpu0:gpu-thermal >"$T/s.json"
check "cooling_state not writable: the write's error" test "$(jget "$T/s.json" 'd["cool_bindings"][0]["error"]')" = "Is a directory"
"$EDGEQ" status >"$T/h"
"$EDGEQ" status --cool-bind gpu0:gpu-thermal >"$T/h"
check "human output shows the binding and its error" grep -q 'gpu0 <- gpu-thermal: state 0/4 (Is a directory)' "$T/h"

for b in gpu0 :gpu-thermal gpu0: "gpu0:a/b"; do
	"$EDGEQ" status --cool-bind "$b" >/dev/null 2>"$T/err"
	rc=$?
	check "--cool-bind '$b' is refused (exit $rc)" test $rc -ne 0
	check "  ... and says why" grep -q "cooling binding" "$T/err"
done
"$EDGEQ" serve --pressure off --cool-bind gpu0:gpu-thermal -m "$T/none.gguf" >/dev/null 2>"$T/err"
check "serve: --cool-bind without a monitor is a usage error" test $? -eq 2
check "  ... and says why" grep -q "needs the pressure monitor" "$T/err"
summary
