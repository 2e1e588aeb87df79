#!/usr/bin/env bash
# timeout: 900
# The compiler floor: gcc 11 (Ubuntu 22.04's) builds the library, the
# command and the tools of the FLOOR=1 configuration warning-free, and the
# command runs (build-floor-gcc11/).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
command -v gcc-11 >/dev/null || skip_all "no gcc-11 (tools/install-deps installs it on Debian 12)"
FO=build-floor-gcc11
t0=$(date +%s)
if nice -n 10 make -j"$(nproc)" O="$FO" CC=gcc-11 FLOOR=1 WERROR=-Werror all >"$T/make.log" 2>&1; then
	check "gcc 11 builds edgeq warning-free ($(($(date +%s) - t0)) s)" true
else
	grep -E 'error:|warning:|\*\*\*' "$T/make.log" | head -n 20
	check "gcc 11 builds edgeq warning-free" false
	summary
fi
check "built by gcc 11" bash -c "readelf -p .comment '$FO/edgeq' | grep -q 'GCC: (Debian 11\\|GCC: (Ubuntu 11\\|GCC: (GNU) 11'"
check "the command runs" "$FO/edgeq" --version
summary
