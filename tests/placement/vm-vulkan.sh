#!/usr/bin/env bash
# Runs inside the test VM (tests/placement/t_vm_vulkan.sh), edgeq.ko loaded
# with queues=gpu0: `edgeq agent --backend vulkan` serves gpu0 with
# lavapipe (the VM chroots into the host tree, which has Mesa's Vulkan
# drivers), the engine places its matrix ops on gpu0 through the module.
# Tokens must equal the all-CPU run (the shaders round as the CPU does on
# lavapipe), with mmap'd and with streamed weights, with speculation (the
# target or the draft model on the queue); the agent killed mid-generation
# leaves the generation to finish on the CPU without an error.
# Prints "N passed, N failed, N skipped".
set -u
B=${EDGEQ_TOP:-.}/${O:-build}
EDGEQ=${EDGEQ:-$B/edgeq}
Q=/sys/class/edgeq/gpu0
T=$(mktemp -d)
pass=0 fail=0
t0=$(date +%s)
log() { echo "# [$(($(date +%s) - t0))s] $*"; }
ok() { if "$@"; then pass=$((pass + 1)); echo "ok - $what"; else fail=$((fail + 1)); echo "FAIL - $what"; fi; }
finish() {
	echo "$pass passed, $fail failed, ${skipped:-0} skipped"
	[ "$fail" -eq 0 ]
	exit
}
agent_up() { # up to 60 s: compiling the pipelines on lavapipe under TCG,
	# with the other lane busy on the host's second core, took over 10
	for _ in $(seq 1200); do
		[ "$(cat $Q/agent_pid 2>/dev/null)" -gt 0 ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
start_agent() { # LOG: a Vulkan agent on gpu0, its pid in $agent
	"$EDGEQ" agent --queue gpu0 --backend vulkan >"$1" 2>&1 &
	agent=$!
	what="vulkan agent attached to gpu0 ($1)" ok agent_up
}
stop_agent() { kill "$agent" 2>/dev/null; wait "$agent" 2>/dev/null; }
js() { python3 -c "import json,sys; d=json.load(open('$1')); p=d['per_token']; s=d['stats']; sys.exit(0 if ($2) else 1)"; }
stats() { python3 -c "import json; d=json.load(open('$1')); print('# $(basename "$1"):', d['stats'], 'error', d['error'])"; }
toks() { python3 -c "import json; print(','.join(str(t['tok']) for t in json.load(open('$1'))['per_token']))"; }

[ -d "$Q" ] || { echo "no $Q: module not loaded with queues=gpu0"; fail=1; finish; }
# lavapipe under emulation is slow: ops must not time out in the module
echo 60000 >$Q/timeout_ms
"$EDGEQ" agent --list-devices >"$T/devs" 2>&1
cat "$T/devs"
if ! grep -q '^vulkan 0: ' "$T/devs"; then
	echo "no Vulkan device in the VM: $(grep '^vulkan' "$T/devs")"
	skipped=1
	finish
fi
"$B/tools/gguf-gen" -o "$T/tiny.gguf" --shape tiny --type q4_k >/dev/null
"$B/tools/gguf-gen" -o "$T/deep.gguf" --shape tiny --type q8_0 --layers 6 >/dev/null
printf '[device.gpu]\nops = matmul attn swiglu add\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/gpu.ini"
R=(--devices "$T/gpu.ini" --no-calib -p "Once upon a time")
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${R[@]}" --backend none >"$T/cpu.json"
"$B/tools/place-run" -m "$T/deep.gguf" -n 3 "${R[@]}" --backend none >"$T/deep-cpu.json"
log "cpu runs done"

# --- 1. the module with the Vulkan agent: tokens as on the CPU
start_agent "$T/agent1.log"
what="the agent says it runs on lavapipe, zero-copy" ok \
	grep -Eq 'on vulkan: llvmpipe.*memory imported' "$T/agent1.log"
# a first generation through the queue, not checked: first-use costs of
# the guest's emulated lavapipe (seconds) must not count as an op timeout
"$B/tools/place-run" -m "$T/tiny.gguf" -n 1 "${R[@]}" --backend kq --queue gpu0 >"$T/warm.json" 2>&1
stats "$T/warm.json"
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${R[@]}" --backend kq --queue gpu0 >"$T/kq.json" 2>"$T/kq.err"
stats "$T/kq.json"
what="generation through gpu0 succeeded, matmuls offloaded" ok \
	js "$T/kq.json" "d['error'] is None and s['offloaded'] > 0"
what="tokens equal the all-CPU run" ok test "$(toks "$T/kq.json")" = "$(toks "$T/cpu.json")"
what="the queue counted the agent's ops" ok test $(($(cat $Q/agent_ops))) -gt 0

# --- 2. --weights stream with the device queue
"$B/tools/place-run" -m "$T/deep.gguf" -n 3 "${R[@]}" --backend kq --queue gpu0 \
	--weights stream --weights-budget 1 >"$T/stream.json" 2>"$T/stream.err"
stats "$T/stream.json"
what="stream + gpu0: succeeded, offloaded" ok \
	js "$T/stream.json" "d['error'] is None and s['offloaded'] > 0"
what="stream + gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/stream.json")" = "$(toks "$T/deep-cpu.json")"
log "kq and stream runs done"

# --- 2b. the weight copies under a bound on the backend alone (a third of
# the unbounded run's; the placer not told, so it places what does not
# fit): copies dropped (their queue handles unregistered, the agent's
# mappings going with them) and made again; tokens unchanged
cap=$(python3 -c "import json; print(json.load(open('$T/kq.json'))['kq']['weight_copies'] // 3)")
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${R[@]}" --backend kq --queue gpu0 \
	--copy-budget-unplanned "$cap" >"$T/cap.json" 2>"$T/cap.err"
stats "$T/cap.json"
what="copy budget $cap through gpu0: under it, some dropped, offloaded" ok \
	js "$T/cap.json" "d['error'] is None and 0 < d['kq']['weight_copies'] <= $cap and d['kq']['copies_dropped'] > 0 and s['offloaded'] > 0 and s['fallbacks'] == 0"
what="copy budget through gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/cap.json")" = "$(toks "$T/cpu.json")"
# critical memory after token 2: the bound drops every copy (handles
# unregistered) and the placer moves every op to the CPU at once
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${R[@]}" --backend kq --queue gpu0 \
	--mem-at 2:3 >"$T/crit.json" 2>"$T/crit.err"
