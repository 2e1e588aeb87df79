#!/usr/bin/env bash
# edgeq route --explain: the decision table the daemon applies.
# timeout: 30
set -u
. "$(dirname "$0")/../lib/testlib.sh"

out=$("$EDGEQ" route --explain --peak-tok-s 20 --throttle 0.5 --slo 15 --private --public)
check "explain exits 0" test $? -eq 0
check "confidential stays local" grep -qE '^confidential +local +local ' <<<"$out"
check "internal goes private when SLO unmet" grep -qE '^internal +local,private +private ' <<<"$out"
check "public goes public when sustained misses SLO" grep -qE '^public +local,private,public +public ' <<<"$out"
out=$("$EDGEQ" route --class public --peak-tok-s 20 --throttle 1 --slo 15 --public --json)
check "public stays local when sustained meets SLO" grep -q '"route": "local", "reason": "slo-met"' <<<"$out"
out=$("$EDGEQ" route --class confidential --local-down --private --public --json)
check "confidential with local down is rejected, not sent" grep -q '"route": "reject"' <<<"$out"
out=$("$EDGEQ" route --class internal --running 1 --waiting 16 --private --json)
check "internal overload goes private" grep -q '"route": "private", "reason": "overloaded"' <<<"$out"
"$EDGEQ" route --class secret 2>"$T/err"; check "unknown class exits 2" test $? -eq 2
"$EDGEQ" route --throttle 2 2>"$T/err"; check "throttle out of range exits 2" test $? -eq 2
printf '[router]\nprivate-url = http://127.0.0.1:9/v1\nlocal-tok-s = 20\n' >"$T/edgeq.conf"
out=$("$EDGEQ" route --config "$T/edgeq.conf" --class internal --slo 30 --json)
check "--config: endpoints and speed from the daemon's file" grep -q '"route": "private", "reason": "slo-unmet"' <<<"$out"
out=$("$EDGEQ" route --config "$T/edgeq.conf" --class internal --slo 30 --peak-tok-s 100 --json)
check "--config: a flag still wins over the file" grep -q '"route": "local", "reason": "slo-met"' <<<"$out"
# the same defaults as edgeq serve: a queue of 8 behind 1 slot
"$EDGEQ" route --json --class public --running 1 --waiting 8 --peak 10 >"$T/q8" 2>&1
check "default queue is serve's 8: the 9th waiting request is refused" grep -q '"overloaded": true' "$T/q8"
"$EDGEQ" route --json --class public --running 1 --waiting 7 --peak 10 >"$T/q7" 2>&1
check "... and the 8th still queues" grep -q '"overloaded": false' "$T/q7"
summary
