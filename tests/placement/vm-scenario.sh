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
t0=$(date +%s)
log() { echo "# [$(($(date +%s) - t0))s] $*"; }
count() { # the ok/FAIL lines of a check script
	local out
	out=$("$@")
	echo "$out"
	pass=$((pass + $(grep -c '^ok - ' <<<"$out")))
	fail=$((fail + $(grep -c '^FAIL - ' <<<"$out")))
}
agent_up() {
	for _ in $(seq 400); do # up to 20 s: a loaded host slows the TCG guest
		[ "$(cat $Q/agent_pid 2>/dev/null)" -gt 0 ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
ok() { if "$@"; then pass=$((pass + 1)); echo "ok - $what"; else fail=$((fail + 1)); echo "FAIL - $what"; fi; }
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

"${R[@]}" -n 60 --backend none >"$T/cpu.json"
log "all-cpu run done"

# --- 1. heat, governor, BPF, re-placement: any use of npu0 heats it past
# its trip (ambient just below, time constant short)
echo 44000 >$Q/sim_ambient_mC; echo 60000 >$Q/sim_rise_mC
echo 100 >$Q/sim_tau_ms; echo 45000 >$Q/sim_trip_mC
"$EDGEQ" agent --queue npu0 --backend cpu --profile npu --delay-us 5000 >"$T/agent1.log" 2>&1 &
agent=$!
what="agent attached to npu0" ok agent_up
"${R[@]}" -n 60 --backend kq --queue npu0 --watch --sysfs /sys/class/edgeq \
	--margin 0.01 >"$T/thr.json" 2>"$T/thr.err"
log "throttle run done; sim_temp $(cat $Q/sim_temp_mC) cooling $(cat $Q/cooling_state)"
kill $agent 2>/dev/null; wait $agent 2>/dev/null

# --- 2. the agent killed mid-generation (no more throttling)
echo 150000 >$Q/sim_trip_mC; echo 20000 >$Q/sim_ambient_mC
for _ in $(seq 40); do [ "$(cat $Q/cooling_state)" = 0 ] && break; sleep 0.1; done
"$EDGEQ" agent --queue npu0 --backend cpu --profile npu >"$T/agent2.log" 2>&1 &
agent=$!
what="a new agent attached" ok agent_up
"${R[@]}" -n 40 --backend kq --queue npu0 --kill-agent-at 5 --agent-pid $agent \
	>"$T/kill.json" 2>"$T/kill.err"
kill $agent 2>/dev/null # still there if place-run failed before killing it
wait $agent 2>/dev/null
log "kill run done"

# --- 3. edgeq run --queue: the command itself, tokens as without a queue
"$EDGEQ" agent --queue npu0 --backend cpu --profile npu >"$T/agent3.log" 2>&1 &
agent=$!
what="an agent for edgeq run" ok agent_up
"$EDGEQ" run -m "$T/tiny.gguf" -p a -n 12 --temp 0 --json --no-roofline >"$T/run-cpu.json" 2>/dev/null
EDGEQ_DEVICES=$T/npu.ini "$EDGEQ" run -m "$T/tiny.gguf" -p a -n 12 --temp 0 --json \
	--no-roofline --queue npu0 >"$T/run-npu.json" 2>"$T/run-npu.err"
what="edgeq run --queue npu0 succeeded" ok test $? -eq 0
EDGEQ_DEVICES=$T/npu.ini "$EDGEQ" run -m "$T/tiny.gguf" -p a -n 12 --temp 0 \
	--no-roofline --queue npu0 >/dev/null 2>"$T/run-npu.txt"
what="edgeq run --queue npu0 ran matrix ops on npu0" ok \
	grep -Eq 'placement: [0-9]+ decode steps, [1-9][0-9]* matrix ops on queues' "$T/run-npu.txt"
# a copy budget below every weight: the queue takes none, the run goes on
EDGEQ_DEVICES=$T/npu.ini "$EDGEQ" run -m "$T/tiny.gguf" -p a -n 12 --temp 0 \
	--no-roofline --queue npu0 --device-copies 1000 >/dev/null 2>"$T/run-cap.txt"
what="edgeq run --device-copies 1000: succeeded, every op on the CPU" ok \
	grep -Eq 'placement: [0-9]+ decode steps, 0 matrix ops on queues' "$T/run-cap.txt"
kill $agent 2>/dev/null; wait $agent 2>/dev/null
log "edgeq run done"

count python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
def load(n):
    try:
        return json.load(open(f"{T}/{n}.json"))
    except Exception as e:
        print(f"FAIL - {n}.json unreadable: {e}")
        return None
def check(what, cond):
    print(("ok - " if cond else "FAIL - ") + what)
cpu, thr, kill = load("cpu"), load("thr"), load("kill")
ref = [t["tok"] for t in cpu["per_token"]] if cpu else []
check("all-cpu reference run", cpu and cpu["error"] is None and len(ref) >= 40)
if thr:
    p, s = thr["per_token"], thr["stats"]
    ts = next((i for i, t in enumerate(p) if t["cooling_state"] > 0), None)
    tp = next((i for i, t in enumerate(p) if i > 0 and t["off_cpu"] == 0), None)
    print(f"# throttle seen after token {ts}; first token placed without npu0: {tp}; "
          f"pressure events {s['pressure_events']}, replans {s['replans']}, offloaded {s['offloaded']}")
    check("generation through npu0 succeeded", thr["error"] is None)
    check("pressure monitor on BPF", s["monitor"] == "bpf")
    check("matmuls ran on npu0", p[1]["off_cpu"] > 0 and s["offloaded"] > 0)
    check("npu0 heated and the governor raised its cooling state", ts is not None)
    check("the monitor delivered the change", s["pressure_events"] > 0)
    check("re-placed within one token of the throttle",
          ts is not None and tp is not None and tp <= ts + 1)
    check("tokens equal the all-cpu run", [t["tok"] for t in p] == ref[:len(p)] and len(p) == len(ref))
if kill:
    p, s = kill["per_token"], kill["stats"]
    print(f"# kill: fallbacks {s['fallbacks']}, last error {s['last_error']}, offloaded {s['offloaded']}")
    check("killed agent: no error reached the caller", kill["error"] is None)
    check("killed agent: ops ran on npu0 before", p[3]["off_cpu"] > 0 and p[5]["offloaded"] > 0)
    check("killed agent: generation finished on the cpu",
          p[-1]["off_cpu"] == 0 and s["fallbacks"] >= 1 and s["last_error"] == -19 and len(p) == 40)
    check("killed agent: tokens equal the all-cpu run", [t["tok"] for t in p] == ref[:40])
rc, rn = load("run-cpu"), load("run-npu")
check("edgeq run --queue npu0: tokens equal the cpu run and place-run's",
      rc and rn and rc["tokens"] == rn["tokens"] == ref[:len(rc["tokens"])] and len(rc["tokens"]) == 12)
PY
for f in "$T"/*.err "$T"/agent*.log; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
log "checks done"
finish
