#!/usr/bin/env bash
# timeout: 300
# edgeq run on tiny synthetic models: output format, --json, identical
# greedy output and logits for 1 and 2 threads and for every prefill batch
# size, seeded sampling, context limits, and malformed model files refused
# with a specific message and exit status 3.
. "$(dirname "$0")/../lib/testlib.sh"
GEN=${O:-build}/tools/gguf-gen
[ -x "$GEN" ] || skip_all "gguf-gen is not built"
M=$T/q4_0.gguf
"$GEN" -o "$M" --type q4_0 --seed 11
"$GEN" -o "$T/q4_k.gguf" --type q4_k --seed 12
P="The quick brown fox jumps over the lazy dog"

out=$("$EDGEQ" run -m "$M" -p "$P" -n 8 --temp 0 --no-roofline 2>"$T/err")
check "stdout starts with the prompt" test "${out#"$P"}" != "$out"
check "one stderr line with the figures" grep -q "prompt .* tok/s | decode .* tok/s | TTFT .* ms | peak RSS .* MiB/token" "$T/err"
check "roofline figure when measured" sh -c "'$EDGEQ' run -m '$M' -p hi -n 2 2>&1 >/dev/null | grep -q 'roofline [0-9]*% of'"

"$EDGEQ" run -m "$M" -p "$P" -n 8 --temp 0 --json --no-roofline >"$T/j" 2>/dev/null
check "--json has prompt_tokens (BOS first), tokens, text, timings" \
	/usr/bin/python3 -c "
import json,sys; j=json.load(open('$T/j'))
assert j['prompt_tokens'][0]==1 and len(j['tokens'])==8 and isinstance(j['text'],str)
assert 'decode_tok_s' in j['timings'] and 'ttft_ms' in j['timings']"

for m in "$M" "$T/q4_k.gguf"; do
	b=$(basename "$m")
	"$EDGEQ" run -m "$m" -p "$P" -n 12 -t 1 --dump-logits "$T/t1" >"$T/t1.j"
	"$EDGEQ" run -m "$m" -p "$P" -n 12 -t 2 --dump-logits "$T/t2" >"$T/t2.j"
	check "$b: greedy tokens identical for -t 1 and -t 2" cmp -s "$T/t1.j" "$T/t2.j"
	check "$b: logits bit-identical for -t 1 and -t 2" cmp -s "$T/t1" "$T/t2"
	"$EDGEQ" run -m "$m" -p "$P" -n 4 -t 2 -b 1 --dump-logits "$T/b1" >/dev/null
	"$EDGEQ" run -m "$m" -p "$P" -n 4 -t 2 -b 5 --dump-logits "$T/b5" >/dev/null
	"$EDGEQ" run -m "$m" -p "$P" -n 4 -t 2 -b 64 --dump-logits "$T/b64" >/dev/null
	check "$b: logits identical for prefill batches 1, 5, 64" \
		sh -c "cmp -s '$T/b1' '$T/b5' && cmp -s '$T/b1' '$T/b64'"
done

