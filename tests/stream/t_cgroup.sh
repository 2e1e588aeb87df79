#!/usr/bin/env bash
# A decode inside a memory-limited cgroup (v1 here; v2 where its memory
# controller is available) with the weight budget at half the model
# completes without an OOM kill and gives the same tokens as an unlimited
# mmap run; with no budget given, the default follows the cgroup's limit.
# timeout: 240
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root to create a memory cgroup"
V1=/sys/fs/cgroup/memory
V2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
have_v1=0 have_v2=0
[ -w "$V1" ] && [ -f "$V1/memory.limit_in_bytes" ] && have_v1=1
[ -n "$V2" ] && grep -qw memory "$V2/cgroup.controllers" 2>/dev/null && have_v2=1
[ $have_v1 = 1 ] || [ $have_v2 = 1 ] || skip_all "no writable memory cgroup (v1 or v2)"

# ~280 MB: the 1B shape cut to 6 layers, big enough for the limit to matter
gen mid --shape 1b --layers 6 --type q4_0
m=$T/mid.gguf
size=$(stat -c %s "$m")
roof=--no-roofline
run() { # run CGROUP_DIR OUT ARGS...: edgeq run inside the cgroup
	local cg=$1 out=$2; shift 2
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		"$EDGEQ" run -m "$m" -p "Once upon a time" -n 6 --temp 0 -t 2 \
		$roof --ctx-size 128 --json "$@" >"$out" 2>"$out.err"
}
tokens() { grep -o '"tokens":\[[0-9,]*\]' "$1"; }

"$EDGEQ" run -m "$m" -p "Once upon a time" -n 6 --temp 0 -t 2 --no-roofline \
	--ctx-size 128 --json --weights mmap >"$T/ref" 2>/dev/null
check "reference run (mmap, no limit)" test -n "$(tokens "$T/ref")"

# the limit: half the model for weights, 80 MiB for the rest of the process
limit=$((size / 2 + 80 * 1024 * 1024))

if [ $have_v1 = 1 ]; then
	cg=$V1/edgeq-test-$$
	mkdir "$cg" || skip_all "cannot create $cg"
	trap 'rmdir "$cg" 2>/dev/null; rm -rf "$T"' EXIT
	echo $limit >"$cg/memory.limit_in_bytes"
	run "$cg" "$T/v1" --weights stream --weights-budget 50%
	rc=$?
	check "v1: stream at 50% in a $((limit >> 20)) MiB cgroup exits 0 (got $rc)" test $rc -eq 0
	check "v1: same tokens as unlimited mmap" test "$(tokens "$T/v1")" = "$(tokens "$T/ref")"
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
	check "v1: no OOM kill (oom_kill=${oom:-?})" test "${oom:-0}" -eq 0
	peak=$(cat "$cg/memory.max_usage_in_bytes")
	echo "v1: limit $limit, peak usage $peak, failcnt $(cat "$cg/memory.failcnt")"
	check "v1: peak usage within the limit" test "$peak" -le "$limit"

	# no budget given: it comes from the cgroup's limit, so auto streams
	run "$cg" "$T/v1auto"
	rc=$?
	check "v1: auto in the cgroup exits 0 (got $rc)" test $rc -eq 0
	check "v1: auto chose stream from the cgroup limit" grep -q '"weights":"stream"' "$T/v1auto"
	check "v1: auto gives the same tokens" test "$(tokens "$T/v1auto")" = "$(tokens "$T/ref")"
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
	check "v1: still no OOM kill" test "${oom:-0}" -eq 0

	# the default command also measures the memory bandwidth for its
	# roofline line: that diagnostic must stay inside the same limit
	echo 0 >"$cg/memory.max_usage_in_bytes"
	roof=""
	run "$cg" "$T/v1roof" --weights stream --weights-budget 50%
	rc=$?
	roof=--no-roofline
	check "v1: with the roofline measured, exits 0 (got $rc)" test $rc -eq 0
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
	check "v1: the roofline's buffer caused no OOM kill" test "${oom:-0}" -eq 0
	peak=$(cat "$cg/memory.max_usage_in_bytes")
	check "v1: with the roofline, peak usage $peak within the limit" test "$peak" -le "$limit"

	# the control: the limit is real, preload (the whole model) cannot fit
	run "$cg" "$T/v1pre" --weights preload
	rc=$?
	oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
	check "v1 control: preload of the whole model fails in the cgroup (rc $rc, oom_kill ${oom:-0})" \
		test $rc -ne 0
	rmdir "$cg"
else
	echo "v1 memory cgroup not writable here: v1 part not run"
fi

if [ $have_v2 = 1 ]; then
	cg=$V2/edgeq-test-$$
	if mkdir "$cg" 2>/dev/null && echo $limit >"$cg/memory.max" 2>/dev/null; then
		trap 'rmdir "$cg" 2>/dev/null; rm -rf "$T"' EXIT
		run "$cg" "$T/v2" --weights stream --weights-budget 50%
		rc=$?
		check "v2: stream at 50% under memory.max exits 0 (got $rc)" test $rc -eq 0
		check "v2: same tokens" test "$(tokens "$T/v2")" = "$(tokens "$T/ref")"
		oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
		check "v2: no OOM kill" test "${oom:-0}" -eq 0
		rmdir "$cg"
	else
		rmdir "$cg" 2>/dev/null
		echo "v2: memory controller not enabled for children here: v2 part not run"
	fi
else
	echo "cgroup v2 memory controller not available here: v2 part not run"
fi
summary
