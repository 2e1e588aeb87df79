#!/usr/bin/env bash
# edgeq plan: the worked examples through the command, GGUF input, profiles,
# routing, JSON, and the refusals.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/testlib.sh"
D=$(dirname "$0")
export EDGEQ_PROFILES=$EDGEQ_TOP/share/edgeq/profiles.ini
J() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

"$EDGEQ" plan --params 8B --bpw 5.18 -P phone-flagship --ctx 4096 >"$T/h" 2>&1
check "plan exits 0" test $? -eq 0
check "68 GB/s x 0.85 / 5.18 GB = 11.15 tok/s" grep -q 'decode bound, position 0 11.15 tok/s' "$T/h"
check "KV 1x4096x32x2x8x128x2 = 512 MiB" grep -q 'KV cache *512.0 MiB (1 x 4096 x 32 x 2 x 8 x 128 x 2 B)' "$T/h"
check "speculative 1.91x" grep -q '3.05 tokens per step / cost 1.60 = 1.91x' "$T/h"
check "routing table printed" grep -q 'medical-record summary *confidential' "$T/h"

"$EDGEQ" plan --params 8B --bpw 16 -P phone-flagship --json >"$T/f16.json"
check "FP16 16 GB: 3.61 tok/s" test "$(J "$T/f16.json" "int(d['bandwidth']['decode_tps_pos0']*100)")" = 361
check "16 GB of FP16 does not fit a 16 GiB phone" test "$(J "$T/f16.json" "d['memory']['fits']")" = False
"$EDGEQ" plan --params 7B --bpw 4 -P jetson-orin-nano-8gb >"$T/7b"
check "7B at 4 bits = 3.50 GB (3.26 GiB)" grep -q '7.00 B parameters, 4.00 bits/weight, 3.50 GB (3.26 GiB)' "$T/7b"

"$EDGEQ" plan --params 8B --bpw 5.18 -P phone-flagship --json --ctx 4096 >"$T/p.json"
check "JSON parses" python3 -c "import json; json.load(open('$T/p.json'))"
check "JSON speculative speedup" test "$(J "$T/p.json" "round(d['speculative']['speedup'],2)")" = 1.91
check "JSON KV bytes" test "$(J "$T/p.json" "d['memory']['kv']")" = 536870912
check "JSON: confidential stays local" test "$(J "$T/p.json" "d['routing'][0]['route']")" = local
check "JSON: public chat over its SLO goes public" test "$(J "$T/p.json" "d['routing'][1]['route']")" = public
check "JSON: internal notes go private" test "$(J "$T/p.json" "d['routing'][2]['route']")" = private
check "sustained = peak x throttle" python3 -c "
import json; d=json.load(open('$T/p.json'))['sustained']
assert abs(d['sustained_tps'] - d['peak_tps']*0.65) < 1e-6"

# routing from a file, without a private endpoint
cat >"$T/req" <<R
# class prompt gen slo name
confidential 4096 1024 5 records
internal 2048 256 10 notes
public 16 16 100 quick
R
"$EDGEQ" plan --params 8B --bpw 5.18 -P phone-flagship --requests "$T/req" --no-private --json >"$T/r.json"
check "requests file: confidential local even when slow" test "$(J "$T/r.json" "d['routing'][0]['route'] + str(d['routing'][0]['slo_feasible_local'])")" = localFalse
check "no private endpoint: internal stays on the box" test "$(J "$T/r.json" "d['routing'][1]['route']")" = local
check "public within SLO stays local (cheapest)" test "$(J "$T/r.json" "d['routing'][2]['route']")" = local
echo "secret 1 1 1 x" >"$T/badreq"
"$EDGEQ" plan --params 8B -P ai-pc --requests "$T/badreq" 2>"$T/err" >/dev/null
check "bad class refused with exit 2" test $? -eq 2
check "bad class named" grep -q "class 'secret'" "$T/err"

# the SLO request
"$EDGEQ" plan --params 8B --bpw 5.18 -P phone-flagship --prompt-len 0 --gen-len 100 --slo 10 --ctx 1 >"$T/slo"
check "SLO met at peak only" grep -q 'met at peak only, MISSED sustained' "$T/slo"

