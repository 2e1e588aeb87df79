#!/usr/bin/env bash
# Whole decoder blocks on the Vulkan device as one chain per step
# (placement/blocks.c), without edgeq.ko: a device profile that takes every
# op of a block, place-run's in-process device backend on lavapipe.
#  - the prompt's batch as blocks too (MATMUL products, norms over its
#    rows, RoPE and causal attention of its tokens in one op each, KV
#    writes);
#  - greedy tokens as the all-CPU run (or a tie within the tolerance) on the
#    tiny models of every weight type and stories260K, with every block of
#    every step on the device and one submission per step for all of them
#    (plus the output's);
#  - qwen3's per-head norms (RMSNORM rows), gemma3's post norms, GELU and
#    sliding layers as blocks too;
#  - F32, F16 and Q8_0 caches chain (STORE quantizes the Q8_0 rows as
#    the decoder does); the architectures the ops cannot express (phi3's
#    fused matrices, gemma2's caps) keep the per-op path and say why;
#  - --weights stream: one chain per block, tokens unchanged;
#  - the device lost in the middle of a chain and throttled to its top
#    cooling state: the CPU finishes (the KV rows as the device left them),
#    no error, same tokens; a copy bound under a block's weights: planned
#    on the CPU, or, the placer not told, refused by the backend, the
#    device kept;
#  - the staging-copy memory path: the same tokens.
# Skips without a Vulkan device (fails under CI=true: lavapipe is expected).
# timeout: 400
set -u
. "$(dirname "$0")/../lib/testlib.sh"

# the device profile: what the Vulkan device may take
VK_OPS="rmsnorm matmul rope attn softmax swiglu add"
. "$(dirname "$0")/vk_compare.sh"

# every block of every step on the device, and the output head after
# them: one submission a step (a preload still reading at the first step
# sends that step's head on its own), and the prompt's blocks
blocks_all() { # NAME LAYERS
	check "$1: every block on the device, one chain a step" \
		js "$T/$1-vk.json" "s['blocks'] - s['prefill_blocks'] == s['tokens'] * $2 and s['tokens'] < s['block_chains'] <= s['tokens'] + $2 and s['block_chains'] <= d['dev']['chains'] <= s['block_chains'] + 1 and s['blocks_off'] == ''"
	check "$1: the prompt's blocks on the device too" \
		js "$T/$1-vk.json" "s['prefill_blocks'] == $2"
	# lavapipe has float64: the shaders' rounding is the CPU's, every op
	# of the block included (exp, softmax order, division), so the
	# teacher-forced logits are the same bits
	if grep -q 'llvmpipe' "$T/devs"; then
		check "$1: blocks on lavapipe give the CPU's logits bit for bit" \
			cmp -s "$T/$1-cpu.bin" "$T/$1-vk.bin"
	fi
}
for ty in q8_0 q4_0 q4_k f16 f32; do
	"$GEN" -o "$T/tiny-$ty.gguf" --shape tiny --type "$ty" >/dev/null
	compare "tiny-$ty" "$T/tiny-$ty.gguf"
	blocks_all "tiny-$ty" 2
done
# the model's own RoPE frequencies (Llama 3.1's bands, per-dimension
# divisors, as ROPE_FREQ) and qwen2's biases (an ADD after the product)
"$GEN" -o "$T/llama3.gguf" --shape tiny --type q8_0 --rope-llama3 >/dev/null
compare llama3-rope "$T/llama3.gguf"
blocks_all llama3-rope 2
"$GEN" -o "$T/freqs.gguf" --shape tiny --type q4_k --rope-freqs >/dev/null
compare rope-freqs "$T/freqs.gguf"
blocks_all rope-freqs 2
"$GEN" -o "$T/qwen2.gguf" --shape tiny --arch qwen2 --type q8_0 --layers 3 >/dev/null
compare qwen2-q8_0 "$T/qwen2.gguf"
blocks_all qwen2-q8_0 3
S=$EDGEQ_TEST_MODELS/stories260K.gguf
if [ -r "$S" ]; then
	compare stories260K "$S"
	blocks_all stories260K 5
