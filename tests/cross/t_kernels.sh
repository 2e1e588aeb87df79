#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# timeout: 300
# The kernels on aarch64, under qemu-aarch64-static: the NEON table against
# the scalar oracle (exact), the thread pool, and the same results as the
# x86-64 build bit for bit (kbench --digest hashes quantizer, dot, matvec
# and matmul outputs of all 15 weight types). qemu-user has no io_uring or NUMA, so
# only fallback paths run there: that is expected.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
A=build-aarch64
QEMU="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
[ -x $A/tests/unit/test_kernels ] || skip_all "no aarch64 build: run 'make cross'"
export EDGEQ_TEST_QEMU=1
for t in test_kernels test_kernels_threads; do
	timeout 240 $QEMU $A/tests/unit/$t >"$T/$t.log" 2>&1
	check "$t passes on aarch64 (NEON)" test $? -eq 0 || tail -20 "$T/$t.log"
done
# qemu's CPU has i8mm, so the i8mm table is selected; test_kernels checks
# both NEON tables against the scalar oracle
check "NEON i8mm table selected under qemu" grep -q 'selected kernels: neon-i8mm' "$T/test_kernels.log"
EDGEQ_KERNELS=scalar timeout 240 $QEMU $A/tests/unit/test_kernels >"$T/s.log" 2>&1
check "aarch64 scalar table passes" test $? -eq 0 || tail -20 "$T/s.log"
"$O/tools/kbench" --digest >"$T/x86.txt"
check "x86-64 digest: selected kernels equal scalar" test "$(grep -c same-as-scalar "$T/x86.txt")" -eq 15
timeout 120 $QEMU $A/tools/kbench --digest >"$T/arm.txt"
check "aarch64 digest: selected kernels equal scalar" test "$(grep -c same-as-scalar "$T/arm.txt")" -eq 15
EDGEQ_KERNELS=neon timeout 120 $QEMU $A/tools/kbench --digest >"$T/armn.txt"
check "aarch64 digest, neon table (no i8mm): equal to scalar" test "$(grep -c same-as-scalar "$T/armn.txt")" -eq 15
EDGEQ_KERNELS=scalar timeout 120 $QEMU $A/tools/kbench --digest >"$T/arms.txt"
check "x86-64 and aarch64 results are bit-identical (all types)" \
	cmp -s <(tail -n +2 "$T/x86.txt") <(tail -n +2 "$T/arm.txt")
check "x86-64 and aarch64 neon (no i8mm) results are bit-identical" \
	cmp -s <(tail -n +2 "$T/x86.txt") <(tail -n +2 "$T/armn.txt")
check "aarch64 scalar equals x86-64 AVX2 bit for bit" \
	cmp -s <(tail -n +2 "$T/x86.txt") <(tail -n +2 "$T/arms.txt")
summary
