#!/usr/bin/env bash
# Every weights mode gives bit-identical logits to mmap, for every tensor
# type, tied and untied output, with io_uring and with the pread pool.
# timeout: 240
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"

for spec in "q4_0" "q8_0" "f16" "q4_k" "q4_0 --tied"; do
	set -- $spec
	name=tiny-$1${2:+-tied}
	gen "$name" --shape tiny --type $spec
	m=$T/$name.gguf
	dump "$m" "$T/ref" --weights mmap
	check "$name: mmap runs" test -s "$T/ref"
	for mode in "preload" "stream --weights-budget 50%" \
		"stream --weights-budget 1" "auto" \
		"preload --no-io-uring" "stream --weights-budget 1 --no-io-uring"; do
		# one layer ahead only, so the tiny model really streams
		EDGEQ_WEIGHTS_PREFETCH=1 dump "$m" "$T/out" --weights $mode
		check "$name: --weights $mode: bit-identical logits" \
			cmp -s "$T/ref" "$T/out"
	done
	grep -q "pread thread pool" "$T/out.err"
	check "$name: the pread fallback is said on stderr" test $? -eq 0
done

# The JSON figures say which mode ran and what it read.
gen tiny-q4_0 --shape tiny --type q4_0
out=$(EDGEQ_WEIGHTS_PREFETCH=1 "$EDGEQ" run -m "$T/tiny-q4_0.gguf" -p hi -n 4 \
	--temp 0 --json --no-roofline --weights stream --weights-budget 1 2>/dev/null)
check "json names the mode" grep -q '"weights":"stream"' <<<"$out"
check "json counts bytes read" grep -qE '"weights_bytes_read":[1-9]' <<<"$out"
"$EDGEQ" run -m "$T/tiny-q4_0.gguf" -p hi -n 1 --weights nope 2>/dev/null
check "bad --weights is a usage error" test $? -eq 2
"$EDGEQ" run -m "$T/tiny-q4_0.gguf" -p hi -n 1 --weights-budget 150% 2>/dev/null
check "bad --weights-budget is a usage error" test $? -eq 2
summary