else
	echo "# stories260K.gguf absent: not compared"
fi
# per-head q/k norms as RMSNORM rows (qwen3), and gemma3's post norms,
# GELU and sliding layers (gguf-gen's window is 8, so that the sliding
# layers' attention starts past the first rows)
"$GEN" -o "$T/qwen3.gguf" --shape tiny --arch qwen3 --type q8_0 --layers 3 >/dev/null
compare qwen3-q8_0 "$T/qwen3.gguf"
blocks_all qwen3-q8_0 3
"$GEN" -o "$T/gemma3.gguf" --shape tiny --arch gemma3 --type q4_0 --layers 4 >/dev/null
compare gemma3-q4_0 "$T/gemma3.gguf"
blocks_all gemma3-q4_0 4
# what the ops cannot express: the per-op path, and why
for a in phi3 gemma2; do
	"$GEN" -o "$T/$a.gguf" --shape tiny --arch "$a" --type q8_0 --layers 4 >/dev/null
	compare "$a-q8_0" "$T/$a.gguf"
	check "$a: no blocks chained, the reason given" \
		js "$T/$a-q8_0-vk.json" "s['blocks'] == 0 and s['blocks_off'] != ''"
done

M=$T/tiny-q8_0.gguf
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend none >"$T/ref.json"
# the cache types: F32 and Q8_0 chain (each against its own CPU reference)
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend none --kv-type f32 >"$T/f32-cpu.json"
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --kv-type f32 >"$T/f32.json"
check "F32 cache: blocks chained" js "$T/f32.json" "s['blocks'] == 2 * s['tokens'] + s['prefill_blocks'] and d['error'] is None"
check "F32 cache: tokens as the CPU's with that cache" test "$(toks "$T/f32.json")" = "$(toks "$T/f32-cpu.json")"
"$RUN" -m "$M" -n 8 "${Q[@]}" --backend vulkan --kv-type q8_0 >"$T/q8.json"
check "Q8_0 cache: blocks chained (STORE into Q8_0 rows)" js "$T/q8.json" "s['blocks'] == 2 * s['tokens'] + s['prefill_blocks'] and s['prefill_blocks'] == 2 and d['error'] is None"
"$RUN" -m "$M" -n 8 "${Q[@]}" --backend none --kv-type q8_0 >"$T/q8-cpu.json"
check "Q8_0 cache: tokens as the CPU's with that cache" test "$(toks "$T/q8.json")" = "$(toks "$T/q8-cpu.json")"
f="1,$(toks "$T/q8-cpu.json")"
"$RUN" -m "$M" "${Q[@]}" --backend none --kv-type q8_0 --force "$f" --dump-logits "$T/q8-cpu.bin" >/dev/null
"$RUN" -m "$M" "${Q[@]}" --backend vulkan --kv-type q8_0 --force "$f" --dump-logits "$T/q8-vk.bin" >/dev/null
if grep -q 'llvmpipe' "$T/devs"; then
	check "Q8_0 cache: the CPU's logits bit for bit (the rows the decoder quantizes)" \
		cmp -s "$T/q8-cpu.bin" "$T/q8-vk.bin"
fi

# a prompt of more than a batch (64 tokens): its blocks in chains of up
# to 1000 ops, each one command buffer on the device
long=$(python3 -c "print(' '.join(['once upon a time there was a little cat'] * 12))")
"$RUN" -m "$M" -n 4 --queue gpu0 --devices "$T/gpu.ini" --no-calib -p "$long" --backend vulkan >"$T/long.json"
"$RUN" -m "$M" -n 4 --queue gpu0 --devices "$T/gpu.ini" --no-calib -p "$long" --backend none >"$T/long-cpu.json"
check "long prompt: every batch's blocks on the device, a chain a submission" \
	js "$T/long.json" "d['error'] is None and s['prefill_blocks'] >= 4 and s['prefill_blocks'] % 2 == 0 and d['dev']['chains'] <= s['block_chains'] + 1"
