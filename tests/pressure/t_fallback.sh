#!/usr/bin/env bash
# timeout: 180
# The PSI/sysfs fallback on a fake thermal tree: same state shape as BPF,
# "source": "psi", device mapping and its config, headroom, throttle factor,
# memory level, --watch on a change, errors.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/fake.sh"
F=$T/fake
mkfake "$F"
export EDGEQ_SYSFS_ROOT=$F/sys EDGEQ_PROC_ROOT=$F/proc EDGEQ_DEVICES_CONF=

EDGEQ_NO_BPF=1 "$EDGEQ" status --json >"$T/s.json" 2>"$T/err"
check "status --json with EDGEQ_NO_BPF=1 exits 0" test $? -eq 0
check "source is psi" test "$(jget "$T/s.json" 'd["source"]')" = psi
check "fallback reason says BPF is disabled" grep -q disabled <<<"$(jget "$T/s.json" 'd["fallback_reason"]')"
check "five zones, as on an Orin" test "$(jget "$T/s.json" 'len(d["zones"])')" = 5
check "cpu-thermal -> cpu" test "$(jget "$T/s.json" 'd["zones"][0]["device"]')" = cpu
check "gpu-thermal -> gpu" test "$(jget "$T/s.json" 'd["zones"][1]["device"]')" = gpu
check "cv0-thermal -> npu" test "$(jget "$T/s.json" 'd["zones"][2]["device"]')" = npu
check "soc0-thermal unmapped" test "$(jget "$T/s.json" 'd["zones"][3]["device"]')" = ""
check "tj-thermal unmapped" test "$(jget "$T/s.json" 'd["zones"][4]["device"]')" = ""
check "cpu headroom 35 C to the passive trip" test "$(jget "$T/s.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["headroom_mc"]')" = 35000
# throttling is what the kernel imposes: cpu1's ceiling (1.5 of 2.0 GHz)
# and the cooling device, never cur/max (cpu0 idles at half its clock)
check "cpu throttle: min(cooling 9/10, ceilings 3.5/4.0) = 0.875 (not Σcur/Σmax 0.625)" test "$(jget "$T/s.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["throttle"]')" = 0.875
check "cpu frequency domain: cap 3.5 GHz of 4.0, throttle 0.875" test "$(jget "$T/s.json" '[(x["cap"], x["max"], x["throttle"]) for x in d["frequencies"] if x["name"]=="cpu"][0]')" = "(3500000, 4000000, 0.875)"
check "no thermal pressure without the tracepoint" test "$(jget "$T/s.json" '[x["thermal_pressure"] for x in d["frequencies"] if x["name"]=="cpu"][0]')" = 0.0
check "17000000.gpu devfreq -> gpu, max_freq cap 918 of 1300.5 MHz" test "$(jget "$T/s.json" 'round([x for x in d["devices"] if x["name"]=="gpu"][0]["throttle"],3)')" = 0.706
check "the GPU's hardware max is its highest available frequency" test "$(jget "$T/s.json" '[x["max"] for x in d["frequencies"] if x["name"]=="17000000.gpu"][0]')" = 1300500000
check "pwm-fan is not a throttle (unmapped)" test "$(jget "$T/s.json" '[x["device"] for x in d["cooling_devices"] if x["type"]=="pwm-fan"][0]')" = ""
check "MemAvailable from meminfo" test "$(jget "$T/s.json" 'd["memory"]["available"]')" = $((600000 * 1024))
check "7.5 % available is medium pressure" test "$(jget "$T/s.json" 'd["memory"]["level"]')" = medium
check "PSI some avg10 read" test "$(jget "$T/s.json" 'd["memory"]["psi_some_avg10"]')" = 12.0
check "own and system reclaim totals present" test "$(jget "$T/s.json" 'd["memory"]["reclaim"]["own"]["count"] + d["memory"]["reclaim"]["system"]["count"]')" = 0
check "no probes without BPF" test "$(jget "$T/s.json" 'len(d["probes"])')" = 0

"$EDGEQ" status --no-bpf --json >"$T/s2.json"
check "--no-bpf flag gives psi too" test "$(jget "$T/s2.json" 'd["source"]')" = psi

EDGEQ_NO_BPF=1 "$EDGEQ" status >"$T/human"
check "human output names the source" grep -q '^source: psi' "$T/human"
check "human output lists cpu-thermal" grep -q 'cpu-thermal' "$T/human"

printf '# test map\nzone.soc0-thermal = gpu\ncv*-thermal=none\ndevfreq.17000000.gpu=npu\n' >"$T/dev.conf"
EDGEQ_NO_BPF=1 "$EDGEQ" status --json --devices-conf "$T/dev.conf" >"$T/s3.json"
check "config maps soc0-thermal to gpu" test "$(jget "$T/s3.json" 'd["zones"][3]["device"]')" = gpu
check "config unmaps cv*-thermal (glob, none)" test "$(jget "$T/s3.json" 'd["zones"][2]["device"]')" = ""
check "config maps the devfreq device" test "$(jget "$T/s3.json" 'd["frequencies"][1]["device"]')" = npu

