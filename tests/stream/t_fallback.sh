#!/usr/bin/env bash
# The pread fallback when io_uring is unavailable: refused for real by a
# seccomp filter (EPERM as container profiles do, ENOSYS as qemu-user and old
# kernels do), and forced by flag and environment. Output is unchanged and
# the reason is said once on stderr.
# timeout: 120
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"

[ -x "$NO_URING" ] || skip_all "no $NO_URING (make tools)"
gen m --shape tiny --type q4_0
m=$T/m.gguf
dump "$m" "$T/ref" --weights mmap

"$NO_URING" --errno eperm true
[ $? -eq 77 ] && skip_all "seccomp filters cannot be installed here"

for mode in "preload" "stream --weights-budget 1"; do
	"$NO_URING" --errno eperm "$EDGEQ" run -m "$m" -p "$PROMPT" -n 12 --temp 0 -t 2 \
		--no-roofline --ctx-size 128 --dump-logits "$T/out" --weights $mode \
		>/dev/null 2>"$T/err"
	check "seccomp EPERM, $mode: same logits" cmp -s "$T/ref" "$T/out"
	check "seccomp EPERM, $mode: reason on stderr" \
		grep -q "io_uring_setup: not permitted.*pread thread pool" "$T/err"
	check "seccomp EPERM, $mode: said once" test "$(grep -c io_uring "$T/err")" -eq 1
	"$NO_URING" --errno enosys "$EDGEQ" run -m "$m" -p "$PROMPT" -n 12 --temp 0 -t 2 \
		--no-roofline --ctx-size 128 --dump-logits "$T/out" --weights $mode \
		>/dev/null 2>"$T/err"
	check "seccomp ENOSYS, $mode: same logits" cmp -s "$T/ref" "$T/out"
	check "seccomp ENOSYS, $mode: reason on stderr" \
		grep -q "io_uring_setup: not implemented" "$T/err"
done

EDGEQ_NO_IO_URING=1 dump "$m" "$T/out" --weights stream --weights-budget 1
check "EDGEQ_NO_IO_URING=1: same logits" cmp -s "$T/ref" "$T/out"
check "EDGEQ_NO_IO_URING=1: said" grep -q "io_uring off by request" "$T/out.err"

dump "$m" "$T/out" --weights stream --weights-budget 1
check "io_uring available: nothing said" test ! -s "$T/out.err" -o \
	"$(grep -c 'weights (' "$T/out.err")" -eq 0
summary