check "long prompt: tokens as the CPU's" test "$(toks "$T/long.json")" = "$(toks "$T/long-cpu.json")"
# a batch's RoPE and attention one dispatch each (EDGEQ_F_TOKENS): a
# prompt block as few dispatches as a decode step's (~21 for this model;
# one RoPE and attention a token would add 3 a token, ~650 here)
check "long prompt: a batch's RoPE and attention one op each, not one a token" \
	js "$T/long.json" "d['dev']['dispatches'] <= 30 * s['blocks']"

# --weights stream: a block at a time (its weights are there only then)
"$GEN" -o "$T/deep.gguf" --shape tiny --type q8_0 --layers 6 >/dev/null
"$RUN" -m "$T/deep.gguf" -n 16 "${Q[@]}" --backend none >"$T/deep-cpu.json"
"$RUN" -m "$T/deep.gguf" -n 16 "${Q[@]}" --backend vulkan --weights stream \
	--weights-budget 1 >"$T/deep-vk.json"
check "stream: weights streamed, one chain per block" \
	js "$T/deep-vk.json" "d['dev']['weights'] == 'stream' and d['dev']['stream_reads'] > 0 and s['blocks'] == 6 * s['tokens'] + s['prefill_blocks'] and s['prefill_blocks'] == 6 and s['block_chains'] == s['blocks']"
check "stream: tokens as the all-CPU run" test "$(toks "$T/deep-vk.json")" = "$(toks "$T/deep-cpu.json")"

# the device lost at its 40th op: in the second step's chain
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --fail-after 40 >"$T/lost.json"
check "device lost mid-chain: no error reached the caller" js "$T/lost.json" "d['error'] is None and s['fallbacks'] == 1 and s['last_error'] == -19 and s['blocks'] > 0"
check "device lost mid-chain: the CPU finished" js "$T/lost.json" "p[-1]['off_cpu'] == 0 and len(p) == 24"
check "device lost mid-chain: tokens unchanged" test "$(toks "$T/lost.json")" = "$(toks "$T/ref.json")"
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --throttle-at 3 --cooling 4/4 >"$T/thr.json"
check "top cooling state: blocks on the device before, the CPU after" \
	js "$T/thr.json" "p[3]['off_cpu'] > 0 and p[4]['off_cpu'] == 0 and s['blocks'] - s['prefill_blocks'] == 2 * 3 and d['error'] is None"
check "top cooling state: tokens unchanged" test "$(toks "$T/thr.json")" = "$(toks "$T/ref.json")"
# a copy bound under a block's weights: planned, every op on the CPU; the
# same bound on the backend alone (the placer not told): each block's chain
# refused (-ENOSPC), the CPU runs it, the device kept
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --copy-budget 1000 >"$T/cap0.json"
check "copy bound under a block: planned on the CPU" \
	js "$T/cap0.json" "s['blocks'] == 0 and s['offloaded'] == 0 and s['copy_refused'] == 0 and s['fallbacks'] == 0 and d['error'] is None"
check "copy bound: tokens unchanged" test "$(toks "$T/cap0.json")" = "$(toks "$T/ref.json")"
"$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan --copy-budget-unplanned 1000 >"$T/capu.json"
check "copy bound on the backend alone: blocks refused, the CPU, the device kept" \
	js "$T/capu.json" "s['blocks'] == 0 and s['copy_refused'] > 0 and s['fallbacks'] == 0 and d['error'] is None"
check "copy bound on the backend alone: tokens unchanged" test "$(toks "$T/capu.json")" = "$(toks "$T/ref.json")"

# the staging-copy path: the KV rows copied in and back around each chain
EDGEQ_VK_IMPORT=0 "$RUN" -m "$M" -n 24 "${Q[@]}" --backend vulkan >"$T/stage.json"
check "staging path: blocks chained" js "$T/stage.json" "d['dev']['memory'] == 'staging' and s['blocks'] == 2 * s['tokens'] + s['prefill_blocks'] and s['prefill_blocks'] == 2"
check "staging path: tokens unchanged" test "$(toks "$T/stage.json")" = "$(toks "$T/ref.json")"
summary
