#!/usr/bin/env bash
# Injected read faults (EDGEQ_STREAM_FAULTS, the test hook in the read path)
# give the documented behaviour: short reads and transient EIO are retried
# and change nothing; persistent EIO is a clear error; a file system without
# O_DIRECT falls back to buffered reads; no memory to preload is a clear
# error that names the way out.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"

gen m --shape tiny --type q4_0
m=$T/m.gguf
export EDGEQ_WEIGHTS_PREFETCH=1
dump "$m" "$T/ref" --weights mmap

for uring in "" "--no-io-uring"; do
	for mode in "preload" "stream --weights-budget 1"; do
		what="--weights $mode $uring"
		EDGEQ_STREAM_FAULTS=short=40 dump "$m" "$T/out" --weights $mode $uring
		check "$what: short reads are retried" cmp -s "$T/ref" "$T/out"
		EDGEQ_STREAM_FAULTS=eio=3 dump "$m" "$T/out" --weights $mode $uring
		check "$what: transient EIO is retried" cmp -s "$T/ref" "$T/out"
		EDGEQ_STREAM_FAULTS=eio=1000000 dump "$m" "$T/out" --weights $mode $uring
		rc=$?
		check "$what: persistent EIO fails (exit $rc)" test $rc -ne 0
		check "$what: persistent EIO is named" \
			grep -q "failed after 4 tries: Input/output error" "$T/out.err"
	done
done

EDGEQ_STREAM_FAULTS=nodirect dump "$m" "$T/out" --weights preload
check "no O_DIRECT: buffered reads, same logits" cmp -s "$T/ref" "$T/out"
check "no O_DIRECT: said on stderr" grep -q "O_DIRECT: Invalid argument; buffered reads" "$T/out.err"

EDGEQ_STREAM_FAULTS=enomem=1 dump "$m" "$T/out" --weights preload
rc=$?
check "no memory to preload: exit 4 (out of a resource), got $rc" test $rc -eq 4
check "no memory to preload: names the way out" grep -q "try --weights stream" "$T/out.err"

EDGEQ_STREAM_FAULTS=enomem=1 dump "$m" "$T/out" --weights stream --weights-budget 1
rc=$?
check "no memory for the stream pool: exit 4, got $rc" test $rc -eq 4
check "no memory for the stream pool: said" grep -q "weight stream pool" "$T/out.err"
summary
