#!/usr/bin/env bash
# timeout: 300
# edgeq's logits against tests/decoder/ref.py (an independent numpy
# implementation with its own GGUF parser and dequantizers) on tiny
# synthetic models of every weight type (the llama-quantize mixes Q4_K_M,
# Q5_K_M, Q3_K_M, Q2_K, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS included), qwen2, a tied output, a Q8_0 KV
# cache, and $EDGEQ_TEST_MODELS/stories260K.gguf. Prefill runs in batches
# of 4 so the matrix-matrix path and the decode path are both compared.
# Tolerance: max |edgeq - ref| <= TOL * max(1, max |ref|) per row; TOL is
# 0.005 for float weights (F16 KV cache only) and 0.05 where activations
# are quantized to 8 bits (Q8_0/Q8_K) for the integer dot products.
. "$(dirname "$0")/../lib/testlib.sh"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || skip_all "python3-numpy is not installed (tools/install-deps)"
GEN=${O:-build}/tools/gguf-gen
REF=$(dirname "$0")/ref.py
[ -x "$GEN" ] || skip_all "gguf-gen is not built"
PROMPT="Hello world, this is a test of the decoder"

compare() { # what model tol [edgeq args...]
	local what=$1 model=$2 tol=$3; shift 3
	if ! "$EDGEQ" run -m "$model" -p "$PROMPT" -n 6 -b 4 --weights mmap --dump-logits "$T/l.bin" "$@" >"$T/l.json"; then
		check "$what: edgeq run" false
		return
	fi
	check "$what (tol $tol)" $PY "$REF" compare "$model" "$T/l.bin" "$T/l.json" "$tol"
}

for t in f32 f16 bf16 q8_0 q4_0 q4_k q5_k_m q3_k_m q2_k q4_1 q5_0 q5_1 iq4_nl iq4_xs; do
	"$GEN" -o "$T/tiny-$t.gguf" --type "$t" --seed 7
	case $t in f32|f16|bf16) tol=0.005 ;; *) tol=0.05 ;; esac
	compare "tiny $t" "$T/tiny-$t.gguf" $tol -t 2
done
"$GEN" -o "$T/qwen2.gguf" --type f16 --arch qwen2 --seed 3
compare "tiny qwen2 f16 (biases, neox rope)" "$T/qwen2.gguf" 0.005 -t 2
"$GEN" -o "$T/rf.gguf" --type f32 --rope-freqs --seed 5
compare "tiny f32 with Llama 3 rope_freqs factors" "$T/rf.gguf" 0.001 --kv-type f32 --ctx-size 64
"$GEN" -o "$T/tied.gguf" --type q8_0 --tied --seed 4
compare "tiny q8_0 tied output" "$T/tied.gguf" 0.05 -t 1
compare "tiny f16 with a Q8_0 KV cache" "$T/tiny-f16.gguf" 0.05 --kv-type q8_0
LONG=$(for i in 1 2 3 4 5 6 7; do printf 'the quick brown fox jumps over the lazy dog %d ' $i; done)
PROMPT=$LONG compare "tiny q8_0, a 220-token prompt (4 prefill batches of 64)" "$T/tiny-q8_0.gguf" 0.05 -b 64 -t 2
compare "tiny f32 with an F32 KV cache" "$T/tiny-f32.gguf" 0.001 --kv-type f32
if [ -f "$EDGEQ_TEST_MODELS/stories260K.gguf" ]; then
	PROMPT="Once upon a time"
	compare "stories260K (F32, trained)" "$EDGEQ_TEST_MODELS/stories260K.gguf" 0.005 -t 2
else
	echo "skip - stories260K.gguf not in \$EDGEQ_TEST_MODELS"
fi
summary
