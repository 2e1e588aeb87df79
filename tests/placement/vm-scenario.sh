#!/usr/bin/env bash
# Runs inside the test VM (tests/placement/t_vm.sh), edgeq.ko loaded with
# queues=npu0 sim_sensor=1: a CPU agent serves npu0 with the NPU profile,
# the engine generates from a tiny synthetic model with its matrix ops on
# npu0; the simulated sensor heats npu0, the kernel's governor raises its
# cooling state, BPF sees it and the engine re-places; then the agent is
# killed mid-generation. Prints "N passed, N failed, N skipped".
set -u
B=${EDGEQ_TOP:-.}/${O:-build}
EDGEQ=${EDGEQ:-$B/edgeq}
Q=/sys/class/edgeq/npu0
T=$(mktemp -d)
pass=0 fail=0
check() {
	local what=$1; shift
	if "$@"; then pass=$((pass + 1)); echo "ok - $what"
	else fail=$((fail + 1)); echo "FAIL - $what"; fi
}
js() { python3 -c "import json,sys; d=json.load(open('$1')); p=d['per_token']; s=d['stats']; sys.exit(0 if ($2) else 1)"; }
toks() { python3 -c "import json; print([t['tok'] for t in json.load(open('$1'))['per_token']][:$2])"; }
agent_up() {
	for _ in $(seq 100); do
		[ "$(cat $Q/agent_pid 2>/dev/null)" -gt 0 ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
finish() {
	echo "$pass passed, $fail failed, 0 skipped"
	[ "$fail" -eq 0 ]
	exit
}

[ -d "$Q" ] || { echo "no $Q: module not loaded with queues=npu0"; fail=1; finish; }
"$B/tools/gguf-gen" -o "$T/tiny.gguf" --shape tiny --type q8_0 >/dev/null
# npu0 slightly faster than the cpu, free to call: the matmuls go there
# until a cooling state lowers its capacity
printf '[device.npu]\nops = matmul attn swiglu add\ndtypes = all\ngflops = 1e5\nmem_gbs = 24\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/npu.ini"
R=("$B/tools/place-run" -m "$T/tiny.gguf" -p a --devices "$T/npu.ini" --no-calib)

"${R[@]}" -n 200 --backend none >"$T/cpu.json"
check "all-cpu reference run" js "$T/cpu.json" "d['error'] is None and len(p) > 100"

# --- 1. heat, governor, BPF, re-placement
echo 30000 >$Q/sim_ambient_mC; echo 40000 >$Q/sim_rise_mC
echo 200 >$Q/sim_tau_ms; echo 45000 >$Q/sim_trip_mC
"$EDGEQ" agent --queue npu0 --profile npu >"$T/agent1.log" 2>&1 &
agent=$!
check "agent attached to npu0" agent_up
"${R[@]}" -n 200 --backend kq --queue npu0 --watch --sysfs /sys/class/edgeq \
	--margin 0.01 >"$T/thr.json" 2>"$T/thr.err"
kill $agent 2>/dev/null; wait $agent 2>/dev/null
check "generation through npu0 succeeded" js "$T/thr.json" "d['error'] is None"
check "pressure monitor on BPF" js "$T/thr.json" "s['monitor'] == 'bpf'"
check "matmuls ran on npu0" js "$T/thr.json" "p[1]['off_cpu'] > 0 and s['offloaded'] > 0"
check "npu0 heated and the governor raised its cooling state" js "$T/thr.json" \
	"any(t['cooling_state'] > 0 for t in p)"
check "the monitor delivered pressure events" js "$T/thr.json" "s['pressure_events'] > 0"
# Ts: first token after which sysfs shows the cooling state; Tp: first
# token computed under a plan without npu0
check "re-placed within one token of the throttle" js "$T/thr.json" "
(lambda ts, tp: ts is not None and tp is not None and tp <= ts + 1)(
 next((i for i, t in enumerate(p) if t['cooling_state'] > 0), None),
 next((i for i, t in enumerate(p) if i > 0 and t['off_cpu'] == 0), None))"
check "tokens equal the all-cpu run" test "$(toks "$T/thr.json" 200)" = "$(toks "$T/cpu.json" 200)"
python3 -c "
import json; d=json.load(open('$T/thr.json')); p=d['per_token']
ts=next((i for i,t in enumerate(p) if t['cooling_state']>0),None)
tp=next((i for i,t in enumerate(p) if i>0 and t['off_cpu']==0),None)
print('throttle seen after token', ts, '; re-placed for token', tp, '; events', d['stats']['pressure_events'])"

# --- 2. the agent killed mid-generation
echo 200000 >$Q/sim_trip_mC # no throttling now
sleep 0.5
"$EDGEQ" agent --queue npu0 --profile npu >"$T/agent2.log" 2>&1 &
agent=$!
check "a new agent attached" agent_up
"${R[@]}" -n 40 --backend kq --queue npu0 --kill-agent-at 5 --agent-pid $agent \
	>"$T/kill.json" 2>"$T/kill.err"
wait $agent 2>/dev/null
check "killed agent: no error reached the caller" js "$T/kill.json" "d['error'] is None"
check "killed agent: ops ran on npu0 before" js "$T/kill.json" "p[3]['off_cpu'] > 0 and p[5]['offloaded'] > 0"
check "killed agent: generation finished on the cpu" js "$T/kill.json" \
	"p[-1]['off_cpu'] == 0 and s['fallbacks'] >= 1 and s['last_error'] == -19 and len(p) == 40"
check "killed agent: tokens equal the all-cpu run" test "$(toks "$T/kill.json" 40)" = "$(toks "$T/cpu.json" 40)"
for f in "$T"/*.err "$T"/agent*.log; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
finish