printf 'zone.cpu-thermal\n' >"$T/bad.conf"
EDGEQ_NO_BPF=1 "$EDGEQ" status --devices-conf "$T/bad.conf" 2>"$T/err"; rc=$?
check "a bad config line is refused (exit 3)" test $rc -eq 3
check "the error names file and line" grep -q "bad.conf:1" "$T/err"
EDGEQ_NO_BPF=1 "$EDGEQ" status --devices-conf "$T/missing.conf" 2>"$T/err"; rc=$?
check "a named config that is missing fails" test $rc -ne 0

EDGEQ_NO_BPF=1 EDGEQ_SYSFS_ROOT=$T/nothing "$EDGEQ" status --json >"$T/s4.json"
check "no thermal tree: still a state, zero zones" test "$(jget "$T/s4.json" 'len(d["zones"])')" = 0

# --watch: one JSON line per change, driven by the refresh timer
EDGEQ_NO_BPF=1 "$EDGEQ" status --json --watch --refresh-ms 100 --duration 3 >"$T/w.json" &
wp=$!
# the change must come after the first state (a loaded machine can take
# over a second to start it; a zone already at 90 C has no rise to see)
for _ in $(seq 100); do [ -s "$T/w.json" ] && break; sleep 0.05; done
sleep 0.3
put "$F/sys/class/thermal/thermal_zone0/temp" 90000
sleep 0.6
put "$F/sys/class/thermal/cooling_device0/cur_state" 6
put "$F/sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq" 400000
wait $wp
check "--watch exits 0 after --duration" test $? -eq 0
n=$(wc -l <"$T/w.json")
check "--watch printed the start and the changes ($n lines)" test "$n" -ge 3 -a "$n" -le 6
check "every line is one JSON object" python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/w.json"
last=$(tail -1 "$T/w.json") ; echo "$last" >"$T/last.json"
check "the change is seen: zone0 90 C" test "$(jget "$T/last.json" 'd["zones"][0]["temp_mc"]')" = 90000
check "90 C is past the passive trip: level 1" test "$(jget "$T/last.json" 'd["zones"][0]["level"]')" = 1
check "trend is rising" test "$(jget "$T/last.json" 'd["zones"][0]["trend_mcps"] > 0')" = True
check "cooling 6/10 -> cpu throttle 0.4" test "$(jget "$T/last.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["throttle"]')" = 0.4

# cpufreq cooling lowers scaling_max_freq: that is throttling; a
# governor raising or lowering the current clock is not
put "$F/sys/class/thermal/cooling_device0/cur_state" 0
put "$F/sys/devices/system/cpu/cpu1/cpufreq/scaling_max_freq" 1000000
EDGEQ_NO_BPF=1 "$EDGEQ" status --json >"$T/s5.json"
check "cpu1 capped at 1.0 of 2.0 GHz -> cpu throttle 0.75" test "$(jget "$T/s5.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["throttle"]')" = 0.75
put "$F/sys/devices/system/cpu/cpu1/cpufreq/scaling_max_freq" 2000000
put "$F/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq" 300000
EDGEQ_NO_BPF=1 "$EDGEQ" status --json >"$T/s6.json"
check "ceilings lifted, cpu0 idling at 15 %: cpu throttle 1" test "$(jget "$T/s6.json" '[x for x in d["devices"] if x["name"]=="cpu"][0]["throttle"]')" = 1.0
put "$F/sys/class/devfreq/17000000.gpu/max_freq" 1300500000
EDGEQ_NO_BPF=1 "$EDGEQ" status --json >"$T/s7.json"
check "GPU cap lifted, idling at 306 MHz: gpu throttle 1" test "$(jget "$T/s7.json" '[x for x in d["devices"] if x["name"]=="gpu"][0]["throttle"]')" = 1.0

# Without privilege BPF cannot load: the monitor falls back and says why.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod 755 "$T"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$EDGEQ" status --json >"$T/np.json" 2>"$T/err"
	check "as nobody: status exits 0" test $? -eq 0 || cat "$T/err"
	check "as nobody: source psi" test "$(jget "$T/np.json" 'd["source"]')" = psi
	r=$(jget "$T/np.json" 'd["fallback_reason"]')
	check "as nobody: the reason names the privilege or the build ($r)" \
		grep -qE 'CAP_BPF|not permitted|without BPF|BTF' <<<"$r"
fi

EDGEQ_NO_BPF=1 "$EDGEQ" top -n 1 >"$T/top" 2>&1
check "top draws a frame without a terminal" grep -q 'cpu-thermal' "$T/top"
check "top has an ENGINE line (a service or why none answers)" grep -q '^ENGINE ' "$T/top"
summary