stats "$T/crit.json"
what="critical memory through gpu0: copies dropped, the CPU from then on" ok \
	js "$T/crit.json" "d['error'] is None and p[2]['off_cpu'] > 0 and p[3]['off_cpu'] == 0 and p[3]['reason'] == 4 and d['kq']['weight_copies'] == 0 and d['kq']['copies_dropped'] > 0 and s['fallbacks'] == 0"
what="critical memory through gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/crit.json")" = "$(toks "$T/cpu.json")"
log "copy budget runs done"

# --- 2c. whole blocks through gpu0: a profile that takes every op of a
# block, so each step's blocks go as one write of their 34 descriptors
# (the agent reads up to max_inflight of them per batch, one chain each),
# the KV cache the client's own memfd, mapped by the agent and written in
# place; tokens as on the CPU
printf '[device.gpu]\nops = rmsnorm matmul rope attn softmax swiglu add\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/blocks.ini"
RB=(--devices "$T/blocks.ini" --no-calib -p "Once upon a time")
inflight=$(cat $Q/max_inflight)
echo 64 >$Q/max_inflight
before=$(($(cat $Q/ops)))
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${RB[@]}" --backend kq --queue gpu0 >"$T/blocks.json" 2>"$T/blocks.err"
stats "$T/blocks.json"
what="blocks through gpu0: every block of every step in one chain, the prompt's too" ok \
	js "$T/blocks.json" "d['error'] is None and s['blocks'] - s['prefill_blocks'] == 2 * s['tokens'] and s['prefill_blocks'] == 2 and s['tokens'] < s['block_chains'] <= s['tokens'] + 2 and s['fallbacks'] == 0"
