#!/usr/bin/env bash
# edgeq bench --profile: the forward pass's time by part. On tiny synthetic
# models (llama, phi3's fused matrices): the parts add up to the total, the
# matvecs read exactly the weights a token needs, each part is called as
# often as the graph says, sampling is timed apart, and bad arguments fail
# with a clear message.
# timeout: 180
set -u
. "$(dirname "$0")/benchlib.sh"

"$GEN" -o "$T/l.gguf" --shape tiny --type q4_0 >/dev/null 2>&1 ||
	check "gguf-gen tiny q4_0" false
"$GEN" -o "$T/p.gguf" --shape tiny --type q8_0 --arch phi3 >/dev/null 2>&1 ||
	check "gguf-gen tiny phi3" false

# lq: the llama model with a Q8_0 KV cache (its attention's own path)
for a in l p lq; do
	m=$T/${a%q}.gguf
	kv=f16
	[ "$a" = lq ] && kv=q8_0
	[ -f "$m" ] || continue
	"$EDGEQ" bench -m "$m" -t 2 -p 16,48 -n 12 --profile --kv-type $kv --json >"$T/$a.json" 2>"$T/$a.err"
	check "$a: exits 0" test $? -eq 0
	check "$a: the parts add up, the graph's calls, the weights once per token" python3 - "$T/$a.json" "$a" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
arch = sys.argv[2]
L = d['n_layer']
assert L >= 1
ph = {p['test']: p for p in d['phases']}
assert set(ph) == {'pp16', 'pp48', 'tg12'}, ph.keys()
assert d['threads'] == 2 and d['kernels'], d
for name, p in ph.items():
    parts = p['parts']
    tot = sum(v['us_per_token'] for v in parts.values())
    assert abs(tot - p['total_us_per_token']) <= 1e-6 * tot + 1e-3, (name, tot, p['total_us_per_token'])
    # the pass itself is most of the phase's wall time (the rest: the loop)
    wall_us = p['wall_s'] * 1e6 / p['tokens']
    assert p['total_us_per_token'] <= wall_us * 1.001, (name, p['total_us_per_token'], wall_us)
    mv = ['attn_qkv', 'ffn_up'] if arch == 'p' else ['attn_q', 'attn_k', 'attn_v', 'ffn_gate', 'ffn_up']
    for k in mv + ['attn_output', 'ffn_down', 'attention', 'norm', 'rope_kv']:
        assert k in parts and parts[k]['us_per_token'] > 0, (name, k, parts.keys())
    for k in ['attn_q', 'attn_k', 'attn_v', 'ffn_gate'] if arch == 'p' else ['attn_qkv']:
        assert k not in parts, (name, k)
tg = ph['tg12']
assert tg['passes'] == 12 and tg['tokens'] == 12
for k in ['attn_output', 'ffn_down', 'ffn_up', 'attention']:
    assert tg['parts'][k]['calls_per_token'] == L, (k, tg['parts'][k], L)
assert tg['parts']['output']['calls_per_token'] == 1
assert tg['parts']['sampling']['us_per_token'] > 0
# a decoded token reads each matrix once: the matvecs' bytes are the
# model's bytes per token (the embedding row aside)
rd = sum(v['bytes'] for v in tg['parts'].values()) / 12
bpt = d['bytes_per_token']
assert 0.9 * bpt <= rd <= bpt, (rd, bpt)
assert 'sampling' not in ph['pp48']['parts']
assert ph['pp48']['passes'] >= 1 and ph['pp48']['tokens'] == 48
# a prompt's matmuls: one multiply-add per weight and token, the output
# head for the last token only
per_tok = sum(v['macs'] for v in tg['parts'].values()) // 12
head = tg['parts']['output']['macs'] // 12
macs = sum(v['macs'] for v in ph['pp48']['parts'].values())
assert macs == (per_tok - head) * 48 + head, (macs, per_tok, head)
PY
done

m=$T/l.gguf
"$EDGEQ" bench -m "$m" -t 1 -p 16 -n 8 --profile >"$T/h" 2>&1
check "table: exits 0" test $? -eq 0
check "table: a row per part, with its share" grep -Eq '^  ffn_down +[0-9.]+ +[0-9.]+% ' "$T/h"
check "table: sampling timed apart in the decode" grep -Eq '^  sampling +[0-9.]+' "$T/h"
check "table: the matvecs against the bandwidth measured now" grep -Eq '^  matvecs: [0-9.]+ GB/s of weights = [0-9]+% of the [0-9.]+ GB/s measured now' "$T/h"
check "table: the prompt's matmuls in GMAC/s" grep -Eq '^  matmuls: [0-9.]+ GMAC/s' "$T/h"

# -b: a 48-token prompt in passes of 16, or in one
"$EDGEQ" bench -m "$m" -t 1 -p 48 -n 4 -b 16 --profile --json >"$T/b16.json" 2>/dev/null
check "-b 16: exits 0" test $? -eq 0
"$EDGEQ" bench -m "$m" -t 1 -p 48 -n 4 -b 48 --profile --json >"$T/b48.json" 2>/dev/null
check "-b 48: exits 0" test $? -eq 0
check "-b: a prompt takes ceil(tokens / batch) passes" python3 -c "
import json
for f, n in (('$T/b16.json', 3), ('$T/b48.json', 1)):
    ph = {p['test']: p for p in json.load(open(f))['phases']}
    assert ph['pp48']['passes'] == n and ph['pp48']['tokens'] == 48, (f, ph['pp48'])"

"$EDGEQ" bench -m "$m" -p 100000 -n 8 --profile >/dev/null 2>"$T/e"
check "a prompt past the model's context: exit 2" test $? -eq 2
check "  ... names the positions" grep -q -- "--profile: 100016 positions .*, the model has" "$T/e"
"$EDGEQ" bench -m "$T/none.gguf" -n 8 --profile >/dev/null 2>"$T/e"
rc=$?
check "a missing model: fails (exit $rc)" test $rc -ne 0
check "  ... names the file" grep -q "none.gguf" "$T/e"
summary
