#!/usr/bin/env bash
# tools/vm/kernel-log-check, the failure rule of every VM suite: any
# BUG/WARNING/stack dump in the guest's kernel log fails the run, except
# an x86 #DB warning whose saved RFLAGS has reserved bits set (a state no
# CPU can be in: the emulator's fault, seen once under TCG in the 6.12
# guest), which is reported and not counted.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
C=tools/vm/kernel-log-check

# a #DB dump as the 6.12 guest printed it; $1 the interrupted RFLAGS
db_dump() {
	cat <<LOG
[  111.219552] ------------[ cut here ]------------
[  111.220792] WARNING: CPU: 0 PID: 426 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160
[  111.228784] RIP: 0010:exc_debug_kernel+0xca/0x160
[  111.232520] RSP: 0000:fffffe1acd58cf28 EFLAGS: 00000002
[  111.235631] Call Trace:
[  111.236374]  <#DB>
[  111.236835]  asm_exc_debug+0x1e/0x40
[  111.237091] RIP: 0010:kmem_cache_alloc_lru_noprof+0x74/0x300
[  111.237149] RSP: 0018:ff5da0138068f950 EFLAGS: $1
[  111.237880]  </#DB>
[  111.237901]  alloc_inode+0x97/0xc0
[  111.240875] ---[ end trace 0000000000000000 ]---
LOG
}
clean() {
	echo "[    1.000000] edgeq: queue npu0 registered"
	echo "[    2.000000] sysrq: Power Off"
}

clean >"$T/clean"
$C "$T/clean" >"$T/out" 2>"$T/err"
check "a clean log passes" test $? -eq 0
check "a clean log prints nothing" test ! -s "$T/out" -a ! -s "$T/err"

{ clean; db_dump c1607b02; clean; } >"$T/emu"
$C "$T/emu" >"$T/out" 2>"$T/err"
check "a #DB dump with impossible RFLAGS (c1607b02) does not fail" test $? -eq 0
check "... and is reported on stderr with its RFLAGS" grep -q "RFLAGS c1607b02 has reserved bits" "$T/err"
check "... naming the warning" grep -q "exc_debug_kernel" "$T/err"

for f in 00000246 00040202 00000346; do
	{ clean; db_dump $f; } >"$T/db"
	$C "$T/db" >"$T/out" 2>"$T/err"
	check "a #DB dump with possible RFLAGS ($f) fails" test $? -eq 1
	check "... printing its WARNING line" grep -q "WARNING: CPU: 0 PID: 426" "$T/out"
done
for f in 00000008 00000020 00008002 00400002; do # bits 3, 5, 15, 22
	db_dump $f >"$T/db"
	$C "$T/db" >/dev/null 2>&1
	check "reserved RFLAGS bit in $f: the #DB dump is the emulator's" test $? -eq 0
done

# the same impossible RFLAGS in any other warning still fails
db_dump c1607b02 | sed 's/exc_debug_kernel/edgeq_op_check [edgeq]/' >"$T/other"
$C "$T/other" >"$T/out" 2>/dev/null
check "another warning with odd RFLAGS fails" test $? -eq 1
check "... and is printed" grep -q "edgeq_op_check" "$T/out"

# an emulator #DB dump next to a real one: the real one fails
{ db_dump c1607b02; echo "[  120.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008"; } >"$T/both"
$C "$T/both" >"$T/out" 2>/dev/null
check "a BUG beside an emulator dump fails" test $? -eq 1
check "... printing the BUG line" grep -q "BUG: kernel NULL pointer" "$T/out"

# lines outside any dump: each kind fails alone
for l in "BUG: unable to handle page fault" "refcount_t: underflow; use-after-free." \
	"KASAN: slab-out-of-bounds in edgeq_submit" "WARNING: CPU: 1 PID: 9 at kmod/queue.c:10"; do
	{ clean; echo "[    3.000000] $l"; } | $C >"$T/out" 2>/dev/null
	check "'$l' fails (stdin)" test $? -eq 1
done
# a dump cut off before its end (the run died in it) still fails
db_dump 00000246 | head -6 >"$T/cut"
$C "$T/cut" >/dev/null 2>&1
check "a truncated dump with sane RFLAGS fails" test $? -eq 1
summary