# A long prompt's attention goes through the keys-in-lanes tiles (jobs of
# several tokens' heads, 16-key tiles) when a pass holds enough tokens;
# the logits are the per-token form's (EDGEQ_ATTN_TILES=0) and the
# one-token passes' (-b 1), bit for bit (155 tokens: the tiny model has 256
# positions).
LP=$(for i in 1 2 3 4 5; do printf '%s, ' "$P"; done)
# A sliding window (16 of the prompt's positions) makes a block's tokens
# see different first keys: those blocks go token by token.
"$GEN" -o "$T/swa.gguf" --type q8_0 --sliding-window 16 --seed 13 >/dev/null
for m in "$M" "$T/swa.gguf"; do
	"$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 --dump-logits "$T/lt" >/dev/null 2>&1
	EDGEQ_ATTN_TILES=0 "$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 --dump-logits "$T/lg" >/dev/null 2>&1
	"$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 -b 1 --dump-logits "$T/l1" >/dev/null 2>&1
	check "long prompt, $(basename "$m"): logits identical with the attention tiles, without, one token a pass" \
		sh -c "test -s '$T/lt' && cmp -s '$T/lt' '$T/lg' && cmp -s '$T/lt' '$T/l1'"
	# a Q8_0 cache's blocks (one matmul of gathered keys, values per
	# chunk), its group jobs (-b 1, two threads) and one thread's jobs
	q="--kv-type q8_0"
	"$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 $q --dump-logits "$T/qt" >/dev/null 2>&1
	EDGEQ_ATTN_TILES=0 "$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 $q --dump-logits "$T/qg" >/dev/null 2>&1
	"$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 2 -b 1 $q --dump-logits "$T/q1" >/dev/null 2>&1
	"$EDGEQ" run -m "$m" -p "$LP" -n 3 -t 1 -b 1 $q --dump-logits "$T/q11" >/dev/null 2>&1
	check "long prompt, $(basename "$m"), Q8_0 cache: logits identical with the blocks, without, one token a pass at 2 and 1 threads" \
		sh -c "test -s '$T/qt' && cmp -s '$T/qt' '$T/qg' && cmp -s '$T/qt' '$T/q1' && cmp -s '$T/qt' '$T/q11' && ! cmp -s '$T/qt' '$T/lt'"
done

a=$("$EDGEQ" run -m "$M" -p "$P" -n 16 --temp 0.9 --seed 42 --json --no-roofline 2>/dev/null | sed 's/"timings".*//')
b=$("$EDGEQ" run -m "$M" -p "$P" -n 16 --temp 0.9 --seed 42 --json --no-roofline 2>/dev/null | sed 's/"timings".*//')
check "seeded sampling repeats" test "$a" = "$b"
"$EDGEQ" run -m "$M" -p "$P" -n 16 --temp 1 --top-k 0 --top-p 1 --min-p 0 --repeat-penalty 1.3 --seed 1 --no-roofline >/dev/null 2>&1
check "all samplers together run" test $? -eq 0
"$EDGEQ" run -m "$M" -p "$P" -n 0 --json --no-roofline >"$T/n0" 2>/dev/null
check "-n 0 generates nothing" grep -q '"tokens":\[\]' "$T/n0"
"$EDGEQ" run -m "$M" -p "$P" -n 4 --ctx-size 8 --no-roofline >/dev/null 2>"$T/e"
check "a prompt longer than --ctx-size is refused (exit 4)" sh -c "test $? -eq 4 && grep -q 'does not fit in the context' '$T/e'"
# a KV cache the address space cannot map (256 MiB under a 200 MB limit,
# where the tiny model runs in under 100 MB):
# refused at creation, by name, before any token
if grep -qa __asan_init "$EDGEQ"; then
	echo "# not checked: an ASan build cannot start under an address-space limit"
else
	(ulimit -v 200000 && "$EDGEQ" run -m "$M" -p hi -n 2 --ctx-size 262144 --no-roofline >"$T/o" 2>"$T/e")
	rc=$?
	check "a KV cache that cannot be mapped: fails (exit $rc), says why" sh -c "test $rc -ne 0 && grep -Eq 'a 262144-position KV cache: cannot map 256 MiB: Cannot allocate memory' '$T/e' && ! test -s '$T/o'"
fi
"$EDGEQ" run -m "$M" -p "hi there" -n 100 --ctx-size 16 -b 4 --temp 0 --no-roofline --json >"$T/full" 2>/dev/null
check "generation stops when the context is full" /usr/bin/python3 -c "
import json; j=json.load(open('$T/full')); assert len(j['prompt_tokens'])+len(j['tokens'])<=16, j"
"$EDGEQ" run -m "$M" -p hi --kv-type q4 >/dev/null 2>&1
check "--kv-type q4 is a usage error" test $? -eq 2
"$EDGEQ" run -m "$M" -p hi -n 2 --kv-type q8_0 --no-roofline >/dev/null 2>&1
check "--kv-type q8_0 runs" test $? -eq 0
"$EDGEQ" run -m "$M" -p hi -n 2 --weights stream --weights-budget 50% --no-roofline >/dev/null 2>"$T/e"
rc=$?
check "--weights stream runs or says it is not available" sh -c "test $rc -eq 0 || grep -q 'stream' '$T/e'"

