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
# refused WHAT FILE MESSAGE: edgeq run on FILE exits 3 naming MESSAGE
refused() {
	local what=$1 f=$2 msg=$3 rc
	"$EDGEQ" run -m "$f" -p hi -n 1 --no-roofline >/dev/null 2>"$T/e"
	rc=$?
	if [ $rc -eq 3 ] && grep -q -- "$msg" "$T/e"; then
		check "$what: refused (exit 3, '$msg')" true
	else
		echo "  exit $rc: $(cat "$T/e")"
		check "$what: refused (exit 3, '$msg')" false
	fi
}
