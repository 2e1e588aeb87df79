#!/usr/bin/env bash
# edgeq bench --streams N: one stream, N batched, N time-shared and 2N
# clients on N slots, in one run (one stream and N batched in -r rounds). On a tiny synthetic model: every phase
# generated, the batch is one pass per step, each request's TTFT is set
# against what the queue explains by the documented formula and the worst
# ratio is the largest of them, the table prints the same, and bad
# arguments fail with a clear message.
# timeout: 120
set -u
. "$(dirname "$0")/benchlib.sh"

"$GEN" -o "$T/m.gguf" --shape tiny --type q4_0 >/dev/null 2>&1 ||
	check "gguf-gen tiny q4_0" false
m=$T/m.gguf

"$EDGEQ" bench -m "$m" -t 2 --streams 3 -n 6 -r 3 --json >"$T/j" 2>"$T/e"
check "--streams 3 --json: exits 0" test $? -eq 0
check "the phases, the queue's distribution and the ratios" python3 - "$T/j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
N, n = d['streams'], d['gen']
assert N == 3 and n == 6 and d['threads'] == 2, d
one, bat, ts, q = d['single'], d['batched'], d['timeshare'], d['queue']
for ph in (one, bat, ts):
    assert ph['tok_s'] > 0 and ph['itl_ms'] > 0, ph
# batched: one pass per step for all streams, so about as many steps as
# one stream's tokens (plus prompt chunks), far fewer than N x tokens
assert n <= bat['steps'] < N * n, bat
# a request lasts past its first token (within the phase: across phases
# the order of two few-ms figures is the host's scheduling, not ours)
assert bat['request_ms'] > bat['ttft_ms'] > 0 and one['ttft_ms'] > 0, (bat, one)
rq = q['requests']
assert len(rq) == 2 * N, rq
for i, r in enumerate(rq):
    want = (i // N) * bat['request_ms'] + (i % N + 1) * one['ttft_ms']
    assert abs(r['explained_ms'] - want) <= 1e-6 * want, (i, r, want)
    assert r['ttft_ms'] > 0, r
worst = max(r['ttft_ms'] / r['explained_ms'] for r in rq)
assert abs(q['worst_over_queue'] - worst) <= 1e-9 * worst, (q, worst)
t = sorted(r['ttft_ms'] for r in rq)
assert q['ttft_max_ms'] == t[-1] and q['ttft_p50_ms'] in t, q
r = d['ratios']
assert abs(r['batched_over_single_tok_s'] - bat['tok_s'] / one['tok_s']) < 1e-9 * r['batched_over_single_tok_s']
# decode alone: the steps that read no prompt, one stream and N batched
# in 3 rounds, the ratio the rounds' median
assert one['decode_tok_s'] > 0 and bat['decode_tok_s'] > 0, (one, bat)
rr = r['decode_rounds']
assert len(rr) == 3 and all(x > 0 for x in rr), rr
assert abs(rr[0] - bat['decode_tok_s'] / one['decode_tok_s']) < 1e-9 * rr[0], (rr, one, bat)
dec = sorted(rr)[1]
assert r['batched_over_single_decode_tok_s'] == dec, (r, dec)
# the same steps' weight reads: each step reads the weights once, so
# tokens per GB is the decode rate over the read rate; one stream gives a
# token a step, N batched up to N (fewer as streams end)
for ph in (one, bat):
    assert ph['decode_gb_s'] > 0 and ph['decode_tokens_per_gb'] > 0, ph
    want = ph['decode_tok_s'] / ph['decode_gb_s']
    assert abs(ph['decode_tokens_per_gb'] - want) <= 1e-9 * want, (ph, want)
tpb = r['batched_over_single_tokens_per_byte']
assert abs(tpb - bat['decode_tokens_per_gb'] / one['decode_tokens_per_gb']) <= 1e-9 * tpb, r
assert 1.0 < tpb <= N + 1e-9, (tpb, N)
PY

"$EDGEQ" bench -m "$m" -t 2 --streams 2 -n 4 -r 2 >"$T/h" 2>&1
check "table: exits 0" test $? -eq 0
check "table: the three phases" grep -Eq '^time-shared +[0-9.]+ +[0-9.]+ +[0-9]+$' "$T/h"
check "table: decode alone, the median of the rounds" grep -Eq '^decode only: 2 streams [0-9.]+ tok/s, 1 stream [0-9.]+ tok/s: [0-9.]+x \(median of 2 rounds:( [0-9.]+x){2}\)$' "$T/h"
check "table: the weights those steps read, and the tokens per byte" \
	grep -Eq '^weights read by those steps \(round 1\): 2 streams [0-9.]+ GB/s, [0-9.]+ tokens per GB; 1 stream [0-9.]+ GB/s, [0-9.]+ tokens per GB: [0-9.]+x the tokens per byte read$' "$T/h"
check "table: every request's TTFT over what the queue explains" \
	grep -Eq '^TTFT by request \(submission order\), ms over what the queue explains:( [0-9.]+/[0-9.]+){4}$' "$T/h"

"$EDGEQ" bench -m "$m" --streams 1 -n 4 >/dev/null 2>"$T/e"
check "--streams 1: exit 2" test $? -eq 2
check "  ... says the range" grep -q -- "--streams must be 2..64" "$T/e"
"$EDGEQ" bench -m "$m" --streams 2 -r 33 -n 4 >/dev/null 2>"$T/e"
check "--streams with -r 33: exit 2" test $? -eq 2
check "  ... says the range" grep -q -- "-r must be 1..32 rounds" "$T/e"
"$EDGEQ" bench -m "$m" --streams 65 -n 4 >/dev/null 2>"$T/e"
check "--streams 65: exit 2" test $? -eq 2
"$EDGEQ" bench -m "$T/none.gguf" --streams 2 -n 4 >/dev/null 2>"$T/e"
rc=$?
check "a missing model: fails (exit $rc)" test $rc -ne 0
check "  ... names the file" grep -q "none.gguf" "$T/e"
summary
