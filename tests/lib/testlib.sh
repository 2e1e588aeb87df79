# Shared helpers for shell tests. Source it; then use check/skip/summary.
# check "what" CMD...   runs CMD; counts a pass or prints FAIL with what.
# skip_all "why"        the whole test is skipped (exit 77).
# summary               prints "N passed, N failed" and exits accordingly.
T=$(mktemp -d "${EDGEQ_TEST_TMP:-/tmp}/t.XXXXXX")
trap 'rm -rf "$T"' EXIT
_pass=0 _fail=0
EDGEQ=${EDGEQ:-build/edgeq}
check() {
	local what=$1; shift
	if "$@"; then
		_pass=$((_pass + 1)); echo "ok - $what"
	else
		_fail=$((_fail + 1)); echo "FAIL - $what"
	fi
}
skip_all() { echo "$1"; exit 77; }
summary() {
	echo "$_pass passed, $_fail failed, 0 skipped"
	[ "$_fail" -eq 0 ]
}
