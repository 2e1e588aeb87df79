#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/kbench --quant: the activation quantizers' speed, the selected
# table against the one before it in the same run; its argument checks.
# (Speed itself is not asserted: these hosts are shared.)
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/testlib.sh
KB=${O:-build}/tools/kbench
[ -x "$KB" ] || skip_all "kbench not built"
st() { "$KB" "$@" >"$T/out" 2>&1; echo $?; }
check "--quant runs" test "$(st --quant -r 4 -c 512 -i 2)" = 0
check "names the table" grep -q "^kernels [a-z0-9-]* quantize_act 4 rows x 512 columns" "$T/out"
# a line per type: the baseline's two figures, the table's two, a ratio
for ty in Q8_0 Q8_K; do
	check "$ty: both forms timed, a ratio" \
		grep -Eq "^$ty +[a-z0-9]+ +[0-9.]+ +[0-9.]+ +[a-z0-9-]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x$" "$T/out"
done
check "the scalar table is timed against the reference" \
	test "$(EDGEQ_KERNELS=scalar "$KB" --quant -r 2 -c 256 -i 1 | grep -c '^Q8_. *scalar .* scalar ')" = 2
check "columns not a multiple of 256: refused (2)" test "$(st --quant -c 100)" = 2
check "says what it needs" grep -q "a multiple of 256" "$T/out"
check "no rows: refused (2)" test "$(st --quant -r 0)" = 2
summary