what="blocks through gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/blocks.json")" = "$(toks "$T/cpu.json")"
# 7 steps of 2 blocks of 16 ops and an output op, the first step's
# prompt on the CPU: at least the blocks' ops went through the queue
what="blocks through gpu0: the queue carried the blocks' ops" ok \
	test $(($(cat $Q/ops) - before)) -ge $((7 * (2 * 16 + 1)))
# gemma3 with a Q8_0 cache: the module's newer ops (RMSNORM rows for the
# head norms, GELU_MUL, STORE into Q8_0 rows) through the queue
"$B/tools/gguf-gen" -o "$T/gemma3.gguf" --shape tiny --arch gemma3 --type q8_0 --layers 2 >/dev/null
"$B/tools/place-run" -m "$T/gemma3.gguf" -n 8 "${RB[@]}" --kv-type q8_0 --backend none >"$T/g3-cpu.json"
"$B/tools/place-run" -m "$T/gemma3.gguf" -n 8 "${RB[@]}" --kv-type q8_0 --backend kq --queue gpu0 >"$T/g3.json" 2>"$T/g3.err"
stats "$T/g3.json"
what="gemma3, Q8_0 cache, through gpu0: every block chained" ok \
	js "$T/g3.json" "d['error'] is None and s['blocks'] - s['prefill_blocks'] == 2 * s['tokens'] and s['prefill_blocks'] == 2 and s['blocks_off'] == '' and s['fallbacks'] == 0"
what="gemma3, Q8_0 cache, through gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/g3.json")" = "$(toks "$T/g3-cpu.json")"
# speculation through gpu0: the target's verifying passes (a draft and
# the token before it, as a prompt's blocks) through the queue while the
# same model drafts on the CPU, every draft accepted; then the draft
# model's context on the queue instead; tokens as on the CPU either way
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${RB[@]}" --backend kq --queue gpu0 \
	--draft "$T/tiny.gguf" --draft-max 3 >"$T/spec.json" 2>"$T/spec.err"
stats "$T/spec.json"
what="speculation, the target on gpu0: drafts verified through the queue, all accepted" ok \
	js "$T/spec.json" "d['error'] is None and s['drafted'] > 0 and s['accepted'] == s['drafted'] and s['blocks'] > s['prefill_blocks'] and s['fallbacks'] == 0"
what="speculation, the target on gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/spec.json")" = "$(toks "$T/cpu.json")"
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${RB[@]}" --backend kq --queue gpu0 \
	--draft "$T/tiny.gguf" --draft-max 3 --draft-on draft >"$T/specd.json" 2>"$T/specd.err"
stats "$T/specd.json"
what="speculation, the draft on gpu0: its ops through the queue" ok \
	js "$T/specd.json" "d['error'] is None and s['drafted'] > 0 and s['offloaded'] > 0 and s['fallbacks'] == 0"
what="speculation, the draft on gpu0: tokens equal the all-CPU run" ok \
	test "$(toks "$T/specd.json")" = "$(toks "$T/cpu.json")"
# edgeq run chooses with the queue's real state and its installed profile
"$EDGEQ" run -m "$T/tiny.gguf" -p "Once upon a time" -n 8 --temp 0 --queue gpu0 \
	--draft "$T/tiny.gguf" --json >"$T/run-spec.json" 2>"$T/run-spec.err"
what="edgeq run --queue gpu0 --draft: the placer chose a model for the queue" ok \
	python3 -c "import json,sys; t=json.load(open('$T/run-spec.json'))['timings']; c=t['draft_choice']; sys.exit(0 if t['draft_on'] in ('target', 'draft') and (t['draft_on'] == 'draft') == (c['draft_on_tok_s'] > c['target_on_tok_s']) else 1)"
