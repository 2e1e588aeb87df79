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

# the mixes' tensor types, as llama.cpp's llama_tensor_get_type picks them
# for this shape (2 layers, GQA 2): "tensor=type ..." per file
check_mix() { # what file tensor=TYPEID...
	local what=$1 f=$2; shift 2
	check "$what: tensor types of llama-quantize's mix" $PY -c '
import sys
sys.path.insert(0, sys.argv[1])
import ref
_, _, t = ref.load_gguf(sys.argv[2])
bad = [w for w in sys.argv[3:] if t[w.split("=")[0]][1] != int(w.split("=")[1])]
print("wrong:", bad, [(w.split("=")[0], t[w.split("=")[0]][1]) for w in bad]) if bad else None
sys.exit(1 if bad else 0)' "$(dirname "$REF")" "$f" "$@"
}

for t in f32 f16 bf16 q8_0 q4_0 q4_k q5_k_m q3_k_m q2_k q4_1 q5_0 q5_1 iq4_nl iq4_xs; do
	"$GEN" -o "$T/tiny-$t.gguf" --type "$t" --seed 7
	case $t in f32|f16|bf16) tol=0.005 ;; *) tol=0.05 ;; esac
	compare "tiny $t" "$T/tiny-$t.gguf" $tol -t 2
done
# type ids: Q4_1 3, Q5_0 6, Q5_1 7, Q2_K 10, Q3_K 11, Q4_K 12, Q5_K 13,
# Q6_K 14, IQ4_NL 20, IQ4_XS 23
check_mix "q5_k_m" "$T/tiny-q5_k_m.gguf" output.weight=14 token_embd.weight=13 \
	blk.0.attn_q.weight=13 blk.0.attn_v.weight=13 blk.1.attn_v.weight=14 \
	blk.0.ffn_down.weight=13 blk.1.ffn_down.weight=14 blk.1.ffn_up.weight=13
check_mix "q3_k_m" "$T/tiny-q3_k_m.gguf" output.weight=14 token_embd.weight=11 \
	blk.0.attn_q.weight=11 blk.0.attn_v.weight=13 blk.1.attn_v.weight=13 \
	blk.0.attn_output.weight=12 blk.1.ffn_down.weight=12 blk.1.ffn_gate.weight=11
check_mix "q2_k" "$T/tiny-q2_k.gguf" output.weight=14 token_embd.weight=10 \
	blk.0.attn_q.weight=10 blk.0.attn_v.weight=11 blk.0.attn_output.weight=11 \
	blk.1.ffn_down.weight=11 blk.1.ffn_up.weight=10
check_mix "iq4_xs" "$T/tiny-iq4_xs.gguf" output.weight=14 token_embd.weight=23 \
	blk.0.attn_v.weight=23 blk.0.ffn_down.weight=23
check_mix "q4_1" "$T/tiny-q4_1.gguf" output.weight=14 blk.1.ffn_down.weight=3
"$GEN" -o "$T/qwen2.gguf" --type f16 --arch qwen2 --seed 3
compare "tiny qwen2 f16 (biases, neox rope)" "$T/qwen2.gguf" 0.005 -t 2
"$GEN" -o "$T/qwen3.gguf" --type f16 --arch qwen3 --seed 6
compare "tiny qwen3 f16 (per-head q/k norms, heads wider than the embedding)" "$T/qwen3.gguf" 0.005 -t 2
# a qwen3 file without a head norm, or with values narrower than keys
/usr/bin/python3 -c "
b=open('$T/qwen3.gguf','rb').read()
open('$T/q3-nonorm.gguf','wb').write(b.replace(b'blk.1.attn_k_norm.weight',b'blk.1.attn_k_mrom.weight',1))
i=b.index(b'qwen3.attention.value_length')+28+4
open('$T/q3-vl.gguf','wb').write(b[:i]+(64).to_bytes(4,'little')+b[i+4:])"
refused "qwen3 without blk.1.attn_k_norm" "$T/q3-nonorm.gguf" "tensor 'blk.1.attn_k_norm.weight' is missing"
refused "qwen3 with value_length 64 under key_length 128" "$T/q3-vl.gguf" "value_length = 64 (at offset"
"$GEN" -o "$T/qwen3-q4k.gguf" --type q4_k --arch qwen3 --seed 6
compare "tiny qwen3 q4_k, streamed" "$T/qwen3-q4k.gguf" 0.08 -t 2 --weights stream
# gemma3: 6 layers, so five slide (a window of 8, RoPE base 1e4) and one
# does not; embeddings scaled, GELU, post-norms
"$GEN" -o "$T/gemma3.gguf" --type f32 --arch gemma3 --layers 6 --seed 9
compare "tiny gemma3 f32 (sliding window 8 over a longer prompt)" "$T/gemma3.gguf" 0.001 --kv-type f32 -t 2
"$GEN" -o "$T/gemma3-q8.gguf" --type q8_0 --arch gemma3 --layers 6 --seed 9
compare "tiny gemma3 q8_0, Q8_0 KV" "$T/gemma3-q8.gguf" 0.05 --kv-type q8_0 -t 1
PROMPT=$(for i in 1 2 3; do printf 'the quick brown fox jumps over the lazy dog %d ' $i; done) \
	compare "tiny gemma3 q8_0, prompt in batches of 4, streamed" "$T/gemma3-q8.gguf" 0.05 --weights stream -t 2
