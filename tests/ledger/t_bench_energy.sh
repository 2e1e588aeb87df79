#!/usr/bin/env bash
# edgeq bench's energy figures on fake power rails: a Jetson Orin's INA3221
# (hwmon in/curr pairs, VDD_IN the board total) drawing a constant 6 W, an
# x86 box's intel-rapl powercap counter, and a box with no readable rail,
# which must say so rather than print a zero.
# timeout: 240
set -u
. "$(dirname "$0")/benchlib.sh"
"$GEN" -o "$T/m.gguf" --shape tiny --type q8_0 >/dev/null 2>&1 ||
	{ check "gguf-gen tiny q8_0" false; summary; }
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
bench() { "$EDGEQ" bench -m "$T/m.gguf" -t 1 -p 16 -n 16 -r 1 --buckets 16 "$@" 2>"$T/err"; }

# Jetson: INA3221 channels VDD_IN 5 V x 1.2 A, VDD_CPU_GPU_CV, one NC
J=$T/orin/sys/class/hwmon/hwmon1
put "$J/name" ina3221
put "$J/in1_label" VDD_IN; put "$J/in1_input" 5000; put "$J/curr1_input" 1200
put "$J/in2_label" VDD_CPU_GPU_CV; put "$J/in2_input" 5000; put "$J/curr2_input" 400
put "$J/in3_label" NC; put "$J/in3_input" 0; put "$J/curr3_input" 0
EDGEQ_SYSFS_ROOT=$T/orin/sys bench --soak 0.05 --json >"$T/orin.json"
check "orin: bench exits 0" test $? -eq 0 || cat "$T/err"
python3 "$D/jsonschema.py" "$SCHEMA" "$T/orin.json" >"$T/why"
check "orin: JSON validates against the schema" test $? -eq 0 || cat "$T/why"
check "orin: the rails, VDD_IN alone in the total, NC left out" python3 -c "
import json; d=json.load(open('$T/orin.json'))['energy']
r={x['name']: x['in_total'] for x in d['rails']}
assert r == {'VDD_IN': True, 'VDD_CPU_GPU_CV': False}, r
assert 'none_reason' not in d"
check "orin: 6 W average over the decode, the buckets and the soak" python3 -c "
import json; d=json.load(open('$T/orin.json'))
for w in (d['matrix']['avg_w'], d['matrix']['buckets'][0]['avg_w'], d['soak']['avg_w']):
    assert abs(w - 6.0) < 0.01, w
assert all(abs(s['watts'] - 6.0) < 0.01 for s in d['soak']['samples'])"
check "orin: J/token is the power over the decode speed" python3 -c "
import json; m=json.load(open('$T/orin.json'))['matrix']
want = 6.0 / m['decode_tok_s']
assert abs(m['j_per_token'] - want) / want < 0.2, (m['j_per_token'], want)"
check "orin: soak J/token = 6 W / steady-ish speed" python3 -c "
import json; s=json.load(open('$T/orin.json'))['soak']
tps = sum(x['tok_s'] for x in s['samples']) / len(s['samples'])
assert 0.5 < s['j_per_token'] * tps / 6.0 < 2.0, (s['j_per_token'], tps)"
EDGEQ_SYSFS_ROOT=$T/orin/sys bench >"$T/orin.txt"
check "orin: the table prints J/token and watts" grep -qE 'energy \(decode\) +[0-9.]+ J/token at 6\.00 W average \(hwmon VDD_IN\)' "$T/orin.txt"

# x86: intel-rapl package counter; a subzone that must not be added
X=$T/x86/sys/class/powercap
put "$X/intel-rapl:0/name" package-0; put "$X/intel-rapl:0/energy_uj" 1000
put "$X/intel-rapl:0/max_energy_range_uj" 262143328850
put "$X/intel-rapl:0:0/name" core; put "$X/intel-rapl:0:0/energy_uj" 10
EDGEQ_SYSFS_ROOT=$T/x86/sys bench --json >"$T/x86.json"
check "x86: bench exits 0" test $? -eq 0
check "x86: one powercap rail, package-0" python3 -c "
import json; d=json.load(open('$T/x86.json'))['energy']
assert [(x['name'], x['source'], x['chip']) for x in d['rails']] == [('package-0', 'powercap', 'intel-rapl:0')], d"
check "x86: a counter that does not move is 0 W, not missing" python3 -c "
import json; m=json.load(open('$T/x86.json'))['matrix']
assert m['avg_w'] == 0 and m['j_per_token'] == 0, m"

# nothing readable: say so, no numbers
mkdir -p "$T/vm/sys/class"
EDGEQ_SYSFS_ROOT=$T/vm/sys bench --json >"$T/vm.json"
check "no rail: bench exits 0" test $? -eq 0
python3 "$D/jsonschema.py" "$SCHEMA" "$T/vm.json" >"$T/why"
check "no rail: JSON validates" test $? -eq 0 || cat "$T/why"
check "no rail: null figures and the reason" python3 -c "
import json; d=json.load(open('$T/vm.json'))
assert d['matrix']['j_per_token'] is None and d['matrix']['avg_w'] is None
assert d['energy']['rails'] == []
assert d['energy']['none_reason'].startswith('no readable power rail'), d['energy']"
EDGEQ_SYSFS_ROOT=$T/vm/sys bench >"$T/vm.txt"
check "no rail: the table says it plainly" grep -q 'energy  *not measured: no readable power rail: no hwmon power or voltage and current channel, no powercap zone' "$T/vm.txt"
summary
