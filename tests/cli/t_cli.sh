#!/usr/bin/env bash
# The edgeq command: help, version, usage errors (exit 2), env/flag precedence.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

"$EDGEQ" help >"$T/help" 2>&1
check "help exits 0" test $? -eq 0
check "help lists version" grep -q '^  version ' "$T/help"
check "help documents exit statuses" grep -q 'Exit status' "$T/help"
"$EDGEQ" >/dev/null 2>&1; check "no command exits 2" test $? -eq 2
"$EDGEQ" frobnicate 2>"$T/err"; rc=$?
check "unknown command exits 2" test $rc -eq 2
check "unknown command says so on stderr" grep -q "'frobnicate' is not an edgeq command" "$T/err"
"$EDGEQ" version --nope 2>"$T/err"; check "unknown option exits 2" test $? -eq 2
check "unknown option named" grep -q -- "--nope" "$T/err"
out=$("$EDGEQ" version); check "version prints version" grep -q '^edgeq [0-9]' <<<"$out"
out=$(EDGEQ_JSON=1 "$EDGEQ" version); check "EDGEQ_JSON=1 gives JSON" grep -q '"version"' <<<"$out"
out=$(EDGEQ_JSON=1 "$EDGEQ" version --json); check "flag with env" grep -q '"commit"' <<<"$out"
EDGEQ_JSON=maybe "$EDGEQ" version 2>"$T/err"; check "bad env value exits 2" test $? -eq 2
check "bad env value names the variable" grep -q EDGEQ_JSON "$T/err"
"$EDGEQ" help version | grep -q 'EDGEQ_JSON'; check "help shows env names" test $? -eq 0
"$EDGEQ" version --help >/dev/null; check "--help exits 0" test $? -eq 0
summary