head -c 400000 "$M" >"$T/trunc.gguf"
head -c 5000 "$M" >"$T/trunc2.gguf"
refused "truncated inside the metadata" "$T/trunc2.gguf" "string length 1 exceeds the 0 bytes left"
refused "truncated file" "$T/trunc.gguf" "extends past the end of the file"
printf 'not a model at all' >"$T/text.gguf"
refused "not a GGUF file" "$T/text.gguf" "not a GGUF file"
patch() { # in out python-bytes-expression
	/usr/bin/python3 -c "
b=open('$1','rb').read(); $3
open('$2','wb').write(b)"
}
patch "$M" "$T/arch.gguf" "b=b.replace(b'\x05\0\0\0\0\0\0\0llama',b'\x05\0\0\0\0\0\0\0bloom',1)"
refused "unsupported architecture" "$T/arch.gguf" "architecture 'bloom' is not supported"
patch "$M" "$T/miss.gguf" "b=b.replace(b'blk.1.ffn_up.weight',b'blk.1.ffn_uq.weight',1)"
refused "missing tensor" "$T/miss.gguf" "tensor 'blk.1.ffn_up.weight' is missing"
patch "$M" "$T/blk.gguf" "b=b.replace(b'blk.1.ffn_up.weight',b'blk.7.ffn_up.weight',1)"
refused "tensor of a block past block_count" "$T/blk.gguf" "names a block outside block_count"
patch "$M" "$T/heads.gguf" "i=b.index(b'llama.attention.head_count_kv')+29+4; b=b[:i]+bytes([3])+b[i+1:]"
refused "head_count_kv not dividing head_count" "$T/heads.gguf" "does not divide head_count"
patch "$M" "$T/tok.gguf" "b=b.replace(b'tokenizer.ggml.model\x08\0\0\0\x05\0\0\0\0\0\0\0llama',b'tokenizer.ggml.model\x08\0\0\0\x05\0\0\0\0\0\0\0bert5',1)"
refused "unsupported tokenizer" "$T/tok.gguf" "tokenizer.ggml.model 'bert5'"
patch "$M" "$T/bos.gguf" "i=b.index(b'tokenizer.ggml.bos_token_id')+27+4; b=b[:i]+(99999).to_bytes(4,'little')+b[i+4:]"
refused "BOS id out of range" "$T/bos.gguf" "bos_token_id = 99999"
"$EDGEQ" run -m "$T/nonexistent.gguf" -p hi >/dev/null 2>&1
check "a missing file is an error" test $? -ne 0
# speculative decoding and the context shift through the session
R="one two three four one two three four one two three four one two"
"$EDGEQ" run -m "$M" -p "$R" -n 24 --temp 0 --json --no-roofline 2>/dev/null | sed 's/"timings".*//' >"$T/plain"
for d in lookup layers:1 "$M"; do
	"$EDGEQ" run -m "$M" -p "$R" -n 24 --temp 0 --json --no-roofline --draft "$d" --draft-fixed >"$T/spec" 2>/dev/null
	check "--draft $(basename "$d"): greedy tokens identical" sh -c "sed 's/\"timings\".*//' '$T/spec' | cmp -s - '$T/plain'"
