#!/usr/bin/env bash
# timeout: 300
# The libcurl fallback in use: upstreams restricted to http/https by the
# CURLOPT_PROTOCOLS bitmask (libcurl < 7.85), with the FLOOR=1 build and,
# when t_bullseye.sh built it, with the build against bullseye's libcurl
# 7.74 (tests/daemon/t_upstream_scheme.py against each).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
FO=${EDGEQ_FLOOR_O:-build-floor}
BB=${O:-build}/floor-bullseye
[ -x "$FO/edgeq" ] || skip_all "no $FO/edgeq (tests/floor/t_build.sh builds it)"
check "FLOOR=1 build uses the bitmask" grep -qx '#define EDGEQ_HAVE_CURLOPT_PROTOCOLS_STR 0' "$FO/edgeq_config.h"
env -u EDGEQ_TEST_TMP EDGEQ="$PWD/$FO/edgeq" O="$FO" tests/daemon/t_upstream_scheme.py >"$T/floor.log" 2>&1
check "FLOOR=1 build: file:// upstream refused ($(tail -n 1 "$T/floor.log"))" test $? -eq 0
if [ -x "$BB/build/edgeq" ]; then
	env -u EDGEQ_TEST_TMP EDGEQ="$PWD/$BB/build/edgeq" O="$BB/build" \
		LD_LIBRARY_PATH="$PWD/$BB/root/usr/lib/$(gcc -dumpmachine | sed 's/-pc-/-/')" \
		tests/daemon/t_upstream_scheme.py >"$T/bullseye.log" 2>&1
	check "bullseye's libcurl 7.74: file:// upstream refused ($(tail -n 1 "$T/bullseye.log"))" test $? -eq 0
fi
cat "$T"/*.log | grep -E '^(FAIL|ok)' | sed 's/^/  /'
summary
