#!/usr/bin/env bash
# tests/run on a scratch tree: skips are listed with their reasons before the
# closing count line, and under CI=true a skip of something marked
# "# ci: required" fails (a test, a suite's requires, a nested runner).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
R=$T/tree
mkdir -p "$R/tests/a" "$R/tests/b" "$R/tests/c"
cp "$EDGEQ_TOP/tests/run" "$R/tests/run"
mk() { printf '#!/bin/sh\n%s\n' "$2" >"$1"; chmod +x "$1"; }
mk "$R/tests/a/t_ok" 'exit 0'
mk "$R/tests/a/t_nowidget" 'echo "no widget here"; exit 77'
mk "$R/tests/a/t_novm" '# ci: required
echo "no test VM: qemu missing"; exit 77'
mk "$R/tests/b/requires" '# ci: required
echo "no BPF: not root"; exit 1'
mk "$R/tests/b/t_never" 'exit 1'
mk "$R/tests/c/t_many" 'echo "3 passed, 0 failed, 2 skipped"'

run() { (cd "$R" && env -u EDGEQ -u EDGEQ_TEST_TMP -u CI "$@" O=o tests/run a b c) >"$T/out" 2>&1; }
run
rc=$?
last=$(tail -n 1 "$T/out")
check "exit 0 without CI ($last)" test $rc -eq 0
check "closing line counts ($last)" test "$last" = "4 passed, 0 failed, 5 skipped"
check "a skip's reason is listed" grep -qx 'skipped: a/t_nowidget: no widget here' "$T/out"
check "a suite's skip reason is listed" grep -qx 'skipped: suite b: no BPF: not root' "$T/out"
check "cases skipped inside a test are listed" grep -q '^skipped: c/t_many: 2 case(s) skipped' "$T/out"
check "the skip list comes before the closing line" \
	test "$(tail -n 2 "$T/out" | head -n 1 | cut -c1-9)" = "skipped: "

run CI=true
rc=$?
last=$(tail -n 1 "$T/out")
check "CI=true: required skips fail ($last)" test "$last" = "4 passed, 2 failed, 3 skipped"
check "CI=true: exit non-zero" test $rc -ne 0
check "CI=true: says why it failed" grep -q '^FAIL a/t_novm: skipped, but CI=true requires it: no test VM' "$T/out"
check "CI=true: a required suite fails" grep -q '^FAIL suite b: skipped, but CI=true requires it' "$T/out"
check "CI=true: other skips stay skips" grep -qx 'skipped: a/t_nowidget: no widget here' "$T/out"

# a nested runner's skips show up in the outer list
mkdir -p "$R/tests/d"
mk "$R/tests/d/t_nested" 'cd "$(dirname "$0")/../.." && env -u EDGEQ -u EDGEQ_TEST_TMP O=o2 tests/run a'
(cd "$R" && env -u EDGEQ -u EDGEQ_TEST_TMP -u CI O=o tests/run d) >"$T/out" 2>&1
check "nested skips are listed with their reasons" grep -qx '  a/t_nowidget: no widget here' "$T/out"
summary
