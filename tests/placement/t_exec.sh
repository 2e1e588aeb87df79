#!/usr/bin/env bash
# Execution on placed devices (in-process backend): tokens do not depend on
# the placement; a throttle re-places within one token; an agent lost
# mid-generation leaves no error; calibration moves ops off a device slower
# than its profile claims.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/testlib.sh"

B=${EDGEQ_TOP:-.}/${O:-build}
RUN=$B/tools/place-run
GEN=$B/tools/gguf-gen
[ -x "$RUN" ] && [ -x "$GEN" ] || skip_all "place-run or gguf-gen not built"
"$GEN" -o "$T/tiny.gguf" --shape tiny --type q8_0 >/dev/null ||
	skip_all "gguf-gen could not make the tiny model"
# an npu twice the cpu's bandwidth, free to call: the matmuls go there
printf '[device.npu]\nops = matmul attn swiglu add\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/npu.ini"
R=("$RUN" -m "$T/tiny.gguf" -n 24 -p "Once upon a time")
Q=(--queue npu0 --devices "$T/npu.ini")
js() { python3 -c "import json,sys; d=json.load(open('$1')); p=d['per_token']; s=d['stats']; sys.exit(0 if ($2) else 1)"; }
toks() { python3 -c "import json; print([t['tok'] for t in json.load(open('$1'))['per_token']])"; }

"${R[@]}" --backend none >"$T/cpu.json"
check "all-cpu run" js "$T/cpu.json" "d['error'] is None and len(p) >= 8 and s['offloaded'] == 0"

"${R[@]}" "${Q[@]}" --no-calib >"$T/npu.json"
check "matmuls ran on npu0" js "$T/npu.json" "s['offloaded'] > 0 and all(t['off_cpu'] > 0 for t in p)"
check "tokens equal the all-cpu run" test "$(toks "$T/npu.json")" = "$(toks "$T/cpu.json")"

"${R[@]}" "${Q[@]}" --no-calib --threads 2 >"$T/npu2.json"
check "2 threads: same tokens" test "$(toks "$T/npu2.json")" = "$(toks "$T/cpu.json")"

# npu0 throttled (cooling 3 of 4) after token 3: token 4 runs all on the cpu
"${R[@]}" "${Q[@]}" --no-calib --throttle-at 3 --cooling 3/4 >"$T/thr.json"
check "before the throttle: on npu0" js "$T/thr.json" "p[3]['off_cpu'] > 0 and p[3]['replans'] == 0"
check "the next token is placed anew" js "$T/thr.json" "p[4]['off_cpu'] == 0 and p[4]['replans'] == 1 and p[4]['reason'] == 2"
check "throttled: nothing more offloaded" js "$T/thr.json" "p[-1]['offloaded'] == p[4]['offloaded']"
check "throttled: tokens unchanged" test "$(toks "$T/thr.json")" = "$(toks "$T/cpu.json")"

# the agent dies at its 30th op, in the middle of a step
"${R[@]}" "${Q[@]}" --no-calib --fail-after 30 >"$T/kill.json"
check "agent lost: no error reaches the caller" js "$T/kill.json" "d['error'] is None"
check "agent lost: one op fell back, the rest moved at once" js "$T/kill.json" \
	"s['fallbacks'] == 1 and s['last_error'] == -19 and p[-1]['off_cpu'] == 0 and p[-1]['reason'] == 3"
check "agent lost: tokens unchanged" test "$(toks "$T/kill.json")" = "$(toks "$T/cpu.json")"

# calibration: the profile says the npu is fast, but each op takes 100 us
# more than on the cpu; measured times move the matmuls back
printf '[device.npu]\nops = matmul\ndtypes = all\ngflops = 1e5\nmem_gbs = 1000\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/liar.ini"
"${R[@]}" --queue npu0 --devices "$T/liar.ini" -n 24 --inline-delay-us 100 >"$T/cal.json"
check "calibration: starts on npu0, measured, moved" js "$T/cal.json" \
	"p[0]['off_cpu'] > 0 and p[-1]['off_cpu'] < p[0]['off_cpu'] and s['replans'] >= 1"
check "calibration: tokens unchanged" test "$(toks "$T/cal.json")" = "$(toks "$T/cpu.json")"

# the measured times explain the plan: predicted beside measured
"${R[@]}" --queue npu0 --devices "$T/liar.ini" -n 24 --inline-delay-us 100 \
	--save-calib "$T/calib" >/dev/null