echo "$inflight" >$Q/max_inflight
log "blocks and speculation runs done"

# (the top cooling state mid-generation with the Vulkan backend is
# tests/placement/t_vulkan.sh; the governor's throttle through BPF with a
# queue is t_vm.sh: under emulation a Vulkan run long enough to throttle
# does not fit this VM's time)
stop_agent

# --- 3. staging copies (no host import) under critical memory pressure
# (a fake /proc: 2 % of memory available): the agent releases them after
# each batch and makes them again; the tokens do not change
mkdir -p "$T/proc/pressure"
printf 'MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:     160000 kB\n' >"$T/proc/meminfo"
EDGEQ_VK_IMPORT=0 EDGEQ_PROC_ROOT=$T/proc "$EDGEQ" agent --queue gpu0 \
	--backend vulkan >"$T/agent3.log" 2>&1 &
agent=$!
what="staging agent attached ($T/agent3.log)" ok agent_up
"$B/tools/place-run" -m "$T/tiny.gguf" -n 4 "${R[@]}" --backend kq --queue gpu0 >"$T/mem.json" 2>"$T/mem.err"
stats "$T/mem.json"
log "pressure run generated"
stop_agent
what="staging under pressure: the agent says so" ok \
	grep -q 'memory staging copies' "$T/agent3.log"
what="critical memory: device copies released" ok \
	grep -q 'memory pressure critical: released' "$T/agent3.log"
what="critical memory: the totals at exit" ok \
	grep -Eq 'MiB of device copies released under memory pressure \([0-9]+ times\)' "$T/agent3.log"
what="critical memory: succeeded, tokens equal the all-CPU run" ok \
	test "$(toks "$T/mem.json")" = "$(toks "$T/cpu.json" | cut -d, -f1-4)"
log "pressure run done"

# --- 4. the agent SIGKILLed mid-generation
start_agent "$T/agent2.log"
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${R[@]}" --backend kq --queue gpu0 \
	--kill-agent-at 2 --agent-pid $agent >"$T/kill.json" 2>"$T/kill.err"
stats "$T/kill.json"
stop_agent
what="killed agent: no error reached the caller" ok \
	js "$T/kill.json" "d['error'] is None and s['fallbacks'] >= 1 and s['last_error'] == -19"
what="killed agent: ran on gpu0 before, finished on the CPU" ok \
	js "$T/kill.json" "p[1]['off_cpu'] > 0 and p[-1]['off_cpu'] == 0 and len(p) == 8"
what="killed agent: tokens equal the all-CPU run" ok test "$(toks "$T/kill.json")" = "$(toks "$T/cpu.json")"
log "kill run done"

# --- 4b. killed in the middle of whole-block chains: the CPU takes over
# with the KV rows the agent wrote into the shared cache
start_agent "$T/agent4.log"
"$B/tools/place-run" -m "$T/tiny.gguf" -n 8 "${RB[@]}" --backend kq --queue gpu0 \
	--kill-agent-at 3 --agent-pid $agent >"$T/killb.json" 2>"$T/killb.err"
stats "$T/killb.json"
stop_agent
what="killed agent, blocks: chained before, the CPU after, no error" ok \
	js "$T/killb.json" "d['error'] is None and s['blocks'] > 0 and s['fallbacks'] >= 1 and p[-1]['off_cpu'] == 0 and len(p) == 8"
what="killed agent, blocks: tokens equal the all-CPU run" ok test "$(toks "$T/killb.json")" = "$(toks "$T/cpu.json")"
log "kill blocks run done"

# (edgeq run --queue through a queue is checked with the CPU agent in
# vm-scenario.sh: the client side is the same; a second Vulkan run here
# does not fit the VM's time under emulation)
for f in "$T"/*.err "$T"/agent*.log; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
log "done"
finish
