#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# timeout: 900
# `make cross` builds the library, the command, the tools and the unit test
# binaries for aarch64 into build-aarch64/ (warning-free, like CI), for the
# tests below and the decoder's cross test.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
make -s -j2 cross CI=1 >"$T/log" 2>&1
rc=$?
check "make cross succeeds" test $rc -eq 0 || tail -30 "$T/log"
is_arm64() { file "$1" | grep -q 'ARM aarch64'; }
check "aarch64 edgeq built" is_arm64 build-aarch64/edgeq
check "aarch64 unit tests built" test -x build-aarch64/tests/unit/test_kernels
check "aarch64 kbench built" test -x build-aarch64/tools/kbench
summary