# gemma2: every other layer slides; score and logit caps (2 and 3 here)
"$GEN" -o "$T/gemma2.gguf" --type f32 --arch gemma2 --layers 4 --seed 9
compare "tiny gemma2 f32 (softcaps, every other layer sliding)" "$T/gemma2.gguf" 0.001 --kv-type f32 -t 2
"$GEN" -o "$T/gemma2-q4.gguf" --type q4_0 --arch gemma2 --layers 4 --seed 9
compare "tiny gemma2 q4_0, F16 KV" "$T/gemma2-q4.gguf" 0.05 -t 2
/usr/bin/python3 -c "
b=open('$T/gemma2.gguf','rb').read()
i=b.index(b'gemma2.final_logit_softcapping')+30+4
open('$T/g2-cap.gguf','wb').write(b[:i]+b'\\x00\\x00\\x80\\xbf'+b[i+4:])"
refused "gemma2 with a negative logit cap" "$T/g2-cap.gguf" "softcapping 2 / -1 is out of range"
/usr/bin/python3 -c "
b=open('$T/gemma3.gguf','rb').read()
open('$T/g3-nopost.gguf','wb').write(b.replace(b'blk.5.post_ffw_norm.weight',b'blk.5.post_ffw_mrom.weight',1))"
refused "gemma3 without blk.5.post_ffw_norm" "$T/g3-nopost.gguf" "tensor 'blk.5.post_ffw_norm.weight' is missing"
# phi3: fused q|k|v and gate|up, 3/4 of each head rotated, attn_factor
# 1.19, long-RoPE factors past 64 positions (REF_NCTX tells ref.py)
"$GEN" -o "$T/phi3.gguf" --type f32 --arch phi3 --seed 4
REF_NCTX=64 compare "tiny phi3 f32, 64-position context: short factors" "$T/phi3.gguf" 0.001 --kv-type f32 --ctx-size 64
REF_NCTX=128 compare "tiny phi3 f32, 128-position context: long factors" "$T/phi3.gguf" 0.001 --kv-type f32 --ctx-size 128
"$GEN" -o "$T/phi3-q8.gguf" --type q8_0 --arch phi3 --seed 4
REF_NCTX=128 compare "tiny phi3 q8_0, streamed" "$T/phi3-q8.gguf" 0.05 --ctx-size 128 --weights stream -t 2
/usr/bin/python3 -c "
b=open('$T/phi3.gguf','rb').read()
open('$T/phi3-one.gguf','wb').write(b.replace(b'rope_factors_short.weight',b'rope_factors_shrug.weight',1))"
refused "phi3 with long factors and no short ones" "$T/phi3-one.gguf" "rope_factors_long.weight and rope_factors_short.weight come together"
# Mistral 7B v0.1's sliding window (every layer), here 5 positions
"$GEN" -o "$T/swa.gguf" --type q8_0 --sliding-window 5 --seed 5
compare "tiny q8_0 llama with a sliding window of 5 (Mistral)" "$T/swa.gguf" 0.05 -t 2
# Llama 3.1's rope scaling from the metadata alone (no rope_freqs tensor)
"$GEN" -o "$T/l31.gguf" --type f32 --rope-llama3 --seed 5
compare "tiny f32, Llama 3.1 rope scaling from rope.scaling.* (no tensor)" "$T/l31.gguf" 0.001 --kv-type f32
/usr/bin/python3 -c "
import struct
b=open('$T/l31.gguf','rb').read()
k=b'llama.rope.scaling.low_freq_factor'; i=b.index(k)+len(k)+4
open('$T/l31-bad.gguf','wb').write(b[:i]+struct.pack('<f',5.0)+b[i+4:])"
refused "llama3 scaling with low_freq_factor above high_freq_factor" "$T/l31-bad.gguf" "llama3 scaling (factor 8, low 5, high 4"
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
