#!/usr/bin/env bash
# tools/install-deps is idempotent and tells a non-root user what to run.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
out=$(tools/install-deps 2>&1)
check "second run does nothing ($out)" grep -q 'all packages present' <<<"$out"
# A missing package as a non-root user: no apt, just the exact command.
if command -v setpriv >/dev/null; then
	out=$(EDGEQ_DEPS_EXTRA=edgeq-no-such-package setpriv --reuid=65534 --regid=65534 --clear-groups tools/install-deps 2>&1)
	rc=$?
	check "non-root with missing packages exits 1" test $rc -eq 1
	check "names the missing package" grep -q 'edgeq-no-such-package' <<<"$out"
	check "says what to run as root" grep -q 'sudo .*install-deps' <<<"$out"
fi
out=$(EDGEQ_DEPS_EXTRA=edgeq-no-such-package tools/install-deps --print 2>&1)
check "--print lists what is missing" grep -q 'edgeq-no-such-package' <<<"$out"
summary
