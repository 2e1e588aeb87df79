#!/usr/bin/env bash
# timeout: 1200
# The floor build: `make FLOOR=1` (every probe of tools/floor/probe forced to
# its fallback, warnings are errors) into build-floor/, then what it links
# must exist in the floor's libraries: no libbpf symbol newer than 0.5.0 and
# no liburing symbol newer than 2.1 (their .so files version every symbol).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"
cd "$EDGEQ_TOP"
FO=${EDGEQ_FLOOR_O:-build-floor}

floor_make "make FLOOR=1 tests builds warning-free" "$FO" FLOOR=1

cfg=$FO/edgeq_config.h
check "config header says FLOOR" grep -qx '#define EDGEQ_FLOOR 1' "$cfg"
check "every probe took its fallback" bash -c "! grep -E '^#define EDGEQ_HAVE_[A-Z0-9_]+ 1' '$cfg'"
n=$(grep -cE '^#define EDGEQ_HAVE_' "$cfg")
check "the probes are all there ($n)" test "$n" -ge 3
# the normal build's probes found the newer APIs on this host (else the
# fallback would be all this machine ever tests)
if [ -f build/edgeq_config.h ]; then
	check "the default build kept the newer APIs" grep -qE '^#define EDGEQ_HAVE_[A-Z0-9_]+ 1' build/edgeq_config.h
fi

# too_new LIB MAX: versioned symbols of LIB newer than MAX in the floor binaries
too_new() {
	local lib=$1 max=$2 f v
	for f in "$FO"/edgeq "$FO"/tests/unit/test_* "$FO"/tools/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		objdump -T "$f" 2>/dev/null
	done | grep -oE "\(${lib}_[0-9.]+\) +[A-Za-z0-9_]+" | sort -u |
		while read -r v sym; do
			v=${v#(${lib}_}
			v=${v%)}
			[ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -n 1)" = "$max" ] ||
				echo "$sym ($lib $v)"
		done
}
if command -v objdump >/dev/null; then
	for pair in LIBBPF:0.5.0 LIBURING:2.1; do
		bad=$(too_new "${pair%%:*}" "${pair#*:}")
		[ -z "$bad" ] || echo "newer than the floor: $bad"
		check "no ${pair%%:*} symbol newer than ${pair#*:}" test -z "$bad"
	done
fi
summary
