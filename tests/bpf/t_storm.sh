#!/usr/bin/env bash
# timeout: 60
# An event storm (BPF_PROG_TEST_RUN as fast as it goes, every call a level
# crossing): the in-kernel rate limit holds and the consumer stays cheap.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
"$EDGEQ_TOP/$O/tools/bench-pressure" cpu -n 2 >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "bench-pressure cpu exits 0 (rate limit holds)" test $rc -eq 0
check "the storm was a storm (> 10000 crossings/s)" \
	awk '/^storm:/ { split($3, a, "[(/]"); exit !(a[2] + 0 > 10000) }' "$T/out"
check "storm: at most 32 events per second delivered" grep -q 'holds' "$T/out"
summary
