#!/usr/bin/env bash
# `edgeq plan --placement`: the explanation of a decode step's placement.
# timeout: 60
set -u
. "$(dirname "$0")/../lib/testlib.sh"

"$EDGEQ" plan --help 2>/dev/null | grep -q -- '--placement' ||
	skip_all "edgeq plan has no --placement here (ledger part not built in)"

P=("$EDGEQ" plan --placement --sysfs "$T/nosysfs")
js() { python3 -c "import json,sys; d=json.load(open('$1')); sys.exit(0 if ($2) else 1)"; }

"${P[@]}" --shape 1b --queue npu0 --json >"$T/a.json"
check "1b on cpu+npu0: JSON" test $? -eq 0
check "matmuls of the blocks on npu0" js "$T/a.json" \
	"all(o['device']=='npu0' for o in d['ops'] if o['kind']=='matmul' and o['layer']>=0)"
check "norms, rope and softmax stay on the cpu" js "$T/a.json" \
	"all(o['device']=='cpu' for o in d['ops'] if o['kind'] in ('rmsnorm','rope','softmax'))"
check "faster than all-cpu" js "$T/a.json" "d['plan']['step_ns'] < d['cpu_only']['step_ns']"
check "never slower than naive op-by-op" js "$T/a.json" \
	"0 < d['plan']['fallback_tax'] and d['plan']['step_ns'] <= d['naive']['step_ns']"
"${P[@]}" --shape 1b --queue gpu0 --json >"$T/gpu.json"
check "gpu0: fallback tax far below naive op-by-op" js "$T/gpu.json" \
	"d['plan']['fallback_tax'] < d['naive']['fallback_tax'] / 5 and d['plan']['step_ns'] < d['naive']['step_ns']"
check "gpu0: one fused segment, not op-by-op bouncing" js "$T/gpu.json" \
	"d['plan']['segments'] <= 3 < d['naive']['segments']"
check "breakdown adds up" js "$T/a.json" \
	"abs(sum(d['plan']['device_ns'].values()) + d['plan']['transfer_ns'] - d['plan']['step_ns']) < 1e-6 * d['plan']['step_ns']"
check "planner cost reported" js "$T/a.json" "0 < d['planner_ns'] < 1e7"

"${P[@]}" --shape 1b --queue npu0 >"$T/a.txt"
check "text: step time" grep -q '^predicted step time: ' "$T/a.txt"
check "text: fallback tax" grep -q 'fallback tax [0-9.]* %' "$T/a.txt"
check "text: per device" grep -q '^  npu0 ' "$T/a.txt"

"${P[@]}" --shape 1b --queue npu0 --cooling npu0=3/4 --json >"$T/b.json"
check "throttled npu0 (3/4): all on the cpu" js "$T/b.json" \
	"all(o['device']=='cpu' for o in d['ops']) and d['devices'][1]['capacity'] == 0.25"
"${P[@]}" --shape 1b --queue npu0 --lost npu0 --json >"$T/c.json"
check "lost agent: all on the cpu" js "$T/c.json" \
	"all(o['device']=='cpu' for o in d['ops']) and not d['devices'][1]['agent_alive']"

# queues found in sysfs, state included
mkdir -p "$T/sysfs/npu0"
echo 42 >"$T/sysfs/npu0/agent_pid"; echo 2 >"$T/sysfs/npu0/cooling_state"
echo 4 >"$T/sysfs/npu0/cooling_max_state"
"$EDGEQ" plan --placement --shape 1b --sysfs "$T/sysfs" --json >"$T/d.json"
check "queue discovered from sysfs with its cooling state" js "$T/d.json" \
	"d['devices'][1]['name']=='npu0' and d['devices'][1]['cooling_state']==2 and d['devices'][1]['capacity']==0.5"

# calibration: predicted against measured
printf '# c\nnpu0 ffn_down 3 700000 12\ncpu attn_norm 1 2000 12\nnpu9 x 1 1 1\n' >"$T/calib"
"${P[@]}" --shape 1b --queue npu0 --calib "$T/calib" --json >"$T/e.json"
check "calibrated: measured beside predicted" js "$T/e.json" \
	"d['calibrated'] and all('measured_ns' in o for o in d['ops'] if o['name']=='attn_norm')"
check "calibration moves ffn_down off the slower-than-modelled npu" js "$T/e.json" \
	"all(o['device']=='cpu' for o in d['ops'] if o['name']=='ffn_down')"
"${P[@]}" --shape 1b --queue npu0 --calib "$T/calib" >"$T/e.txt"
check "text: measured column" grep -q 'measured' "$T/e.txt"

# a profile file of one's own
printf '[device.npu]\nops = all\ndtypes = all\ngflops = 1e6\nmem_gbs = 1e4\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/dev.ini"
"${P[@]}" --shape 1b --queue npu0 --devices "$T/dev.ini" --json >"$T/f.json"
check "a free, infinitely fast npu takes every op" js "$T/f.json" \
	"all(o['device']=='npu0' for o in d['ops'])"
EDGEQ_DEVICES="$T/dev.ini" "${P[@]}" --shape 1b --queue npu0 --json >"$T/g.json"
check "EDGEQ_DEVICES names the profile file" js "$T/g.json" "all(o['device']=='npu0' for o in d['ops'])"

# a real GGUF model (header only), and the ledgers' options passed along
M=$EDGEQ_TEST_MODELS/stories260K.gguf
if [ -r "$M" ]; then
	"$EDGEQ" plan -m "$M" -P local --ctx 64 --placement --sysfs "$T/nosysfs" \
		--queue npu0 --json >"$T/m.json"
	check "-m stories260K: placed, ledger options skipped" js "$T/m.json" \
		"d['ctx']==64 and len(d['ops'])==3+11*5 and d['plan']['step_ns']>0"
	check "tiny model: transfers cost more than the npu saves" js "$T/m.json" \
		"d['plan']['step_ns'] < d['naive']['step_ns']"
else
	echo "note: $M absent, model case not run"
fi
"$EDGEQ" plan -m "$T/nope.gguf" --placement 2>"$T/err" >/dev/null
check "missing model: fails, named" grep -q "nope.gguf" "$T/err"

# usage errors
"${P[@]}" >/dev/null 2>"$T/err"; check "no model: exit 2" test $? -eq 2
"${P[@]}" --shape 1b --queue tpu0 2>"$T/err" >/dev/null
check "unknown profile: exit 2" test $? -eq 2
check "... named" grep -q "no device profile 'tpu'" "$T/err"
"${P[@]}" --shape 1b --queue npu0 --cooling npu0=5/4 2>"$T/err" >/dev/null
check "bad --cooling: exit 2" test $? -eq 2
"${P[@]}" --shape 1b --calib "$T/nope" 2>"$T/err" >/dev/null
check "missing calibration file: fails" test $? -ne 0
check "... named" grep -q "$T/nope" "$T/err"
printf '[device.npu]\ngflops = fast\n' >"$T/bad.ini"
"${P[@]}" --shape 1b --devices "$T/bad.ini" 2>"$T/err" >/dev/null
check "bad profile file: refused" test $? -eq 3
check "... with file and line" grep -q "bad.ini:2:" "$T/err"
summary