# GGUF input: sizes from the tensor table
python3 "$D/mkgguf.py" "$T/m.gguf" --type Q8_0
"$EDGEQ" plan -m "$T/m.gguf" -P jetson-orin-nano-8gb --json >"$T/m.json"
check "GGUF plan exits 0" test $? -eq 0
# Q8_0: 34 bytes per 32 weights; 2 layers of 256-wide attention (kv 128),
# 512 ff, 256 vocab, untied output, F32 norms
exp=$(python3 -c "
e,f,v,kv,L=256,512,256,128,2
q=lambda n: n//32*34
w=q(e*v)*2+4*e+L*(8*e+q(e*e)*2+q(e*kv)*2+q(e*f)*3)
print(w)")
check "GGUF weight bytes = quantized sizes incl. scales" test "$(J "$T/m.json" "d['model']['weight_bytes']")" = "$exp"
check "GGUF shape read" test "$(J "$T/m.json" "(d['model']['layers'], d['model']['kv_heads'], d['model']['head_dim'], d['model']['ctx_train'])")" = "(2, 4, 32, 2048)"
check "GGUF: ctx defaults to the trained length" test "$(J "$T/m.json" "d['bandwidth']['ctx']")" = 2048
python3 "$D/mkgguf.py" "$T/t.gguf" --truncate 5000
"$EDGEQ" plan -m "$T/t.gguf" -P ai-pc >/dev/null 2>"$T/err"
check "truncated GGUF refused with exit 3" test $? -eq 3
check "cut in the tensor data: named" grep -q "data offset .* beyond the file" "$T/err"
python3 "$D/mkgguf.py" "$T/t2.gguf" --truncate 1200
"$EDGEQ" plan -m "$T/t2.gguf" -P ai-pc >/dev/null 2>"$T/err"
check "cut in the metadata: the field named" grep -Eq "tokenizer.ggml.tokens.*(overruns the file|offset)" "$T/err"
printf 'GGUF\001\000\000\000' >"$T/v1.gguf"; head -c 64 /dev/zero >>"$T/v1.gguf"
"$EDGEQ" plan -m "$T/v1.gguf" -P ai-pc >/dev/null 2>"$T/err"
check "GGUF version 1 refused by name" grep -q 'GGUF version 1' "$T/err"
if [ -f "$EDGEQ_TEST_MODELS/stories260K.gguf" ]; then
	"$EDGEQ" plan -m "$EDGEQ_TEST_MODELS/stories260K.gguf" -P ai-pc --json >"$T/s.json"
	check "stories260K shape" test "$(J "$T/s.json" "(d['model']['layers'], d['model']['vocab'])")" = "(5, 512)"
fi

# profiles
"$EDGEQ" plan --list >"$T/l"
for p in jetson-orin-nano-8gb jetson-orin-nano-super jetson-orin-nx-16gb jetson-agx-orin-64gb phone-flagship ai-pc local; do
	check "profile $p listed" grep -q "$p" "$T/l"
done
"$EDGEQ" plan --params 1B -P nosuch 2>"$T/err"; rc=$?
check "unknown profile fails" test $rc -ne 0 -a $rc -ne 2
check "unknown profile: the known ones named" grep -q 'jetson-orin-nano-8gb' "$T/err"
TMPDIR=$T "$EDGEQ" plan --params 1B -P local --json >"$T/local.json"
check "local profile measured live" test "$(J "$T/local.json" "d['profile']['measured'] and d['profile']['mem_bw'] > 1e8 and d['profile']['cores'] >= 1 and d['profile']['ram'] > 0")" = True
"$EDGEQ" plan 2>/dev/null; check "no model: exit 2" test $? -eq 2
"$EDGEQ" plan --params 7Q 2>/dev/null; check "bad --params: exit 2" test $? -eq 2
"$EDGEQ" plan --params 7B --accept 1.5 2>/dev/null; check "acceptance > 1: exit 2" test $? -eq 2
"$EDGEQ" plan -m "$T/m.gguf" --placement >/dev/null 2>"$T/err"; rc=$?
check "--placement runs the placement planner or says it is absent" test $rc -eq 0 -o $rc -eq 6
summary