check "calibration saved" grep -q '^npu0 attn_qkv ' "$T/calib"
"${EDGEQ:-$B/edgeq}" plan -m "$T/tiny.gguf" --placement --queue npu0 --devices "$T/liar.ini" \
	--sysfs "$T/none" --calib "$T/calib" --json >"$T/plan.json"
check "plan --calib: measured beside predicted for every matmul" python3 -c "
import json; d=json.load(open('$T/plan.json'))
mm=[o for o in d['ops'] if o['kind']=='matmul' and o['layer']>=0]
assert d['calibrated'] and mm and all('measured_ns' in o for o in mm), mm[:2]
# calibrated predictions follow the measurements (same device, same op)
assert all(abs(o['predicted_ns']-o['measured_ns']) <= 0.5*o['measured_ns'] for o in mm), mm[:2]
"
# edgeq run --queue without the module: refused with what to do
"${EDGEQ:-$B/edgeq}" run -m "$T/tiny.gguf" -p a -n 2 --temp 0 --queue npu0 \
	--no-roofline >/dev/null 2>"$T/err"
check "edgeq run --queue without a queue: exit 6" test $? -eq 6
check "... naming the queue" grep -q "npu0: no such queue" "$T/err"
"${EDGEQ:-$B/edgeq}" run -m "$T/tiny.gguf" -p a -n 2 --temp 0 --queue tpu0 \
	--no-roofline >/dev/null 2>"$T/err"
check "edgeq run --queue with an unknown profile: exit 2" test $? -eq 2
# whole blocks through the backend interface on the CPU kernels (what a
# CPU agent runs, edgeq_kq_exec(): RMSNORM (over rows too), ROPE, STORE,
# ATTENTION, SILU_MUL, GELU_MUL and ADD as well as the products): every block and the head of every step
# in one chain, the logits the decoder's own bits, 1 and 2 threads
printf '[device.gpu]\nops = rmsnorm matmul rope attn softmax swiglu add\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/gpu.ini"
G=(--queue gpu0 --devices "$T/gpu.ini" --no-calib)
for ty in q8_0 q4_k f16 llama3 qwen2 qwen3 gemma3 q8kv; do
	kv=()
	case $ty in
	q8kv) a=(--type q4_0); kv=(--kv-type q8_0) ;; # STORE into Q8_0 rows
	llama3) a=(--type q8_0 --rope-llama3) ;;
	qwen2) a=(--type q4_0 --arch qwen2) ;;
	qwen3) a=(--type q8_0 --arch qwen3) ;; # head norms: RMSNORM rows
	gemma3) a=(--type q4_k --arch gemma3) ;; # GELU_MUL, post norms
	*) a=(--type "$ty") ;;
	esac
	"$GEN" -o "$T/b-$ty.gguf" --shape tiny "${a[@]}" --layers 3 >/dev/null
	"$RUN" -m "$T/b-$ty.gguf" -n 24 -p "Once upon a time" "${kv[@]}" --backend none >"$T/b-$ty-cpu.json"
	"$RUN" -m "$T/b-$ty.gguf" -n 24 -p "Once upon a time" "${kv[@]}" "${G[@]}" --backend cpudev >"$T/b-$ty.json"
	check "$ty blocks via the CPU backend: all chained, one chain a step" \
		js "$T/b-$ty.json" "d['error'] is None and s['blocks'] - s['prefill_blocks'] == 3 * s['tokens'] and s['prefill_blocks'] == 3 and s['tokens'] < s['block_chains'] <= s['tokens'] + 3 and d['dev']['chains'] == s['block_chains']"
	check "$ty blocks via the CPU backend: tokens unchanged" test "$(toks "$T/b-$ty.json")" = "$(toks "$T/b-$ty-cpu.json")"
	f="1,$(python3 -c "import json; print(','.join(str(t['tok']) for t in json.load(open('$T/b-$ty-cpu.json'))['per_token']))")"
	for th in 1 2; do
		"$RUN" -m "$T/b-$ty.gguf" -p "Once upon a time" "${kv[@]}" --threads $th --backend none --force "$f" --dump-logits "$T/b-$ty-cpu.bin" >/dev/null
		"$RUN" -m "$T/b-$ty.gguf" -p "Once upon a time" "${kv[@]}" --threads $th "${G[@]}" --backend cpudev --force "$f" --dump-logits "$T/b-$ty-dev.bin" >/dev/null
		check "$ty blocks via the CPU backend, $th threads: the decoder's logits bit for bit" \
			cmp -s "$T/b-$ty-cpu.bin" "$T/b-$ty-dev.bin"
	done
done
summary