done
check "--json timings: draft_acceptance and tokens_per_pass" /usr/bin/python3 -c "
import json; t=json.load(open('$T/spec'))['timings']
assert t['draft_acceptance']==1.0 and t['tokens_per_pass']>1.5 and 'predicted_speedup' in t, t"
# the prediction is the ledger's for a, the drafts per verify pass (4
# drafted, fewer only at the end) and c; drafts over accepted plus
# rejecting passes (1 when all are accepted) was taken for k before
check "--json timings: the prediction's k is the drafts per verify pass" /usr/bin/python3 -c "
import json; t=json.load(open('$T/spec'))['timings']
a, k, c = t['draft_acceptance'], t['draft_len'], t['draft_cost']
kk = int(k + 0.5)
tok = kk + 1 if a >= 1 else (1 - a ** (kk + 1)) / (1 - a)
assert 3 <= k <= 4 and abs(t['predicted_speedup'] - tok / (kk * c + 1)) < 1e-6, t"
# gguf-gen --block-scale: the blocks' outputs scaled down, so the
# embedding's path picks the next token and a 1-layer self-draft agrees
# with the target (a speculation test vehicle of any size)
"$GEN" -o "$T/bs.gguf" --block-scale 0.01 >/dev/null
# (--draft-fixed: the lengths the session would choose follow its timing)
"$EDGEQ" run -m "$T/bs.gguf" -p "$R" -n 32 --temp 0 --json --no-roofline --draft layers:1 --draft-fixed >"$T/bs.json" 2>/dev/null
check "--block-scale 0.01: a 1-layer self-draft is accepted (a >= 0.9, > 3 tokens a pass)" /usr/bin/python3 -c "
import json; t=json.load(open('$T/bs.json'))['timings']
assert t['draft_acceptance'] >= 0.9 and t['tokens_per_pass'] > 3, t"
# bench --draft: plain, drafted, plain; the prediction is the ledger's for
# the measured a, drafts per verify pass and cost
"$EDGEQ" bench -m "$T/bs.gguf" -t 1 --draft layers:1 -n 24 --json >"$T/bd.json" 2>/dev/null
check "bench --draft: the speedup and the ledger's prediction for its a, k and c" /usr/bin/python3 -c "
import json; d=json.load(open('$T/bd.json'))
a, k, c = d['draft_acceptance'], d['draft_len'], d['draft_cost']
kk = int(k + 0.5)
tok = kk + 1 if a >= 1 else (1 - a ** (kk + 1)) / (1 - a)
assert d['draft_tokens'] > 0 and a >= 0.8 and 1 <= k <= 4 and d['speedup'] > 0, d
assert abs(d['predicted_speedup'] - tok / (kk * c + 1)) < 1e-6, d"
# lookup's prompt: the text, the model's own continuation, the text again,
# so what follows is a rewrite of a given text (here the same tokens); how
# often it drafts follows the host's timing (the tiny model's c), so only
# that its drafts are right is checked
"$EDGEQ" bench -m "$T/bs.gguf" -t 1 --draft lookup -n 24 --json >"$T/bl.json" 2>/dev/null
check "bench --draft lookup: the prompt holds the model's continuation, and lookup drafts it" /usr/bin/python3 -c "
import json; d=json.load(open('$T/bl.json'))
assert d['prompt_echo'] == 24 and d['draft_tokens'] > 0 and d['draft_acceptance'] >= 0.5, d"
for b in 0 1.5 x; do
	"$GEN" -o "$T/bad.gguf" --block-scale "$b" >/dev/null 2>&1
	check "gguf-gen --block-scale $b refused (2)" test $? -eq 2
done
"$GEN" -o "$T/micro.gguf" --shape micro
"$EDGEQ" run -m "$M" -p hi -n 2 --draft "$T/micro.gguf" --no-roofline >/dev/null 2>"$T/e"
check "a draft model with another vocabulary is refused" sh -c "test $? -ne 0 && grep -q 'vocabulary' '$T/e'"
"$EDGEQ" run -m "$M" -p hi -n 2 --draft layers:99 --no-roofline >/dev/null 2>"$T/e"
check "--draft layers:L needs L below the model's layers" grep -q 'layers' "$T/e"
"$EDGEQ" run -m "$M" -p hi --draft layers: >/dev/null 2>&1
check "--draft layers: is a usage error" test $? -eq 2
"$EDGEQ" run -m "$M" -p "hi there" -n 40 --ctx-size 16 --temp 0 --context-shift --keep 1 --no-roofline --json >"$T/shift" 2>/dev/null
check "--context-shift generates past --ctx-size" /usr/bin/python3 -c "
import json; j=json.load(open('$T/shift')); assert len(j['tokens'])==40, len(j['tokens'])"
summary
