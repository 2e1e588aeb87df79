#!/usr/bin/env bash
# The Vulkan backend in the generation loop, without edgeq.ko: place-run's
# in-process device backend runs the placed matrix ops with the same
# backend code an agent runs behind a queue (edgeq_place_dev_new()).
#  - greedy tokens equal the all-CPU run on the tiny models of every weight
#    type and stories260K; where they do not, the first differing step's
#    logit pair must be a tie within the tolerance (teacher-forced logits of
#    both runs are compared and reported either way). On lavapipe the
#    shaders reproduce the CPU's rounding (float64 fma and division), so the
#    logits are the same bits; the float-only shaders of GPUs without
#    float64 are compared on stories260K;
#  - --weights stream (slot buffers reused by different layers) with a
#    device: one weight copy per tensor, tokens unchanged;
#  - the device lost mid-generation, and throttled to its top cooling
#    state mid-generation: the CPU finishes, no error, same tokens;
#  - the staging-copy memory path (EDGEQ_VK_IMPORT=0) gives the same tokens.
# Skips without a Vulkan device (fails under CI=true: lavapipe is expected).
# timeout: 400
set -u
. "$(dirname "$0")/../lib/testlib.sh"

# the device profile: what the Vulkan device may take
VK_OPS="matmul attn swiglu add"
. "$(dirname "$0")/vk_compare.sh"

for ty in q8_0 q4_0 q4_k f16 f32; do
	"$GEN" -o "$T/tiny-$ty.gguf" --shape tiny --type "$ty" >/dev/null
	compare "tiny-$ty" "$T/tiny-$ty.gguf"
done
# the other architectures: fused q|k|v (phi3), head norms (qwen3), sliding
# windows and post-norms (gemma3) with their matmuls on the device
for a in phi3 qwen3 gemma3; do
	"$GEN" -o "$T/$a.gguf" --shape tiny --arch "$a" --type q8_0 --layers 6 >/dev/null
	compare "$a-q8_0" "$T/$a.gguf"
done
S=$EDGEQ_TEST_MODELS/stories260K.gguf
if [ -r "$S" ]; then
	compare stories260K "$S"
	# the float-only shaders (GPUs without float64): not bit for bit
	EDGEQ_VK_FLOAT64=0 compare stories260K-float-only "$S"
else
	echo "# stories260K.gguf absent: not compared"
fi

# --weights stream with a device: 12 layers through a tiny budget, so the
# streamer's slot buffers carry different layers at the same address
"$GEN" -o "$T/deep.gguf" --shape tiny --type q8_0 --layers 12 >/dev/null
"$RUN" -m "$T/deep.gguf" -n 16 "${Q[@]}" --backend none >"$T/deep-cpu.json"
"$RUN" -m "$T/deep.gguf" -n 16 "${Q[@]}" --backend vulkan --weights stream \
	--weights-budget 1 >"$T/deep-vk.json"
check "stream: weights streamed" js "$T/deep-vk.json" "d['dev']['weights'] == 'stream' and d['dev']['stream_reads'] > 0"
check "stream: tokens as the all-CPU run" test "$(toks "$T/deep-vk.json")" = "$(toks "$T/deep-cpu.json")"
"$RUN" -m "$T/deep.gguf" -n 16 "${Q[@]}" --backend vulkan >"$T/deep-mmap.json"
check "stream: one copy per weight tensor, as without streaming" \
	js "$T/deep-vk.json" "d['dev']['weight_copies'] == json.load(open('$T/deep-mmap.json'))['dev']['weight_copies']"

M=$T/tiny-q8_0.gguf
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend none >"$T/ref.json"
# the device lost at its 40th op, in the middle of a step
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --fail-after 40 >"$T/lost.json"
check "device lost: no error reached the caller" js "$T/lost.json" "d['error'] is None and s['fallbacks'] >= 1 and s['last_error'] == -19"
check "device lost: the CPU finished the generation" js "$T/lost.json" "p[-1]['off_cpu'] == 0 and len(p) == 24"
check "device lost: tokens unchanged" test "$(toks "$T/lost.json")" = "$(toks "$T/ref.json")"
# throttled to its top cooling state after token 3
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --throttle-at 3 --cooling 4/4 >"$T/thr.json"
check "top cooling state: on the device before" js "$T/thr.json" "p[3]['off_cpu'] > 0"
check "top cooling state: the CPU from the next token on" js "$T/thr.json" "p[4]['off_cpu'] == 0 and p[-1]['offloaded'] == p[4]['offloaded'] and d['error'] is None"
check "top cooling state: tokens unchanged" test "$(toks "$T/thr.json")" = "$(toks "$T/ref.json")"

