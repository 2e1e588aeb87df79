# Shared by the floor tests (source after testlib.sh).
# floor_make WHAT DIR [MAKE ARGS...]: make tests into DIR, warnings as
# errors; one check named WHAT with the time it took; on failure the first
# errors, and the test ends.
floor_make() {
	local what=$1 dir=$2 t0 log=$T/make.log
	shift 2
	t0=$(date +%s)
	if nice -n 10 make -j"$(nproc)" O="$dir" WERROR=-Werror "$@" tests >"$log" 2>&1; then
		check "$what ($(($(date +%s) - t0)) s)" true
		return 0
	fi
	grep -E 'error:|warning:|\*\*\*' "$log" | head -n 20
	check "$what" false
	summary
}
