#!/usr/bin/env bash
# timeout: 1500
# The unit, cli and decoder suites against the floor build (build-floor/,
# built by t_build.sh; built here too when run alone).
set -u
cd "$EDGEQ_TOP"
FO=${EDGEQ_FLOOR_O:-build-floor}
mkdir -p "$FO"
if ! nice -n 10 make -j"$(nproc)" O="$FO" FLOOR=1 WERROR=-Werror tests >"$FO/floor-make.log" 2>&1; then
	tail -n 20 "$FO/floor-make.log"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
# a fresh runner for that tree: its own command, logs and scratch directory
exec env -u EDGEQ -u EDGEQ_TEST_TMP O="$FO" tests/run unit cli decoder