# the weight copies under a bound: the placer plans within it, giving
# blocks back to the CPU from the end (the output first), so the copies
# stay under it and nothing is refused or copied again step after step;
# a bound under one block keeps every op on the CPU, the device kept
D=$T/deep.gguf
"$RUN" -m "$D" -n 12 "${Q[@]}" --backend vulkan >"$T/copies.json"
cap=$(python3 -c "import json; print(json.load(open('$T/copies.json'))['dev']['weight_copies'] * 5 // 12)")
"$RUN" -m "$D" -n 12 "${Q[@]}" --backend vulkan --copy-budget "$cap" >"$T/cap.json"
check "copy bound $cap: planned within it, some blocks still offloaded" \
	js "$T/cap.json" "0 < d['dev']['weight_copies'] <= $cap and s['copy_refused'] == 0 and d['dev']['copies_dropped'] == 0 and 0 < p[-1]['off_cpu'] < json.load(open('$T/copies.json'))['per_token'][-1]['off_cpu'] and s['fallbacks'] == 0 and d['error'] is None"
check "copy bound: tokens unchanged" test "$(toks "$T/cap.json")" = "$(toks "$T/deep-cpu.json" | cut -d, -f1-12)"
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --copy-budget 1000 >"$T/cap0.json"
check "copy bound below every block: all on the CPU, the device not lost" \
	js "$T/cap0.json" "s['offloaded'] == 0 and s['copy_refused'] == 0 and s['fallbacks'] == 0 and d['dev']['weight_copies'] == 0 and d['error'] is None"
check "copy bound below every block: tokens unchanged" test "$(toks "$T/cap0.json")" = "$(toks "$T/ref.json")"
# memory pressure moves the bound: critical after token 3 drops every copy
# and re-places at once (reason 4, memory); medium bounds the copies to a
# quarter of what is available
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --mem-at 3:3 >"$T/crit.json"
check "critical memory: every copy dropped, the CPU from the next token" \
	js "$T/crit.json" "p[3]['off_cpu'] > 0 and p[4]['off_cpu'] == 0 and p[4]['reason'] == 4 and d['dev']['weight_copies'] == 0 and d['dev']['copies_dropped'] > 0 and s['copy_bound'] == 1 and s['fallbacks'] == 0 and d['error'] is None"
check "critical memory: tokens unchanged" test "$(toks "$T/crit.json")" = "$(toks "$T/ref.json")"
"$RUN" -m "$D" -n 12 "${Q[@]}" --backend vulkan --mem-at "3:2:$((4 * cap))" >"$T/med.json"
check "medium memory: the copies bounded to a quarter of what is available" \
	js "$T/med.json" "s['copy_bound'] == $cap and d['dev']['weight_copies'] <= $cap and p[4]['off_cpu'] < p[3]['off_cpu'] and d['error'] is None"
check "medium memory: tokens unchanged" test "$(toks "$T/med.json")" = "$(toks "$T/deep-cpu.json" | cut -d, -f1-12)"

# the staging-copy path
EDGEQ_VK_IMPORT=0 "$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan >"$T/stage.json"
check "staging path in use and counted" js "$T/stage.json" "d['dev']['memory'] == 'staging' and d['dev']['device_bytes'] > d['dev']['weight_copies']"
check "staging path: tokens unchanged" test "$(toks "$T/stage.json")" = "$(toks "$T/ref.json")"
"$RUN" -m "$M" -n 4 "${Q[@]}" --backend vulkan >"$T/imp.json"
check "import path: zero-copy reported" js "$T/imp.json" "d['dev']['memory'] == 'import' or 'host import no' in open('$T/devs').read()"
summary
